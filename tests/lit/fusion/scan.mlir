// RUN: lruc-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(lru-fuse-elementwise))' | FileCheck %s

// The scan joins the group of its input's producer, and its consumers
// join too: lambda and lengths come in from outside.
// CHECK-LABEL: func.func @producer_and_consumer(
// CHECK: %[[G:.*]] = lru.fused(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x8x4xf32>, tensor<?x8x4xf32>, tensor<4xcomplex<f32>>, tensor<?xi32>) -> tensor<?x8x4xf32>
// CHECK: lru.complex
// CHECK: lru.scan
// CHECK: lru.re
// CHECK: lru.yield
// CHECK-NOT: lru.scan
// CHECK: return %[[G]]
func.func @producer_and_consumer(%re: tensor<?x8x4xf32>, %im: tensor<?x8x4xf32>, %lambda: tensor<4xcomplex<f32>>, %lengths: tensor<?xi32>) -> tensor<?x8x4xf32> {
  %b = lru.complex %re, %im : tensor<?x8x4xf32> -> tensor<?x8x4xcomplex<f32>>
  %x = lru.scan %lambda, %b lengths %lengths : (tensor<4xcomplex<f32>>, tensor<?x8x4xcomplex<f32>>, tensor<?xi32>) -> tensor<?x8x4xcomplex<f32>>
  %y = lru.re %x : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  return %y : tensor<?x8x4xf32>
}

// -----

// A second scan of the same shape (bidirectional) starts a group of its
// own: a group runs along one scan.
// CHECK-LABEL: func.func @two_scans(
// CHECK: lru.fused
// CHECK: lru.scan
// CHECK-NOT: lru.scan
// CHECK: lru.yield
// CHECK: lru.fused
// CHECK: lru.scan {{.*}} reverse
// CHECK: lru.yield
func.func @two_scans(%b: tensor<?x8x4xcomplex<f32>>, %lambda: tensor<4xcomplex<f32>>) -> (tensor<?x8x4xf32>, tensor<?x8x4xf32>) {
  %x = lru.scan %lambda, %b : (tensor<4xcomplex<f32>>, tensor<?x8x4xcomplex<f32>>) -> tensor<?x8x4xcomplex<f32>>
  %y = lru.re %x : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  %r = lru.scan %lambda, %b reverse : (tensor<4xcomplex<f32>>, tensor<?x8x4xcomplex<f32>>) -> tensor<?x8x4xcomplex<f32>>
  %z = lru.re %r : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  return %y, %z : tensor<?x8x4xf32>, tensor<?x8x4xf32>
}

// -----

// lru.im comes after a matmul that read the group's lru.re (which closed
// the group), but everything it reads is ready where the group is built:
// it joins, and the complex states are never stored.
// CHECK-LABEL: func.func @late_consumer(
// CHECK: %[[G:.*]]:2 = lru.fused
// CHECK: lru.scan
// CHECK: lru.re
// CHECK: lru.im
// CHECK: lru.yield %{{.*}}, %{{.*}} : tensor<?x8x4xf32>, tensor<?x8x4xf32>
// CHECK: lru.matmul nt %[[G]]#0
// CHECK: lru.matmul nt %[[G]]#1
func.func @late_consumer(%b: tensor<?x8x4xcomplex<f32>>, %lambda: tensor<4xcomplex<f32>>, %c: tensor<3x4xf32>) -> (tensor<?x8x3xf32>, tensor<?x8x3xf32>) {
  %x = lru.scan %lambda, %b : (tensor<4xcomplex<f32>>, tensor<?x8x4xcomplex<f32>>) -> tensor<?x8x4xcomplex<f32>>
  %re = lru.re %x : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  %p = lru.matmul nt %re, %c : (tensor<?x8x4xf32>, tensor<3x4xf32>) -> tensor<?x8x3xf32>
  %im = lru.im %x : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  %q = lru.matmul nt %im, %c : (tensor<?x8x4xf32>, tensor<3x4xf32>) -> tensor<?x8x3xf32>
  return %p, %q : tensor<?x8x3xf32>, tensor<?x8x3xf32>
}

// -----

