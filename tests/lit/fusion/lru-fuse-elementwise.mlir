// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-fuse-elementwise))' | FileCheck %s

// A chain of elementwise ops becomes one group; the splat constant is copied
// in; only the value used outside is yielded.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<4x8xf32>
// CHECK: %[[F:.*]] = lru.fused(%[[A]], %[[B]]) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>):
// CHECK: %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<4x8xf32>
// CHECK: %[[M:.*]] = lru.mul %[[X]], %[[Y]]
// CHECK: %[[S:.*]] = lru.add %[[M]], %[[C]]
// CHECK: %[[E:.*]] = lru.exp %[[S]]
// CHECK: lru.yield %[[E]] : tensor<4x8xf32>
// CHECK: return %[[F]]
func.func @chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = arith.constant dense<2.0> : tensor<4x8xf32>
  %m = lru.mul %a, %b : tensor<4x8xf32>
  %s = lru.add %m, %c : tensor<4x8xf32>
  %e = lru.exp %s : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// Values read outside the group are yielded; complex and real ops of one
// shape share a group.
// CHECK-LABEL: func.func @outputs(
// CHECK: %[[F:.*]]:2 = lru.fused(%{{.*}}, %{{.*}}) : (tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xcomplex<f32>>, tensor<4x3xf32>)
// CHECK: lru.complex
// CHECK: lru.exp
// CHECK: lru.re
// CHECK: lru.yield
// CHECK: %[[R:.*]] = lru.reduce_sum %[[F]]#1
// CHECK: return %[[F]]#0, %[[R]]
func.func @outputs(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> (tensor<4x3xcomplex<f32>>, tensor<4xf32>) {
  %z = lru.complex %a, %b : tensor<4x3xf32> -> tensor<4x3xcomplex<f32>>
  %e = lru.exp %z : tensor<4x3xcomplex<f32>>
  %r = lru.re %e : tensor<4x3xcomplex<f32>> -> tensor<4x3xf32>
  %sum = lru.reduce_sum %r dims [1] : tensor<4x3xf32> -> tensor<4xf32>
  return %e, %sum : tensor<4x3xcomplex<f32>>, tensor<4xf32>
}

// -----

// An op outside the group that reads it closes the group: what follows is
// a new group. Broadcasts to consecutive dims join (the loop reads their
// input directly).
// CHECK-LABEL: func.func @closed(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2x4xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>
// CHECK: %[[G1:.*]] = lru.fused(%[[A]], %[[B]]) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: lru.mul
// CHECK: lru.broadcast %{{.*}} like %{{.*}} dims [1]
// CHECK: lru.add
// CHECK: %[[R:.*]] = lru.reduce_sum %[[G1]]
// CHECK: %[[G2:.*]] = lru.fused(%[[R]], %{{.*}}, %[[G1]])
// CHECK: lru.broadcast %{{.*}} like %{{.*}} dims [0]
// CHECK: lru.sub
// CHECK: lru.exp
// CHECK: return %[[G2]]
func.func @closed(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %sq = lru.mul %a, %a : tensor<2x4xf32>
  %bb = lru.broadcast %b like %a dims [1] : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = lru.add %sq, %bb : tensor<2x4xf32>
  %r = lru.reduce_sum %s dims [1] : tensor<2x4xf32> -> tensor<2xf32>
  %rb = lru.broadcast %r like %a dims [0] : (tensor<2xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %d = lru.sub %s, %rb : tensor<2x4xf32>
  %e = lru.exp %d : tensor<2x4xf32>
  return %e : tensor<2x4xf32>
}

// -----

// Groups of different shapes stay open side by side; a lone elementwise op
// is not wrapped.
// CHECK-LABEL: func.func @shapes(
// CHECK: lru.fused(%{{.*}}) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK: lru.fused(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NOT: lru.fused
// CHECK: lru.neg %{{.*}} : tensor<5xf32>
func.func @shapes(%a: tensor<3xf32>, %b: tensor<2x3xf32>, %c: tensor<5xf32>) -> (tensor<3xf32>, tensor<2x3xf32>, tensor<5xf32>) {
  %a1 = lru.exp %a : tensor<3xf32>
  %b1 = lru.exp %b : tensor<2x3xf32>
  %a2 = lru.neg %a1 : tensor<3xf32>
  %b2 = lru.neg %b1 : tensor<2x3xf32>
  %c1 = lru.neg %c : tensor<5xf32>
  return %a2, %b2, %c1 : tensor<3xf32>, tensor<2x3xf32>, tensor<5xf32>
}

// -----

// A broadcast to non-consecutive dims (the mean pooling's gradient, [B, H]
// over [B, L, H]) joins too: the loop reads its input at the element's
// coordinates in dims 0 and 2.
// CHECK-LABEL: func.func @strided(
// CHECK: lru.fused(%arg0, %arg1)
// CHECK: lru.exp
// CHECK: lru.broadcast %{{.*}} dims [0, 2]
// CHECK: lru.mul
// CHECK-NOT: lru.broadcast
func.func @strided(%a: tensor<2x3x4xf32>, %c: tensor<2x4xf32>) -> tensor<2x3x4xf32> {
  %e = lru.exp %a : tensor<2x3x4xf32>
  %cb = lru.broadcast %c like %a dims [0, 2] : (tensor<2x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %f = lru.mul %e, %cb : tensor<2x3x4xf32>
  return %f : tensor<2x3x4xf32>
}

// -----

// A slice of an input's last dim to a narrower one joins the group of its
// shape (the halves of the gradient of B's joined rows): the loop reads
// the input at the row and the column + offset. A slice along another dim
// stays outside.
// CHECK-LABEL: func.func @last_dim_slices(
// CHECK: %[[R:.*]] = lru.slice %arg0 dim 0 offset 0 size 2
// CHECK: %[[G:.*]] = lru.fused(%arg0, %arg1)
// CHECK: lru.slice %{{.*}} dim 1 offset 0 size 3
// CHECK: lru.mul
// CHECK: lru.slice %{{.*}} dim 1 offset 3 size 3
// CHECK: lru.add
// CHECK: lru.yield
// CHECK-NOT: lru.slice
// CHECK: return %[[G]], %[[R]]
func.func @last_dim_slices(%g: tensor<4x6xf32>, %w: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<2x6xf32>) {
  %r = lru.slice %g dim 0 offset 0 size 2 : tensor<4x6xf32> -> tensor<2x6xf32>
  %a = lru.slice %g dim 1 offset 0 size 3 : tensor<4x6xf32> -> tensor<4x3xf32>
  %p = lru.mul %a, %w : tensor<4x3xf32>
  %b = lru.slice %g dim 1 offset 3 size 3 : tensor<4x6xf32> -> tensor<4x3xf32>
  %q = lru.add %p, %b : tensor<4x3xf32>
  return %q, %r : tensor<4x3xf32>, tensor<2x6xf32>
}

// -----

// A negated operand of a matmul (the gradient through Re(C x) reaches Im x
// negated): the negation moves to the product, which only elementwise ops
// read, and joins their group; of a weight's gradient (static, returned)
// it stays a lone op on the small product. Nothing stores -g.
// CHECK-LABEL: func.func @negated_operand(
// CHECK-NOT: lru.neg %arg0
// CHECK: %[[P:.*]] = lru.matmul nn %arg0, %arg1
// CHECK: %[[W:.*]] = lru.matmul tn %arg0, %arg2
// CHECK: %[[N:.*]] = lru.neg %[[W]] : tensor<4x3xf32>
// CHECK: lru.fused(%[[P]])
// CHECK: lru.neg
// CHECK: lru.exp
// CHECK: return %{{.*}}, %[[N]]
func.func @negated_operand(%g: tensor<?x5x4xf32>, %c: tensor<4x3xf32>,
                           %x: tensor<?x5x3xf32>) -> (tensor<?x5x3xf32>, tensor<4x3xf32>) {
  %n = lru.neg %g : tensor<?x5x4xf32>
  %p = lru.matmul nn %n, %c : (tensor<?x5x4xf32>, tensor<4x3xf32>) -> tensor<?x5x3xf32>
  %w = lru.matmul tn %n, %x : (tensor<?x5x4xf32>, tensor<?x5x3xf32>) -> tensor<4x3xf32>
  %e = lru.exp %p : tensor<?x5x3xf32>
  %f = lru.mul %e, %e : tensor<?x5x3xf32>
  return %f, %w : tensor<?x5x3xf32>, tensor<4x3xf32>
}
