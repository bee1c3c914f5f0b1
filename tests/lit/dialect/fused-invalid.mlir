// RUN: lruc-opt %s -split-input-file -verify-diagnostics

func.func @shape(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects inputs and results of one shape}}
  %r = lru.fused(%a, %b) : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<3xf32>, %y: tensor<4xf32>):
    lru.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @not_elementwise(%a: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = lru.fused(%a, %w) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%x: tensor<4x4xf32>, %v: tensor<4x4xf32>):
    // expected-error @+1 {{is not elementwise: it cannot be in an lru.fused group}}
    %y = lru.matmul nt %x, %v : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    lru.yield %y : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// A shift reads another step of an input: only a scan group's loop walks
// time.
func.func @shift_without_scan(%a: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = lru.fused(%a) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x: tensor<2x3x4xf32>):
    // expected-error @+1 {{in an lru.fused group needs the group's scan}}
    %y = lru.shift %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    lru.yield %y : tensor<2x3x4xf32>
  }
  return %r : tensor<2x3x4xf32>
}

// -----

// ... over the scan's sequences: the same lengths.
func.func @shift_other_lengths(%a: tensor<2x3x4xf32>, %l: tensor<4xf32>,
                               %n: tensor<2xi32>) -> tensor<2x3x4xf32> {
  %r = lru.fused(%a, %l, %n) : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2xi32>) -> tensor<2x3x4xf32> {
  ^bb0(%x: tensor<2x3x4xf32>, %m: tensor<4xf32>, %k: tensor<2xi32>):
    %s = lru.scan %m, %x lengths %k : (tensor<4xf32>, tensor<2x3x4xf32>, tensor<2xi32>) -> tensor<2x3x4xf32>
    // expected-error @+1 {{in an lru.fused group needs the group's scan}}
    %y = lru.shift %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %z = lru.mul %s, %y : tensor<2x3x4xf32>
    lru.yield %z : tensor<2x3x4xf32>
  }
  return %r : tensor<2x3x4xf32>
}

// -----

func.func @slice_leading(%a: tensor<4x2xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %r = lru.fused(%a, %b) : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
  ^bb0(%x: tensor<4x2xf32>, %y: tensor<2x2xf32>):
    // expected-error @+1 {{in an lru.fused group slices one of the group's inputs along its last dim, to the group's shape}}
    %z = lru.slice %x dim 0 offset 2 size 2 : tensor<4x2xf32> -> tensor<2x2xf32>
    %w = lru.add %z, %y : tensor<2x2xf32>
    lru.yield %w : tensor<2x2xf32>
  }
  return %r : tensor<2x2xf32>
}

// -----

func.func @yield_types(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{expects lru.yield of the results' types}}
  %r = lru.fused(%a) : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%x: tensor<3xf32>):
    lru.yield
  }
  return %r : tensor<3xf32>
}

// -----

func.func @two_scans(%l: tensor<4xcomplex<f32>>, %b: tensor<2x3x4xcomplex<f32>>) -> tensor<2x3x4xcomplex<f32>> {
  %r = lru.fused(%l, %b) : (tensor<4xcomplex<f32>>, tensor<2x3x4xcomplex<f32>>) -> tensor<2x3x4xcomplex<f32>> {
  ^bb0(%x: tensor<4xcomplex<f32>>, %y: tensor<2x3x4xcomplex<f32>>):
    %s = lru.scan %x, %y : (tensor<4xcomplex<f32>>, tensor<2x3x4xcomplex<f32>>) -> tensor<2x3x4xcomplex<f32>>
    // expected-error @+1 {{is the second scan of an lru.fused group}}
    %t = lru.scan %x, %s reverse : (tensor<4xcomplex<f32>>, tensor<2x3x4xcomplex<f32>>) -> tensor<2x3x4xcomplex<f32>>
    lru.yield %t : tensor<2x3x4xcomplex<f32>>
  }
  return %r : tensor<2x3x4xcomplex<f32>>
}

