// RUN: lruc-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of the lru dialect.

//===--- lru.param ---===//

func.func @param_empty_name() {
  // expected-error @+1 {{'lru.param' op expects a non-empty name}}
  %p = lru.param "" init(zeros) group(decay) : tensor<4xf32>
  return
}

// -----

func.func @param_dynamic_shape() {
  // expected-error @+1 {{'lru.param' op expects a static result shape, got 'tensor<?x4xf32>'}}
  %p = lru.param "w" init(zeros) group(decay) : tensor<?x4xf32>
  return
}

// -----

func.func @param_element_type() {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float values}}
  %p = lru.param "w" init(zeros) group(decay) : tensor<4xi32>
  return
}

// -----

func.func @param_normal_std() {
  // expected-error @+1 {{'lru.param' op init normal expects a positive 'std' in args}}
  %p = lru.param "w" init(normal) {std = 0.0} group(decay) : tensor<4xf32>
  return
}

// -----

func.func @param_normal_no_args() {
  // expected-error @+1 {{'lru.param' op init normal expects a positive 'std' in args}}
  %p = lru.param "w" init(normal) group(decay) : tensor<4xf32>
  return
}

// -----

func.func @param_uniform_bounds() {
  // expected-error @+1 {{'lru.param' op init uniform expects numbers 'low' < 'high' in args}}
  %p = lru.param "w" init(uniform) {low = 0.5, high = -0.5} group(decay) : tensor<4xf32>
  return
}

// -----

func.func @param_lru_rank() {
  // expected-error @+1 {{'lru.param' op init lru_nu expects a rank-1 result [N], got 'tensor<8x2xf32>'}}
  %p = lru.param "nu_log" init(lru_nu) {r_min = 0.9, r_max = 0.99} group(recurrent) : tensor<8x2xf32>
  return
}

// -----

func.func @param_lru_nu_range() {
  // expected-error @+1 {{'lru.param' op init lru_nu expects 0 <= 'r_min' <= 'r_max' <= 1 in args}}
  %p = lru.param "nu_log" init(lru_nu) {r_min = 0.9, r_max = 1.5} group(recurrent) : tensor<8xf32>
  return
}

// -----

func.func @param_lru_nu_order() {
  // expected-error @+1 {{'lru.param' op init lru_nu expects 0 <= 'r_min' <= 'r_max' <= 1 in args}}
  %p = lru.param "nu_log" init(lru_nu) {r_min = 0.99, r_max = 0.9} group(recurrent) : tensor<8xf32>
  return
}

// -----

func.func @param_lru_theta() {
  // expected-error @+1 {{'lru.param' op init lru_theta expects a positive 'max_phase' in args}}
  %p = lru.param "theta_log" init(lru_theta) {max_phase = -1.0} group(recurrent) : tensor<8xf32>
  return
}

// -----

func.func @param_lru_gamma() {
  // expected-error @+1 {{'lru.param' op init lru_gamma expects string 'nu' and 'theta' in args}}
  %p = lru.param "gamma_log" init(lru_gamma) {nu = "nu_log"} group(recurrent) : tensor<8xf32>
  return
}

// -----

//===--- lru.embed ---===//

