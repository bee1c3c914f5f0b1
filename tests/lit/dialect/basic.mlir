// RUN: lruc-opt %s | lruc-opt | FileCheck %s

// Round trip of every lru op, with and without its optional operands.

// CHECK-LABEL: func.func @params
func.func @params() -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: %[[NU:.*]] = lru.param "blocks.0.lru.nu_log" init(lru_nu) {r_max = {{.*}} : f64, r_min = 9.000000e-01 : f64} group(recurrent) : tensor<8xf32>
  %nu = lru.param "blocks.0.lru.nu_log" init(lru_nu) {r_min = 0.9, r_max = 0.999} group(recurrent) : tensor<8xf32>
  // CHECK: %[[TH:.*]] = lru.param "blocks.0.lru.theta_log" init(lru_theta) {max_phase = 6.250000e-01 : f64} group(recurrent) : tensor<8xf32>
  %theta = lru.param "blocks.0.lru.theta_log" init(lru_theta) {max_phase = 0.625} group(recurrent) : tensor<8xf32>
  // CHECK: %[[G:.*]] = lru.param "blocks.0.lru.gamma_log" init(lru_gamma) {nu = "blocks.0.lru.nu_log", theta = "blocks.0.lru.theta_log"} group(recurrent) : tensor<8xf32>
  %gamma = lru.param "blocks.0.lru.gamma_log" init(lru_gamma) {nu = "blocks.0.lru.nu_log", theta = "blocks.0.lru.theta_log"} group(recurrent) : tensor<8xf32>
  // CHECK: %[[B:.*]] = lru.param "blocks.0.lru.B_re" init(normal) {std = 2.500000e-01 : f64} group(recurrent) : tensor<8x4xf32>
  %b = lru.param "blocks.0.lru.B_re" init(normal) {std = 0.25} group(recurrent) : tensor<8x4xf32>
  // CHECK: %[[W:.*]] = lru.param "head.bias" init(uniform) {high = 5.000000e-01 : f64, low = -5.000000e-01 : f64} group(decay) : tensor<4xf32>
  %w = lru.param "head.bias" init(uniform) {low = -0.5, high = 0.5} group(decay) : tensor<4xf32>
  // CHECK: %[[M:.*]] = lru.param "blocks.0.norm.running_mean" init(zeros) group(state) : tensor<4xf32>
  %mean = lru.param "blocks.0.norm.running_mean" init(zeros) group(state) : tensor<4xf32>
  // CHECK: %[[V:.*]] = lru.param "blocks.0.norm.running_var" init(ones) group(state) : tensor<4xf32>
  %var = lru.param "blocks.0.norm.running_var" init(ones) group(state) : tensor<4xf32>
  // CHECK: return %[[NU]], %[[TH]], %[[G]], %[[B]], %[[W]], %[[M]], %[[V]]
  return %nu, %theta, %gamma, %b, %w, %mean, %var : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @embed_linear
// CHECK-SAME: (%[[TOK:[^:]*]]: tensor<?x16xi32>, %[[TAB:[^:]*]]: tensor<100x4xf32>, %[[W:[^:]*]]: tensor<8x4xf32>, %[[B:[^:]*]]: tensor<8xf32>, %[[W2:[^:]*]]: tensor<3x8xf32>)
func.func @embed_linear(%tokens: tensor<?x16xi32>, %table: tensor<100x4xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>, %w2: tensor<3x8xf32>) -> (tensor<?x16x8xf32>, tensor<?x3xf32>) {
  // CHECK: %[[E:.*]] = lru.embed %[[TOK]], %[[TAB]] : (tensor<?x16xi32>, tensor<100x4xf32>) -> tensor<?x16x4xf32>
  %e = lru.embed %tokens, %table : (tensor<?x16xi32>, tensor<100x4xf32>) -> tensor<?x16x4xf32>
  // CHECK: %[[Y:.*]] = lru.linear %[[E]], %[[W]], %[[B]] : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x16x8xf32>
  %y = lru.linear %e, %w, %b : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x16x8xf32>
  // CHECK: %[[P:.*]] = lru.pool mean %[[Y]]
  %len = arith.constant dense<16> : tensor<2xi32>
  %p = lru.pool mean %y, %len : (tensor<?x16x8xf32>, tensor<2xi32>) -> tensor<?x8xf32>
  // CHECK: %[[Z:.*]] = lru.linear %[[P]], %[[W2]] : (tensor<?x8xf32>, tensor<3x8xf32>) -> tensor<?x3xf32>
  %z = lru.linear %p, %w2 : (tensor<?x8xf32>, tensor<3x8xf32>) -> tensor<?x3xf32>
  // CHECK: return %[[Y]], %[[Z]]
  return %y, %z : tensor<?x16x8xf32>, tensor<?x3xf32>
}

