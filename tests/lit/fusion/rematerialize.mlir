// RUN: lruc-opt %s -lru-rematerialize -split-input-file | FileCheck %s

// A broadcast parameter and a broadcast mask, stored by the first group
// for the second: the second broadcasts them itself (its `like` one of its
// own inputs), and the first no longer yields them nor reads the
// parameter. Its product with an input the second group does not read
// stays stored (the function returns it too).
// CHECK-LABEL: func.func @broadcasts
// CHECK: %[[P:.*]] = lru.fused(%arg0, %arg1) : (tensor<?x5x4xf32>, tensor<?x5xf32>) -> tensor<?x5x4xf32>
// CHECK-NOT: %arg2
// CHECK: lru.yield %{{.*}} : tensor<?x5x4xf32>
// CHECK: lru.fused(%[[P]], %arg3, %arg1, %arg2)
// CHECK-NEXT: ^bb0(%[[Y:.*]]: tensor<?x5x4xf32>, %{{.*}}: tensor<?x5x4xf32>, %[[M:.*]]: tensor<?x5xf32>, %[[D:.*]]: tensor<4xf32>):
// CHECK-DAG: lru.broadcast %[[M]] like %[[Y]] dims [0, 1]
// CHECK-DAG: lru.broadcast %[[D]] like %[[Y]] dims [2]
func.func @broadcasts(%x: tensor<?x5x4xf32>, %mask: tensor<?x5xf32>,
                      %d: tensor<4xf32>, %z: tensor<?x5x4xf32>) -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  %g:3 = lru.fused(%x, %mask, %d) : (tensor<?x5x4xf32>, tensor<?x5xf32>, tensor<4xf32>) -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  ^bb0(%a: tensor<?x5x4xf32>, %m: tensor<?x5xf32>, %p: tensor<4xf32>):
    %mb = lru.broadcast %m like %a dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %pb = lru.broadcast %p like %a dims [2] : (tensor<4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %y = lru.mul %a, %mb : tensor<?x5x4xf32>
    lru.yield %y, %mb, %pb : tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>
  }
  %r = lru.fused(%g#0, %z, %g#2, %g#1) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%y: tensor<?x5x4xf32>, %a: tensor<?x5x4xf32>, %pb: tensor<?x5x4xf32>, %mb: tensor<?x5x4xf32>):
    %s = lru.mul %y, %pb : tensor<?x5x4xf32>
    %t = lru.mul %s, %mb : tensor<?x5x4xf32>
    %u = lru.add %t, %a : tensor<?x5x4xf32>
    lru.yield %u : tensor<?x5x4xf32>
  }
  return %r, %g#0 : tensor<?x5x4xf32>, tensor<?x5x4xf32>
}

// -----

