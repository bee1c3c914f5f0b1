// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-recompute{min-gap=4 states=true states-where-smaller=false}))' | FileCheck %s
// These functions hold one LRU each: its states are alive at the backward
// part's peak either way, so recomputing them only where the workspace
// shrinks (the default) keeps them, as without `states`.
// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-recompute{min-gap=4 states=true}))' | FileCheck %s --check-prefix=KEEP
// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-recompute{min-gap=4}))' | FileCheck %s --check-prefix=KEEP

// The LRU's states %x are read by the forward pass's C product and, after
// a gap, by the C gradient (through the same view) and the reverse scan.
// With states, both late reads read a copy: B u computed again from %u and
// %w (alive: the B gradient and the u gradient read them late), then the
// scan; %x's buffer is free in between. Without, one scan.
// CHECK-LABEL: func.func @states(
// CHECK-SAME: %[[U:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[W:[a-z0-9]+]]: tensor<6x4xf32>
// CHECK: lru.matmul nt %[[U]], %[[W]]
// CHECK: lru.scan
// CHECK-COUNT-4: lru.sqrt
// CHECK: %[[B2:.*]] = lru.matmul nt %[[U]], %[[W]]
// CHECK-NEXT: %[[BV2:.*]] = lru.view %[[B2]]
// CHECK-NEXT: %[[X2:.*]] = lru.fused(%{{.*}}, %[[BV2]], %{{.*}})
// CHECK: lru.scan
// CHECK: %[[XV2:.*]] = lru.view %[[X2]]
// CHECK-NEXT: lru.matmul tn %{{.*}}, %[[XV2]]
// CHECK: lru.fused(%{{.*}}, %{{.*}}, %{{.*}}, %[[X2]])
// CHECK: lru.scan {{.*}} reverse
// KEEP-LABEL: func.func @states(
// KEEP-SAME: %[[U:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[W:[a-z0-9]+]]: tensor<6x4xf32>
// KEEP-COUNT-1: lru.matmul nt %[[U]], %[[W]]
// KEEP-NOT: lru.matmul nt %[[U]], %[[W]]
// KEEP-COUNT-2: lru.scan
// KEEP-NOT: lru.scan
func.func @states(%u: tensor<?x16x4xf32>, %w: tensor<6x4xf32>, %c: tensor<4x6xf32>, %lambda: tensor<3xcomplex<f32>>, %lengths: tensor<?xi32>, %g: tensor<?x16x4xf32>) -> (tensor<?x16x4xf32>, tensor<4x6xf32>, tensor<?x16x3xcomplex<f32>>, tensor<6x4xf32>, tensor<?x16x4xf32>) {
  %b = lru.matmul nt %u, %w : (tensor<?x16x4xf32>, tensor<6x4xf32>) -> tensor<?x16x6xf32>
  %bv = lru.view %b : tensor<?x16x6xf32> -> tensor<?x16x3xcomplex<f32>>
  %x = lru.fused(%lambda, %bv, %lengths) : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>> {
  ^bb0(%l: tensor<3xcomplex<f32>>, %bb: tensor<?x16x3xcomplex<f32>>, %n: tensor<?xi32>):
    %s = lru.scan %l, %bb lengths %n : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>>
    lru.yield %s : tensor<?x16x3xcomplex<f32>>
  }
  %xv = lru.view %x : tensor<?x16x3xcomplex<f32>> -> tensor<?x16x6xf32>
  %y = lru.matmul nt %xv, %c : (tensor<?x16x6xf32>, tensor<4x6xf32>) -> tensor<?x16x4xf32>
  %s1 = lru.sqrt %y : tensor<?x16x4xf32>
  %s2 = lru.sqrt %s1 : tensor<?x16x4xf32>
  %s3 = lru.sqrt %s2 : tensor<?x16x4xf32>
  %s4 = lru.sqrt %s3 : tensor<?x16x4xf32>
  %dc = lru.matmul tn %g, %xv : (tensor<?x16x4xf32>, tensor<?x16x6xf32>) -> tensor<4x6xf32>
  %gx = lru.matmul nn %g, %c : (tensor<?x16x4xf32>, tensor<4x6xf32>) -> tensor<?x16x6xf32>
  %gxv = lru.view %gx : tensor<?x16x6xf32> -> tensor<?x16x3xcomplex<f32>>
  %gb = lru.fused(%lambda, %gxv, %lengths, %x) : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>, tensor<?x16x3xcomplex<f32>>) -> tensor<?x16x3xcomplex<f32>> {
  ^bb0(%l: tensor<3xcomplex<f32>>, %gg: tensor<?x16x3xcomplex<f32>>, %n: tensor<?xi32>, %xx: tensor<?x16x3xcomplex<f32>>):
    %p = lru.shift %xx lengths %n : (tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>>
    %r = lru.scan %l, %gg lengths %n reverse : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>>
    %m = lru.mul %p, %r : tensor<?x16x3xcomplex<f32>>
    lru.yield %m : tensor<?x16x3xcomplex<f32>>
  }
  %gbv = lru.view %gb : tensor<?x16x3xcomplex<f32>> -> tensor<?x16x6xf32>
  %dw = lru.matmul tn %gbv, %u : (tensor<?x16x6xf32>, tensor<?x16x4xf32>) -> tensor<6x4xf32>
  %du = lru.matmul nn %gbv, %w : (tensor<?x16x6xf32>, tensor<6x4xf32>) -> tensor<?x16x4xf32>
  return %s4, %dc, %gb, %dw, %du : tensor<?x16x4xf32>, tensor<4x6xf32>, tensor<?x16x3xcomplex<f32>>, tensor<6x4xf32>, tensor<?x16x4xf32>
}