// CHECK-LABEL: func.func @activations
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x16x4xf32>)
func.func @activations(%x: tensor<?x16x4xf32>) -> tensor<?x16x4xf32> {
  // CHECK: %[[A:.*]] = lru.gelu %[[X]] : tensor<?x16x4xf32>
  %a = lru.gelu %x : tensor<?x16x4xf32>
  // CHECK: %[[B:.*]] = lru.gelu %[[A]] approximate : tensor<?x16x4xf32>
  %b = lru.gelu %a approximate : tensor<?x16x4xf32>
  // CHECK: %[[C:.*]] = lru.relu %[[B]] : tensor<?x16x4xf32>
  %c = lru.relu %b : tensor<?x16x4xf32>
  // CHECK: %[[D:.*]] = lru.tanh %[[C]] : tensor<?x16x4xf32>
  %d = lru.tanh %c : tensor<?x16x4xf32>
  // CHECK: %[[E:.*]] = lru.dropout %[[D]] rate 1.000000e-01 site 3 : tensor<?x16x4xf32>
  %e = lru.dropout %d rate 0.1 site 3 : tensor<?x16x4xf32>
  // CHECK: %[[F:.*]] = lru.add %[[X]], %[[E]] : tensor<?x16x4xf32>
  %f = lru.add %x, %e : tensor<?x16x4xf32>
  // CHECK: return %[[F]]
  return %f : tensor<?x16x4xf32>
}

// CHECK-LABEL: func.func @recurrence_forward
// CHECK-SAME: (%[[U:[^:]*]]: tensor<?x16x4xf32>, %[[NU:[^:]*]]: tensor<8xf32>, %[[TH:[^:]*]]: tensor<8xf32>, %[[BR:[^:]*]]: tensor<8x4xf32>, %[[BI:[^:]*]]: tensor<8x4xf32>, %[[CR:[^:]*]]: tensor<4x8xf32>, %[[CI:[^:]*]]: tensor<4x8xf32>, %[[D:[^:]*]]: tensor<4xf32>)
func.func @recurrence_forward(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %theta: tensor<8xf32>, %bre: tensor<8x4xf32>, %bim: tensor<8x4xf32>, %cre: tensor<4x8xf32>, %cim: tensor<4x8xf32>, %d: tensor<4xf32>) -> tensor<?x16x4xf32> {
  // CHECK: %[[Y:.*]] = lru.recurrence %[[U]], %[[NU]], %[[TH]] B(%[[BR]], %[[BI]]) C(%[[CR]], %[[CI]]) D %[[D]] : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  %y = lru.recurrence %u, %nu, %theta B(%bre, %bim) C(%cre, %cim) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  // CHECK: return %[[Y]]
  return %y : tensor<?x16x4xf32>
}

// CHECK-LABEL: func.func @recurrence_bidirectional
// CHECK-SAME: (%[[U:[^:]*]]: tensor<?x16x4xf32>, %[[NU:[^:]*]]: tensor<8xf32>, %[[TH:[^:]*]]: tensor<8xf32>, %[[G:[^:]*]]: tensor<8xf32>, %[[BR:[^:]*]]: tensor<8x4xf32>, %[[BI:[^:]*]]: tensor<8x4xf32>, %[[CR:[^:]*]]: tensor<4x8xf32>, %[[CI:[^:]*]]: tensor<4x8xf32>, %[[RR:[^:]*]]: tensor<4x8xf32>, %[[RI:[^:]*]]: tensor<4x8xf32>, %[[D:[^:]*]]: tensor<4xf32>, %[[LEN:[^:]*]]: tensor<?xi32>)
func.func @recurrence_bidirectional(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %theta: tensor<8xf32>, %gamma: tensor<8xf32>, %bre: tensor<8x4xf32>, %bim: tensor<8x4xf32>, %cre: tensor<4x8xf32>, %cim: tensor<4x8xf32>, %rre: tensor<4x8xf32>, %rim: tensor<4x8xf32>, %d: tensor<4xf32>, %len: tensor<?xi32>) -> tensor<?x16x4xf32> {
  // CHECK: %[[Y:.*]] = lru.recurrence %[[U]], %[[NU]], %[[TH]] gamma %[[G]] B(%[[BR]], %[[BI]]) C(%[[CR]], %[[CI]]) C_rev(%[[RR]], %[[RI]]) D %[[D]] lengths %[[LEN]] : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  %y = lru.recurrence %u, %nu, %theta gamma %gamma B(%bre, %bim) C(%cre, %cim) C_rev(%rre, %rim) D %d lengths %len : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  // CHECK: return %[[Y]]
  return %y : tensor<?x16x4xf32>
}

