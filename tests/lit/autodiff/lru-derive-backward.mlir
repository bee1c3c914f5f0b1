// RUN: lruc-opt %s -split-input-file -lru-derive-backward | FileCheck %s

// Elementwise rules chain; the loss adjoint starts at 1.
// CHECK-LABEL: func.func @backward
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32>)
// CHECK-SAME: lru.gradients = ["w"]
// CHECK: %[[W:.*]] = lru.param "w"
// CHECK: %[[E:.*]] = lru.exp %[[W]]
// CHECK: %[[T:.*]] = lru.tanh %[[E]]
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DT:.*]] = lru.broadcast %[[ONE]] like %[[T]] dims []
// CHECK: %[[SQ:.*]] = lru.mul %[[T]], %[[T]]
// CHECK: %[[OM:.*]] = lru.sub %{{.*}}, %[[SQ]]
// CHECK: %[[DE:.*]] = lru.mul %[[DT]], %[[OM]]
// CHECK: %[[DW:.*]] = lru.mul %[[DE]], %[[E]]
// CHECK: return %{{.*}}, %[[DW]]
func.func @forward_train() -> tensor<f32> {
  %w = lru.param "w" init(normal) {std = 1.0 : f64} group(decay) : tensor<3xf32>
  %e = lru.exp %w : tensor<3xf32>
  %t = lru.tanh %e : tensor<3xf32>
  %l = lru.reduce_sum %t dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// x W^T: dW = dy^T x (tn); dx = dy W (nn) is not built, x being an input.
// A value used twice sums its adjoints.
// CHECK-LABEL: func.func @backward
// CHECK: %[[W:.*]] = lru.param "w"
// CHECK: %[[Y:.*]] = lru.matmul nt %[[X:[^,]*]], %[[W]]
// CHECK: arith.constant dense<1.000000e+00>
// CHECK: %[[DY1:.*]] = lru.mul %{{.*}}, %[[Y]]
// CHECK: %[[DY2:.*]] = lru.mul %{{.*}}, %[[Y]]
// CHECK: %[[DY:.*]] = lru.add %[[DY1]], %[[DY2]]
// CHECK-NOT: lru.matmul nn
// CHECK: %[[DW:.*]] = lru.matmul tn %[[DY]], %[[X]]
// CHECK: return %{{.*}}, %[[DW]]
func.func @forward_train(%x: tensor<?x3xf32>) -> tensor<f32> {
  %w = lru.param "w" init(normal) {std = 1.0 : f64} group(decay) : tensor<2x3xf32>
  %y = lru.matmul nt %x, %w : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x2xf32>
  %z = lru.mul %y, %y : tensor<?x2xf32>
  %l = lru.reduce_sum %z dims [0, 1] : tensor<?x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The scan's adjoint: a reverse scan with conj(lambda) over the same
// lengths; d lambda sums conj(x_{t-1}) * g over batch and time.
// CHECK-LABEL: func.func @backward
// CHECK: %[[LAM:.*]] = lru.exp %{{.*}} : tensor<3xcomplex<f32>>
// CHECK: %[[X:.*]] = lru.scan %[[LAM]], %[[B:.*]] lengths %[[LEN:[^ ]*]] :
// CHECK: %[[CL:.*]] = lru.conj %[[LAM]]
// CHECK: %[[G:.*]] = lru.scan %[[CL]], %{{.*}} lengths %[[LEN]] reverse
// CHECK: %[[PREV:.*]] = lru.shift %[[X]] lengths %[[LEN]] :
// CHECK: %[[CP:.*]] = lru.conj %[[PREV]]
// CHECK: %[[DL:.*]] = lru.mul %[[CP]], %[[G]]
// CHECK: lru.reduce_sum %[[DL]] dims [0, 1]
func.func @forward_train(%u: tensor<?x4x3xf32>, %lengths: tensor<?xi32>) -> tensor<f32> {
  %nu = lru.param "nu" init(lru_nu) {r_min = 0.5 : f64, r_max = 0.9 : f64} group(recurrent) : tensor<3xf32>
  %theta = lru.param "theta" init(lru_theta) {max_phase = 1.0 : f64} group(recurrent) : tensor<3xf32>
  %e = lru.exp %nu : tensor<3xf32>
  %n = lru.neg %e : tensor<3xf32>
  %th = lru.exp %theta : tensor<3xf32>
  %c = lru.complex %n, %th : tensor<3xf32> -> tensor<3xcomplex<f32>>
  %lam = lru.exp %c : tensor<3xcomplex<f32>>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %zu = lru.broadcast %zero like %u dims [] : (tensor<f32>, tensor<?x4x3xf32>) -> tensor<?x4x3xf32>
  %b = lru.complex %u, %zu : tensor<?x4x3xf32> -> tensor<?x4x3xcomplex<f32>>
  %x = lru.scan %lam, %b lengths %lengths : (tensor<3xcomplex<f32>>, tensor<?x4x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x4x3xcomplex<f32>>
  %r = lru.re %x : tensor<?x4x3xcomplex<f32>> -> tensor<?x4x3xf32>
  %l = lru.reduce_sum %r dims [0, 1, 2] : tensor<?x4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A time-varying lambda: the reverse scan multiplies by conj(lambda_{t+1})
// (a reverse shift of lambda), and d lambda stays per step.
// CHECK-LABEL: func.func @backward
// CHECK: %[[X:.*]] = lru.scan %[[LAM:.*]], %{{.*}} : (tensor<?x4x3xf32>, tensor<?x4x3xf32>) -> tensor<?x4x3xf32>
// CHECK: %[[NEXT:.*]] = lru.shift %[[LAM]] reverse
// CHECK: %[[G:.*]] = lru.scan %[[NEXT]], %{{.*}} reverse
// CHECK: %[[PREV:.*]] = lru.shift %[[X]] :
// CHECK: %[[DL:.*]] = lru.mul %[[PREV]], %[[G]]
// CHECK-NOT: lru.reduce_sum %[[DL]]
// CHECK: lru.mul %[[DL]]
func.func @forward_train(%u: tensor<?x4x3xf32>) -> tensor<f32> {
  %w = lru.param "w" init(normal) {std = 1.0 : f64} group(decay) : tensor<3x3xf32>
  %a = lru.matmul nt %u, %w : (tensor<?x4x3xf32>, tensor<3x3xf32>) -> tensor<?x4x3xf32>
  %lam = lru.sigmoid %a : tensor<?x4x3xf32>
  %x = lru.scan %lam, %u : (tensor<?x4x3xf32>, tensor<?x4x3xf32>) -> tensor<?x4x3xf32>
  %l = lru.reduce_sum %x dims [0, 1, 2] : tensor<?x4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Integer inputs and running statistics are not differentiated: the table
// gets a scatter_add, the tokens nothing, the running mean no gradient.
// CHECK-LABEL: func.func @backward
// CHECK-SAME: -> (tensor<f32>, tensor<8x3xf32>)
// CHECK-SAME: lru.gradients = ["table"]
// CHECK: %[[D:.*]] = lru.scatter_add %{{.*}}, %arg0
// CHECK: return %{{.*}}, %[[D]]
func.func @forward_train(%tokens: tensor<?x4xi32>) -> (tensor<f32>, tensor<3xf32>) {
  %table = lru.param "table" init(normal) {std = 1.0 : f64} group(decay) : tensor<8x3xf32>
  %mean = lru.param "running_mean" init(zeros) group(state) : tensor<3xf32>
  %x = lru.gather %table, %tokens : (tensor<8x3xf32>, tensor<?x4xi32>) -> tensor<?x4x3xf32>
  %m = lru.broadcast %mean like %x dims [2] : (tensor<3xf32>, tensor<?x4x3xf32>) -> tensor<?x4x3xf32>
  %y = lru.sub %x, %m : tensor<?x4x3xf32>
  %l = lru.reduce_sum %y dims [0, 1, 2] : tensor<?x4x3xf32> -> tensor<f32>
  return %l, %mean : tensor<f32>, tensor<3xf32>
}

// -----

// Dropout's adjoint regenerates the same mask: same key, rate and site.
// CHECK-LABEL: func.func @backward
// CHECK: lru.dropout_mask %{{.*}}, %arg1 rate 2.500000e-01 site 3
// CHECK: lru.dropout_mask %{{.*}}, %arg1 rate 2.500000e-01 site 3
func.func @forward_train(%x: tensor<?x3xf32>, %key: tensor<2xi64>) -> tensor<f32> {
  %w = lru.param "w" init(ones) group(decay) : tensor<3xf32>
  %wb = lru.broadcast %w like %x dims [1] : (tensor<3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %y = lru.mul %x, %wb : tensor<?x3xf32>
  %d = lru.dropout_mask %y, %key rate 0.25 site 3 : tensor<?x3xf32>, tensor<2xi64>
  %l = lru.reduce_sum %d dims [0, 1] : tensor<?x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
