// RUN: lruc-opt %s -lru-derive-train-step | FileCheck %s

// Parameters, Adam moments and running statistics become arguments; the
// result is the loss and their new values. The recurrent group ("nu")
// trains at lr * recurrent_lr_factor without weight decay; the decay group
// ("w") gets weight_decay * w added to its update. Gradients are clipped to
// a global norm of `clip`; the running statistics come from the forward.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {lru.param = "w"}
// CHECK-SAME: %[[NU:[a-z0-9]+]]: tensor<3xf32> {lru.param = "nu"}
// CHECK-SAME: {lru.adam_m = "w"}
// CHECK-SAME: {lru.adam_m = "nu"}
// CHECK-SAME: {lru.adam_v = "w"}
// CHECK-SAME: {lru.adam_v = "nu"}
// CHECK-SAME: {lru.state = "running_mean"}
// CHECK-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {lru.input = "lr"}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<f32> {lru.input = "step"}
// Each new value is tagged as the argument it replaces (its ABI block).
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {lru.param = "w"}, tensor<3xf32> {lru.param = "nu"}, tensor<3xf32> {lru.adam_m = "w"}, tensor<3xf32> {lru.adam_m = "nu"}, tensor<3xf32> {lru.adam_v = "w"}, tensor<3xf32> {lru.adam_v = "nu"}, tensor<3xf32> {lru.state = "running_mean"})
// CHECK-SAME: lru.params = ["w", "nu"], lru.state = ["running_mean"]
// CHECK-NOT: lru.param "
// CHECK: %[[LOSS:.*]] = lru.reduce_sum %{{.*}} dims [0, 1] : tensor<?x3xf32> -> tensor<f32>
// CHECK: %[[MEAN:.*]] = lru.reduce_sum %{{.*}} dims [0] : tensor<?x3xf32> -> tensor<3xf32>
// CHECK: %[[NORM:.*]] = lru.sqrt %{{.*}} : tensor<f32>
// CHECK: %[[CLIP:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: lru.max %[[NORM]], %[[CLIP]]
// CHECK: lru.mul %[[STEP]], %{{.*}} : tensor<f32>
// The decay group: decoupled weight decay, full learning rate.
// CHECK: arith.constant dense<0.00999999977>
// CHECK: %[[WLR:.*]] = lru.broadcast %[[LR]] like %[[W]] dims []
// CHECK: %[[WUPD:.*]] = lru.mul %{{.*}}, %[[WLR]]
// CHECK: %[[NEWW:.*]] = lru.sub %[[W]], %[[WUPD]]
// The recurrent group: lr * 0.5, no decay term.
// CHECK-NOT: arith.constant dense<0.00999999977>
// CHECK: %[[HALF:.*]] = arith.constant dense<5.000000e-01>
// CHECK: %[[HALFB:.*]] = lru.broadcast %[[HALF]] like %[[LR]]
// CHECK: %[[NULR:.*]] = lru.mul %[[LR]], %[[HALFB]]
// CHECK: %[[NULRB:.*]] = lru.broadcast %[[NULR]] like %[[NU]] dims []
// CHECK: %[[NUUPD:.*]] = lru.mul %{{.*}}, %[[NULRB]]
// CHECK: %[[NEWNU:.*]] = lru.sub %[[NU]], %[[NUUPD]]
// CHECK: return %[[LOSS]], %[[NEWW]], %[[NEWNU]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]]

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