// CHECK-LABEL: func.func @generalized_recurrence
// CHECK-SAME: (%[[U:[^:]*]]: tensor<?x16x4xf32>, %[[GATE:[^:]*]]: tensor<8x4xf32>, %[[NU:[^:]*]]: tensor<8xf32>, %[[TH:[^:]*]]: tensor<8xf32>, %[[BR:[^:]*]]: tensor<8x4xf32>, %[[BI:[^:]*]]: tensor<8x4xf32>, %[[CR:[^:]*]]: tensor<4x8xf32>, %[[CI:[^:]*]]: tensor<4x8xf32>, %[[D:[^:]*]]: tensor<4xf32>, %[[LEN:[^:]*]]: tensor<?xi32>)
func.func @generalized_recurrence(%u: tensor<?x16x4xf32>, %gate: tensor<8x4xf32>, %nu: tensor<8xf32>, %theta: tensor<8xf32>, %bre: tensor<8x4xf32>, %bim: tensor<8x4xf32>, %cre: tensor<4x8xf32>, %cim: tensor<4x8xf32>, %d: tensor<4xf32>, %len: tensor<?xi32>) -> (tensor<?x16x4xf32>, tensor<?x16x4xf32>, tensor<?x16x4xf32>) {
  // CHECK: %[[P:.*]] = lru.generalized_recurrence plain %[[U]], %[[NU]], %[[TH]] gate(%[[GATE]]) B(%[[BR]], %[[BI]]) C(%[[CR]], %[[CI]]) D %[[D]] : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  %p = lru.generalized_recurrence plain %u, %nu, %theta gate(%gate) B(%bre, %bim) C(%cre, %cim) D %d : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  // CHECK: %[[S:.*]] = lru.generalized_recurrence stable %[[U]], %[[NU]], %[[TH]] gate(%[[GATE]]) B(%[[BR]], %[[BI]]) C(%[[CR]], %[[CI]]) D %[[D]] lengths %[[LEN]] : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  %s = lru.generalized_recurrence stable %u, %nu, %theta gate(%gate) B(%bre, %bim) C(%cre, %cim) D %d lengths %len : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  // CHECK: %[[N:.*]] = lru.generalized_recurrence normalized %[[U]], %[[NU]], %[[TH]] gate(%[[GATE]]) B(%[[BR]], %[[BI]]) C(%[[CR]], %[[CI]]) D %[[D]] lengths %[[LEN]]
  %n = lru.generalized_recurrence normalized %u, %nu, %theta gate(%gate) B(%bre, %bim) C(%cre, %cim) D %d lengths %len : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  // CHECK: return %[[P]], %[[S]], %[[N]]
  return %p, %s, %n : tensor<?x16x4xf32>, tensor<?x16x4xf32>, tensor<?x16x4xf32>
}

// CHECK-LABEL: func.func @glu
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x16x4xf32>, %[[WG:[^:]*]]: tensor<4x4xf32>, %[[BG:[^:]*]]: tensor<4xf32>, %[[WV:[^:]*]]: tensor<4x4xf32>, %[[BV:[^:]*]]: tensor<4xf32>)
func.func @glu(%x: tensor<?x16x4xf32>, %wg: tensor<4x4xf32>, %bg: tensor<4xf32>, %wv: tensor<4x4xf32>, %bv: tensor<4xf32>) -> tensor<?x16x4xf32> {
  // CHECK: %[[F:.*]] = lru.glu %[[X]] gate(%[[WG]], %[[BG]]) value(%[[WV]], %[[BV]]) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  %full = lru.glu %x gate(%wg, %bg) value(%wv, %bv) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  // CHECK: %[[H:.*]] = lru.glu %[[F]] gate(%[[WG]], %[[BG]]) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  %half = lru.glu %full gate(%wg, %bg) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  // CHECK: return %[[H]]
  return %half : tensor<?x16x4xf32>
}

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x16x4xf32>, %[[P:[^:]*]]: tensor<?x4xf32>, %[[S:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[M:[^:]*]]: tensor<4xf32>, %[[V:[^:]*]]: tensor<4xf32>, %[[LEN:[^:]*]]: tensor<?xi32>)
func.func @norms(%x: tensor<?x16x4xf32>, %p: tensor<?x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %len: tensor<?xi32>) -> (tensor<?x16x4xf32>, tensor<?x4xf32>, tensor<?x16x4xf32>, tensor<?x4xf32>) {
  // CHECK: %[[BN:.*]] = lru.batch_norm %[[X]], %[[S]], %[[B]] running(%[[M]], %[[V]]) lengths %[[LEN]] : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  %bn = lru.batch_norm %x, %s, %b running(%m, %v) lengths %len : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  // CHECK: %[[BP:.*]] = lru.batch_norm %[[P]], %[[S]], %[[B]] running(%[[M]], %[[V]]) {epsilon = 1.000000e-03 : f64, momentum = 2.000000e-01 : f64} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %bp = lru.batch_norm %p, %s, %b running(%m, %v) {momentum = 0.2, epsilon = 0.001} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: %[[LN:.*]] = lru.layer_norm %[[X]], %[[S]], %[[B]] : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  %ln = lru.layer_norm %x, %s, %b : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  // CHECK: %[[LP:.*]] = lru.layer_norm %[[P]], %[[S]], %[[B]] {epsilon = 1.000000e-03 : f64} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %lp = lru.layer_norm %p, %s, %b {epsilon = 0.001} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: return %[[BN]], %[[BP]], %[[LN]], %[[LP]]
  return %bn, %bp, %ln, %lp : tensor<?x16x4xf32>, tensor<?x4xf32>, tensor<?x16x4xf32>, tensor<?x4xf32>
}

