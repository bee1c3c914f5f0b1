// RUN: lruc-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of the primitive ops (dialect/lib/LRUPrimitiveOps.cpp).

func.func @complex_result_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'lru.complex' op all non-scalar operands/results must have the same shape and base type}}
  %0 = lru.complex %x, %x : tensor<4xf32> -> tensor<5xcomplex<f32>>
  return
}

// -----

func.func @broadcast_dims_count(%v: tensor<4xf32>, %x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.broadcast' op expects one entry in dims per dim of x, got 2 for rank 1}}
  %0 = lru.broadcast %v like %x dims [0, 1] : (tensor<4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @broadcast_dims_order(%v: tensor<4x4xf32>, %x: tensor<?x4x4xf32>) {
  // expected-error @+1 {{'lru.broadcast' op expects dims increasing within [0, 3), got [2, 1]}}
  %0 = lru.broadcast %v like %x dims [2, 1] : (tensor<4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
  return
}

// -----

func.func @broadcast_dim_size(%v: tensor<5xf32>, %x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.broadcast' op dim 0 of x (5) does not match dim 1 of the result (4)}}
  %0 = lru.broadcast %v like %x dims [1] : (tensor<5xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @broadcast_result(%v: tensor<4xf32>, %x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.broadcast' op expects a result of shape [?, 4], got 'tensor<?x5xf32>'}}
  %0 = lru.broadcast %v like %x dims [1] : (tensor<4xf32>, tensor<?x4xf32>) -> tensor<?x5xf32>
  return
}

// -----

func.func @broadcast_element(%v: tensor<4xf32>, %x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.broadcast' op expects a result of element type 'f32', got 'tensor<?x4xcomplex<f32>>'}}
  %0 = lru.broadcast %v like %x dims [1] : (tensor<4xf32>, tensor<?x4xf32>) -> tensor<?x4xcomplex<f32>>
  return
}

// -----

func.func @reduce_dims_range(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.reduce_sum' op expects dims increasing within [0, 2), got [2]}}
  %0 = lru.reduce_sum %x dims [2] : tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @reduce_result(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.reduce_sum' op expects a result of shape [4], got 'tensor<f32>'}}
  %0 = lru.reduce_sum %x dims [0] : tensor<?x4xf32> -> tensor<f32>
  return
}

// -----

func.func @view_floats(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.view' op views 4 floats per leading index as 6 ('tensor<?x4xf32>' -> 'tensor<?x3xcomplex<f32>>')}}
  %0 = lru.view %x : tensor<?x4xf32> -> tensor<?x3xcomplex<f32>>
  return
}

// -----

func.func @view_batch(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.view' op expects the same leading dynamic dims in 'tensor<?x4xf32>' and 'tensor<8xf32>'}}
  %0 = lru.view %x : tensor<?x4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @view_inner_dynamic(%x: tensor<?x4x?xf32>) {
  // expected-error @+1 {{'lru.view' op expects dynamic dims only before the static ones}}
  %0 = lru.view %x : tensor<?x4x?xf32> -> tensor<?x4x?xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{'lru.concat' op expects at least one input}}
  %0 = lru.concat dim 0 : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_dim(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.concat' op expects dim within [0, 2)}}
  %0 = lru.concat %x, %x dim 2 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @concat_rank(%x: tensor<?x4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'lru.concat' op expects inputs of one element type and rank}}
  %0 = lru.concat %x, %y dim 1 : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @concat_disagree(%x: tensor<2x4xf32>, %y: tensor<3x4xf32>) {
  // expected-error @+1 {{'lru.concat' op expects inputs that agree except in dim 1}}
  %0 = lru.concat %x, %y dim 1 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_result(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.concat' op expects a result of shape [?, 8], got 'tensor<?x4xf32>'}}
  %0 = lru.concat %x, %x dim 1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @slice_dynamic_dim(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.slice' op expects a static dim within [0, 2)}}
  %0 = lru.slice %x dim 0 offset 0 size 1 : tensor<?x4xf32> -> tensor<1x4xf32>
  return
}

// -----

func.func @slice_outside(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.slice' op slice [2, 5) is outside dim 1 of size 4}}
  %0 = lru.slice %x dim 1 offset 2 size 3 : tensor<?x4xf32> -> tensor<?x3xf32>
  return
}

// -----

func.func @slice_result(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.slice' op expects a result of shape [?, 2], got 'tensor<?x3xf32>'}}
  %0 = lru.slice %x dim 1 offset 1 size 2 : tensor<?x4xf32> -> tensor<?x3xf32>
  return
}

// -----

func.func @shift_rank(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'lru.shift' op expects a sequence [B, L, N], got 'tensor<?x4xf32>'}}
  %0 = lru.shift %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @shift_init(%x: tensor<?x16x4xf32>, %h: tensor<?x5xf32>) {
  // expected-error @+1 {{'lru.shift' op expects init of shape [B, N] and the sequence's element type, got 'tensor<?x5xf32>'}}
  %0 = lru.shift %x init %h : (tensor<?x16x4xf32>, tensor<?x5xf32>) -> tensor<?x16x4xf32>
  return
}

// -----

func.func @shift_lengths(%x: tensor<2x16x4xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.shift' op expects lengths of shape [B], got 'tensor<3xi32>'}}
  %0 = lru.shift %x lengths %len : (tensor<2x16x4xf32>, tensor<3xi32>) -> tensor<2x16x4xf32>
  return
}

// -----

func.func @scan_lambda_element(%l: tensor<8xf32>, %b: tensor<?x16x8xcomplex<f32>>) {
  // expected-error @+1 {{'lru.scan' op expects lambda of b's element type, got 'tensor<8xf32>'}}
  %0 = lru.scan %l, %b : (tensor<8xf32>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xcomplex<f32>>
  return
}

// -----

func.func @scan_lambda_shape(%l: tensor<7xcomplex<f32>>, %b: tensor<?x16x8xcomplex<f32>>) {
  // expected-error @+1 {{'lru.scan' op expects lambda of shape [N] or [B, L, N], got 'tensor<7xcomplex<f32>>'}}
  %0 = lru.scan %l, %b : (tensor<7xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xcomplex<f32>>
  return
}

// -----

func.func @scan_result(%l: tensor<8xcomplex<f32>>, %b: tensor<?x16x8xcomplex<f32>>) {
  // expected-error @+1 {{'lru.scan' op expects a result of element type 'complex<f32>', got 'tensor<?x16x8xf32>'}}
  %0 = lru.scan %l, %b : (tensor<8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%x: tensor<?x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'lru.matmul' op expects lhs [..., K] and rhs a matrix}}
  %0 = lru.matmul nt %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @matmul_contract(%x: tensor<?x4xf32>, %w: tensor<8x5xf32>) {
  // expected-error @+1 {{'lru.matmul' op contracts lhs's last dim (4) with rhs dim 1 (5)}}
  %0 = lru.matmul nt %x, %w : (tensor<?x4xf32>, tensor<8x5xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @matmul_tn(%x: tensor<?x16x4xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'lru.matmul' op expects lhs [..., N] and rhs [..., K] with the same leading dims}}
  %0 = lru.matmul tn %x, %y : (tensor<?x16x4xf32>, tensor<?x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_result(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'lru.matmul' op expects a result of shape [?, 8], got 'tensor<?x4xf32>'}}
  %0 = lru.matmul nn %x, %w : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gather_table(%t: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'lru.gather' op expects a table [V, H], got 'tensor<8xf32>'}}
  %0 = lru.gather %t, %i : (tensor<8xf32>, tensor<?xi32>) -> tensor<?xf32>
  return
}

// -----

func.func @gather_result(%t: tensor<8x4xf32>, %i: tensor<?x16xi32>) {
  // expected-error @+1 {{'lru.gather' op expects a result of shape [?, 16, 4], got 'tensor<?x4xf32>'}}
  %0 = lru.gather %t, %i : (tensor<8x4xf32>, tensor<?x16xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @scatter_result(%u: tensor<?x16x4xf32>, %i: tensor<?x16xi32>) {
  // expected-error @+1 {{'lru.scatter_add' op expects a static result [V, H], got 'tensor<?x4xf32>'}}
  %0 = lru.scatter_add %u, %i : (tensor<?x16x4xf32>, tensor<?x16xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @scatter_indices(%u: tensor<?x16x4xf32>, %i: tensor<?x15xi32>) {
  // expected-error @+1 {{'lru.scatter_add' op expects updates [..., H] over indices [...]}}
  %0 = lru.scatter_add %u, %i : (tensor<?x16x4xf32>, tensor<?x15xi32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @scatter_width(%u: tensor<?x16x4xf32>, %i: tensor<?x16xi32>) {
  // expected-error @+1 {{'lru.scatter_add' op expects a result of shape [8, 4], got 'tensor<8x5xf32>'}}
  %0 = lru.scatter_add %u, %i : (tensor<?x16x4xf32>, tensor<?x16xi32>) -> tensor<8x5xf32>
  return
}

// -----

func.func @length_mask_dynamic(%len: tensor<?xi32>) {
  // expected-error @+1 {{'lru.length_mask' op expects a result [B, L] with a static L, got 'tensor<?x?xf32>'}}
  %0 = lru.length_mask prefix %len : tensor<?xi32> -> tensor<?x?xf32>
  return
}

// -----

func.func @length_mask_batch(%len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.length_mask' op expects a result of shape [3, 16], got 'tensor<2x16xf32>'}}
  %0 = lru.length_mask last %len : tensor<3xi32> -> tensor<2x16xf32>
  return
}

// -----

func.func @length_mask_scored(%len: tensor<3xi32>, %tags: tensor<3x8xi32>) {
  // expected-error @+1 {{'lru.length_mask' op expects scored labels [B, L] like the result, got 'tensor<3x8xi32>'}}
  %0 = lru.length_mask prefix %len scored %tags : tensor<3xi32>, tensor<3x8xi32> -> tensor<3x16xf32>
  return
}

// -----

func.func @zero_padding_rank(%x: tensor<?xi32>, %len: tensor<?xi32>) {
  // expected-error @+1 {{'lru.zero_padding' op expects x [B, L, ...] with a static L, got 'tensor<?xi32>'}}
  %0 = lru.zero_padding %x, %len : tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @zero_padding_batch(%x: tensor<3x8xi32>, %len: tensor<2xi32>) {
  // expected-error @+1 {{'lru.zero_padding' op expects lengths [B] of x's batch, got 'tensor<2xi32>'}}
  %0 = lru.zero_padding %x, %len : tensor<3x8xi32>, tensor<2xi32>
  return
}

// -----

func.func @zero_padding_type(%x: tensor<3x8xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'lru.zero_padding' op operand #0 must be}}
  %0 = lru.zero_padding %x, %len : tensor<3x8xf32>, tensor<3xi32>
  return
}

// -----

func.func @sce_labels(%z: tensor<?x10xf32>, %k: tensor<?x2xi32>) {
  // expected-error @+1 {{'lru.softmax_cross_entropy' op expects labels [...] for logits [..., K]}}
  %0 = lru.softmax_cross_entropy %z, %k : (tensor<?x10xf32>, tensor<?x2xi32>) -> tensor<?xf32>
  return
}

// -----

func.func @label_weight_negative(%k: tensor<?xi32>) {
  // expected-error @+1 {{'lru.label_weight' op expects finite weights >= 0, got -1}}
  %0 = lru.label_weight %k weights [1.0, -1.0] : tensor<?xi32> -> tensor<?xf32>
  return
}

// -----

func.func @label_weight_empty(%k: tensor<?xi32>) {
  // expected-error @+1 {{'lru.label_weight' op expects at least one weight}}
  %0 = lru.label_weight %k weights [] : tensor<?xi32> -> tensor<?xf32>
  return
}

// -----

func.func @label_weight_result(%k: tensor<?x4xi32>) {
  // expected-error @+1 {{'lru.label_weight' op expects a result of shape [?, 4]}}
  %0 = lru.label_weight %k weights [1.0] : tensor<?x4xi32> -> tensor<?xf32>
  return
}

// -----

func.func @sce_smoothing(%z: tensor<?x10xf32>, %k: tensor<?xi32>) {
  // expected-error @+1 {{'lru.softmax_cross_entropy' op expects a label_smoothing in [0, 1), got 1}}
  %0 = lru.softmax_cross_entropy %z, %k {label_smoothing = 1.0 : f32} : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  return
}

// -----

func.func @sce_grad_smoothing(%z: tensor<?x10xf32>, %k: tensor<?xi32>, %g: tensor<?xf32>) {
  // expected-error @+1 {{'lru.softmax_cross_entropy_grad' op expects a label_smoothing in [0, 1), got -5.000000e-01}}
  %0 = lru.softmax_cross_entropy_grad %z, %k, %g {label_smoothing = -0.5 : f32} : (tensor<?x10xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func @sce_result(%z: tensor<?x10xf32>, %k: tensor<?xi32>) {
  // expected-error @+1 {{'lru.softmax_cross_entropy' op expects a result of shape [?], got 'tensor<f32>'}}
  %0 = lru.softmax_cross_entropy %z, %k : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

func.func @sce_grad_g(%z: tensor<?x10xf32>, %k: tensor<?xi32>, %g: tensor<?x10xf32>) {
  // expected-error @+1 {{'lru.softmax_cross_entropy_grad' op expects labels and g [...] for logits [..., K]}}
  %0 = lru.softmax_cross_entropy_grad %z, %k, %g : (tensor<?x10xf32>, tensor<?xi32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  return
}

// -----

func.func @sce_grad_result(%z: tensor<?x10xf32>, %k: tensor<?xi32>, %g: tensor<?xf32>) {
  // expected-error @+1 {{'lru.softmax_cross_entropy_grad' op expects a result of shape [?, 10], got 'tensor<?xf32>'}}
  %0 = lru.softmax_cross_entropy_grad %z, %k, %g : (tensor<?x10xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @dropout_rate(%x: tensor<?x4xf32>, %key: tensor<2xi64>) {
  // expected-error @+1 {{'lru.dropout_mask' op expects a rate in [0, 1), got 1}}
  %0 = lru.dropout_mask %x, %key rate 1.000000e+00 site 0 : tensor<?x4xf32>, tensor<2xi64>
  return
}

// -----

func.func @dropout_site(%x: tensor<?x4xf32>, %key: tensor<2xi64>) {
  // expected-error @+1 {{'lru.dropout_mask' op expects a site >= 0, got -1}}
  %0 = lru.dropout_mask %x, %key rate 1.000000e-01 site -1 : tensor<?x4xf32>, tensor<2xi64>
  return
}

// -----

func.func @dropout_key(%x: tensor<?x4xf32>, %key: tensor<3xi64>) {
  // expected-error @+1 {{'lru.dropout_mask' op expects key : tensor<2xi64> (seed, step)}}
  %0 = lru.dropout_mask %x, %key rate 1.000000e-01 site 0 : tensor<?x4xf32>, tensor<3xi64>
  return
}
// -----

func.func @re_result_shape(%x: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'lru.re' op all non-scalar operands/results must have the same shape and base type}}
  %0 = lru.re %x : tensor<4xcomplex<f32>> -> tensor<5xf32>
  return
}

// -----

func.func @im_result_shape(%x: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'lru.im' op all non-scalar operands/results must have the same shape and base type}}
  %0 = lru.im %x : tensor<4xcomplex<f32>> -> tensor<3xf32>
  return
}

// -----

func.func @together_first(%x: tensor<?x3xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+1 {{'lru.matmul' op marked lru.together expects an nt or nn matmul just before it (only lru.param ops and constants between), and to be one}}
  %0 = lru.matmul nt %x, %w {lru.together} : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @together_after_other_op(%x: tensor<?x3xf32>, %w: tensor<4x3xf32>) {
  %0 = lru.matmul nt %x, %w : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
  %1 = lru.exp %x : tensor<?x3xf32>
  // expected-error @+1 {{'lru.matmul' op marked lru.together expects an nt or nn matmul just before it}}
  %2 = lru.matmul nt %1, %w {lru.together} : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @together_reads_run(%x: tensor<?x3xf32>, %w: tensor<3x3xf32>) {
  %0 = lru.matmul nt %x, %w : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  %1 = lru.matmul nt %x, %w {lru.together} : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  // expected-error @+1 {{'lru.matmul' op marked lru.together reads the result of a matmul of its run}}
  %2 = lru.matmul nt %0, %w {lru.together} : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  return
}