// A masked copy y = x * mask that one group reads, where x is stored
// anyway (the function returns it): that group loads x instead of y (a
// load for a load) and masks it itself, and y is not stored. Without a
// reader of x elsewhere, x is the producer's input: the reader loads that,
// and the producer, left with nothing to store, goes.
// CHECK-LABEL: func.func @masked_copy
// CHECK: %[[P:.*]] = lru.fused(%arg0) : (tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
// CHECK: lru.exp
// CHECK-NEXT: lru.yield %{{.*}} : tensor<?x5x4xf32>
// CHECK: %[[R:.*]] = lru.fused(%arg2, %[[P]], %arg1)
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<?x5x4xf32>, %[[X:.*]]: tensor<?x5x4xf32>, %[[M:.*]]: tensor<?x5xf32>):
// CHECK-NEXT: %[[MB:.*]] = lru.broadcast %[[M]]
// CHECK-NEXT: lru.mul %[[X]], %[[MB]]
// CHECK: return %[[R]], %[[P]]
// CHECK-LABEL: func.func @masked_input
// CHECK-NOT: lru.fused(%arg0, %arg1)
// CHECK: %[[R:.*]] = lru.fused(%arg2, %arg1, %arg0)
// CHECK: return %[[R]]
func.func @masked_copy(%in: tensor<?x5x4xf32>, %mask: tensor<?x5xf32>,
                       %z: tensor<?x5x4xf32>) -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  %g:2 = lru.fused(%in, %mask) : (tensor<?x5x4xf32>, tensor<?x5xf32>) -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  ^bb0(%a: tensor<?x5x4xf32>, %m: tensor<?x5xf32>):
    %x = lru.exp %a : tensor<?x5x4xf32>
    %mb = lru.broadcast %m like %x dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %y = lru.mul %x, %mb : tensor<?x5x4xf32>
    lru.yield %x, %y : tensor<?x5x4xf32>, tensor<?x5x4xf32>
  }
  %r = lru.fused(%z, %g#1) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%b: tensor<?x5x4xf32>, %y: tensor<?x5x4xf32>):
    %u = lru.add %b, %y : tensor<?x5x4xf32>
    lru.yield %u : tensor<?x5x4xf32>
  }
  return %r, %g#0 : tensor<?x5x4xf32>, tensor<?x5x4xf32>
}
func.func @masked_input(%x: tensor<?x5x4xf32>, %mask: tensor<?x5xf32>,
                        %z: tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  %y = lru.fused(%x, %mask) : (tensor<?x5x4xf32>, tensor<?x5xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%a: tensor<?x5x4xf32>, %m: tensor<?x5xf32>):
    %mb = lru.broadcast %m like %a dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %p = lru.mul %a, %mb : tensor<?x5x4xf32>
    lru.yield %p : tensor<?x5x4xf32>
  }
  %r = lru.fused(%z, %y) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%b: tensor<?x5x4xf32>, %v: tensor<?x5x4xf32>):
    %u = lru.add %b, %v : tensor<?x5x4xf32>
    lru.yield %u : tensor<?x5x4xf32>
  }
  return %r : tensor<?x5x4xf32>
}

// -----

// The sigmoid's s * (1 - s), stored beside s: a reader of both computes
// it from s; a reader of it alone could only compute it from the
// pre-activation, which it does not read, so that one still reads it (the
// function returns both, so neither would go: no load to swap).
// CHECK-LABEL: func.func @sigmoid_slope
// CHECK: %[[G:.*]]:2 = lru.fused(%arg0)
// CHECK: lru.fused(%[[G]]#0, %arg1)
// CHECK-NEXT: ^bb0(%[[S:.*]]: tensor<?x3xf32>, %{{.*}}: tensor<?x3xf32>):
// CHECK-NEXT: arith.constant
// CHECK-NEXT: lru.broadcast
// CHECK-NEXT: lru.sub %{{.*}}, %[[S]]
// CHECK-NEXT: lru.mul %[[S]]
// CHECK: lru.fused(%[[G]]#1, %arg1)
func.func @sigmoid_slope(%x: tensor<?x3xf32>, %g: tensor<?x3xf32>)
    -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) {
  %p:2 = lru.fused(%x) : (tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>) {
  ^bb0(%a: tensor<?x3xf32>):
    %one = arith.constant dense<1.0> : tensor<f32>
    %s = lru.sigmoid %a : tensor<?x3xf32>
    %ob = lru.broadcast %one like %s dims [] : (tensor<f32>, tensor<?x3xf32>) -> tensor<?x3xf32>
    %c = lru.sub %ob, %s : tensor<?x3xf32>
    %d = lru.mul %s, %c : tensor<?x3xf32>
    lru.yield %s, %d : tensor<?x3xf32>, tensor<?x3xf32>
  }
  %both = lru.fused(%p#0, %p#1, %g) : (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32> {
  ^bb0(%s: tensor<?x3xf32>, %d: tensor<?x3xf32>, %b: tensor<?x3xf32>):
    %e = lru.mul %b, %d : tensor<?x3xf32>
    %f = lru.add %e, %s : tensor<?x3xf32>
    lru.yield %f : tensor<?x3xf32>
  }
  %alone = lru.fused(%p#1, %g) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32> {
  ^bb0(%d: tensor<?x3xf32>, %b: tensor<?x3xf32>):
    %e = lru.mul %b, %d : tensor<?x3xf32>
    lru.yield %e : tensor<?x3xf32>
  }
  return %both, %alone, %p#0, %p#1 : tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>
}