func.func @embed_tokens_rank(%t: tensor<?xi32>, %table: tensor<100x4xf32>) {
  // expected-error @+1 {{'lru.embed' op expects tokens of shape [B, L], got 'tensor<?xi32>'}}
  %e = lru.embed %t, %table : (tensor<?xi32>, tensor<100x4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @embed_table_rank(%t: tensor<?x16xi32>, %table: tensor<100xf32>) {
  // expected-error @+1 {{'lru.embed' op expects table of shape [V, H], got 'tensor<100xf32>'}}
  %e = lru.embed %t, %table : (tensor<?x16xi32>, tensor<100xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @embed_tokens_type(%t: tensor<?x16xf32>, %table: tensor<100x4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit signless integer values}}
  %e = lru.embed %t, %table : (tensor<?x16xf32>, tensor<100x4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @embed_wrong_result(%t: tensor<?x16xi32>, %table: tensor<100x4xf32>) {
  // MLIR's InferTypeOpInterface verifier reports the mismatch, then fails.
  // expected-error @+2 {{'lru.embed' op inferred type(s) 'tensor<?x16x4xf32>' are incompatible with return type(s) of operation 'tensor<?x16x8xf32>'}}
  // expected-error @+1 {{'lru.embed' op failed to infer returned types}}
  %e = lru.embed %t, %table : (tensor<?x16xi32>, tensor<100x4xf32>) -> tensor<?x16x8xf32>
  return
}

// -----

//===--- lru.linear ---===//

func.func @linear_x_rank(%x: tensor<4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'lru.linear' op expects x of shape [B, In] or [B, L, In], got 'tensor<4xf32>'}}
  %y = lru.linear %x, %w : (tensor<4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x4xf32>, %w: tensor<8x4x1xf32>) {
  // expected-error @+1 {{'lru.linear' op expects weight of shape [Out, In], got 'tensor<8x4x1xf32>'}}
  %y = lru.linear %x, %w : (tensor<?x4xf32>, tensor<8x4x1xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_weight_in(%x: tensor<?x16x4xf32>, %w: tensor<8x5xf32>) {
  // expected-error @+1 {{'lru.linear' op expects weight of shape [Out, In] = [8, 4], got 'tensor<8x5xf32>'}}
  %y = lru.linear %x, %w : (tensor<?x16x4xf32>, tensor<8x5xf32>) -> tensor<?x16x8xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x16x4xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'lru.linear' op expects bias of shape [Out] = [8], got 'tensor<4xf32>'}}
  %y = lru.linear %x, %w, %b : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x16x8xf32>
  return
}

// -----

//===--- lru.recurrence ---===//

func.func @recurrence_u_rank(%u: tensor<?x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects u of shape [B, L, H], got 'tensor<?x4xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %b) C(%c, %c) D %d : (tensor<?x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @recurrence_nu_rank(%u: tensor<?x16x4xf32>, %nu: tensor<8x1xf32>, %th: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects nu_log of shape [N], got 'tensor<8x1xf32>'}}
  %y = lru.recurrence %u, %nu, %th B(%b, %b) C(%c, %c) D %d : (tensor<?x16x4xf32>, tensor<8x1xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_theta(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %th: tensor<6xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects theta_log of shape [N] = [8], got 'tensor<6xf32>'}}
  %y = lru.recurrence %u, %nu, %th B(%b, %b) C(%c, %c) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<6xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_gamma(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %g: tensor<6xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects gamma_log of shape [N] = [8], got 'tensor<6xf32>'}}
  %y = lru.recurrence %u, %nu, %nu gamma %g B(%b, %b) C(%c, %c) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<6xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_b_re(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %bad: tensor<4x8xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects B_re of shape [N, H] = [8, 4], got 'tensor<4x8xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%bad, %b) C(%c, %c) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_b_im(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %bad: tensor<8x5xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects B_im of shape [N, H] = [8, 4], got 'tensor<8x5xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %bad) C(%c, %c) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x5xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_c_re(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %bad: tensor<8x4xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects C_re of shape [H, N] = [4, 8], got 'tensor<8x4xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %b) C(%bad, %c) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_c_im(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %bad: tensor<4x7xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects C_im of shape [H, N] = [4, 8], got 'tensor<4x7xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %b) C(%c, %bad) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x7xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_d(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects D of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %b) C(%c, %c) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_lengths(%u: tensor<2x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.recurrence' op expects lengths of shape [B] = [2], got 'tensor<3xi32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %b) C(%c, %c) D %d lengths %len : (tensor<2x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<3xi32>) -> tensor<2x16x4xf32>
  return
}

// -----

func.func @recurrence_c_rev_alone(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // The custom form always prints both; the generic form can hold one.
  // expected-error @+1 {{'lru.recurrence' op expects C_rev_re and C_rev_im together (both for a bidirectional LRU, or neither)}}
  %y = "lru.recurrence"(%u, %nu, %nu, %b, %b, %c, %c, %c, %d) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0>}> : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_c_rev_re(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %bad: tensor<4x6xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects C_rev_re of shape [H, N] = [4, 8], got 'tensor<4x6xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %b) C(%c, %c) C_rev(%bad, %c) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x6xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @recurrence_c_rev_im(%u: tensor<?x16x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %bad: tensor<4x6xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.recurrence' op expects C_rev_im of shape [H, N] = [4, 8], got 'tensor<4x6xf32>'}}
  %y = lru.recurrence %u, %nu, %nu B(%b, %b) C(%c, %c) C_rev(%c, %bad) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

//===--- lru.generalized_recurrence ---===//

func.func @glru_gate(%u: tensor<?x16x4xf32>, %gate: tensor<4x8xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'lru.generalized_recurrence' op expects gate U of shape [N, H] = [8, 4], got 'tensor<4x8xf32>'}}
  %y = lru.generalized_recurrence plain %u, %nu, %nu gate(%gate) B(%b, %b) C(%c, %c) D %d : (tensor<?x16x4xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @glru_shared_checks(%u: tensor<?x16x4xf32>, %gate: tensor<8x4xf32>, %nu: tensor<8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %d: tensor<4xf32>, %len: tensor<?x1xi32>) {
  // expected-error @+1 {{'lru.generalized_recurrence' op expects lengths of shape [B] = [?], got 'tensor<?x1xi32>'}}
  %y = lru.generalized_recurrence stable %u, %nu, %nu gate(%gate) B(%b, %b) C(%c, %c) D %d lengths %len : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?x1xi32>) -> tensor<?x16x4xf32>
  return
}

