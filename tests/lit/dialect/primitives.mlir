// RUN: lruc-opt %s | lruc-opt | FileCheck %s

// Round trip of every primitive op of LRUPrimitiveOps.td.

// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x4xf32>, %[[Y:[a-z0-9]+]]: tensor<?x4xf32>, %[[Z:[a-z0-9]+]]: tensor<?x4xcomplex<f32>>)
func.func @elementwise(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>, %z: tensor<?x4xcomplex<f32>>) {
  // CHECK: lru.neg %[[X]] : tensor<?x4xf32>
  %0 = lru.neg %x : tensor<?x4xf32>
  // CHECK: lru.neg %[[Z]] : tensor<?x4xcomplex<f32>>
  %1 = lru.neg %z : tensor<?x4xcomplex<f32>>
  // CHECK: lru.exp %[[X]] : tensor<?x4xf32>
  %2 = lru.exp %x : tensor<?x4xf32>
  // CHECK: lru.exp %[[Z]] : tensor<?x4xcomplex<f32>>
  %3 = lru.exp %z : tensor<?x4xcomplex<f32>>
  // CHECK: lru.log %[[X]] : tensor<?x4xf32>
  %4 = lru.log %x : tensor<?x4xf32>
  // CHECK: lru.sigmoid %[[X]] : tensor<?x4xf32>
  %5 = lru.sigmoid %x : tensor<?x4xf32>
  // CHECK: lru.softplus %[[X]] : tensor<?x4xf32>
  %6 = lru.softplus %x : tensor<?x4xf32>
  // CHECK: lru.rsqrt %[[X]] : tensor<?x4xf32>
  %7 = lru.rsqrt %x : tensor<?x4xf32>
  // CHECK: lru.sqrt %[[X]] : tensor<?x4xf32>
  %8 = lru.sqrt %x : tensor<?x4xf32>
  // CHECK: lru.conj %[[Z]] : tensor<?x4xcomplex<f32>>
  %9 = lru.conj %z : tensor<?x4xcomplex<f32>>
  // CHECK: lru.step %[[X]] : tensor<?x4xf32>
  %10 = lru.step %x : tensor<?x4xf32>
  // CHECK: lru.not_nan %[[X]] : tensor<?x4xf32>
  %n0 = lru.not_nan %x : tensor<?x4xf32>
  // CHECK: lru.nan_to_zero %[[X]] : tensor<?x4xf32>
  %n1 = lru.nan_to_zero %x : tensor<?x4xf32>
  // CHECK: lru.masked %[[X]], %[[X]] : tensor<?x4xf32>
  %n2 = lru.masked %x, %x : tensor<?x4xf32>
  // CHECK: lru.gelu_grad %[[X]] : tensor<?x4xf32>
  %11 = lru.gelu_grad %x : tensor<?x4xf32>
  // CHECK: lru.gelu_grad %[[X]] approximate : tensor<?x4xf32>
  %12 = lru.gelu_grad %x approximate : tensor<?x4xf32>
  // CHECK: lru.sub %[[X]], %[[Y]] : tensor<?x4xf32>
  %13 = lru.sub %x, %y : tensor<?x4xf32>
  // CHECK: lru.mul %[[Z]], %[[Z]] : tensor<?x4xcomplex<f32>>
  %14 = lru.mul %z, %z : tensor<?x4xcomplex<f32>>
  // CHECK: lru.div %[[X]], %[[Y]] : tensor<?x4xf32>
  %15 = lru.div %x, %y : tensor<?x4xf32>
  // CHECK: lru.max %[[X]], %[[Y]] : tensor<?x4xf32>
  %16 = lru.max %x, %y : tensor<?x4xf32>
  // CHECK: %[[C:.*]] = lru.complex %[[X]], %[[Y]] : tensor<?x4xf32> -> tensor<?x4xcomplex<f32>>
  %17 = lru.complex %x, %y : tensor<?x4xf32> -> tensor<?x4xcomplex<f32>>
  // CHECK: lru.re %[[C]] : tensor<?x4xcomplex<f32>> -> tensor<?x4xf32>
  %18 = lru.re %17 : tensor<?x4xcomplex<f32>> -> tensor<?x4xf32>
  // CHECK: lru.im %[[C]] : tensor<?x4xcomplex<f32>> -> tensor<?x4xf32>
  %19 = lru.im %17 : tensor<?x4xcomplex<f32>> -> tensor<?x4xf32>
  return
}

