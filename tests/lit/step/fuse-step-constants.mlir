// RUN: lruc-opt %s -split-input-file -lru-fuse-step-constants | FileCheck %s

// In @step, the marked groups that read parameters alone (BatchNorm's scale,
// the LRU's λ) become one lru.multi_tensor, itself marked, before the first
// of them; the parameters the later ones read move ahead of it. A marked op
// that is not a group (the product), and a group that reads a marked value,
// stay where they are.
// CHECK-LABEL: func.func @step(
// CHECK-DAG: %[[VAR:.*]] = lru.param "norm.running_var"
// CHECK-DAG: %[[GAIN:.*]] = lru.param "norm.scale"
// CHECK-DAG: %[[NU:.*]] = lru.param "lru.nu_log"
// CHECK-DAG: %[[THETA:.*]] = lru.param "lru.theta_log"
// CHECK: %[[BOTH:.*]]:2 = lru.multi_tensor(%[[VAR]], %[[GAIN]], %[[NU]], %[[THETA]]) {lru.step_constant}
// CHECK-NOT: lru.step_constant
// CHECK: lru.rsqrt
// CHECK: lru.exp
// CHECK: lru.yield
// CHECK: %[[TWICE:.*]] = lru.mul %[[BOTH]]#0, %{{.*}} {lru.step_constant}
// CHECK: lru.fused(%[[TWICE]]) {lru.step_constant}
// CHECK: lru.gather
// CHECK: return %{{.*}}, %[[BOTH]]#1
func.func @step(%tokens: tensor<?x1xi32> {lru.input = "tokens"})
    -> (tensor<?x1x4xf32>, tensor<4xcomplex<f32>>) {
  %var = lru.param "norm.running_var" init(ones) group(state) : tensor<4xf32>
  %gain = lru.param "norm.scale" init(ones) group(decay) : tensor<4xf32>
  %scale = lru.fused(%var, %gain) {lru.step_constant} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>, %g: tensor<4xf32>):
    %r = lru.rsqrt %v : tensor<4xf32>
    %s = lru.mul %g, %r : tensor<4xf32>
    lru.yield %s : tensor<4xf32>
  }
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %twice = lru.mul %scale, %two {lru.step_constant} : tensor<4xf32>
  %nu = lru.param "lru.nu_log" init(zeros) group(recurrent) : tensor<4xf32>
  %theta = lru.param "lru.theta_log" init(zeros) group(recurrent) : tensor<4xf32>
  %lambda = lru.fused(%nu, %theta) {lru.step_constant} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>> {
  ^bb0(%n: tensor<4xf32>, %t: tensor<4xf32>):
    %e = lru.exp %n : tensor<4xf32>
    %c = lru.complex %e, %t : tensor<4xf32> -> tensor<4xcomplex<f32>>
    lru.yield %c : tensor<4xcomplex<f32>>
  }
  %thrice = lru.fused(%twice) {lru.step_constant} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%w: tensor<4xf32>):
    %t3 = lru.add %w, %w : tensor<4xf32>
    lru.yield %t3 : tensor<4xf32>
  }
  %table = lru.param "encoder.weight" init(zeros) group(decay) : tensor<10x4xf32>
  %x = lru.gather %table, %tokens : (tensor<10x4xf32>, tensor<?x1xi32>) -> tensor<?x1x4xf32>
  %y = lru.fused(%thrice, %x) : (tensor<4xf32>, tensor<?x1x4xf32>) -> tensor<?x1x4xf32> {
  ^bb0(%s: tensor<4xf32>, %u: tensor<?x1x4xf32>):
    %b = lru.broadcast %s like %u dims [2] : (tensor<4xf32>, tensor<?x1x4xf32>) -> tensor<?x1x4xf32>
    %z = lru.mul %u, %b : tensor<?x1x4xf32>
    lru.yield %z : tensor<?x1x4xf32>
  }
  return %y, %lambda : tensor<?x1x4xf32>, tensor<4xcomplex<f32>>
}

// -----

// One such group: nothing changes.
// CHECK-LABEL: func.func @step(
// CHECK-NOT: lru.multi_tensor
// CHECK: return
func.func @step(%tokens: tensor<?x1xi32> {lru.input = "tokens"}) -> tensor<4xf32> {
  %var = lru.param "norm.running_var" init(ones) group(state) : tensor<4xf32>
  %scale = lru.fused(%var) {lru.step_constant} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %r = lru.rsqrt %v : tensor<4xf32>
    lru.yield %r : tensor<4xf32>
  }
  return %scale : tensor<4xf32>
}

// -----

// Other functions are left alone.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: lru.multi_tensor
// CHECK: return
func.func @forward(%x: tensor<?x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %var = lru.param "norm.running_var" init(ones) group(state) : tensor<4xf32>
  %a = lru.fused(%var) {lru.step_constant} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %r = lru.rsqrt %v : tensor<4xf32>
    lru.yield %r : tensor<4xf32>
  }
  %b = lru.fused(%var) {lru.step_constant} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %r = lru.exp %v : tensor<4xf32>
    lru.yield %r : tensor<4xf32>
  }
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