// -----

// A bidirectional LRU: two scans of one B u, the later scan's states read
// first. One copy of the product, before the first late read, serves both.
// CHECK-LABEL: func.func @bidirectional(
// CHECK-SAME: %[[U:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[W:[a-z0-9]+]]: tensor<6x4xf32>
// CHECK: lru.matmul nt %[[U]], %[[W]]
// CHECK-COUNT-4: lru.sqrt
// CHECK: lru.matmul nt %[[U]], %[[W]]
// CHECK-NOT: lru.matmul nt %[[U]], %[[W]]
// CHECK: lru.scan {{.*}} reverse
// CHECK: lru.matmul tn
// CHECK: lru.scan
// CHECK: lru.matmul tn
// KEEP-LABEL: func.func @bidirectional(
func.func @bidirectional(%u: tensor<?x16x4xf32>, %w: tensor<6x4xf32>, %c: tensor<4x6xf32>, %lambda: tensor<3xcomplex<f32>>, %lengths: tensor<?xi32>, %g: tensor<?x16x4xf32>) -> (tensor<?x16x4xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x4xf32>, tensor<?x16x6xf32>) {
  %b = lru.matmul nt %u, %w : (tensor<?x16x4xf32>, tensor<6x4xf32>) -> tensor<?x16x6xf32>
  %bv = lru.view %b : tensor<?x16x6xf32> -> tensor<?x16x3xcomplex<f32>>
  %x = lru.fused(%lambda, %bv, %lengths) : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>> {
  ^bb0(%l: tensor<3xcomplex<f32>>, %bb: tensor<?x16x3xcomplex<f32>>, %n: tensor<?xi32>):
    %s = lru.scan %l, %bb lengths %n : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>>
    lru.yield %s : tensor<?x16x3xcomplex<f32>>
  }
  %z = lru.fused(%lambda, %bv, %lengths) : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>> {
  ^bb0(%l: tensor<3xcomplex<f32>>, %bb: tensor<?x16x3xcomplex<f32>>, %n: tensor<?xi32>):
    %s = lru.scan %l, %bb lengths %n reverse : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x3xcomplex<f32>>
    lru.yield %s : tensor<?x16x3xcomplex<f32>>
  }
  %xv = lru.view %x : tensor<?x16x3xcomplex<f32>> -> tensor<?x16x6xf32>
  %zv = lru.view %z : tensor<?x16x3xcomplex<f32>> -> tensor<?x16x6xf32>
  %y = lru.matmul nt %xv, %c : (tensor<?x16x6xf32>, tensor<4x6xf32>) -> tensor<?x16x4xf32>
  %y2 = lru.matmul nt %zv, %c : (tensor<?x16x6xf32>, tensor<4x6xf32>) -> tensor<?x16x4xf32>
  %y3 = lru.add %y, %y2 : tensor<?x16x4xf32>
  %s1 = lru.sqrt %y3 : tensor<?x16x4xf32>
  %s2 = lru.sqrt %s1 : tensor<?x16x4xf32>
  %s3 = lru.sqrt %s2 : tensor<?x16x4xf32>
  %s4 = lru.sqrt %s3 : tensor<?x16x4xf32>
  %dc2 = lru.matmul tn %g, %zv : (tensor<?x16x4xf32>, tensor<?x16x6xf32>) -> tensor<4x6xf32>
  %dc = lru.matmul tn %g, %xv : (tensor<?x16x4xf32>, tensor<?x16x6xf32>) -> tensor<4x6xf32>
  %dw = lru.matmul tn %g, %u : (tensor<?x16x4xf32>, tensor<?x16x4xf32>) -> tensor<4x4xf32>
  %gw = lru.matmul nt %g, %w : (tensor<?x16x4xf32>, tensor<6x4xf32>) -> tensor<?x16x6xf32>
  return %s4, %dc, %dc2, %dw, %gw : tensor<?x16x4xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x4xf32>, tensor<?x16x6xf32>
}

