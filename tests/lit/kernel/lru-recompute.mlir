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
