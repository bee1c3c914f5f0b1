// RUN: lruc-opt %s -lru-derive-accumulation | FileCheck %s

// @accumulate_gradients: parameters, running statistics and the gradient
// sums become arguments, then grad_scale; it returns the forward's outputs,
// each sum plus grad_scale times its gradient (of the loss), and the new
// running statistics.
// CHECK-LABEL: func.func @accumulate_gradients(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {lru.param = "w"}
// CHECK-SAME: %[[NU:[a-z0-9]+]]: tensor<3xf32> {lru.param = "nu"}
// CHECK-SAME: {lru.state = "running_mean"}
// CHECK-SAME: %[[SUMW:[a-z0-9]+]]: tensor<3xf32> {lru.gradient = "w"}
// CHECK-SAME: %[[SUMNU:[a-z0-9]+]]: tensor<3xf32> {lru.gradient = "nu"}
// CHECK-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {lru.input = "grad_scale"}
// Each new value is tagged as the argument it replaces (its ABI block).
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {lru.gradient = "w"}, tensor<3xf32> {lru.gradient = "nu"}, tensor<3xf32> {lru.state = "running_mean"})
// CHECK-SAME: lru.params = ["w", "nu"], lru.state = ["running_mean"]
// CHECK-NOT: lru.param "
// CHECK: %[[LOSS:.*]] = lru.reduce_sum %{{.*}} dims [0, 1]
// CHECK: %[[MEAN:.*]] = lru.reduce_sum %{{.*}} dims [0] : tensor<?x3xf32>
// CHECK: %[[G:.*]] = lru.reduce_sum %{{.*}} dims [0] : tensor<?x3xf32>
// CHECK: %[[SW:.*]] = lru.broadcast %[[SCALE]] like %[[G]] dims []
// CHECK: %[[GW:.*]] = lru.mul %[[G]], %[[SW]]
// CHECK: %[[NEWW:.*]] = lru.add %[[SUMW]], %[[GW]]
// CHECK: %[[NEWNU:.*]] = lru.add %[[SUMNU]], %{{.*}}
// CHECK: return %[[LOSS]], %[[NEWW]], %[[NEWNU]], %[[MEAN]]
// CHECK-NOT: lru.adam

// @apply_gradients: train_step's update on given gradients, no batch:
// the same global-norm clipping, bias corrections, decoupled weight decay
// for the decay group and lr * 0.5 for the recurrent one.
// CHECK-LABEL: func.func @apply_gradients(
// CHECK-SAME: %[[AW:[a-z0-9]+]]: tensor<3xf32> {lru.param = "w"}
// CHECK-SAME: {lru.param = "nu"}
// CHECK-SAME: {lru.adam_m = "w"}
// CHECK-SAME: {lru.adam_m = "nu"}
// CHECK-SAME: {lru.adam_v = "w"}
// CHECK-SAME: {lru.adam_v = "nu"}
// CHECK-SAME: %[[GRADW:[a-z0-9]+]]: tensor<3xf32> {lru.gradient = "w"}
// CHECK-SAME: {lru.gradient = "nu"}
// CHECK-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {lru.input = "lr"}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<f32> {lru.input = "step"}
// CHECK-SAME: -> (tensor<3xf32> {lru.param = "w"}, tensor<3xf32> {lru.param = "nu"}, tensor<3xf32> {lru.adam_m = "w"}, tensor<3xf32> {lru.adam_m = "nu"}, tensor<3xf32> {lru.adam_v = "w"}, tensor<3xf32> {lru.adam_v = "nu"})
// CHECK: lru.mul %[[GRADW]], %[[GRADW]]
// CHECK: %[[NORM:.*]] = lru.sqrt %{{.*}} : tensor<f32>
// CHECK: lru.max %[[NORM]], %{{.*}}
// CHECK: lru.mul %[[STEP]], %{{.*}} : tensor<f32>
// CHECK: arith.constant dense<0.00999999977>
// CHECK: %[[WLR:.*]] = lru.broadcast %[[LR]] like %[[AW]] dims []
// CHECK: %[[WUPD:.*]] = lru.mul %{{.*}}, %[[WLR]]
// CHECK: %[[NEWAW:.*]] = lru.sub %[[AW]], %[[WUPD]]
// CHECK: %[[HALF:.*]] = arith.constant dense<5.000000e-01>
// CHECK: return %[[NEWAW]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :

module attributes {lru.train = {beta1 = 0.8 : f64, beta2 = 0.95 : f64, eps = 1.0e-6 : f64, weight_decay = 0.01 : f64, recurrent_lr_factor = 0.5 : f64, clip = 1.0 : f64}} {
  func.func @forward_train(%x: tensor<?x3xf32>) -> (tensor<f32>, tensor<3xf32>) attributes {lru.state_updates = ["running_mean"]} {
    %w = lru.param "w" init(ones) group(decay) : tensor<3xf32>
    %nu = lru.param "nu" init(zeros) group(recurrent) : tensor<3xf32>
    %mean = lru.param "running_mean" init(zeros) group(state) : tensor<3xf32>
    %s = lru.add %w, %nu : tensor<3xf32>
    %sb = lru.broadcast %s like %x dims [1] : (tensor<3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
    %y = lru.mul %x, %sb : tensor<?x3xf32>
    %l = lru.reduce_sum %y dims [0, 1] : tensor<?x3xf32> -> tensor<f32>
    %newmean = lru.reduce_sum %x dims [0] : tensor<?x3xf32> -> tensor<3xf32>
    return %l, %newmean : tensor<f32>, tensor<3xf32>
  }
}