// CHECK-LABEL: func.func @shapes(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[V:[a-z0-9]+]]: tensor<4xf32>, %[[S:[a-z0-9]+]]: tensor<f32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>, %[[INIT:[a-z0-9]+]]: tensor<?x4xf32>)
func.func @shapes(%x: tensor<?x16x4xf32>, %v: tensor<4xf32>, %s: tensor<f32>, %len: tensor<?xi32>, %init: tensor<?x4xf32>) {
  // CHECK: lru.broadcast %[[V]] like %[[X]] dims [2] : (tensor<4xf32>, tensor<?x16x4xf32>) -> tensor<?x16x4xf32>
  %0 = lru.broadcast %v like %x dims [2] : (tensor<4xf32>, tensor<?x16x4xf32>) -> tensor<?x16x4xf32>
  // CHECK: lru.broadcast %[[S]] like %[[X]] dims [] : (tensor<f32>, tensor<?x16x4xf32>) -> tensor<?x16x4xf32>
  %1 = lru.broadcast %s like %x dims [] : (tensor<f32>, tensor<?x16x4xf32>) -> tensor<?x16x4xf32>
  // CHECK: lru.reduce_sum %[[X]] dims [0, 1] : tensor<?x16x4xf32> -> tensor<4xf32>
  %2 = lru.reduce_sum %x dims [0, 1] : tensor<?x16x4xf32> -> tensor<4xf32>
  // CHECK: lru.reduce_sum %[[X]] dims [] : tensor<?x16x4xf32> -> tensor<?x16x4xf32>
  %3 = lru.reduce_sum %x dims [] : tensor<?x16x4xf32> -> tensor<?x16x4xf32>
  // CHECK: lru.concat %[[X]], %[[X]] dim 2 : (tensor<?x16x4xf32>, tensor<?x16x4xf32>) -> tensor<?x16x8xf32>
  %4 = lru.concat %x, %x dim 2 : (tensor<?x16x4xf32>, tensor<?x16x4xf32>) -> tensor<?x16x8xf32>
  // CHECK: lru.slice %[[X]] dim 1 offset 2 size 3 : tensor<?x16x4xf32> -> tensor<?x3x4xf32>
  %5 = lru.slice %x dim 1 offset 2 size 3 : tensor<?x16x4xf32> -> tensor<?x3x4xf32>
  // CHECK: %[[C:.*]] = lru.view %[[X]] : tensor<?x16x4xf32> -> tensor<?x16x2xcomplex<f32>>
  %vc = lru.view %x : tensor<?x16x4xf32> -> tensor<?x16x2xcomplex<f32>>
  // CHECK: lru.view %[[C]] : tensor<?x16x2xcomplex<f32>> -> tensor<?x64xf32>
  %vf = lru.view %vc : tensor<?x16x2xcomplex<f32>> -> tensor<?x64xf32>
  // CHECK: lru.shift %[[X]] : (tensor<?x16x4xf32>) -> tensor<?x16x4xf32>
  %6 = lru.shift %x : (tensor<?x16x4xf32>) -> tensor<?x16x4xf32>
  // CHECK: lru.shift %[[X]] init %[[INIT]] lengths %[[LEN]] reverse : (tensor<?x16x4xf32>, tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  %7 = lru.shift %x init %init lengths %len reverse : (tensor<?x16x4xf32>, tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
  return
}

// CHECK-LABEL: func.func @algebra(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[W:[a-z0-9]+]]: tensor<8x4xf32>, %[[WT:[a-z0-9]+]]: tensor<4x8xf32>, %[[G:[a-z0-9]+]]: tensor<?x16x8xf32>, %[[TOK:[a-z0-9]+]]: tensor<?x16xi32>)
func.func @algebra(%x: tensor<?x16x4xf32>, %w: tensor<8x4xf32>, %wt: tensor<4x8xf32>, %g: tensor<?x16x8xf32>, %tok: tensor<?x16xi32>) {
  // CHECK: lru.matmul nt %[[X]], %[[W]] : (tensor<?x16x4xf32>, tensor<8x4xf32>) -> tensor<?x16x8xf32>
  %0 = lru.matmul nt %x, %w : (tensor<?x16x4xf32>, tensor<8x4xf32>) -> tensor<?x16x8xf32>
  // CHECK: lru.matmul nn %[[X]], %[[WT]] : (tensor<?x16x4xf32>, tensor<4x8xf32>) -> tensor<?x16x8xf32>
  %1 = lru.matmul nn %x, %wt : (tensor<?x16x4xf32>, tensor<4x8xf32>) -> tensor<?x16x8xf32>
  // CHECK: lru.matmul tn %[[G]], %[[X]] : (tensor<?x16x8xf32>, tensor<?x16x4xf32>) -> tensor<8x4xf32>
  %2 = lru.matmul tn %g, %x : (tensor<?x16x8xf32>, tensor<?x16x4xf32>) -> tensor<8x4xf32>
  // CHECK: lru.gather %[[W]], %[[TOK]] : (tensor<8x4xf32>, tensor<?x16xi32>) -> tensor<?x16x4xf32>
  %3 = lru.gather %w, %tok : (tensor<8x4xf32>, tensor<?x16xi32>) -> tensor<?x16x4xf32>
  // CHECK: lru.scatter_add %[[X]], %[[TOK]] : (tensor<?x16x4xf32>, tensor<?x16xi32>) -> tensor<8x4xf32>
  %4 = lru.scatter_add %x, %tok : (tensor<?x16x4xf32>, tensor<?x16xi32>) -> tensor<8x4xf32>
  return
}