// -----

// The GLU's gate: s = sigmoid(z + bias) and s(1 - s) stored by the forward
// group for the backward one, which reads s alone (z is the matmul's
// product, stored anyway: the reader loads it instead of s) and then
// computes s(1 - s) from z too: six ops, the splat constant aside. Neither
// is stored any more; the forward group keeps only its other result.
// CHECK-LABEL: func.func @gate_slope
// CHECK: %[[F:.*]] = lru.fused(%arg1, %arg0, %arg2) : (tensor<4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
// CHECK: %[[B:.*]] = lru.fused(%arg3, %arg1, %arg0)
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<?x5x4xf32>, %[[BIAS:.*]]: tensor<4xf32>, %[[Z:.*]]: tensor<?x5x4xf32>):
// CHECK: lru.broadcast %[[BIAS]]
// CHECK: lru.add %[[Z]]
// CHECK: lru.sigmoid
// CHECK: lru.sub
// CHECK: return %[[B]], %[[F]]
func.func @gate_slope(%z: tensor<?x5x4xf32>, %bias: tensor<4xf32>,
                      %v: tensor<?x5x4xf32>, %g: tensor<?x5x4xf32>)
    -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  %p:3 = lru.fused(%bias, %z, %v) : (tensor<4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  ^bb0(%b: tensor<4xf32>, %a: tensor<?x5x4xf32>, %w: tensor<?x5x4xf32>):
    %one = arith.constant dense<1.0> : tensor<f32>
    %bb = lru.broadcast %b like %a dims [2] : (tensor<4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %pre = lru.add %a, %bb : tensor<?x5x4xf32>
    %s = lru.sigmoid %pre : tensor<?x5x4xf32>
    %y = lru.mul %w, %s : tensor<?x5x4xf32>
    %ob = lru.broadcast %one like %s dims [] : (tensor<f32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %c = lru.sub %ob, %s : tensor<?x5x4xf32>
    %d = lru.mul %s, %c : tensor<?x5x4xf32>
    lru.yield %y, %s, %d : tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>
  }
  %r = lru.fused(%g, %p#1, %p#2) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%h: tensor<?x5x4xf32>, %s: tensor<?x5x4xf32>, %d: tensor<?x5x4xf32>):
    %e = lru.mul %h, %d : tensor<?x5x4xf32>
    %f = lru.add %e, %s : tensor<?x5x4xf32>
    lru.yield %f : tensor<?x5x4xf32>
  }
  return %r, %p#0 : tensor<?x5x4xf32>, tensor<?x5x4xf32>
}

// -----

// A broadcast whose shape comes from an input the group reads for nothing
// else takes it from an input of that shape the group loads: the first
// is no longer an operand (alive for nothing, counted in a kernel's
// bytes). An input of another shape is not a stand-in, and a group with
// no other input of the shape keeps its own.
// CHECK-LABEL: func.func @shape_only
// CHECK: lru.fused(%arg1, %arg2) : (tensor<?x5xf32>, tensor<?x5x4xf32>)
// CHECK-NEXT: ^bb0(%[[M:.*]]: tensor<?x5xf32>, %[[X:.*]]: tensor<?x5x4xf32>):
// CHECK-NEXT: lru.broadcast %[[M]] like %[[X]] dims [0, 1]
// CHECK: lru.fused(%arg1, %arg0) : (tensor<?x5xf32>, tensor<?x5x4xf32>)
func.func @shape_only(%s: tensor<?x5x4xf32>, %mask: tensor<?x5xf32>, %x: tensor<?x5x4xf32>)
    -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  %r = lru.fused(%s, %mask, %x) : (tensor<?x5x4xf32>, tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%a: tensor<?x5x4xf32>, %m: tensor<?x5xf32>, %b: tensor<?x5x4xf32>):
    %mb = lru.broadcast %m like %a dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %y = lru.mul %b, %mb : tensor<?x5x4xf32>
    lru.yield %y : tensor<?x5x4xf32>
  }
  %alone = lru.fused(%mask, %s) : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%m: tensor<?x5xf32>, %a: tensor<?x5x4xf32>):
    %mb = lru.broadcast %m like %a dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %e = lru.exp %mb : tensor<?x5x4xf32>
    lru.yield %e : tensor<?x5x4xf32>
  }
  return %r, %alone : tensor<?x5x4xf32>, tensor<?x5x4xf32>
}

