// RUN: lruc-opt %s -lru-update-in-place -split-input-file | FileCheck %s
// RUN: lruc-opt %s -lru-update-in-place -lru-plan-memory -split-input-file | FileCheck %s --check-prefix=PLAN

// A result tagged as an argument is its new value, written where the
// argument was read. The multi_tensor reads each updated argument only
// elementwise (and a broadcast's `like`, its shape), in the one group that
// updates it, and nothing reads it after: every result is written in
// place, with no workspace buffer.
// CHECK-LABEL: func.func @update
// CHECK: lru.multi_tensor(%arg0, %arg1, %arg2, %arg3) {lru.in_place = array<i64: 1, 0>}
// PLAN-LABEL: func.func @update
// PLAN: lru.workspace = array<i64: 0, 0>
// PLAN: lru.multi_tensor(%arg0, %arg1, %arg2, %arg3) {lru.in_place = array<i64: 1, 0>} :
func.func @update(%p: tensor<4xf32> {lru.param = "w"},
                  %m: tensor<4xf32> {lru.adam_m = "w"},
                  %g: tensor<4xf32>, %lr: tensor<f32>)
    -> (tensor<4xf32> {lru.adam_m = "w"}, tensor<4xf32> {lru.param = "w"}) {
  %r:2 = lru.multi_tensor(%p, %m, %g, %lr) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>, %s: tensor<f32>):
    %u:2 = lru.fused(%x, %y, %z, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>, %l: tensor<f32>):
      %rate = lru.broadcast %l like %a dims [] : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
      %m1 = lru.add %b, %c : tensor<4xf32>
      %step = lru.mul %m1, %rate : tensor<4xf32>
      %p1 = lru.sub %a, %step : tensor<4xf32>
      lru.yield %p1, %m1 : tensor<4xf32>, tensor<4xf32>
    }
    lru.yield %u#0, %u#1 : tensor<4xf32>, tensor<4xf32>
  }
  return %r#1, %r#0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// An argument something reads after the update (here the return: the old
// value handed back beside the new) keeps its value: its new value goes to
// the workspace and is copied out. So does one that two groups read (they
// run side by side), and one read other than elementwise (a broadcast of
// it), and a result that is no argument's new value.
// CHECK-LABEL: func.func @kept
// CHECK: lru.multi_tensor
// CHECK-NOT: lru.in_place
// CHECK: return
// PLAN-LABEL: func.func @kept
// PLAN: lru.multi_tensor{{.*}}{lru.buffers = array<i64: {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}>}
func.func @kept(%p: tensor<4xf32> {lru.param = "p"},
                %q: tensor<4xf32> {lru.param = "q"},
                %w: tensor<4xf32> {lru.param = "w"},
                %g: tensor<4xf32>)
    -> (tensor<4xf32> {lru.param = "p"}, tensor<4xf32>,
        tensor<4xf32> {lru.param = "q"}, tensor<4xf32>,
        tensor<4xf32> {lru.param = "w"}) {
  %r:4 = lru.multi_tensor(%p, %q, %w, %g) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>, %v: tensor<4xf32>, %z: tensor<4xf32>):
    %a = lru.fused(%x, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%e: tensor<4xf32>, %f: tensor<4xf32>):
      %s = lru.sub %e, %f : tensor<4xf32>
      lru.yield %s : tensor<4xf32>
    }
    %b = lru.fused(%y, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%e: tensor<4xf32>, %f: tensor<4xf32>):
      %s = lru.sub %e, %f : tensor<4xf32>
      lru.yield %s : tensor<4xf32>
    }
    %c = lru.fused(%y, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%e: tensor<4xf32>, %f: tensor<4xf32>):
      %s = lru.add %e, %f : tensor<4xf32>
      lru.yield %s : tensor<4xf32>
    }
    %d = lru.fused(%v, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%e: tensor<4xf32>, %f: tensor<4xf32>):
      %bc = lru.broadcast %e like %f dims [0] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %s = lru.add %bc, %f : tensor<4xf32>
      lru.yield %s : tensor<4xf32>
    }
    lru.yield %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %p, %r#1, %r#2, %r#3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// An update followed by another op (which could still fail on bad input:
// a failed call leaves the caller's blocks as they were) keeps its copy.
// CHECK-LABEL: func.func @not_last
// CHECK: lru.multi_tensor
// CHECK-NOT: lru.in_place
// CHECK: lru.fused
// CHECK: return
func.func @not_last(%p: tensor<4xf32> {lru.param = "w"}, %g: tensor<4xf32>)
    -> (tensor<4xf32> {lru.param = "w"}, tensor<4xf32>) {
  %r = lru.multi_tensor(%p, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>, %z: tensor<4xf32>):
    %a = lru.fused(%x, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%e: tensor<4xf32>, %f: tensor<4xf32>):
      %s = lru.sub %e, %f : tensor<4xf32>
      lru.yield %s : tensor<4xf32>
    }
    lru.yield %a : tensor<4xf32>
  }
  %n = lru.fused(%g) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%e: tensor<4xf32>):
    %s = lru.neg %e : tensor<4xf32>
    lru.yield %s : tensor<4xf32>
  }
  return %r, %n : tensor<4xf32>, tensor<4xf32>
}
