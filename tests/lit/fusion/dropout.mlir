// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-fuse-elementwise))' | FileCheck %s

// A dropout joins its producer's group like an elementwise op (its key an
// input), and what reads it joins too: the value before the dropout and the
// dropped one are never stored. A sum of the group's values joins as well.
// CHECK-LABEL: func.func @producer_and_consumer(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x5x8xf32>, %[[R:[a-z0-9]+]]: tensor<?x5x8xf32>, %[[K:[a-z0-9]+]]: tensor<2xi64>
// CHECK: %[[F:.*]]:2 = lru.fused(%[[X]], %[[K]], %[[R]]) : (tensor<?x5x8xf32>, tensor<2xi64>, tensor<?x5x8xf32>) -> (tensor<?x5x8xf32>, tensor<8xf32>) {
// CHECK: ^bb0(%[[BX:.*]]: tensor<?x5x8xf32>, %[[BK:.*]]: tensor<2xi64>, %[[BR:.*]]: tensor<?x5x8xf32>):
// CHECK-NEXT: %[[G:.*]] = lru.gelu %[[BX]]
// CHECK-NEXT: %[[D:.*]] = lru.dropout_mask %[[G]], %[[BK]] rate 1.000000e-01 site 2
// CHECK-NEXT: %[[S:.*]] = lru.add %[[D]], %[[BR]]
// CHECK-NEXT: %[[SUM:.*]] = lru.reduce_sum %[[S]] dims [0, 1]
// CHECK-NEXT: lru.yield %[[S]], %[[SUM]]
// CHECK-NOT: lru.dropout_mask
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @producer_and_consumer(%x: tensor<?x5x8xf32>, %r: tensor<?x5x8xf32>, %key: tensor<2xi64>) -> (tensor<?x5x8xf32>, tensor<8xf32>) {
  %g = lru.gelu %x : tensor<?x5x8xf32>
  %d = lru.dropout_mask %g, %key rate 0.1 site 2 : tensor<?x5x8xf32>, tensor<2xi64>
  %s = lru.add %d, %r : tensor<?x5x8xf32>
  %sum = lru.reduce_sum %s dims [0, 1] : tensor<?x5x8xf32> -> tensor<8xf32>
  return %s, %sum : tensor<?x5x8xf32>, tensor<8xf32>
}

// -----

// Never with a scan: the group's loop would run along time, and a dropout
// is decided by the element's flat index, a row at a time. The dropout of
// the scan's result starts a group of its own; so does a scan of a dropped
// value.
// CHECK-LABEL: func.func @scans(
// CHECK: %[[S:.*]] = lru.fused
// CHECK: lru.scan
// CHECK-NOT: lru.dropout_mask
// CHECK: lru.yield
// CHECK: %[[D:.*]] = lru.fused(%[[S]], %{{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT: lru.dropout_mask
// CHECK-NEXT: lru.exp
// CHECK-NOT: lru.scan
// CHECK: lru.yield
// CHECK: lru.fused(%{{.*}}, %[[D]]
// CHECK-NOT: lru.dropout_mask
// CHECK: lru.scan
func.func @scans(%l: tensor<3xf32>, %b: tensor<?x6x3xf32>, %key: tensor<2xi64>) -> tensor<?x6x3xf32> {
  %t = lru.tanh %b : tensor<?x6x3xf32>
  %s = lru.scan %l, %t : (tensor<3xf32>, tensor<?x6x3xf32>) -> tensor<?x6x3xf32>
  %d = lru.dropout_mask %s, %key rate 0.5 site 0 : tensor<?x6x3xf32>, tensor<2xi64>
  %e = lru.exp %d : tensor<?x6x3xf32>
  %s2 = lru.scan %l, %e : (tensor<3xf32>, tensor<?x6x3xf32>) -> tensor<?x6x3xf32>
  return %s2 : tensor<?x6x3xf32>
}

// -----

// A dropout of a rank-1 value stays an op of its own (a loop without rows).
// CHECK-LABEL: func.func @vector(
// CHECK: lru.exp
// CHECK: lru.dropout_mask
// CHECK-NOT: lru.fused
func.func @vector(%x: tensor<?xf32>, %key: tensor<2xi64>) -> tensor<?xf32> {
  %e = lru.exp %x : tensor<?xf32>
  %d = lru.dropout_mask %e, %key rate 0.5 site 0 : tensor<?xf32>, tensor<2xi64>
  return %d : tensor<?xf32>
}
