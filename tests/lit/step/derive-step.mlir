// RUN: lruc-opt %s -split-input-file -lru-derive-step | FileCheck %s --check-prefix=MODEL
// RUN: lruc-opt %s -split-input-file -lru-derive-step -lru-decompose | FileCheck %s --check-prefix=STEP

// A causal model: @step takes one token per sequence and returns the
// predictions only; the loss and the labels go, every type follows from
// length 1.
// MODEL-LABEL: func.func @step(
// MODEL-SAME: %{{.*}}: tensor<?x1xi32> {lru.input = "tokens"}, %{{.*}}: tensor<?xi32> {lru.input = "lengths"})
// MODEL-SAME: -> tensor<?x3xf32>
// MODEL: lru.embed %{{.*}} : (tensor<?x1xi32>, tensor<10x4xf32>) -> tensor<?x1x4xf32>
// MODEL: lru.recurrence {{.*}} -> tensor<?x1x4xf32>
// MODEL: lru.pool mean {{.*}} -> tensor<?x4xf32>
// MODEL-NOT: lru.cross_entropy
// MODEL: return %{{.*}} : tensor<?x3xf32>

// Lowered in step mode: the scan starts from the carried state and returns
// its one step as the new state; mean pooling carries a running sum and
// count; lengths are not read, and the carries are named in order.
// STEP-LABEL: func.func @step(
// STEP-SAME: %[[TOK:[a-z0-9]+]]: tensor<?x1xi32> {lru.input = "tokens"},
// STEP-SAME: %[[STATE:[a-z0-9]+]]: tensor<?x2xcomplex<f32>> {lru.carry = "blocks.0.lru.state"},
// STEP-SAME: %[[SUM:[a-z0-9]+]]: tensor<?x4xf32> {lru.carry = "pool.sum"},
// STEP-SAME: %[[COUNT:[a-z0-9]+]]: tensor<?x4xf32> {lru.carry = "pool.count"})
// STEP-SAME: -> (tensor<?x3xf32>, tensor<?x2xcomplex<f32>>, tensor<?x4xf32>, tensor<?x4xf32>)
// STEP-SAME: attributes {lru.carries = ["blocks.0.lru.state", "pool.sum", "pool.count"]}
// STEP-NOT: lru.length_mask
// STEP: %[[X:.*]] = lru.scan %{{.*}}, %{{.*}} init %[[STATE]] : (tensor<2xcomplex<f32>>, tensor<?x1x2xcomplex<f32>>, tensor<?x2xcomplex<f32>>) -> tensor<?x1x2xcomplex<f32>>
// The one step's states are the new state, and its pooled sum the step's
// values: views, no sums over a dim of one element.
// STEP-NEXT: %[[NEWSTATE:.*]] = lru.view %[[X]] : tensor<?x1x2xcomplex<f32>> -> tensor<?x2xcomplex<f32>>
// STEP: %[[STEPSUM:.*]] = lru.view %{{.*}} : tensor<?x1x4xf32> -> tensor<?x4xf32>
// STEP-NEXT: %[[NEWSUM:.*]] = lru.add %[[SUM]], %[[STEPSUM]]
// STEP: %[[ONE:.*]] = lru.broadcast %{{.*}} like %[[NEWSUM]]
// STEP-NEXT: %[[NEWCOUNT:.*]] = lru.add %[[COUNT]], %[[ONE]]
// STEP-NEXT: %[[MEAN:.*]] = lru.div %[[NEWSUM]], %[[NEWCOUNT]]
// STEP: lru.matmul nt %[[MEAN]]
// STEP: return %{{.*}}, %[[NEWSTATE]], %[[NEWSUM]], %[[NEWCOUNT]]
module {
  func.func @forward(%tok: tensor<?x8xi32> {lru.input = "tokens"}, %len: tensor<?xi32> {lru.input = "lengths"}, %labels: tensor<?xi32> {lru.input = "labels"}) -> (tensor<f32>, tensor<?x3xf32>) {
    %t = lru.param "encoder.weight" init(zeros) group(decay) : tensor<10x4xf32>
    %e = lru.embed %tok, %t : (tensor<?x8xi32>, tensor<10x4xf32>) -> tensor<?x8x4xf32>
    %nu = lru.param "blocks.0.lru.nu_log" init(zeros) group(recurrent) : tensor<2xf32>
    %th = lru.param "blocks.0.lru.theta_log" init(zeros) group(recurrent) : tensor<2xf32>
    %bre = lru.param "blocks.0.lru.B_re" init(zeros) group(recurrent) : tensor<2x4xf32>
    %bim = lru.param "blocks.0.lru.B_im" init(zeros) group(recurrent) : tensor<2x4xf32>
    %cre = lru.param "blocks.0.lru.C_re" init(zeros) group(decay) : tensor<4x2xf32>
    %cim = lru.param "blocks.0.lru.C_im" init(zeros) group(decay) : tensor<4x2xf32>
    %d = lru.param "blocks.0.lru.D" init(zeros) group(decay) : tensor<4xf32>
    %y = lru.recurrence %e, %nu, %th B(%bre, %bim) C(%cre, %cim) D %d lengths %len : (tensor<?x8x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x8x4xf32>
    %p = lru.pool mean %y, %len : (tensor<?x8x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    %w = lru.param "head.weight" init(zeros) group(decay) : tensor<3x4xf32>
    %logits = lru.linear %p, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
    %loss = lru.cross_entropy %logits, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// A bidirectional recurrence cannot run one step at a time: no @step, and
// the module says why and where.
// MODEL: module attributes {lru.step_unavailable = "step mode needs a causal model with one input sequence: a bidirectional recurrence reads steps that have not come yet ({{.*}}derive-step.mlir{{.*}}:{{[0-9]+}}:{{[0-9]+}})"}
// MODEL-NOT: func.func @step
// STEP: module attributes {lru.step_unavailable = "step mode needs a causal model
// STEP-NOT: func.func @step
module {
  func.func @forward(%u: tensor<?x8x4xf32> {lru.input = "features"}, %len: tensor<?xi32> {lru.input = "lengths"}, %labels: tensor<?xi32> {lru.input = "labels"}) -> (tensor<f32>, tensor<?x4xf32>) {
    %nu = lru.param "nu" init(zeros) group(recurrent) : tensor<2xf32>
    %th = lru.param "th" init(zeros) group(recurrent) : tensor<2xf32>
    %bre = lru.param "bre" init(zeros) group(recurrent) : tensor<2x4xf32>
    %bim = lru.param "bim" init(zeros) group(recurrent) : tensor<2x4xf32>
    %cre = lru.param "cre" init(zeros) group(decay) : tensor<4x2xf32>
    %cim = lru.param "cim" init(zeros) group(decay) : tensor<4x2xf32>
    %d = lru.param "d" init(zeros) group(decay) : tensor<4xf32>
    %y = lru.recurrence %u, %nu, %th B(%bre, %bim) C(%cre, %cim) C_rev(%cre, %cim) D %d : (tensor<?x8x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32>) -> tensor<?x8x4xf32>
    %p = lru.pool last %y, %len : (tensor<?x8x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    %loss = lru.cross_entropy %p, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %p : tensor<f32>, tensor<?x4xf32>
  }
}
