// RUN: lruc-opt %s -lru-fuse-elementwise -split-input-file | FileCheck %s

// BatchNorm's statistics: the masked input and its sum over every dim but
// the last are one group; the product is not stored when only the sum
// reads it.
// CHECK-LABEL: func.func @statistics
// CHECK: %[[G:.*]] = lru.fused(%arg1, %arg0) : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<4xf32> {
// CHECK: lru.mul
// CHECK: %[[S:.*]] = lru.reduce_sum %{{.*}} dims [0, 1] : tensor<?x5x4xf32> -> tensor<4xf32>
// CHECK-NEXT: lru.yield %[[S]] : tensor<4xf32>
// CHECK: return %[[G]]
func.func @statistics(%x: tensor<?x5x4xf32>, %mask: tensor<?x5xf32>) -> tensor<4xf32> {
  %b = lru.broadcast %mask like %x dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
  %m = lru.mul %x, %b : tensor<?x5x4xf32>
  %s = lru.reduce_sum %m dims [0, 1] : tensor<?x5x4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A value the group sums is still stored when something else reads it.
// CHECK-LABEL: func.func @also_read
// CHECK: %[[G:.*]]:2 = lru.fused(%arg0) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>)
// CHECK: %[[E:.*]] = lru.exp
// CHECK: %[[N:.*]] = lru.neg %[[E]]
// CHECK: %[[S:.*]] = lru.reduce_sum %[[N]] dims [0]
// CHECK: lru.yield %[[E]], %[[S]]
// CHECK: return %[[G]]#0, %[[G]]#1
func.func @also_read(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>) {
  %e = lru.exp %x : tensor<?x4xf32>
  %n = lru.neg %e : tensor<?x4xf32>
  %s = lru.reduce_sum %n dims [0] : tensor<?x4xf32> -> tensor<4xf32>
  return %e, %s : tensor<?x4xf32>, tensor<4xf32>
}

// -----

// Centering reads the mean back: the sum is ready only after the whole
// loop, so what reads it is a second group, not a member of the first.
// CHECK-LABEL: func.func @centered
// CHECK: %[[G:.*]]:2 = lru.fused(%arg0) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>)
// CHECK: lru.reduce_sum
// CHECK: %[[MEAN:.*]] = lru.mul %[[G]]#1, %arg1
// CHECK: lru.fused(%[[MEAN]], %arg0, %[[G]]#0)
// CHECK-NOT: lru.reduce_sum
// CHECK: return
func.func @centered(%x: tensor<?x4xf32>, %scale: tensor<4xf32>) -> tensor<?x4xf32> {
  %e = lru.exp %x : tensor<?x4xf32>
  %s = lru.reduce_sum %e dims [0] : tensor<?x4xf32> -> tensor<4xf32>
  %mean = lru.mul %s, %scale : tensor<4xf32>
  %b = lru.broadcast %mean like %x dims [1] : (tensor<4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %c = lru.sub %e, %b : tensor<?x4xf32>
  %t = lru.tanh %c : tensor<?x4xf32>
  return %t : tensor<?x4xf32>
}

// -----

// Must not join: a sum that keeps a dim other than the last (mean pooling
// over time), and a sum of a value no group computes.
// CHECK-LABEL: func.func @not_joined
// CHECK: %[[G:.*]] = lru.fused(%arg0) : (tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
// CHECK-NOT: lru.reduce_sum
// CHECK: }
// CHECK: lru.reduce_sum %[[G]] dims [1] : tensor<?x5x4xf32> -> tensor<?x4xf32>
// CHECK: lru.reduce_sum %arg0 dims [0, 1]
func.func @not_joined(%x: tensor<?x5x4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>) {
  %e = lru.exp %x : tensor<?x5x4xf32>
  %n = lru.neg %e : tensor<?x5x4xf32>
  %pool = lru.reduce_sum %n dims [1] : tensor<?x5x4xf32> -> tensor<?x4xf32>
  %raw = lru.reduce_sum %x dims [0, 1] : tensor<?x5x4xf32> -> tensor<4xf32>
  return %pool, %raw : tensor<?x4xf32>, tensor<4xf32>
}

// -----

// A gate's gradient summed along a scan: the sum joins the scan's group
// (a backend sums each sequence's steps, then the sequences).
// CHECK-LABEL: func.func @along_scan
// CHECK: %[[G:.*]]:2 = lru.fused
// CHECK: lru.scan
// CHECK: lru.reduce_sum %{{.*}} dims [0, 1] : tensor<?x6x4xcomplex<f32>> -> tensor<4xcomplex<f32>>
// CHECK: return %[[G]]#0, %[[G]]#1
func.func @along_scan(%lambda: tensor<4xcomplex<f32>>, %re: tensor<?x6x4xf32>,
                      %im: tensor<?x6x4xf32>, %lengths: tensor<?xi32>)
    -> (tensor<?x6x4xcomplex<f32>>, tensor<4xcomplex<f32>>) {
  %b = lru.complex %re, %im : tensor<?x6x4xf32> -> tensor<?x6x4xcomplex<f32>>
  %h = lru.scan %lambda, %b lengths %lengths : (tensor<4xcomplex<f32>>, tensor<?x6x4xcomplex<f32>>, tensor<?xi32>) -> tensor<?x6x4xcomplex<f32>>
  %p = lru.mul %h, %b : tensor<?x6x4xcomplex<f32>>
  %s = lru.reduce_sum %p dims [0, 1] : tensor<?x6x4xcomplex<f32>> -> tensor<4xcomplex<f32>>
  return %h, %s : tensor<?x6x4xcomplex<f32>>, tensor<4xcomplex<f32>>
}

// -----

// A sum still joins a group that an op of another shape closed before it
// (the group is built at its last member, before the sum's readers).
// CHECK-LABEL: func.func @closed_group
// CHECK: %[[G:.*]]:2 = lru.fused(%arg0) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>)
// CHECK: lru.reduce_sum
// CHECK: lru.matmul nt %[[G]]#0
// CHECK: return {{.*}}%[[G]]#1
func.func @closed_group(%x: tensor<?x4xf32>, %w: tensor<3x4xf32>) -> (tensor<?x3xf32>, tensor<4xf32>) {
  %e = lru.exp %x : tensor<?x4xf32>
  %n = lru.neg %e : tensor<?x4xf32>
  %y = lru.matmul nt %n, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  %s = lru.reduce_sum %n dims [0] : tensor<?x4xf32> -> tensor<4xf32>
  return %y, %s : tensor<?x3xf32>, tensor<4xf32>
}

// -----

// A sum of every element (a mean's total, a mask's count) is a sum over the
// leading dims, keeping the last, then a sum of that row: the first joins
// the group of what it sums (a loop over all rows at once, in chunks), where
// one sum of everything would be one long loop. A sum that keeps a dim, and
// one of a vector, stay as they are.
// CHECK-LABEL: func.func @full
// CHECK: %[[G:.*]] = lru.fused(%arg0) : (tensor<?x5x4xf32>) -> tensor<4xf32> {
// CHECK: lru.exp
// CHECK: lru.reduce_sum %{{.*}} dims [0, 1] : tensor<?x5x4xf32> -> tensor<4xf32>
// CHECK: %[[T:.*]] = lru.reduce_sum %[[G]] dims [0] : tensor<4xf32> -> tensor<f32>
// CHECK: %[[R:.*]] = lru.reduce_sum %arg1 dims [1] : tensor<?x5xf32> -> tensor<?xf32>
// CHECK: %[[V:.*]] = lru.reduce_sum %[[R]] dims [0] : tensor<?xf32> -> tensor<f32>
// CHECK: return %[[T]], %[[V]]
func.func @full(%x: tensor<?x5x4xf32>, %mask: tensor<?x5xf32>) -> (tensor<f32>, tensor<f32>) {
  %e = lru.exp %x : tensor<?x5x4xf32>
  %s = lru.reduce_sum %e dims [0, 1, 2] : tensor<?x5x4xf32> -> tensor<f32>
  %r = lru.reduce_sum %mask dims [1] : tensor<?x5xf32> -> tensor<?xf32>
  %v = lru.reduce_sum %r dims [0] : tensor<?xf32> -> tensor<f32>
  return %s, %v : tensor<f32>, tensor<f32>
}
