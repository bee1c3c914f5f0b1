// RUN: lruc-opt %s -split-input-file -lru-derive-backward | FileCheck %s

// One case per derivative rule: the ops its adjoint is built from.

// neg: -dy
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK: lru.neg %[[DY]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.neg %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// exp: dy * conj(exp x)
// CHECK-LABEL: func.func @backward
// CHECK: %[[Y:.*]] = lru.exp %[[P:.*]] :
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK: lru.mul %[[DY]], %[[Y]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.exp %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// log: dy / x
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK: lru.div %[[DY]], %[[P:.*]] :
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.log %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sigmoid: dy * s * (1 - s)
// CHECK-LABEL: func.func @backward
// CHECK: %[[S:.*]] = lru.sigmoid
// CHECK: %[[ONE:.*]] = lru.broadcast
// CHECK: %[[OMS:.*]] = lru.sub %{{.*}}, %[[S]]
// CHECK: %[[D:.*]] = lru.mul %[[S]], %[[OMS]]
// CHECK: lru.mul %{{.*}}, %[[D]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.sigmoid %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// softplus: dy * sigmoid(x)
// CHECK-LABEL: func.func @backward
// CHECK: %[[S:.*]] = lru.sigmoid %[[P:.*]] :
// CHECK: lru.mul %{{.*}}, %[[S]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.softplus %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// rsqrt: dy * -0.5 * y^3
// CHECK-LABEL: func.func @backward
// CHECK: %[[Y:.*]] = lru.rsqrt
// CHECK: %[[Y2:.*]] = lru.mul %[[Y]], %[[Y]]
// CHECK: %[[Y3:.*]] = lru.mul %[[Y]], %[[Y2]]
// CHECK: arith.constant dense<-5.000000e-01>
// CHECK: lru.mul %[[Y3]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.rsqrt %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sqrt: dy * 0.5 / y
// CHECK-LABEL: func.func @backward
// CHECK: %[[Y:.*]] = lru.sqrt
// CHECK: arith.constant dense<5.000000e-01>
// CHECK: %[[H:.*]] = lru.mul
// CHECK: lru.div %[[H]], %[[Y]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.sqrt %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// tanh: dy * (1 - y^2)
// CHECK-LABEL: func.func @backward
// CHECK: %[[Y:.*]] = lru.tanh
// CHECK: %[[Y2:.*]] = lru.mul %[[Y]], %[[Y]]
// CHECK: lru.sub %{{.*}}, %[[Y2]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.tanh %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// relu: dy * step(x)
// CHECK-LABEL: func.func @backward
// CHECK: %[[S:.*]] = lru.step %[[P:[^ ]*]] :
// CHECK: lru.mul %{{.*}}, %[[S]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.relu %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// nan_to_zero: dy * not_nan(x) (0 where x is NaN)
// CHECK-LABEL: func.func @backward
// CHECK: %[[N:.*]] = lru.not_nan %[[P:[^ ]*]] :
// CHECK: lru.mul %{{.*}}, %[[N]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.nan_to_zero %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// masked: dy masked the same way; the mask gets none
// CHECK-LABEL: func.func @backward
// CHECK: %[[M:.*]] = arith.constant dense<[1.000000e+00, 0.000000e+00, 1.000000e+00]>
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK-NEXT: %[[G:.*]] = lru.masked %[[DY]], %[[M]]
// CHECK-NEXT: return %{{.*}}, %[[G]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %m = arith.constant dense<[1.0, 0.0, 1.0]> : tensor<3xf32>
  %y = lru.masked %p, %m : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// not_nan: piecewise constant, no adjoint (only the product's reaches p)
// CHECK-LABEL: func.func @backward
// CHECK: %[[N:.*]] = lru.not_nan %[[P:[^ ]*]] :
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK-NEXT: %[[G:.*]] = lru.mul %[[DY]], %[[N]]
// CHECK-NEXT: return %{{.*}}, %[[G]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %n = lru.not_nan %p : tensor<3xf32>
  %y = lru.mul %p, %n : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// max: dy to a where a > b, the rest to b
// CHECK-LABEL: func.func @backward
// CHECK: %[[D:.*]] = lru.sub %[[A:[^ ]*]], %[[B:[^ ]*]] :
// CHECK: %[[S:.*]] = lru.step %[[D]]
// CHECK: %[[GA:.*]] = lru.mul %[[DY:[^ ]*]], %[[S]]
// CHECK: lru.sub %[[DY]], %{{.*}}
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(zeros) group(decay) : tensor<3xf32>
  %y = lru.max %a, %b : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gelu: dy * gelu'(x), same approximation
// CHECK-LABEL: func.func @backward
// CHECK: %[[G:.*]] = lru.gelu_grad %{{.*}} approximate
// CHECK: lru.mul %{{.*}}, %[[G]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.gelu %p approximate : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// step: no adjoint (the gradient is zero)
// CHECK-LABEL: func.func @backward
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %[[Z]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.step %p : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// stop_gradient: no adjoint. In p * stop_gradient(p) the gradient of p
// is dy * stop_gradient(p), one product and no sum of two.
// CHECK-LABEL: func.func @backward
// CHECK: %[[P:.*]] = lru.param "p"
// CHECK: %[[S:.*]] = lru.stop_gradient %[[P]] : tensor<3xf32>
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK-NEXT: %[[G:.*]] = lru.mul %[[DY]], %[[S]]
// CHECK-NOT: lru.add
// CHECK: return %{{.*}}, %[[G]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %s = lru.stop_gradient %p : tensor<3xf32>
  %y = lru.mul %p, %s : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// add: dy to both
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK: return %{{.*}}, %[[DY]], %[[DY]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<3xf32>
  %y = lru.add %a, %b : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sub: dy, -dy
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK: %[[N:.*]] = lru.neg %[[DY]]
// CHECK: return %{{.*}}, %[[DY]], %[[N]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<3xf32>
  %y = lru.sub %a, %b : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mul: dy * other factor
// CHECK-LABEL: func.func @backward
// CHECK: %[[A:.*]] = lru.param "a"
// CHECK: %[[B:.*]] = lru.param "b"
// CHECK: %[[DY:.*]] = lru.broadcast
// CHECK: %[[DA:.*]] = lru.mul %[[DY]], %[[B]]
// CHECK: %[[DB:.*]] = lru.mul %[[DY]], %[[A]]
// CHECK: return %{{.*}}, %[[DA]], %[[DB]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<3xf32>
  %y = lru.mul %a, %b : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mul, complex: dy * conj(other factor)
// CHECK-LABEL: func.func @backward
// CHECK: %[[C:.*]] = lru.complex
// CHECK: %[[CC:.*]] = lru.conj %[[C]]
// CHECK: lru.mul %{{.*}}, %[[CC]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<3xf32>
  %c = lru.complex %a, %b : tensor<3xf32> -> tensor<3xcomplex<f32>>
  %y = lru.mul %c, %c : tensor<3xcomplex<f32>>
  %r = lru.re %y : tensor<3xcomplex<f32>> -> tensor<3xf32>
  %l = lru.reduce_sum %r dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// div: dy / conj(b) and -dy * conj(y / b)
// CHECK-LABEL: func.func @backward
// CHECK: %[[Y:.*]] = lru.div %[[A:.*]], %[[B:.*]] :
// CHECK: %[[DA:.*]] = lru.div %[[DY:.*]], %[[B]]
// CHECK: %[[Q:.*]] = lru.div %[[Y]], %[[B]]
// CHECK: %[[M:.*]] = lru.mul %[[DY]], %[[Q]]
// CHECK: %[[DB:.*]] = lru.neg %[[M]]
// CHECK: return %{{.*}}, %[[DA]], %[[DB]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<3xf32>
  %y = lru.div %a, %b : tensor<3xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// complex: re(dy), im(dy)
// CHECK-LABEL: func.func @backward
// CHECK: %[[D:.*]] = lru.mul
// CHECK: %[[DRE:.*]] = lru.re %[[D]]
// CHECK: %[[DIM:.*]] = lru.im %[[D]]
// CHECK: return %{{.*}}, %[[DRE]], %[[DIM]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<3xf32>
  %c = lru.complex %a, %b : tensor<3xf32> -> tensor<3xcomplex<f32>>
  %y = lru.exp %c : tensor<3xcomplex<f32>>
  %r = lru.re %y : tensor<3xcomplex<f32>> -> tensor<3xf32>
  %l = lru.reduce_sum %r dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// re: complex(dy, 0)
// CHECK-LABEL: func.func @backward
// CHECK: arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[Z:.*]] = lru.broadcast %{{.*}} like %[[DY:[^ ]*]] dims []
// CHECK: lru.complex %[[DY]], %[[Z]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %z = arith.constant dense<0.0> : tensor<3xf32>
  %c = lru.complex %z, %p : tensor<3xf32> -> tensor<3xcomplex<f32>>
  %e = lru.exp %c : tensor<3xcomplex<f32>>
  %r = lru.re %e : tensor<3xcomplex<f32>> -> tensor<3xf32>
  %l = lru.reduce_sum %r dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// conj: conj(dy)
// CHECK-LABEL: func.func @backward
// CHECK: %[[DC:.*]] = lru.complex
// CHECK: lru.conj %[[DC]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %z = arith.constant dense<0.0> : tensor<3xf32>
  %c = lru.complex %z, %p : tensor<3xf32> -> tensor<3xcomplex<f32>>
  %y = lru.conj %c : tensor<3xcomplex<f32>>
  %r = lru.re %y : tensor<3xcomplex<f32>> -> tensor<3xf32>
  %l = lru.reduce_sum %r dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// broadcast: reduce_sum over the new dims
// CHECK-LABEL: func.func @backward
// CHECK: lru.reduce_sum %{{.*}} dims [0, 1] : tensor<2x4x3xf32> -> tensor<3xf32>
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %x = arith.constant dense<1.0> : tensor<2x4x3xf32>
  %y = lru.broadcast %p like %x dims [2] : (tensor<3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %l = lru.reduce_sum %y dims [0, 1, 2] : tensor<2x4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_sum: broadcast back
// CHECK-LABEL: func.func @backward
// CHECK: lru.broadcast %{{.*}} like %{{.*}} dims [1] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<2x3xf32>
  %y = lru.reduce_sum %p dims [0] : tensor<2x3xf32> -> tensor<3xf32>
  %e = lru.exp %y : tensor<3xf32>
  %l = lru.reduce_sum %e dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// concat: slices of dy
// CHECK-LABEL: func.func @backward
// CHECK: %[[DA:.*]] = lru.slice %[[D:.*]] dim 0 offset 0 size 3
// CHECK: %[[DB:.*]] = lru.slice %[[D]] dim 0 offset 3 size 2
// CHECK: return %{{.*}}, %[[DA]], %[[DB]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<2xf32>
  %y = lru.concat %a, %b dim 0 : (tensor<3xf32>, tensor<2xf32>) -> tensor<5xf32>
  %e = lru.exp %y : tensor<5xf32>
  %l = lru.reduce_sum %e dims [0] : tensor<5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// view: dy viewed back as x's type (each float's adjoint to its place)
// CHECK-LABEL: func.func @backward
// CHECK: %[[DY:.*]] = lru.mul %{{.*}} : tensor<2x2xcomplex<f32>>
// CHECK: %[[DP:.*]] = lru.view %[[DY]] : tensor<2x2xcomplex<f32>> -> tensor<2x4xf32>
// CHECK: return %{{.*}}, %[[DP]]
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<2x4xf32>
  %y = lru.view %p : tensor<2x4xf32> -> tensor<2x2xcomplex<f32>>
  %e = lru.exp %y : tensor<2x2xcomplex<f32>>
  %r = lru.re %e : tensor<2x2xcomplex<f32>> -> tensor<2x2xf32>
  %l = lru.reduce_sum %r dims [0, 1] : tensor<2x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// slice: dy between zeros
// CHECK-LABEL: func.func @backward
// CHECK: arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[Z:.*]] = lru.broadcast
// CHECK: %[[LO:.*]] = lru.slice %[[Z]] dim 0 offset 0 size 1
// CHECK: %[[HI:.*]] = lru.slice %[[Z]] dim 0 offset 2 size 1
// CHECK: lru.concat %[[LO]], %{{.*}}, %[[HI]] dim 0
func.func @forward_train() -> tensor<f32> {
  %p = lru.param "p" init(ones) group(decay) : tensor<3xf32>
  %y = lru.slice %p dim 0 offset 1 size 1 : tensor<3xf32> -> tensor<1xf32>
  %e = lru.exp %y : tensor<1xf32>
  %l = lru.reduce_sum %e dims [0] : tensor<1xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul nn: dx = dy W^T (nt), dW = x^T dy (tn)
// CHECK-LABEL: func.func @backward
// CHECK: %[[DX:.*]] = lru.matmul nt %[[DY:.*]], %[[W:[^ ]*]] :
// CHECK: %[[DW:.*]] = lru.matmul tn %[[X:.*]], %[[DY]]
// CHECK: return %{{.*}}, %[[DX]], %[[DW]]
func.func @forward_train() -> tensor<f32> {
  %x = lru.param "x" init(ones) group(decay) : tensor<2x3xf32>
  %w = lru.param "w" init(ones) group(decay) : tensor<3x4xf32>
  %y = lru.matmul nn %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %l = lru.reduce_sum %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul tn: da = b dy^T (nt), db = a dy (nn)
// CHECK-LABEL: func.func @backward
// CHECK: %[[DA:.*]] = lru.matmul nt %[[B:.*]], %[[DY:[^ ]*]] :
// CHECK: %[[DB:.*]] = lru.matmul nn %[[A:.*]], %[[DY]]
// CHECK: return %{{.*}}, %[[DA]], %[[DB]]
func.func @forward_train() -> tensor<f32> {
  %a = lru.param "a" init(ones) group(decay) : tensor<2x3xf32>
  %b = lru.param "b" init(ones) group(decay) : tensor<2x4xf32>
  %y = lru.matmul tn %a, %b : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %l = lru.reduce_sum %y dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gather: scatter_add into the table; no adjoint for the indices
// CHECK-LABEL: func.func @backward
// CHECK: lru.scatter_add %{{.*}}, %arg0 : (tensor<2x4x3xf32>, tensor<2x4xi32>) -> tensor<8x3xf32>
func.func @forward_train(%tok: tensor<2x4xi32>) -> tensor<f32> {
  %t = lru.param "t" init(ones) group(decay) : tensor<8x3xf32>
  %y = lru.gather %t, %tok : (tensor<8x3xf32>, tensor<2x4xi32>) -> tensor<2x4x3xf32>
  %l = lru.reduce_sum %y dims [0, 1, 2] : tensor<2x4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// scatter_add: gather
// CHECK-LABEL: func.func @backward
// CHECK: lru.gather %{{.*}}, %arg0 : (tensor<8x3xf32>, tensor<2x4xi32>) -> tensor<2x4x3xf32>
func.func @forward_train(%tok: tensor<2x4xi32>) -> tensor<f32> {
  %u = lru.param "u" init(ones) group(decay) : tensor<2x4x3xf32>
  %y = lru.scatter_add %u, %tok : (tensor<2x4x3xf32>, tensor<2x4xi32>) -> tensor<8x3xf32>
  %l = lru.reduce_sum %y dims [0, 1] : tensor<8x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// softmax_cross_entropy: its grad op
// CHECK-LABEL: func.func @backward
// CHECK: %[[G:.*]] = lru.softmax_cross_entropy_grad %[[Z:.*]], %arg0, %{{.*}} :
// CHECK: return %{{.*}}, %[[G]]
func.func @forward_train(%lab: tensor<2xi32>) -> tensor<f32> {
  %z = lru.param "z" init(ones) group(decay) : tensor<2x5xf32>
  %y = lru.softmax_cross_entropy %z, %lab : (tensor<2x5xf32>, tensor<2xi32>) -> tensor<2xf32>
  %l = lru.reduce_sum %y dims [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// shift: the reverse shift of dy; init gets dy at step 0 (a sum over one
// step: a view)
// CHECK-LABEL: func.func @backward
// CHECK: %[[DS:.*]] = lru.shift %[[DY:[^ ]*]] reverse
// CHECK: %[[FIRST:.*]] = lru.slice %[[DY]] dim 1 offset 0 size 1
// CHECK: %[[DI:.*]] = lru.view %[[FIRST]] : tensor<2x1x3xf32> -> tensor<2x3xf32>
// CHECK: return %{{.*}}, %[[DS]], %[[DI]]
func.func @forward_train() -> tensor<f32> {
  %s = lru.param "s" init(ones) group(decay) : tensor<2x4x3xf32>
  %i = lru.param "i" init(ones) group(decay) : tensor<2x3xf32>
  %y = lru.shift %s init %i : (tensor<2x4x3xf32>, tensor<2x3xf32>) -> tensor<2x4x3xf32>
  %l = lru.reduce_sum %y dims [0, 1, 2] : tensor<2x4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