// -----

// The skip connection's gradient D g beside g (stored anyway: a matmul
// reads it), read by one group that also takes broadcasts' shape from it:
// that group loads g instead and multiplies by D itself (a load for a
// load), its broadcasts shaped by the value it computes; D g is not stored.
// CHECK-LABEL: func.func @shape_and_value
// CHECK: %[[P:.*]] = lru.fused(%arg0, %arg1) : (tensor<?x5x4xf32>, tensor<?x5xf32>) -> tensor<?x5x4xf32>
// CHECK: lru.matmul nt %[[P]], %arg3
// CHECK: lru.fused(%arg4, %arg1, %[[P]], %arg2)
// CHECK-NOT: lru.fused
// CHECK: return
func.func @shape_and_value(%x: tensor<?x5x4xf32>, %mask: tensor<?x5xf32>,
                           %d: tensor<4xf32>, %w: tensor<3x4xf32>,
                           %z: tensor<?x5x4xf32>)
    -> (tensor<?x5x3xf32>, tensor<?x5x4xf32>) {
  %g:2 = lru.fused(%x, %mask, %d) : (tensor<?x5x4xf32>, tensor<?x5xf32>, tensor<4xf32>) -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  ^bb0(%a: tensor<?x5x4xf32>, %m: tensor<?x5xf32>, %p: tensor<4xf32>):
    %mb = lru.broadcast %m like %a dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %y = lru.mul %a, %mb : tensor<?x5x4xf32>
    %pb = lru.broadcast %p like %a dims [2] : (tensor<4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %dy = lru.mul %y, %pb : tensor<?x5x4xf32>
    lru.yield %y, %dy : tensor<?x5x4xf32>, tensor<?x5x4xf32>
  }
  %prod = lru.matmul nt %g#0, %w : (tensor<?x5x4xf32>, tensor<3x4xf32>) -> tensor<?x5x3xf32>
  %r = lru.fused(%g#1, %z, %mask) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%dy: tensor<?x5x4xf32>, %b: tensor<?x5x4xf32>, %m: tensor<?x5xf32>):
    %mb = lru.broadcast %m like %dy dims [0, 1] : (tensor<?x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %e = lru.add %dy, %b : tensor<?x5x4xf32>
    %f = lru.mul %e, %mb : tensor<?x5x4xf32>
    lru.yield %f : tensor<?x5x4xf32>
  }
  return %prod, %r : tensor<?x5x3xf32>, tensor<?x5x4xf32>
}

// -----

// Left stored: a value read by an op outside the groups (a matmul), a
// value that is a scan's (never computed twice), and a value a group
// reads through a broadcast (a loop of another shape).
// CHECK-LABEL: func.func @kept
// CHECK: %[[G:.*]]:2 = lru.fused
// CHECK: %[[N:.*]] = lru.fused
// CHECK: lru.matmul nt %[[G]]#0
// CHECK: lru.fused(%[[G]]#1, %[[N]], %arg3
func.func @kept(%x: tensor<?x4x2xf32>, %w: tensor<2x2xf32>,
                %lambda: tensor<2xcomplex<f32>>, %m: tensor<?x4xf32>)
    -> (tensor<?x4x2xf32>, tensor<?x4x2xcomplex<f32>>) {
  %g:2 = lru.fused(%x, %lambda) : (tensor<?x4x2xf32>, tensor<2xcomplex<f32>>) -> (tensor<?x4x2xf32>, tensor<?x4x2xcomplex<f32>>) {
  ^bb0(%a: tensor<?x4x2xf32>, %l: tensor<2xcomplex<f32>>):
    %n = lru.neg %a : tensor<?x4x2xf32>
    %b = lru.complex %a, %n : tensor<?x4x2xf32> -> tensor<?x4x2xcomplex<f32>>
    %s = lru.scan %l, %b : (tensor<2xcomplex<f32>>, tensor<?x4x2xcomplex<f32>>) -> tensor<?x4x2xcomplex<f32>>
    lru.yield %n, %s : tensor<?x4x2xf32>, tensor<?x4x2xcomplex<f32>>
  }
  %neg:2 = lru.fused(%m) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  ^bb0(%mm: tensor<?x4xf32>):
    %n = lru.neg %mm : tensor<?x4xf32>
    %e = lru.exp %n : tensor<?x4xf32>
    lru.yield %n, %e : tensor<?x4xf32>, tensor<?x4xf32>
  }
  %y = lru.matmul nt %g#0, %w : (tensor<?x4x2xf32>, tensor<2x2xf32>) -> tensor<?x4x2xf32>
  %r = lru.fused(%g#1, %neg#0, %m, %y) : (tensor<?x4x2xcomplex<f32>>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x2xf32>) -> tensor<?x4x2xcomplex<f32>> {
  ^bb0(%s: tensor<?x4x2xcomplex<f32>>, %nm: tensor<?x4xf32>, %mm: tensor<?x4xf32>, %v: tensor<?x4x2xf32>):
    %nb = lru.broadcast %nm like %v dims [0, 1] : (tensor<?x4xf32>, tensor<?x4x2xf32>) -> tensor<?x4x2xf32>
    %mb = lru.broadcast %mm like %v dims [0, 1] : (tensor<?x4xf32>, tensor<?x4x2xf32>) -> tensor<?x4x2xf32>
    %z = lru.mul %nb, %v : tensor<?x4x2xf32>
    %zz = lru.mul %z, %mb : tensor<?x4x2xf32>
    %c = lru.complex %zz, %zz : tensor<?x4x2xf32> -> tensor<?x4x2xcomplex<f32>>
    %e = lru.mul %s, %c : tensor<?x4x2xcomplex<f32>>
    lru.yield %e : tensor<?x4x2xcomplex<f32>>
  }
  return %y, %r : tensor<?x4x2xf32>, tensor<?x4x2xcomplex<f32>>
}

