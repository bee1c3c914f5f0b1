// RUN: lruc-opt %s -lru-fuse-gemm-epilogue -split-input-file | FileCheck %s

// The C projection's two matmuls and `Re(C x) + D u`: the matmuls move
// down to just before the group (past the op that does not read them), and
// the group becomes their epilogue.
// CHECK-LABEL: func.func @projection
// CHECK: %[[T:.*]] = lru.tanh %arg4
// CHECK-NEXT: %[[RE:.*]] = lru.matmul nt %arg0, %arg2
// CHECK-NEXT: %[[IM:.*]] = lru.matmul nt %arg1, %arg3
// CHECK-NEXT: lru.fused(%[[RE]], %[[IM]], %[[T]]) {lru.epilogue}
func.func @projection(%re: tensor<?x5x3xf32>, %im: tensor<?x5x3xf32>,
                      %cre: tensor<4x3xf32>, %cim: tensor<4x3xf32>,
                      %u: tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  %yre = lru.matmul nt %re, %cre : (tensor<?x5x3xf32>, tensor<4x3xf32>) -> tensor<?x5x4xf32>
  %yim = lru.matmul nt %im, %cim : (tensor<?x5x3xf32>, tensor<4x3xf32>) -> tensor<?x5x4xf32>
  %t = lru.tanh %u : tensor<?x5x4xf32>
  %r = lru.fused(%yre, %yim, %t) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%a: tensor<?x5x4xf32>, %b: tensor<?x5x4xf32>, %c: tensor<?x5x4xf32>):
    %d = lru.sub %a, %b : tensor<?x5x4xf32>
    %e = lru.add %d, %c : tensor<?x5x4xf32>
    lru.yield %e : tensor<?x5x4xf32>
  }
  return %r : tensor<?x5x4xf32>
}

// -----

// Must not be an epilogue: a group holding a scan (it runs along time, not
// by rows), a group of static shape (a weight's), a matmul of another kind
// (tn: a weight gradient, whose rows are not the group's) and a matmul
// that something between reads (it stays, and nothing else feeds the
// group).
// CHECK-LABEL: func.func @not_epilogues
// CHECK-NOT: lru.epilogue
// CHECK: return
func.func @not_epilogues(%x: tensor<?x6x4xf32>, %w: tensor<4x4xf32>,
                         %v: tensor<4x4xf32>, %lambda: tensor<4xcomplex<f32>>)
    -> (tensor<?x6x4xcomplex<f32>>, tensor<4x4xf32>, tensor<?x6x4xf32>) {
  %re = lru.matmul nt %x, %w : (tensor<?x6x4xf32>, tensor<4x4xf32>) -> tensor<?x6x4xf32>
  %h = lru.fused(%re, %lambda) : (tensor<?x6x4xf32>, tensor<4xcomplex<f32>>) -> tensor<?x6x4xcomplex<f32>> {
  ^bb0(%a: tensor<?x6x4xf32>, %l: tensor<4xcomplex<f32>>):
    %b = lru.complex %a, %a : tensor<?x6x4xf32> -> tensor<?x6x4xcomplex<f32>>
    %s = lru.scan %l, %b : (tensor<4xcomplex<f32>>, tensor<?x6x4xcomplex<f32>>) -> tensor<?x6x4xcomplex<f32>>
    lru.yield %s : tensor<?x6x4xcomplex<f32>>
  }
  %g = lru.matmul tn %x, %x : (tensor<?x6x4xf32>, tensor<?x6x4xf32>) -> tensor<4x4xf32>
  %gw = lru.fused(%g, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    %d = lru.add %a, %b : tensor<4x4xf32>
    lru.yield %d : tensor<4x4xf32>
  }
  %p = lru.matmul nn %x, %v : (tensor<?x6x4xf32>, tensor<4x4xf32>) -> tensor<?x6x4xf32>
  %read = lru.neg %p : tensor<?x6x4xf32>
  %e = lru.fused(%p, %read) : (tensor<?x6x4xf32>, tensor<?x6x4xf32>) -> tensor<?x6x4xf32> {
  ^bb0(%a: tensor<?x6x4xf32>, %b: tensor<?x6x4xf32>):
    %d = lru.mul %a, %b : tensor<?x6x4xf32>
    lru.yield %d : tensor<?x6x4xf32>
  }
  return %h, %gw, %e : tensor<?x6x4xcomplex<f32>>, tensor<4x4xf32>, tensor<?x6x4xf32>
}

// -----

// A matmul read by two groups is the epilogue of the first only.
// CHECK-LABEL: func.func @shared
// CHECK: %[[P:.*]] = lru.matmul nn
// CHECK-NEXT: lru.fused(%[[P]]) {lru.epilogue}
// CHECK: lru.fused(%[[P]]) :
func.func @shared(%x: tensor<?x4xf32>, %v: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %p = lru.matmul nn %x, %v : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %a = lru.fused(%p) : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%y: tensor<?x4xf32>):
    %e = lru.exp %y : tensor<?x4xf32>
    lru.yield %e : tensor<?x4xf32>
  }
  %b = lru.fused(%p) : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%y: tensor<?x4xf32>):
    %e = lru.tanh %y : tensor<?x4xf32>
    lru.yield %e : tensor<?x4xf32>
  }
  return %a, %b : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A scan of one step of each sequence (step mode) with its `B u` products:
// an epilogue by channels, the products' columns. Its complex loop type has
// the products' shape.
// CHECK-LABEL: func.func @one_step_scan
// CHECK: %[[RE:.*]] = lru.matmul nt %arg0, %arg1
// CHECK-NEXT: %[[IM:.*]] = lru.matmul nt %arg0, %arg2
// CHECK-NEXT: lru.fused(%arg3, %[[RE]], %[[IM]], %arg4) {lru.epilogue}
func.func @one_step_scan(%u: tensor<?x1x4xf32>, %bre: tensor<3x4xf32>,
                         %bim: tensor<3x4xf32>, %lambda: tensor<3xcomplex<f32>>,
                         %carry: tensor<?x3xcomplex<f32>>)
    -> tensor<?x1x3xcomplex<f32>> {
  %re = lru.matmul nt %u, %bre : (tensor<?x1x4xf32>, tensor<3x4xf32>) -> tensor<?x1x3xf32>
  %im = lru.matmul nt %u, %bim : (tensor<?x1x4xf32>, tensor<3x4xf32>) -> tensor<?x1x3xf32>
  %x = lru.fused(%lambda, %re, %im, %carry) : (tensor<3xcomplex<f32>>, tensor<?x1x3xf32>, tensor<?x1x3xf32>, tensor<?x3xcomplex<f32>>) -> tensor<?x1x3xcomplex<f32>> {
  ^bb0(%l: tensor<3xcomplex<f32>>, %a: tensor<?x1x3xf32>, %b: tensor<?x1x3xf32>, %c: tensor<?x3xcomplex<f32>>):
    %bu = lru.complex %a, %b : tensor<?x1x3xf32> -> tensor<?x1x3xcomplex<f32>>
    %s = lru.scan %l, %bu init %c : (tensor<3xcomplex<f32>>, tensor<?x1x3xcomplex<f32>>, tensor<?x3xcomplex<f32>>) -> tensor<?x1x3xcomplex<f32>>
    lru.yield %s : tensor<?x1x3xcomplex<f32>>
  }
  return %x : tensor<?x1x3xcomplex<f32>>
}
