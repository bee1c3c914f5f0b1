// RUN: lruc-opt %s -canonicalize | FileCheck %s

// lru.view folds: a view to x's own type is x, and a view of a view is one
// view of the first one's input.
// CHECK-LABEL: func.func @views(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x4xf32>)
// CHECK-NEXT: %[[V:.*]] = lru.view %[[X]] : tensor<?x4xf32> -> tensor<?x1x4xf32>
// CHECK-NEXT: return %[[X]], %[[X]], %[[V]]
func.func @views(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1x4xf32>) {
  %a = lru.view %x : tensor<?x4xf32> -> tensor<?x2xcomplex<f32>>
  %b = lru.view %a : tensor<?x2xcomplex<f32>> -> tensor<?x4xf32>
  %c = lru.view %a : tensor<?x2xcomplex<f32>> -> tensor<?x2x2xf32>
  %d = lru.view %c : tensor<?x2x2xf32> -> tensor<?x1x4xf32>
  %e = lru.view %x : tensor<?x4xf32> -> tensor<?x4xf32>
  return %b, %e, %d : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1x4xf32>
}