// -----

// The backward pass's previous states (lru.shift, for the gradient of λ),
// read by the reverse scan's group over the same lengths: the group reads
// the states themselves, a step back, instead of a shifted copy.
// CHECK-LABEL: func.func @previous_states
// CHECK-NOT: lru.shift %arg0
// CHECK: lru.fused(%arg1, %arg2, %arg3, %arg0)
// CHECK-NEXT: ^bb0({{.*}}, %[[N:.*]]: tensor<?xi32>, %[[X:.*]]: tensor<?x4x2xcomplex<f32>>):
// CHECK-NEXT: lru.shift %[[X]] lengths %[[N]]
// CHECK: lru.scan {{.*}} lengths %[[N]] reverse
func.func @previous_states(%x: tensor<?x4x2xcomplex<f32>>,
                           %g: tensor<?x4x2xcomplex<f32>>,
                           %lambda: tensor<2xcomplex<f32>>,
                           %n: tensor<?xi32>) -> tensor<2xcomplex<f32>> {
  %prev = lru.shift %x lengths %n : (tensor<?x4x2xcomplex<f32>>, tensor<?xi32>) -> tensor<?x4x2xcomplex<f32>>
  %r = lru.fused(%g, %lambda, %n, %prev) : (tensor<?x4x2xcomplex<f32>>, tensor<2xcomplex<f32>>, tensor<?xi32>, tensor<?x4x2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  ^bb0(%b: tensor<?x4x2xcomplex<f32>>, %l: tensor<2xcomplex<f32>>, %k: tensor<?xi32>, %p: tensor<?x4x2xcomplex<f32>>):
    %s = lru.scan %l, %b lengths %k reverse : (tensor<2xcomplex<f32>>, tensor<?x4x2xcomplex<f32>>, tensor<?xi32>) -> tensor<?x4x2xcomplex<f32>>
    %c = lru.conj %p : tensor<?x4x2xcomplex<f32>>
    %m = lru.mul %c, %s : tensor<?x4x2xcomplex<f32>>
    %sum = lru.reduce_sum %m dims [0, 1] : tensor<?x4x2xcomplex<f32>> -> tensor<2xcomplex<f32>>
    lru.yield %sum : tensor<2xcomplex<f32>>
  }
  return %r : tensor<2xcomplex<f32>>
}