// -----

//===--- lru.glu ---===//

func.func @glu_x_rank(%x: tensor<4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'lru.glu' op expects x of shape [B, H] or [B, L, H], got 'tensor<4xf32>'}}
  %y = lru.glu %x gate(%w, %b) : (tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @glu_w_gate(%x: tensor<?x16x4xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'lru.glu' op expects w_gate of shape [H, H] = [4, 4], got 'tensor<4x8xf32>'}}
  %y = lru.glu %x gate(%w, %b) : (tensor<?x16x4xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @glu_b_gate(%x: tensor<?x16x4xf32>, %w: tensor<4x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'lru.glu' op expects b_gate of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.glu %x gate(%w, %b) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<8xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @glu_value_alone(%x: tensor<?x16x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'lru.glu' op expects w_value and b_value together (both for a full GLU, or neither for a half GLU)}}
  %y = "lru.glu"(%x, %w, %b, %w) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @glu_w_value(%x: tensor<?x16x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>, %bad: tensor<2x4xf32>) {
  // expected-error @+1 {{'lru.glu' op expects w_value of shape [H, H] = [4, 4], got 'tensor<2x4xf32>'}}
  %y = lru.glu %x gate(%w, %b) value(%bad, %b) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @glu_b_value(%x: tensor<?x16x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>, %bad: tensor<2xf32>) {
  // expected-error @+1 {{'lru.glu' op expects b_value of shape [H] = [4], got 'tensor<2xf32>'}}
  %y = lru.glu %x gate(%w, %b) value(%w, %bad) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<2xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

//===--- lru.dropout ---===//

func.func @dropout_rate(%x: tensor<?x16x4xf32>) {
  // expected-error @+1 {{'lru.dropout' op expects a rate in [0, 1), got 1}}
  %y = lru.dropout %x rate 1.0 site 0 : tensor<?x16x4xf32>
  return
}

// -----

func.func @dropout_site(%x: tensor<?x16x4xf32>) {
  // expected-error @+1 {{'lru.dropout' op expects a non-negative site, got -1}}
  %y = lru.dropout %x rate 0.1 site -1 : tensor<?x16x4xf32>
  return
}

// -----

//===--- lru.batch_norm ---===//

func.func @batch_norm_x_rank(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects x of shape [B, H] or [B, L, H], got 'tensor<4xf32>'}}
  %y = lru.batch_norm %x, %s, %s running(%s, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_scale(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>, %bad: tensor<8xf32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects scale of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.batch_norm %x, %bad, %s running(%s, %s) : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @batch_norm_bias(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>, %bad: tensor<8xf32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects bias of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.batch_norm %x, %s, %bad running(%s, %s) : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @batch_norm_mean(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>, %bad: tensor<8xf32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects running_mean of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.batch_norm %x, %s, %s running(%bad, %s) : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @batch_norm_var(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>, %bad: tensor<8xf32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects running_var of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.batch_norm %x, %s, %s running(%s, %bad) : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @batch_norm_lengths_pooled(%x: tensor<?x4xf32>, %s: tensor<4xf32>, %len: tensor<?xi32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects lengths only with a sequence input [B, L, H], got 'tensor<?x4xf32>'}}
  %y = lru.batch_norm %x, %s, %s running(%s, %s) lengths %len : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @batch_norm_lengths(%x: tensor<2x16x4xf32>, %s: tensor<4xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects lengths of shape [B] = [2], got 'tensor<3xi32>'}}
  %y = lru.batch_norm %x, %s, %s running(%s, %s) lengths %len : (tensor<2x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xi32>) -> tensor<2x16x4xf32>
  return
}

// -----

func.func @batch_norm_momentum(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects a momentum in [0, 1], got 2}}
  %y = lru.batch_norm %x, %s, %s running(%s, %s) {momentum = 2.0} : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @batch_norm_epsilon(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'lru.batch_norm' op expects a positive epsilon}}
  %y = lru.batch_norm %x, %s, %s running(%s, %s) {epsilon = 0.0} : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

//===--- lru.layer_norm ---===//

func.func @layer_norm_x_rank(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'lru.layer_norm' op expects x of shape [B, H] or [B, L, H], got 'tensor<4xf32>'}}
  %y = lru.layer_norm %x, %s, %s : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>, %bad: tensor<8xf32>) {
  // expected-error @+1 {{'lru.layer_norm' op expects scale of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.layer_norm %x, %bad, %s : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>, %bad: tensor<8xf32>) {
  // expected-error @+1 {{'lru.layer_norm' op expects bias of shape [H] = [4], got 'tensor<8xf32>'}}
  %y = lru.layer_norm %x, %s, %bad : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<?x16x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'lru.layer_norm' op expects a positive epsilon}}
  %y = lru.layer_norm %x, %s, %s {epsilon = -1.0} : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