// Must not join: the late op also reads a value computed after the group
// (%m), which is not ready where the group is built.
// CHECK-LABEL: func.func @not_ready(
// CHECK: lru.fused
// CHECK: lru.exp
// CHECK: lru.tanh
// CHECK: lru.yield
// CHECK: %[[M:.*]] = lru.matmul
// CHECK: lru.mul %{{.*}}, %[[M]]
func.func @not_ready(%a: tensor<?x4x4xf32>, %c: tensor<4x4xf32>) -> (tensor<?x4x4xf32>, tensor<?x4x4xf32>) {
  %e = lru.exp %a : tensor<?x4x4xf32>
  %n = lru.tanh %e : tensor<?x4x4xf32>
  %m = lru.matmul nt %n, %c : (tensor<?x4x4xf32>, tensor<4x4xf32>) -> tensor<?x4x4xf32>
  %r = lru.mul %e, %m : tensor<?x4x4xf32>
  return %r, %n : tensor<?x4x4xf32>, tensor<?x4x4xf32>
}

// -----

// Two scans read one lru.complex (a bidirectional block): each group
// joins its own copy of it from the two float inputs, so the complex value
// is never stored; the original, unread, is gone.
// CHECK-LABEL: func.func @shared_complex_input(
// CHECK-NOT: lru.complex
// CHECK: %[[F:.*]] = lru.fused(%[[RE:.*]], %[[IM:.*]], %{{.*}}) : (tensor<?x8x4xf32>, tensor<?x8x4xf32>, tensor<4xcomplex<f32>>) -> tensor<?x8x4xf32>
// CHECK: lru.complex
// CHECK: lru.scan
// CHECK-NOT: reverse
// CHECK: lru.yield
// CHECK: %[[R:.*]] = lru.fused(%[[RE]], %[[IM]], %{{.*}}) : (tensor<?x8x4xf32>, tensor<?x8x4xf32>, tensor<4xcomplex<f32>>) -> tensor<?x8x4xf32>
// CHECK: lru.complex
// CHECK: lru.scan {{.*}} reverse
// CHECK: return %[[F]], %[[R]]
func.func @shared_complex_input(%re: tensor<?x8x4xf32>, %im: tensor<?x8x4xf32>, %lambda: tensor<4xcomplex<f32>>) -> (tensor<?x8x4xf32>, tensor<?x8x4xf32>) {
  %b = lru.complex %re, %im : tensor<?x8x4xf32> -> tensor<?x8x4xcomplex<f32>>
  %x = lru.scan %lambda, %b : (tensor<4xcomplex<f32>>, tensor<?x8x4xcomplex<f32>>) -> tensor<?x8x4xcomplex<f32>>
  %y = lru.re %x : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  %r = lru.scan %lambda, %b reverse : (tensor<4xcomplex<f32>>, tensor<?x8x4xcomplex<f32>>) -> tensor<?x8x4xcomplex<f32>>
  %z = lru.re %r : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  return %y, %z : tensor<?x8x4xf32>, tensor<?x8x4xf32>
}

// -----

// A complex value that one scan and something else read: no copy, the
// scan's group computes it once and stores it for the other reader.
// CHECK-LABEL: func.func @complex_also_returned(
// CHECK: %[[G:.*]]:2 = lru.fused
// CHECK: lru.complex
// CHECK-NOT: lru.complex
// CHECK: lru.scan
// CHECK: return %[[G]]#0, %[[G]]#1
func.func @complex_also_returned(%re: tensor<?x8x4xf32>, %im: tensor<?x8x4xf32>, %lambda: tensor<4xcomplex<f32>>) -> (tensor<?x8x4xcomplex<f32>>, tensor<?x8x4xf32>) {
  %b = lru.complex %re, %im : tensor<?x8x4xf32> -> tensor<?x8x4xcomplex<f32>>
  %x = lru.scan %lambda, %b : (tensor<4xcomplex<f32>>, tensor<?x8x4xcomplex<f32>>) -> tensor<?x8x4xcomplex<f32>>
  %y = lru.re %x : tensor<?x8x4xcomplex<f32>> -> tensor<?x8x4xf32>
  return %b, %y : tensor<?x8x4xcomplex<f32>>, tensor<?x8x4xf32>
}