// CHECK-LABEL: func.func @pool_and_combine
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x16x4xf32>, %[[Y:[^:]*]]: tensor<?x16x4xf32>, %[[LA:[^:]*]]: tensor<?xi32>, %[[LB:[^:]*]]: tensor<?xi32>)
func.func @pool_and_combine(%x: tensor<?x16x4xf32>, %y: tensor<?x16x4xf32>, %la: tensor<?xi32>, %lb: tensor<?xi32>) -> tensor<?x16xf32> {
  // CHECK: %[[A:.*]] = lru.pool mean %[[X]], %[[LA]] : (tensor<?x16x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  %a = lru.pool mean %x, %la : (tensor<?x16x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  // CHECK: %[[B:.*]] = lru.pool last %[[Y]], %[[LB]] : (tensor<?x16x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  %b = lru.pool last %y, %lb : (tensor<?x16x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  // CHECK: %[[C:.*]] = lru.retrieval_combine %[[A]], %[[B]] : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x16xf32>
  %c = lru.retrieval_combine %a, %b : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x16xf32>
  // CHECK: return %[[C]]
  return %c : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[L2:[^:]*]]: tensor<?x10xf32>, %[[Y1:[^:]*]]: tensor<?xi32>, %[[L3:[^:]*]]: tensor<?x16x10xf32>, %[[Y2:[^:]*]]: tensor<?x16xi32>, %[[T2:[^:]*]]: tensor<?x10xf32>, %[[T3:[^:]*]]: tensor<?x16x10xf32>, %[[LEN:[^:]*]]: tensor<?xi32>)
func.func @losses(%l2: tensor<?x10xf32>, %y1: tensor<?xi32>, %l3: tensor<?x16x10xf32>, %y2: tensor<?x16xi32>, %t2: tensor<?x10xf32>, %t3: tensor<?x16x10xf32>, %len: tensor<?xi32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  // CHECK: %[[A:.*]] = lru.cross_entropy %[[L2]], %[[Y1]] : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<f32>
  %a = lru.cross_entropy %l2, %y1 : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<f32>
  // CHECK: %[[B:.*]] = lru.cross_entropy %[[L3]], %[[Y2]] lengths %[[LEN]] : (tensor<?x16x10xf32>, tensor<?x16xi32>, tensor<?xi32>) -> tensor<f32>
  %b = lru.cross_entropy %l3, %y2 lengths %len : (tensor<?x16x10xf32>, tensor<?x16xi32>, tensor<?xi32>) -> tensor<f32>
  // CHECK: %[[C:.*]] = lru.mse %[[L2]], %[[T2]] : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<f32>
  %c = lru.mse %l2, %t2 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<f32>
  // CHECK: %[[D:.*]] = lru.mse %[[L3]], %[[T3]] lengths %[[LEN]] : (tensor<?x16x10xf32>, tensor<?x16x10xf32>, tensor<?xi32>) -> tensor<f32>
  %d = lru.mse %l3, %t3 lengths %len : (tensor<?x16x10xf32>, tensor<?x16x10xf32>, tensor<?xi32>) -> tensor<f32>
  // CHECK: lru.l1_loss %[[L2]], %[[T2]] : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<f32>
  %e = lru.l1_loss %l2, %t2 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<f32>
  // CHECK: lru.huber_loss %[[L3]], %[[T3]] lengths %[[LEN]] {delta = 5.000000e-01 : f32} : (tensor<?x16x10xf32>, tensor<?x16x10xf32>, tensor<?xi32>) -> tensor<f32>
  %f = lru.huber_loss %l3, %t3 lengths %len {delta = 0.5 : f32} : (tensor<?x16x10xf32>, tensor<?x16x10xf32>, tensor<?xi32>) -> tensor<f32>
  // CHECK: return %[[A]], %[[B]], %[[C]], %[[D]]
  return %a, %b, %c, %d : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
