// RUN: lruc-opt %s -lru-strip-stop-gradients | FileCheck %s

// After the derivative passes each lru.stop_gradient becomes its operand,
// so that CSE makes x - stop_gradient(mean) and x - mean one value.
// CHECK-LABEL: func.func @forward_train(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32>, %[[M:[a-z0-9]+]]: tensor<3xf32>)
// CHECK-NOT: lru.stop_gradient
// CHECK: %[[MB:.*]] = lru.broadcast %[[M]] like %[[X]] dims [1]
// CHECK: %[[C:.*]] = lru.sub %[[X]], %[[MB]]
// CHECK: return %[[C]], %[[MB]]
func.func @forward_train(%x: tensor<2x3xf32>, %m: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %s = lru.stop_gradient %m : tensor<3xf32>
  %mb = lru.broadcast %s like %x dims [1] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = lru.sub %x, %mb : tensor<2x3xf32>
  %t = lru.stop_gradient %mb : tensor<2x3xf32>
  return %c, %t : tensor<2x3xf32>, tensor<2x3xf32>
}
