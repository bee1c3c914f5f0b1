// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-recompute{min-gap=4}))' | FileCheck %s

// %e is read at once and again after a gap; its input is an argument: a
// copy just before the late read takes its place there.
// CHECK-LABEL: func.func @late_read(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<?x4xf32>
// CHECK: %[[E:.*]] = lru.exp %[[A]]
// CHECK: lru.neg %[[E]]
// CHECK-COUNT-4: lru.sqrt
// CHECK: %[[COPY:.*]] = lru.exp %[[A]]
// CHECK-NEXT: lru.add %{{.*}}, %[[COPY]]
func.func @late_read(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %e = lru.exp %a : tensor<?x4xf32>
  %n = lru.neg %e : tensor<?x4xf32>
  %s1 = lru.sqrt %n : tensor<?x4xf32>
  %s2 = lru.sqrt %s1 : tensor<?x4xf32>
  %s3 = lru.sqrt %s2 : tensor<?x4xf32>
  %s4 = lru.sqrt %s3 : tensor<?x4xf32>
  %r = lru.add %s4, %e : tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// Its input %n dies before the late read: recomputing would keep %n alive
// instead of %e, so %e is kept.
// CHECK-LABEL: func.func @input_dead(
// CHECK-COUNT-1: lru.exp
// CHECK-NOT: lru.exp
func.func @input_dead(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %n = lru.neg %a : tensor<?x4xf32>
  %e = lru.exp %n : tensor<?x4xf32>
  %s1 = lru.sqrt %e : tensor<?x4xf32>
  %s2 = lru.sqrt %s1 : tensor<?x4xf32>
  %s3 = lru.sqrt %s2 : tensor<?x4xf32>
  %s4 = lru.sqrt %s3 : tensor<?x4xf32>
  %r = lru.add %s4, %e : tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// Reads closer together than min-gap, and values without a batch dim
// (small), are kept.
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-2: lru.exp
// CHECK-NOT: lru.exp
func.func @kept(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>) {
  %e = lru.exp %a : tensor<?x4xf32>
  %n = lru.neg %e : tensor<?x4xf32>
  %s1 = lru.sqrt %n : tensor<?x4xf32>
  %r = lru.add %s1, %e : tensor<?x4xf32>
  %f = lru.exp %b : tensor<4xf32>
  %m = lru.neg %f : tensor<4xf32>
  %t1 = lru.sqrt %m : tensor<4xf32>
  %t2 = lru.sqrt %t1 : tensor<4xf32>
  %t3 = lru.sqrt %t2 : tensor<4xf32>
  %t4 = lru.sqrt %t3 : tensor<4xf32>
  %q = lru.add %t4, %f : tensor<4xf32>
  return %r, %q : tensor<?x4xf32>, tensor<4xf32>
}

// -----

// A chain: the late copy of %g reads the late copy of %e.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<?x4xf32>
// CHECK: lru.exp %[[A]]
// CHECK: lru.exp %{{.*}}
// CHECK-COUNT-4: lru.sqrt
// CHECK: %[[E2:.*]] = lru.exp %[[A]]
// CHECK: %[[G2:.*]] = lru.exp %[[E2]]
// CHECK: lru.add %[[E2]], %[[G2]]
func.func @chain(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %e = lru.exp %a : tensor<?x4xf32>
  %g = lru.exp %e : tensor<?x4xf32>
  %s1 = lru.sqrt %g : tensor<?x4xf32>
  %s2 = lru.sqrt %s1 : tensor<?x4xf32>
  %s3 = lru.sqrt %s2 : tensor<?x4xf32>
  %s4 = lru.sqrt %s3 : tensor<?x4xf32>
  %r = lru.add %e, %g : tensor<?x4xf32>
  %o = lru.add %r, %s4 : tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// -----

// A scan's group yields the states (kept: read at the end) and their real
// part (read early and late): the late reads get the real part again from
// the kept states, in a group of its own; the scan is not run again.
// CHECK-LABEL: func.func @slice_of_a_group(
// CHECK: %[[G:.*]]:2 = lru.fused
// CHECK: lru.scan
// CHECK-COUNT-4: lru.sqrt
// CHECK: %[[R:.*]] = lru.fused(%[[G]]#0) : (tensor<?x4x2xcomplex<f32>>) -> tensor<?x4x2xf32> {
// CHECK-NOT: lru.scan
// CHECK: lru.re
// CHECK: lru.yield
// CHECK: lru.add %{{.*}}, %[[R]]
func.func @slice_of_a_group(%l: tensor<2xcomplex<f32>>, %b: tensor<?x4x2xcomplex<f32>>) -> (tensor<?x4x2xf32>, tensor<?x4x2xcomplex<f32>>) {
  %g:2 = lru.fused(%l, %b) : (tensor<2xcomplex<f32>>, tensor<?x4x2xcomplex<f32>>) -> (tensor<?x4x2xcomplex<f32>>, tensor<?x4x2xf32>) {
  ^bb0(%x: tensor<2xcomplex<f32>>, %y: tensor<?x4x2xcomplex<f32>>):
    %s = lru.scan %x, %y : (tensor<2xcomplex<f32>>, tensor<?x4x2xcomplex<f32>>) -> tensor<?x4x2xcomplex<f32>>
    %r = lru.re %s : tensor<?x4x2xcomplex<f32>> -> tensor<?x4x2xf32>
    lru.yield %s, %r : tensor<?x4x2xcomplex<f32>>, tensor<?x4x2xf32>
  }
  %n = lru.neg %g#1 : tensor<?x4x2xf32>
  %s1 = lru.sqrt %n : tensor<?x4x2xf32>
  %s2 = lru.sqrt %s1 : tensor<?x4x2xf32>
  %s3 = lru.sqrt %s2 : tensor<?x4x2xf32>
  %s4 = lru.sqrt %s3 : tensor<?x4x2xf32>
  %a = lru.add %s4, %g#1 : tensor<?x4x2xf32>
  return %a, %g#0 : tensor<?x4x2xf32>, tensor<?x4x2xcomplex<f32>>
}

// -----

// The same group whose states are not kept: getting the real part back
// would mean running the scan again, so it is kept instead.
// CHECK-LABEL: func.func @scan_not_rerun(
// CHECK-COUNT-1: lru.scan
// CHECK-NOT: lru.scan
func.func @scan_not_rerun(%l: tensor<2xcomplex<f32>>, %b: tensor<?x4x2xcomplex<f32>>) -> tensor<?x4x2xf32> {
  %g = lru.fused(%l, %b) : (tensor<2xcomplex<f32>>, tensor<?x4x2xcomplex<f32>>) -> tensor<?x4x2xf32> {
  ^bb0(%x: tensor<2xcomplex<f32>>, %y: tensor<?x4x2xcomplex<f32>>):
    %s = lru.scan %x, %y : (tensor<2xcomplex<f32>>, tensor<?x4x2xcomplex<f32>>) -> tensor<?x4x2xcomplex<f32>>
    %r = lru.re %s : tensor<?x4x2xcomplex<f32>> -> tensor<?x4x2xf32>
    lru.yield %r : tensor<?x4x2xf32>
  }
  %n = lru.neg %g : tensor<?x4x2xf32>
  %s1 = lru.sqrt %n : tensor<?x4x2xf32>
  %s2 = lru.sqrt %s1 : tensor<?x4x2xf32>
  %s3 = lru.sqrt %s2 : tensor<?x4x2xf32>
  %s4 = lru.sqrt %s3 : tensor<?x4x2xf32>
  %a = lru.add %s4, %g : tensor<?x4x2xf32>
  return %a : tensor<?x4x2xf32>
}
