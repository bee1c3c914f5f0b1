// RUN: lruc-opt %s -split-input-file -lru-derive-backward=inputs=true | FileCheck %s

// With inputs=true, the real inputs' gradients follow the parameters':
// dx = dy W (nn) is now built; the integer lengths get none; an input the
// loss does not read gets zeros.
// CHECK-LABEL: func.func @backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x4x3xf32> {lru.input = "features"}, %{{.*}}: tensor<?xi32> {lru.input = "lengths"}, %[[T:[a-z0-9]+]]: tensor<?x4x2xf32> {lru.input = "targets"})
// CHECK-SAME: -> (tensor<f32>, tensor<2x3xf32>, tensor<?x4x3xf32>, tensor<?x4x2xf32>)
// CHECK-SAME: lru.gradients = ["w"], lru.input_gradients = ["features", "targets"]
// CHECK: %[[W:.*]] = lru.param "w"
// CHECK: %[[Y:.*]] = lru.matmul nt %[[X]], %[[W]]
// CHECK: %[[DX:.*]] = lru.matmul nn %[[DY:.*]], %[[W]]
// CHECK: %[[DW:.*]] = lru.matmul tn %[[DY]], %[[X]]
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[DT:.*]] = lru.broadcast %[[ZERO]] like %[[T]] dims []
// CHECK: return %{{.*}}, %[[DW]], %[[DX]], %[[DT]]
func.func @forward_train(%x: tensor<?x4x3xf32> {lru.input = "features"}, %len: tensor<?xi32> {lru.input = "lengths"}, %t: tensor<?x4x2xf32> {lru.input = "targets"}) -> tensor<f32> {
  %w = lru.param "w" init(normal) {std = 1.0 : f64} group(decay) : tensor<2x3xf32>
  %y = lru.matmul nt %x, %w : (tensor<?x4x3xf32>, tensor<2x3xf32>) -> tensor<?x4x2xf32>
  %l = lru.reduce_sum %y dims [0, 1, 2] : tensor<?x4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