// -----

func.func @multi_tensor_not_a_group(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = lru.multi_tensor(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    // expected-error @+1 {{in an lru.multi_tensor: only lru.fused groups may be there}}
    %y = lru.exp %x : tensor<4xf32>
    lru.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @multi_tensor_dynamic(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = lru.multi_tensor(%a) : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%x: tensor<?x4xf32>):
    // expected-error @+1 {{in an lru.multi_tensor has a result of dynamic shape}}
    %y = lru.fused(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32> {
    ^bb0(%z: tensor<?x4xf32>):
      %e = lru.exp %z : tensor<?x4xf32>
      lru.yield %e : tensor<?x4xf32>
    }
    lru.yield %y : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}

// -----

func.func @multi_tensor_chained(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = lru.multi_tensor(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %y = lru.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%z: tensor<4xf32>):
      %e = lru.exp %z : tensor<4xf32>
      lru.yield %e : tensor<4xf32>
    }
    // expected-error @+1 {{in an lru.multi_tensor reads another group's result}}
    %w = lru.fused(%y) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%z: tensor<4xf32>):
      %e = lru.exp %z : tensor<4xf32>
      lru.yield %e : tensor<4xf32>
    }
    lru.yield %w : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @multi_tensor_yield(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects lru.yield of every result of its groups, in order}}
  %r = lru.multi_tensor(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %y = lru.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%z: tensor<4xf32>):
      %e = lru.exp %z : tensor<4xf32>
      lru.yield %e : tensor<4xf32>
    }
    lru.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @sum_keeps_middle(%a: tensor<?x5x4xf32>) -> tensor<?x4xf32> {
  %r = lru.fused(%a) : (tensor<?x5x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%x: tensor<?x5x4xf32>):
    %e = lru.exp %x : tensor<?x5x4xf32>
    // expected-error @+1 {{in an lru.fused group sums over every dim but the last}}
    %s = lru.reduce_sum %e dims [1] : tensor<?x5x4xf32> -> tensor<?x4xf32>
    lru.yield %s : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}

// -----

func.func @sum_read_in_group(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = lru.fused(%a) : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%x: tensor<?x4xf32>):
    // expected-error @+1 {{in an lru.fused group is read only by the group's lru.yield}}
    %s = lru.reduce_sum %x dims [0] : tensor<?x4xf32> -> tensor<4xf32>
    %b = lru.broadcast %s like %x dims [1] : (tensor<4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %d = lru.sub %x, %b : tensor<?x4xf32>
    lru.yield %d : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}

// -----

