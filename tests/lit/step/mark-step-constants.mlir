// RUN: lruc-opt %s -split-input-file -lru-mark-step-constants | FileCheck %s

// In @step, what reads only parameters and constants, directly or through
// other marked ops, is marked: BatchNorm's scale from its running variance,
// λ from its logarithms, and an op reading both. What reads the step's
// input, or a marked value together with the input, is not.
// CHECK-LABEL: func.func @step(
// CHECK: %[[SCALE:.*]] = lru.fused(%{{.*}}, %{{.*}}) {lru.step_constant}
// CHECK: %[[LAMBDA:.*]] = lru.fused(%{{.*}}, %{{.*}}) {lru.step_constant}
// CHECK: lru.mul %[[SCALE]], %{{.*}} {lru.step_constant} : tensor<4xf32>
// CHECK: lru.gather
// CHECK-NOT: lru.step_constant
// CHECK: lru.fused
// CHECK-NOT: lru.step_constant
// CHECK: return
func.func @step(%tokens: tensor<?x1xi32> {lru.input = "tokens"})
    -> (tensor<?x1x4xf32>, tensor<4xcomplex<f32>>) {
  %var = lru.param "norm.running_var" init(ones) group(state) : tensor<4xf32>
  %gain = lru.param "norm.scale" init(ones) group(decay) : tensor<4xf32>
  %scale = lru.fused(%var, %gain) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>, %g: tensor<4xf32>):
    %eps = arith.constant dense<1.0e-5> : tensor<4xf32>
    %a = lru.add %v, %eps : tensor<4xf32>
    %r = lru.rsqrt %a : tensor<4xf32>
    %s = lru.mul %g, %r : tensor<4xf32>
    lru.yield %s : tensor<4xf32>
  }
  %nu = lru.param "lru.nu_log" init(zeros) group(recurrent) : tensor<4xf32>
  %theta = lru.param "lru.theta_log" init(zeros) group(recurrent) : tensor<4xf32>
  %lambda = lru.fused(%nu, %theta) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>> {
  ^bb0(%n: tensor<4xf32>, %t: tensor<4xf32>):
    %e = lru.exp %n : tensor<4xf32>
    %m = lru.neg %e : tensor<4xf32>
    %p = lru.exp %t : tensor<4xf32>
    %c = lru.complex %m, %p : tensor<4xf32> -> tensor<4xcomplex<f32>>
    %l = lru.exp %c : tensor<4xcomplex<f32>>
    lru.yield %l : tensor<4xcomplex<f32>>
  }
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %twice = lru.mul %scale, %two : tensor<4xf32>
  %table = lru.param "encoder.weight" init(zeros) group(decay) : tensor<10x4xf32>
  %x = lru.gather %table, %tokens : (tensor<10x4xf32>, tensor<?x1xi32>) -> tensor<?x1x4xf32>
  %y = lru.fused(%twice, %x) : (tensor<4xf32>, tensor<?x1x4xf32>) -> tensor<?x1x4xf32> {
  ^bb0(%s: tensor<4xf32>, %u: tensor<?x1x4xf32>):
    %b = lru.broadcast %s like %u dims [2] : (tensor<4xf32>, tensor<?x1x4xf32>) -> tensor<?x1x4xf32>
    %z = lru.mul %u, %b : tensor<?x1x4xf32>
    lru.yield %z : tensor<?x1x4xf32>
  }
  return %y, %lambda : tensor<?x1x4xf32>, tensor<4xcomplex<f32>>
}

// -----

// Other functions run once per batch: nothing is marked.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: lru.step_constant
// CHECK: return
func.func @forward(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  %var = lru.param "norm.running_var" init(ones) group(state) : tensor<4xf32>
  %r = lru.rsqrt %var : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A view computes nothing and is never marked; what reads a view of
// parameters is marked as if it read them (the CPU library keeps marked
// values between tokens, a view's reader reading the kept buffer).
// CHECK-LABEL: func.func @step(
// CHECK: %[[V:.*]] = lru.view %{{.*}} : tensor<4xf32> -> tensor<2xcomplex<f32>>
// CHECK-NOT: lru.step_constant
// CHECK-NEXT: lru.exp %[[V]] {lru.step_constant} : tensor<2xcomplex<f32>>
func.func @step(%tokens: tensor<?x1xi32> {lru.input = "tokens"})
    -> tensor<2xcomplex<f32>> {
  %p = lru.param "p" init(ones) group(decay) : tensor<4xf32>
  %v = lru.view %p : tensor<4xf32> -> tensor<2xcomplex<f32>>
  %e = lru.exp %v : tensor<2xcomplex<f32>>
  return %e : tensor<2xcomplex<f32>>
}
