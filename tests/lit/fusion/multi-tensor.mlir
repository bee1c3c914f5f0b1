// RUN: lruc-opt %s -lru-fuse-multi-tensor -split-input-file | FileCheck %s

// The groups whose results only the return reads (an optimizer update per
// parameter shape) become one lru.multi_tensor at the place of the last;
// its results are theirs, in order.
// CHECK-LABEL: func.func @update
// CHECK: %[[S:.*]] = lru.fused(%arg4)
// CHECK: %[[M:.*]]:3 = lru.multi_tensor(%arg0, %arg1, %[[S]], %arg2, %arg3)
// CHECK: ^bb0(%[[A:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %[[LR:.*]]: tensor<f32>, %[[W:.*]]: tensor<2x3xf32>, %[[H:.*]]: tensor<2x3xf32>):
// CHECK-NEXT: %[[U:.*]] = lru.fused(%[[A]], %[[G]], %[[LR]])
// CHECK: %[[V:.*]]:2 = lru.fused(%[[W]], %[[H]], %[[LR]])
// CHECK: lru.yield %[[U]], %[[V]]#0, %[[V]]#1 :
// CHECK: return %[[M]]#0, %[[M]]#1, %[[M]]#2
func.func @update(%a: tensor<4xf32>, %g: tensor<4xf32>, %w: tensor<2x3xf32>,
                  %h: tensor<2x3xf32>, %lr: tensor<f32>)
    -> (tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  // Read by the groups, not returned: stays outside.
  %scaled = lru.fused(%lr) : (tensor<f32>) -> tensor<f32> {
  ^bb0(%x: tensor<f32>):
    %y = lru.neg %x : tensor<f32>
    lru.yield %y : tensor<f32>
  }
  %u = lru.fused(%a, %g, %scaled) : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>, %s: tensor<f32>):
    %b = lru.broadcast %s like %y dims [] : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
    %m = lru.mul %y, %b : tensor<4xf32>
    %r = lru.add %x, %m : tensor<4xf32>
    lru.yield %r : tensor<4xf32>
  }
  %v:2 = lru.fused(%w, %h, %scaled) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<f32>):
    %b = lru.broadcast %s like %y dims [] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %m = lru.mul %y, %b : tensor<2x3xf32>
    %r = lru.add %x, %m : tensor<2x3xf32>
    lru.yield %r, %m : tensor<2x3xf32>, tensor<2x3xf32>
  }
  return %u, %v#0, %v#1 : tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Must not join: a group with a result that something else reads, a group
// of dynamic shape (batch-sized), and a lone group (nothing to join).
// CHECK-LABEL: func.func @not_joined
// CHECK-NOT: lru.multi_tensor
// CHECK: return
func.func @not_joined(%a: tensor<4xf32>, %b: tensor<?x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<?x4xf32>) {
  %u = lru.fused(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %y = lru.exp %x : tensor<4xf32>
    lru.yield %y : tensor<4xf32>
  }
  %read = lru.neg %u : tensor<4xf32>
  %v = lru.fused(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %y = lru.sqrt %x : tensor<4xf32>
    lru.yield %y : tensor<4xf32>
  }
  %w = lru.fused(%b) : (tensor<?x4xf32>) -> tensor<?x4xf32> {
  ^bb0(%x: tensor<?x4xf32>):
    %y = lru.exp %x : tensor<?x4xf32>
    lru.yield %y : tensor<?x4xf32>
  }
  return %read, %v, %w : tensor<4xf32>, tensor<4xf32>, tensor<?x4xf32>
}

// -----

// A group of independent updates (elementwise fusion's one group for all
// the parameters of a shape) becomes a group per update, each with its own
// copy of the step size's broadcast and of the constant (and its shape
// from an input it loads: not %x, which only the first reads); updates
// that read one full-size input (%g) stay together.
// CHECK-LABEL: func.func @split
// CHECK: %[[M:.*]]:4 = lru.multi_tensor
// CHECK: %[[P:.*]] = lru.fused(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK: arith.constant dense<2.000000e+00>
// CHECK: lru.broadcast
// CHECK: lru.yield %{{.*}} : tensor<4xf32>
// CHECK: %[[Q:.*]]:2 = lru.fused(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.constant dense<2.000000e+00>
// CHECK: lru.broadcast
// CHECK: lru.yield %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK: lru.yield %[[P]], %[[Q]]#0, %[[Q]]#1, %{{.*}} :
// CHECK: return %[[M]]#0, %[[M]]#1, %[[M]]#2, %[[M]]#3
func.func @split(%a: tensor<4xf32>, %da: tensor<4xf32>, %b: tensor<4xf32>,
                 %c: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>,
                 %w: tensor<3xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) {
  %u:3 = lru.fused(%a, %da, %b, %c, %g, %lr) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>, %dx: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>, %h: tensor<4xf32>, %s: tensor<f32>):
    %two = arith.constant dense<2.0> : tensor<4xf32>
    %step = lru.broadcast %s like %x dims [] : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
    %m1 = lru.mul %dx, %step : tensor<4xf32>
    %m2 = lru.mul %m1, %two : tensor<4xf32>
    %r1 = lru.sub %x, %m2 : tensor<4xf32>
    %m3 = lru.mul %h, %step : tensor<4xf32>
    %m4 = lru.mul %m3, %two : tensor<4xf32>
    %r2 = lru.sub %y, %m4 : tensor<4xf32>
    %r3 = lru.sub %z, %h : tensor<4xf32>
    lru.yield %r1, %r2, %r3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  %v = lru.fused(%w) : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%x: tensor<3xf32>):
    %y = lru.neg %x : tensor<3xf32>
    lru.yield %y : tensor<3xf32>
  }
  return %u#0, %u#1, %u#2, %v : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>
}