func.func @sum_of_dynamic_columns(%a: tensor<4x?xf32>) -> tensor<?xf32> {
  %r = lru.fused(%a) : (tensor<4x?xf32>) -> tensor<?xf32> {
  ^bb0(%x: tensor<4x?xf32>):
    %e = lru.exp %x : tensor<4x?xf32>
    // expected-error @+1 {{in an lru.fused group sums a value of the group's shape, of rank >= 2 with a static last dim}}
    %s = lru.reduce_sum %e dims [0] : tensor<4x?xf32> -> tensor<?xf32>
    lru.yield %s : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

func.func @multi_tensor_sum(%a: tensor<2x4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = lru.multi_tensor(%a, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<2x4xf32>, %y: tensor<4xf32>):
    // expected-error @+1 {{in an lru.multi_tensor holds a reduction}}
    %s = lru.fused(%x) : (tensor<2x4xf32>) -> tensor<4xf32> {
    ^bb0(%z: tensor<2x4xf32>):
      %e = lru.exp %z : tensor<2x4xf32>
      %t = lru.reduce_sum %e dims [0] : tensor<2x4xf32> -> tensor<4xf32>
      lru.yield %t : tensor<4xf32>
    }
    %u = lru.fused(%y) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%z: tensor<4xf32>):
      %e = lru.exp %z : tensor<4xf32>
      lru.yield %e : tensor<4xf32>
    }
    lru.yield %s, %u : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @epilogue_without_matmul(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{as an epilogue follows lru.matmul ops (nt or nn, of its loop's shape) whose results it reads}}
  %r = lru.fused(%a) {lru.epilogue} : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%x: tensor<?x4xf32>):
    %e = lru.exp %x : tensor<?x4xf32>
    lru.yield %e : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}

// -----

func.func @epilogue_of_static_shape(%a: tensor<3x4xf32>, %w: tensor<4x4xf32>) -> tensor<3x4xf32> {
  %p = lru.matmul nt %a, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  // expected-error @+1 {{as an epilogue loops over a batch-sized shape with a static last dim, without a scan or with a scan of one step and no sums}}
  %r = lru.fused(%p) {lru.epilogue} : (tensor<3x4xf32>) -> tensor<3x4xf32> {
  ^bb0(%x: tensor<3x4xf32>):
    %e = lru.exp %x : tensor<3x4xf32>
    lru.yield %e : tensor<3x4xf32>
  }
  return %r : tensor<3x4xf32>
}

// -----

// A scan along more than one step runs along time, not by the products'
// rows or columns.
func.func @epilogue_of_long_scan(%x: tensor<?x3x4xf32>, %w: tensor<4x4xf32>, %l: tensor<4xf32>) -> tensor<?x3x4xf32> {
  %p = lru.matmul nt %x, %w : (tensor<?x3x4xf32>, tensor<4x4xf32>) -> tensor<?x3x4xf32>
  // expected-error @+1 {{as an epilogue loops over a batch-sized shape with a static last dim, without a scan or with a scan of one step and no sums}}
  %r = lru.fused(%l, %p) {lru.epilogue} : (tensor<4xf32>, tensor<?x3x4xf32>) -> tensor<?x3x4xf32> {
  ^bb0(%lambda: tensor<4xf32>, %b: tensor<?x3x4xf32>):
    %s = lru.scan %lambda, %b : (tensor<4xf32>, tensor<?x3x4xf32>) -> tensor<?x3x4xf32>
    lru.yield %s : tensor<?x3x4xf32>
  }
  return %r : tensor<?x3x4xf32>
}

// -----

// A dropout is decided by the element's flat index: never in a scan's
// group, whose loop runs along time.
func.func @dropout_with_scan(%l: tensor<4xf32>, %b: tensor<2x3x4xf32>, %key: tensor<2xi64>) -> tensor<2x3x4xf32> {
  %r = lru.fused(%l, %b, %key) : (tensor<4xf32>, tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x3x4xf32> {
  ^bb0(%lambda: tensor<4xf32>, %x: tensor<2x3x4xf32>, %k: tensor<2xi64>):
    %s = lru.scan %lambda, %x : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    // expected-error @+1 {{in an lru.fused group needs the group's shape, of rank >= 2 with a static last dim, its key from the group's inputs, and no scan in the group}}
    %d = lru.dropout_mask %s, %k rate 0.5 site 0 : tensor<2x3x4xf32>, tensor<2xi64>
    lru.yield %d : tensor<2x3x4xf32>
  }
  return %r : tensor<2x3x4xf32>
}

// -----

// ... nor of a loop without rows.
func.func @dropout_of_a_vector(%a: tensor<?xf32>, %key: tensor<2xi64>) -> tensor<?xf32> {
  %r = lru.fused(%a, %key) : (tensor<?xf32>, tensor<2xi64>) -> tensor<?xf32> {
  ^bb0(%x: tensor<?xf32>, %k: tensor<2xi64>):
    %e = lru.exp %x : tensor<?xf32>
    // expected-error @+1 {{in an lru.fused group needs the group's shape, of rank >= 2}}
    %d = lru.dropout_mask %e, %k rate 0.5 site 0 : tensor<?xf32>, tensor<2xi64>
    lru.yield %d : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
