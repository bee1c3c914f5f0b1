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