// -----

// The product's input %v is gone by the late read (its only reader is the
// product): computing B u again would keep %v instead of %x, so %x is kept.
// CHECK-LABEL: func.func @product_input_dead(
// CHECK-COUNT-1: lru.scan
// CHECK-NOT: lru.scan
func.func @product_input_dead(%u: tensor<?x16x4xf32>, %w: tensor<6x4xf32>, %c: tensor<4x6xf32>, %lambda: tensor<3xcomplex<f32>>, %g: tensor<?x16x4xf32>) -> (tensor<?x16x4xf32>, tensor<4x6xf32>) {
  %v = lru.exp %u : tensor<?x16x4xf32>
  %b = lru.matmul nt %v, %w : (tensor<?x16x4xf32>, tensor<6x4xf32>) -> tensor<?x16x6xf32>
  %bv = lru.view %b : tensor<?x16x6xf32> -> tensor<?x16x3xcomplex<f32>>
  %x = lru.fused(%lambda, %bv) : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>) -> tensor<?x16x3xcomplex<f32>> {
  ^bb0(%l: tensor<3xcomplex<f32>>, %bb: tensor<?x16x3xcomplex<f32>>):
    %s = lru.scan %l, %bb : (tensor<3xcomplex<f32>>, tensor<?x16x3xcomplex<f32>>) -> tensor<?x16x3xcomplex<f32>>
    lru.yield %s : tensor<?x16x3xcomplex<f32>>
  }
  %xv = lru.view %x : tensor<?x16x3xcomplex<f32>> -> tensor<?x16x6xf32>
  %y = lru.matmul nt %xv, %c : (tensor<?x16x6xf32>, tensor<4x6xf32>) -> tensor<?x16x4xf32>
  %s1 = lru.sqrt %y : tensor<?x16x4xf32>
  %s2 = lru.sqrt %s1 : tensor<?x16x4xf32>
  %s3 = lru.sqrt %s2 : tensor<?x16x4xf32>
  %s4 = lru.sqrt %s3 : tensor<?x16x4xf32>
  %dc = lru.matmul tn %g, %xv : (tensor<?x16x4xf32>, tensor<?x16x6xf32>) -> tensor<4x6xf32>
  return %s4, %dc : tensor<?x16x4xf32>, tensor<4x6xf32>
}
