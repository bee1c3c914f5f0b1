// RUN: lruc-opt %s -split-input-file -verify-diagnostics -lru-derive-backward

func.func @forward_train(%x: tensor<3xf32>) -> tensor<f32> {
  %w = lru.param "w" init(ones) group(decay) : tensor<3xf32>
  // expected-error @below {{'arith.addf' op has no derivative rule; it cannot appear between the parameters and the loss}}
  %m = arith.addf %w, %x : tensor<3xf32>
  %l = lru.reduce_sum %m dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @forward_train() -> tensor<f32> {
  %w = lru.param "w" init(ones) group(decay) : tensor<3xf32>
  // expected-error @below {{'lru.gelu_grad' op has no derivative (lruc takes first derivatives only)}}
  %g = lru.gelu_grad %w : tensor<3xf32>
  %l = lru.reduce_sum %g dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @below {{'func.func' op must return the loss (tensor<f32>) first}}
func.func @forward_train() -> tensor<3xf32> {
  %w = lru.param "w" init(ones) group(decay) : tensor<3xf32>
  return %w : tensor<3xf32>
}

// -----

// expected-error @below {{no function @forward_train to differentiate; run -lru-decompose first}}
module {
  func.func @forward() {
    return
  }
}