// CHECK-LABEL: func.func @sequences(
// CHECK-SAME: %[[L:[a-z0-9]+]]: tensor<8xcomplex<f32>>, %[[LT:[a-z0-9]+]]: tensor<?x16x8xcomplex<f32>>, %[[B:[a-z0-9]+]]: tensor<?x16x8xcomplex<f32>>, %[[H0:[a-z0-9]+]]: tensor<?x8xcomplex<f32>>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>, %[[R:[a-z0-9]+]]: tensor<?x16x8xf32>, %[[TAGS:[a-z0-9]+]]: tensor<?x16xi32>)
func.func @sequences(%l: tensor<8xcomplex<f32>>, %lt: tensor<?x16x8xcomplex<f32>>, %b: tensor<?x16x8xcomplex<f32>>, %h0: tensor<?x8xcomplex<f32>>, %len: tensor<?xi32>, %r: tensor<?x16x8xf32>, %tags: tensor<?x16xi32>) {
  // CHECK: lru.length_mask prefix %[[LEN]] : tensor<?xi32> -> tensor<?x16xf32>
  %0 = lru.length_mask prefix %len : tensor<?xi32> -> tensor<?x16xf32>
  // CHECK: lru.length_mask last %[[LEN]] : tensor<?xi32> -> tensor<?x16xf32>
  %1 = lru.length_mask last %len : tensor<?xi32> -> tensor<?x16xf32>
  // CHECK: lru.length_mask prefix %[[LEN]] scored %[[TAGS]] : tensor<?xi32>, tensor<?x16xi32> -> tensor<?x16xf32>
  %5 = lru.length_mask prefix %len scored %tags : tensor<?xi32>, tensor<?x16xi32> -> tensor<?x16xf32>
  // CHECK: lru.zero_padding %[[TAGS]], %[[LEN]] : tensor<?x16xi32>, tensor<?xi32>
  %6 = lru.zero_padding %tags, %len : tensor<?x16xi32>, tensor<?xi32>
  // CHECK: lru.scan %[[L]], %[[B]] : (tensor<8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xcomplex<f32>>
  %2 = lru.scan %l, %b : (tensor<8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xcomplex<f32>>
  // CHECK: lru.scan %[[LT]], %[[B]] init %[[H0]] lengths %[[LEN]] reverse : (tensor<?x16x8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>, tensor<?x8xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x8xcomplex<f32>>
  %3 = lru.scan %lt, %b init %h0 lengths %len reverse : (tensor<?x16x8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>, tensor<?x8xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x8xcomplex<f32>>
  // CHECK: lru.scan %[[R]], %[[R]] lengths %[[LEN]] : (tensor<?x16x8xf32>, tensor<?x16x8xf32>, tensor<?xi32>) -> tensor<?x16x8xf32>
  %4 = lru.scan %r, %r lengths %len : (tensor<?x16x8xf32>, tensor<?x16x8xf32>, tensor<?xi32>) -> tensor<?x16x8xf32>
  return
}

// CHECK-LABEL: func.func @losses(
// CHECK-SAME: %[[Z:[a-z0-9]+]]: tensor<?x10xf32>, %[[K:[a-z0-9]+]]: tensor<?xi32>, %[[G:[a-z0-9]+]]: tensor<?xf32>, %[[KEY:[a-z0-9]+]]: tensor<2xi64>)
func.func @losses(%z: tensor<?x10xf32>, %k: tensor<?xi32>, %g: tensor<?xf32>, %key: tensor<2xi64>) {
  // CHECK: lru.softmax_cross_entropy %[[Z]], %[[K]] : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  %0 = lru.softmax_cross_entropy %z, %k : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  // CHECK: lru.softmax_cross_entropy_grad %[[Z]], %[[K]], %[[G]] : (tensor<?x10xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?x10xf32>
  %1 = lru.softmax_cross_entropy_grad %z, %k, %g : (tensor<?x10xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?x10xf32>
  // CHECK: lru.softmax_cross_entropy %[[Z]], %[[K]] {ignore_negative} : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  %5 = lru.softmax_cross_entropy %z, %k {ignore_negative} : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  // CHECK: lru.softmax_cross_entropy_grad %[[Z]], %[[K]], %[[G]] {ignore_negative} : (tensor<?x10xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?x10xf32>
  %6 = lru.softmax_cross_entropy_grad %z, %k, %g {ignore_negative} : (tensor<?x10xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?x10xf32>
  // CHECK: lru.softmax_cross_entropy %[[Z]], %[[K]] {label_smoothing = 1.000000e-01 : f32} : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  %7 = lru.softmax_cross_entropy %z, %k {label_smoothing = 0.1 : f32} : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  // CHECK: lru.label_weight %[[K]] weights [1.000000e+00, 0.000000e+00, 2.500000e+00] : tensor<?xi32> -> tensor<?xf32>
  %8 = lru.label_weight %k weights [1.0, 0.0, 2.5] : tensor<?xi32> -> tensor<?xf32>
  // CHECK: lru.dropout_mask %[[Z]], %[[KEY]] rate 1.000000e-01 site 7 : tensor<?x10xf32>, tensor<2xi64>
  %2 = lru.dropout_mask %z, %key rate 1.000000e-01 site 7 : tensor<?x10xf32>, tensor<2xi64>
  return
}
