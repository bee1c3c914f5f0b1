// RUN: lruc-opt %s -split-input-file -lru-decompose -verify-diagnostics

// What lru-decompose cannot decompose is an error at the op.

// expected-error @+1 {{expects a func.func @forward with a body}}
module {
  func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
  // expected-error @+1 {{@forward_train already exists; lru-decompose makes it}}
  func.func @forward_train(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    return %x : tensor<?x4xf32>
  }
}

// -----

// A length mask needs a static sequence length.
module {
  func.func @forward(%x: tensor<?x?x4xf32>, %len: tensor<?xi32>) -> tensor<?x4xf32> {
    // expected-error @+2 {{'lru.pool' op cannot be decomposed with a dynamic sequence length (dim 1 of 'tensor<?x?x4xf32>')}}
    // expected-error @+1 {{failed to legalize operation 'lru.pool' that was explicitly marked illegal}}
    %p = lru.pool mean %x, %len : (tensor<?x?x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    return %p : tensor<?x4xf32>
  }
}

// -----

// Train-mode BatchNorm names its running statistics after their params.
module {
  func.func @forward(%x: tensor<?x4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<?x4xf32> {
    %s = lru.param "s" init(ones) group(decay) : tensor<4xf32>
    %b = lru.param "b" init(zeros) group(decay) : tensor<4xf32>
    // expected-error @+2 {{'lru.batch_norm' op needs running statistics from lru.param ops to decompose in train mode}}
    // expected-error @+1 {{failed to legalize operation 'lru.batch_norm' that was explicitly marked illegal}}
    %y = lru.batch_norm %x, %s, %b running(%m, %v) : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?x16x?xf32>, %s: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?x16x?xf32> {
    // expected-error @+2 {{'lru.layer_norm' op cannot be decomposed with a dynamic feature size (the last dim of 'tensor<?x16x?xf32>')}}
    // expected-error @+1 {{failed to legalize operation 'lru.layer_norm' that was explicitly marked illegal}}
    %y = lru.layer_norm %x, %s, %b : (tensor<?x16x?xf32>, tensor<?xf32>, tensor<?xf32>) -> tensor<?x16x?xf32>
    return %y : tensor<?x16x?xf32>
  }
}

// -----

module {
  func.func @forward(%a: tensor<?x4xf32>, %b: tensor<2x4xf32>) -> tensor<?x16xf32> {
    // expected-error @+2 {{'lru.retrieval_combine' op cannot be decomposed: the two towers have different types 'tensor<?x4xf32>' and 'tensor<2x4xf32>'}}
    // expected-error @+1 {{failed to legalize operation 'lru.retrieval_combine' that was explicitly marked illegal}}
    %c = lru.retrieval_combine %a, %b : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x16xf32>
    return %c : tensor<?x16xf32>
  }
}

// -----

module {
  func.func @forward(%p: tensor<?x3xf32>, %t: tensor<4x3xf32>) -> tensor<f32> {
    // expected-error @+2 {{'lru.mse' op cannot be decomposed: pred and targets have different types 'tensor<?x3xf32>' and 'tensor<4x3xf32>'}}
    // expected-error @+1 {{failed to legalize operation 'lru.mse' that was explicitly marked illegal}}
    %l = lru.mse %p, %t : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
