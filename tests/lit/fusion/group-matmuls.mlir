// RUN: lruc-opt %s -lru-group-matmuls -split-input-file | FileCheck %s

// The LRU's B_re and B_im products of one input, with a parameter between
// them, and a third product of another input: one run of three.
// CHECK-LABEL: func.func @input_projection
// CHECK: %[[RE:.*]] = lru.matmul nt %arg0, %arg1 :
// CHECK-NEXT: lru.param "w"
// CHECK-NEXT: %[[IM:.*]] = lru.matmul nt %arg0, %{{.*}} {lru.together}
// CHECK-NEXT: lru.matmul nn %arg2, %arg3 {lru.together}
func.func @input_projection(%x: tensor<?x3xf32>, %bre: tensor<4x3xf32>,
                            %z: tensor<?x4xf32>, %v: tensor<4x2xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x2xf32>) {
  %re = lru.matmul nt %x, %bre : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
  %bim = lru.param "w" init(ones) group(decay) : tensor<4x3xf32>
  %im = lru.matmul nt %x, %bim : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
  %y = lru.matmul nn %z, %v : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  return %re, %im, %y : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x2xf32>
}

// -----

// Not together: a product of the one before it (it must wait for it), a
// weight gradient (tn), a product after another op, and an epilogue's
// products (they run with their group). The second of two products that
// follow a dependent one starts a new run.
// CHECK-LABEL: func.func @apart
// CHECK: %[[A:.*]] = lru.matmul nt %arg0, %arg1 :
// CHECK-NEXT: %[[B:.*]] = lru.matmul nt %[[A]], %arg2 :
// CHECK-NEXT: lru.matmul nt %arg0, %arg2 {lru.together}
// CHECK-NEXT: lru.matmul tn %arg0, %arg0 :
// CHECK-NEXT: lru.exp
// CHECK-NEXT: lru.matmul nt %arg0, %arg1 :
// CHECK-NEXT: lru.matmul nt %arg0, %arg2 :
// CHECK-NEXT: lru.fused
// CHECK-NOT: lru.together
func.func @apart(%x: tensor<?x3xf32>, %w: tensor<3x3xf32>, %u: tensor<3x3xf32>)
    -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<3x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) {
  %a = lru.matmul nt %x, %w : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  %b = lru.matmul nt %a, %u : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  %c = lru.matmul nt %x, %u : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  %g = lru.matmul tn %x, %x : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<3x3xf32>
  %e = lru.exp %x : tensor<?x3xf32>
  %p = lru.matmul nt %x, %w : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  %q = lru.matmul nt %x, %u : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  %r = lru.fused(%p, %q, %e) {lru.epilogue} : (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32> {
  ^bb0(%s: tensor<?x3xf32>, %t: tensor<?x3xf32>, %v: tensor<?x3xf32>):
    %m = lru.mul %s, %t : tensor<?x3xf32>
    %n = lru.add %m, %v : tensor<?x3xf32>
    lru.yield %n : tensor<?x3xf32>
  }
  return %b, %c, %g, %r, %e : tensor<?x3xf32>, tensor<?x3xf32>, tensor<3x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>
}
