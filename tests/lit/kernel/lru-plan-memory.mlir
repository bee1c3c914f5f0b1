// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-plan-memory))' | FileCheck %s

// A chain: each result gets a slot before its operand's is freed (no op
// writes a buffer it reads), so the chain alternates between two slots.
// Batch-sized buffers are [?, 4] f32: 16 bytes per example, 64-aligned.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: lru.slot_offsets = array<i64: 0, 0, 64, 0>, lru.workspace = array<i64: 128, 0>
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 0>}
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 1>}
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 0>}
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 1>}
func.func @chain(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = lru.exp %a : tensor<?x4xf32>
  %1 = lru.exp %0 : tensor<?x4xf32>
  %2 = lru.exp %1 : tensor<?x4xf32>
  %3 = lru.exp %2 : tensor<?x4xf32>
  return %3 : tensor<?x4xf32>
}

// -----

// Values alive at the same time never share a slot: %0 is read at the end.
// Batch-sized and fixed buffers never share one either.
// CHECK-LABEL: func.func @overlap(
// CHECK-SAME: lru.workspace = array<i64: 192, 64>
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 0>}
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 1>}
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 2>}
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 3>} : tensor<4xf32>
// CHECK: lru.add %{{.*}} {lru.buffers = array<i64: 1>}
func.func @overlap(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>) {
  %0 = lru.exp %a : tensor<?x4xf32>
  %1 = lru.exp %0 : tensor<?x4xf32>
  %2 = lru.exp %1 : tensor<?x4xf32>
  %f = lru.exp %b : tensor<4xf32>
  %3 = lru.add %2, %0 : tensor<?x4xf32>
  return %3, %f : tensor<?x4xf32>, tensor<4xf32>
}

// -----

// A view has no buffer: its readers read the buffer of what it views, which
// stays taken until the last of them. %1 does not get %0's slot (%0 is read
// later, through the view); %3, after the view's reader, does.
// CHECK-LABEL: func.func @view(
// CHECK-SAME: lru.workspace = array<i64: 192, 0>
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 0>} : tensor<?x4xf32>
// CHECK-NEXT: lru.view
// CHECK-NOT: lru.buffers
// CHECK-SAME: -> tensor<?x2xcomplex<f32>>
// CHECK-NEXT: lru.exp %{{.*}} {lru.buffers = array<i64: 1>} : tensor<?x4xf32>
// CHECK-NEXT: lru.exp %{{.*}} {lru.buffers = array<i64: 2>} : tensor<?x2xcomplex<f32>>
// CHECK-NEXT: lru.exp %{{.*}} {lru.buffers = array<i64: 0>} : tensor<?x2xcomplex<f32>>
func.func @view(%a: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x2xcomplex<f32>>) {
  %0 = lru.exp %a : tensor<?x4xf32>
  %v = lru.view %0 : tensor<?x4xf32> -> tensor<?x2xcomplex<f32>>
  %1 = lru.exp %a : tensor<?x4xf32>
  %2 = lru.exp %v : tensor<?x2xcomplex<f32>>
  %3 = lru.exp %2 : tensor<?x2xcomplex<f32>>
  return %1, %3 : tensor<?x4xf32>, tensor<?x2xcomplex<f32>>
}

// -----

// Parameters point into the caller's block: no buffer.
// CHECK-LABEL: func.func @param(
// CHECK: lru.param "w"
// CHECK-NOT: lru.buffers
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 0>}
func.func @param() -> tensor<4xf32> {
  %w = lru.param "w" init(ones) group(decay) : tensor<4xf32>
  %e = lru.exp %w : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// A group's sum holds a row of partial sums per chunk of its loop's rows:
// chunks of 64 rows that never cross an example, so 130 rows an example
// are 3 chunks, 3 x 16 floats = 192 bytes an example, and one more row for
// the totals when B is 0. A static loop of 130 rows: 3 rows, fixed.
// CHECK-LABEL: func.func @sums(
// CHECK-SAME: lru.workspace = array<i64: 192, 256>
// CHECK: lru.fused(%arg0) {lru.buffers = array<i64: 0>}
// CHECK: lru.fused(%arg1) {lru.buffers = array<i64: 1>}
func.func @sums(%a: tensor<?x130x16xf32>, %b: tensor<130x16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %s = lru.fused(%a) : (tensor<?x130x16xf32>) -> tensor<16xf32> {
  ^bb0(%x: tensor<?x130x16xf32>):
    %e = lru.exp %x : tensor<?x130x16xf32>
    %r = lru.reduce_sum %e dims [0, 1] : tensor<?x130x16xf32> -> tensor<16xf32>
    lru.yield %r : tensor<16xf32>
  }
  %t = lru.fused(%b) : (tensor<130x16xf32>) -> tensor<16xf32> {
  ^bb0(%x: tensor<130x16xf32>):
    %e = lru.exp %x : tensor<130x16xf32>
    %r = lru.reduce_sum %e dims [0] : tensor<130x16xf32> -> tensor<16xf32>
    lru.yield %r : tensor<16xf32>
  }
  return %s, %t : tensor<16xf32>, tensor<16xf32>
}

// -----

// An epilogue's matmul operands stay alive until the epilogue: its result
// may not take the slot of %x (read by the matmul), though %x is dead
// after the matmul, since one part's epilogue may run while another part's
// product still reads %x.
// CHECK-LABEL: func.func @epilogue(
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 0>}
// CHECK: lru.matmul nt %{{.*}} {lru.buffers = array<i64: 1>}
// CHECK: lru.fused(%{{.*}}) {lru.buffers = array<i64: 2>, lru.epilogue}
func.func @epilogue(%a: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %x = lru.exp %a : tensor<?x4xf32>
  %p = lru.matmul nt %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %r = lru.fused(%p) {lru.epilogue} : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%y: tensor<?x4xf32>):
    %e = lru.tanh %y : tensor<?x4xf32>
    lru.yield %e : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}

// -----

// A run of matmuls computed together (lru.together): the second product
// may not take the slot of %x, dead after the first product but read by it
// while the second is being computed.
// CHECK-LABEL: func.func @together(
// CHECK: lru.exp %{{.*}} {lru.buffers = array<i64: 0>}
// CHECK: lru.matmul nt %{{.*}} {lru.buffers = array<i64: 1>}
// CHECK: lru.matmul nt %{{.*}} {lru.buffers = array<i64: 2>, lru.together}
func.func @together(%a: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %x = lru.exp %a : tensor<?x4xf32>
  %p = lru.matmul nt %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %q = lru.matmul nt %a, %w {lru.together} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  return %p, %q : tensor<?x4xf32>, tensor<?x4xf32>
}