// -----

// Over other lengths (or read by a group without a scan) the shift stays.
// CHECK-LABEL: func.func @shift_kept
// CHECK: %[[P:.*]] = lru.shift %arg0 lengths %arg3
// CHECK: lru.fused(%arg1, %arg2, %arg4, %[[P]])
func.func @shift_kept(%x: tensor<?x4x2xcomplex<f32>>,
                      %g: tensor<?x4x2xcomplex<f32>>,
                      %lambda: tensor<2xcomplex<f32>>,
                      %n: tensor<?xi32>, %n2: tensor<?xi32>) -> tensor<2xcomplex<f32>> {
  %prev = lru.shift %x lengths %n : (tensor<?x4x2xcomplex<f32>>, tensor<?xi32>) -> tensor<?x4x2xcomplex<f32>>
  %r = lru.fused(%g, %lambda, %n2, %prev) : (tensor<?x4x2xcomplex<f32>>, tensor<2xcomplex<f32>>, tensor<?xi32>, tensor<?x4x2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  ^bb0(%b: tensor<?x4x2xcomplex<f32>>, %l: tensor<2xcomplex<f32>>, %k: tensor<?xi32>, %p: tensor<?x4x2xcomplex<f32>>):
    %s = lru.scan %l, %b lengths %k reverse : (tensor<2xcomplex<f32>>, tensor<?x4x2xcomplex<f32>>, tensor<?xi32>) -> tensor<?x4x2xcomplex<f32>>
    %c = lru.conj %p : tensor<?x4x2xcomplex<f32>>
    %m = lru.mul %c, %s : tensor<?x4x2xcomplex<f32>>
    %sum = lru.reduce_sum %m dims [0, 1] : tensor<?x4x2xcomplex<f32>> -> tensor<2xcomplex<f32>>
    lru.yield %sum : tensor<2xcomplex<f32>>
  }
  return %r : tensor<2xcomplex<f32>>
}

// -----