//===--- lru.add ---===//

func.func @add_types(%a: tensor<?x16x4xf32>, %b: tensor<?x16x8xf32>) {
  // expected-error @+1 {{'lru.add' op failed to verify that all of {lhs, rhs} have same type}}
  %y = "lru.add"(%a, %b) : (tensor<?x16x4xf32>, tensor<?x16x8xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

//===--- lru.pool ---===//

func.func @pool_x_rank(%x: tensor<?x4xf32>, %len: tensor<?xi32>) {
  // expected-error @+1 {{'lru.pool' op expects x of shape [B, L, H], got 'tensor<?x4xf32>'}}
  %y = lru.pool mean %x, %len : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @pool_lengths(%x: tensor<2x16x4xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.pool' op expects lengths of shape [B] = [2], got 'tensor<3xi32>'}}
  %y = lru.pool last %x, %len : (tensor<2x16x4xf32>, tensor<3xi32>) -> tensor<2x4xf32>
  return
}

// -----

//===--- lru.retrieval_combine ---===//

func.func @combine_rank(%a: tensor<?x16x4xf32>) {
  // expected-error @+1 {{'lru.retrieval_combine' op expects lhs of shape [B, H], got 'tensor<?x16x4xf32>'}}
  %y = lru.retrieval_combine %a, %a : (tensor<?x16x4xf32>, tensor<?x16x4xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @combine_rhs(%a: tensor<?x4xf32>, %b: tensor<?x8xf32>) {
  // expected-error @+1 {{'lru.retrieval_combine' op expects rhs of shape [B, H] = [?, 4], got 'tensor<?x8xf32>'}}
  %y = lru.retrieval_combine %a, %b : (tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  return
}

// -----

//===--- lru.cross_entropy ---===//

func.func @cross_entropy_rank(%l: tensor<?xf32>, %y: tensor<?xi32>) {
  // expected-error @+1 {{'lru.cross_entropy' op expects logits of shape [B, K] or [B, L, K], got 'tensor<?xf32>'}}
  %loss = lru.cross_entropy %l, %y : (tensor<?xf32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<?x16x10xf32>, %y: tensor<?xi32>) {
  // expected-error @+1 {{'lru.cross_entropy' op expects labels of shape [B, L] = [?, 16], got 'tensor<?xi32>'}}
  %loss = lru.cross_entropy %l, %y : (tensor<?x16x10xf32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_lengths_pooled(%l: tensor<?x10xf32>, %y: tensor<?xi32>) {
  // expected-error @+1 {{'lru.cross_entropy' op expects lengths only with per-step logits [B, L, K], got 'tensor<?x10xf32>'}}
  %loss = lru.cross_entropy %l, %y lengths %y : (tensor<?x10xf32>, tensor<?xi32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_lengths(%l: tensor<2x16x10xf32>, %y: tensor<2x16xi32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.cross_entropy' op expects lengths of shape [B] = [2], got 'tensor<3xi32>'}}
  %loss = lru.cross_entropy %l, %y lengths %len : (tensor<2x16x10xf32>, tensor<2x16xi32>, tensor<3xi32>) -> tensor<f32>
  return
}

// -----

//===--- lru.mse ---===//

func.func @mse_rank(%p: tensor<?xf32>) {
  // expected-error @+1 {{'lru.mse' op expects pred of shape [B, K] or [B, L, K], got 'tensor<?xf32>'}}
  %loss = lru.mse %p, %p : (tensor<?xf32>, tensor<?xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_targets(%p: tensor<?x10xf32>, %t: tensor<?x11xf32>) {
  // expected-error @+1 {{'lru.mse' op expects targets of shape [B, K] = [?, 10], got 'tensor<?x11xf32>'}}
  %loss = lru.mse %p, %t : (tensor<?x10xf32>, tensor<?x11xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_lengths_pooled(%p: tensor<?x10xf32>, %len: tensor<?xi32>) {
  // expected-error @+1 {{'lru.mse' op expects lengths only with per-step predictions [B, L, K], got 'tensor<?x10xf32>'}}
  %loss = lru.mse %p, %p lengths %len : (tensor<?x10xf32>, tensor<?x10xf32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

func.func @l1_loss_targets(%p: tensor<?x10xf32>, %t: tensor<?x11xf32>) {
  // expected-error @+1 {{'lru.l1_loss' op expects targets of shape [B, K] = [?, 10], got 'tensor<?x11xf32>'}}
  %loss = lru.l1_loss %p, %t : (tensor<?x10xf32>, tensor<?x11xf32>) -> tensor<f32>
  return
}

// -----

func.func @huber_loss_delta(%p: tensor<?x10xf32>) {
  // expected-error @+1 {{'lru.huber_loss' op expects a delta above 0, got -1}}
  %loss = lru.huber_loss %p, %p {delta = -1.0 : f32} : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_lengths(%p: tensor<2x16x10xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.mse' op expects lengths of shape [B] = [2], got 'tensor<3xi32>'}}
  %loss = lru.mse %p, %p lengths %len : (tensor<2x16x10xf32>, tensor<2x16x10xf32>, tensor<3xi32>) -> tensor<f32>
  return
}