// Two results of one complex input (the GLU's value and sigmoid(gate) from
// its single product's interleaved pairs), both read only by a later group:
// that group loads the pairs instead (a load of 8 bytes an element for two
// of 4) and computes both; the first group no longer yields them. A single
// real result of a complex input is not worth it (8 bytes for 4) and stays.
// CHECK-LABEL: func.func @pairs
// CHECK: %[[P:.*]] = lru.fused(%arg0, %arg1, %arg2, %arg3) : (tensor<?x5x4xcomplex<f32>>, tensor<4xf32>, tensor<4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
// CHECK: %[[B:.*]] = lru.fused(%arg4, %arg2, %arg0, %arg1) : (tensor<?x5x4xf32>, tensor<4xf32>, tensor<?x5x4xcomplex<f32>>, tensor<4xf32>) -> tensor<?x5x4xf32>
// CHECK-NEXT: ^bb0({{.*}}, %[[Z:[a-z0-9]+]]: tensor<?x5x4xcomplex<f32>>,
// CHECK-DAG: lru.re %[[Z]]
// CHECK-DAG: lru.im %[[Z]]
// CHECK-DAG: lru.sigmoid
// CHECK: %[[O:.*]] = lru.fused(%arg0, %arg1) : (tensor<?x5x4xcomplex<f32>>, tensor<4xf32>) -> tensor<?x5x4xf32>
// CHECK: lru.fused(%arg4, %[[O]])
// CHECK: return %[[B]], %[[P]]
func.func @pairs(%z: tensor<?x5x4xcomplex<f32>>, %bg: tensor<4xf32>,
                 %bv: tensor<4xf32>, %res: tensor<?x5x4xf32>,
                 %g: tensor<?x5x4xf32>)
    -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  %p:3 = lru.fused(%z, %bg, %bv, %res) : (tensor<?x5x4xcomplex<f32>>, tensor<4xf32>, tensor<4xf32>, tensor<?x5x4xf32>) -> (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) {
  ^bb0(%pairs: tensor<?x5x4xcomplex<f32>>, %b1: tensor<4xf32>, %b2: tensor<4xf32>, %r: tensor<?x5x4xf32>):
    %re = lru.re %pairs : tensor<?x5x4xcomplex<f32>> -> tensor<?x5x4xf32>
    %im = lru.im %pairs : tensor<?x5x4xcomplex<f32>> -> tensor<?x5x4xf32>
    %g1 = lru.broadcast %b1 like %re dims [2] : (tensor<4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %pre = lru.add %re, %g1 : tensor<?x5x4xf32>
    %v1 = lru.broadcast %b2 like %im dims [2] : (tensor<4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %val = lru.add %im, %v1 : tensor<?x5x4xf32>
    %s = lru.sigmoid %pre : tensor<?x5x4xf32>
    %y = lru.mul %val, %s : tensor<?x5x4xf32>
    %out = lru.add %r, %y : tensor<?x5x4xf32>
    lru.yield %out, %val, %s : tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>
  }
  %b = lru.fused(%g, %p#1, %p#2) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%h: tensor<?x5x4xf32>, %val: tensor<?x5x4xf32>, %s: tensor<?x5x4xf32>):
    %e = lru.mul %h, %val : tensor<?x5x4xf32>
    %f = lru.mul %e, %s : tensor<?x5x4xf32>
    lru.yield %f : tensor<?x5x4xf32>
  }
  %o = lru.fused(%z, %bg) : (tensor<?x5x4xcomplex<f32>>, tensor<4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%pairs: tensor<?x5x4xcomplex<f32>>, %b1: tensor<4xf32>):
    %re = lru.re %pairs : tensor<?x5x4xcomplex<f32>> -> tensor<?x5x4xf32>
    %g1 = lru.broadcast %b1 like %re dims [2] : (tensor<4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
    %pre = lru.add %re, %g1 : tensor<?x5x4xf32>
    %s = lru.sigmoid %pre : tensor<?x5x4xf32>
    lru.yield %s : tensor<?x5x4xf32>
  }
  %c = lru.fused(%g, %o) : (tensor<?x5x4xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  ^bb0(%h: tensor<?x5x4xf32>, %s: tensor<?x5x4xf32>):
    %e = lru.mul %h, %s : tensor<?x5x4xf32>
    lru.yield %e : tensor<?x5x4xf32>
  }
  return %b, %p#0, %c : tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<?x5x4xf32>
}
