//===- FakeModel.cpp - A hand-written model library for the host tests ----===//
//
// The runtime's tests run in the front-end-only build, where lruc cannot
// compile a model. This library implements the C ABI of lruc_model.h by
// hand: a multinomial logistic regression over the pixels of a 28×28 image
// (the Fashion-MNIST layout), with one running statistic (the mean pixel,
// subtracted from the input, batch statistic in train mode as a BatchNorm
// would) and AdamW with the two parameter groups. Small and exact enough
// that lru-train's loop, checkpoints and resume can be checked end to end.
//
// Variants, by compile definition:
//   FAKE_ABI_VERSION=N   lruc_model_get answers only version N
//   FAKE_NO_SYMBOL       exports no lruc_model_get (not a model library)
//   FAKE_NO_TRAIN        a manifest without a train section
//
//===----------------------------------------------------------------------===//

#include "lruc_model.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION LRUC_ABI_VERSION
#endif

namespace {

constexpr int64_t kLength = 784, kClasses = 10;
constexpr int64_t kWeights = kClasses * kLength;
constexpr float kMomentum = 0.1f, kBeta1 = 0.9f, kBeta2 = 0.999f,
                kEps = 1e-8f, kWeightDecay = 0.05f, kRecurrentFactor = 0.5f;

const int64_t kFeaturesShape[] = {-1, kLength, 1};
const int64_t kBatchShape[] = {-1};
const int64_t kPredictionsShape[] = {-1, kClasses};
const int64_t kWeightShape[] = {kClasses, kLength};
const int64_t kBiasShape[] = {kClasses};
const int64_t kMeanShape[] = {1};

const lruc_tensor_info kInputs[] = {
    {"features", LRUC_F32, 3, kFeaturesShape},
    {"lengths", LRUC_I32, 1, kBatchShape},
    {"labels", LRUC_I32, 1, kBatchShape}};
const lruc_tensor_info kOutputs[] = {{"loss", LRUC_F32, 0, nullptr},
                                     {"predictions", LRUC_F32, 2,
                                      kPredictionsShape}};
// The bias is in the recurrent group so that both AdamW groups are used.
const lruc_param_info kParams[] = {
    {"head.weight", LRUC_GROUP_DECAY, 2, kWeightShape, 0, kWeights,
     R"({"kind":"uniform","low":-0.01,"high":0.01})"},
    {"head.bias", LRUC_GROUP_RECURRENT, 1, kBiasShape, kWeights, kClasses,
     R"({"kind":"zeros"})"}};
const lruc_param_info kState[] = {{"norm.running_mean", LRUC_GROUP_STATE, 1,
                                   kMeanShape, 0, 1, R"({"kind":"zeros"})"}};

#ifdef FAKE_NO_TRAIN
#define FAKE_TRAIN "{}"
#else
#define FAKE_TRAIN                                                             \
  R"({"batch": 32, "steps": 40, "lr": 0.01, "beta1": 0.9, "beta2": 0.999,)"    \
  R"( "eps": 1e-08, "weight_decay": 0.05, "recurrent_lr_factor": 0.5,)"        \
  R"( "schedule": "warmup_cosine", "warmup": 0.1, "floor": 1e-07,)"            \
  R"( "seed": 1, "dropout_seed": 1, "eval_every": 10, "task": "fashion_mnist"})"
#endif

const char kManifest[] =
    R"({"abi_version": 1, "model": "fake", "inputs": [)"
    R"({"name": "features", "dtype": "float", "shape": [-1, 784, 1]},)"
    R"({"name": "lengths", "dtype": "int32_t", "shape": [-1]},)"
    R"({"name": "labels", "dtype": "int32_t", "shape": [-1]}],)"
    R"("outputs": [{"name": "loss", "dtype": "float", "shape": []},)"
    R"({"name": "predictions", "dtype": "float", "shape": [-1, 10]}],)"
    R"("params": [{"name": "head.weight", "group": "decay", "offset": 0,)"
    R"( "shape": [10, 784], "init": {"kind": "uniform", "low": -0.01, "high": 0.01}},)"
    R"({"name": "head.bias", "group": "recurrent", "offset": 7840,)"
    R"( "shape": [10], "init": {"kind": "zeros"}}],)"
    R"("state": [{"name": "norm.running_mean", "group": "state", "offset": 0,)"
    R"( "shape": [1], "init": {"kind": "zeros"}}],)"
    R"("workspace": {"forward": {"per_example": 3200, "fixed": 64}},)"
    R"("train": )" FAKE_TRAIN "}";

int fail(char *error, size_t size, const char *message) {
  if (size > 0)
    std::snprintf(error, size, "%s", message);
  return 1;
}

int checkLabels(int64_t batch, const void *const *inputs, char *error,
                size_t size) {
  const auto *labels = static_cast<const int32_t *>(inputs[2]);
  for (int64_t b = 0; b < batch; ++b)
    if (labels[b] < 0 || labels[b] >= kClasses) {
      std::snprintf(error, size, "label %d is not in 0..%d", labels[b],
                    int(kClasses - 1));
      return 1;
    }
  return 0;
}

/// Mean pixel of the batch.
float batchMean(int64_t batch, const float *x) {
  double sum = 0;
  for (int64_t i = 0; i < batch * kLength; ++i)
    sum += x[i];
  return float(sum / double(batch * kLength));
}

/// Logits, mean cross-entropy and (if grads) the gradient of the loss.
float run(int64_t batch, const float *params, float mean,
          const void *const *inputs, float *logits, float *grads) {
  const auto *x = static_cast<const float *>(inputs[0]);
  const auto *labels = static_cast<const int32_t *>(inputs[2]);
  const float *w = params, *bias = params + kWeights;
  if (grads)
    std::memset(grads, 0, sizeof(float) * (kWeights + kClasses));
  double loss = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const float *xb = x + b * kLength;
    float *z = logits + b * kClasses;
    float top = -INFINITY;
    for (int64_t k = 0; k < kClasses; ++k) {
      float s = bias[k];
      for (int64_t i = 0; i < kLength; ++i)
        s += w[k * kLength + i] * (xb[i] - mean);
      z[k] = s;
      top = std::fmax(top, s);
    }
    double sum = 0;
    for (int64_t k = 0; k < kClasses; ++k)
      sum += std::exp(double(z[k] - top));
    double lse = double(top) + std::log(sum);
    loss += lse - double(z[labels[b]]);
    if (grads)
      for (int64_t k = 0; k < kClasses; ++k) {
        float g = float((std::exp(double(z[k]) - lse) -
                         (k == labels[b] ? 1.0 : 0.0)) /
                        double(batch));
        grads[kWeights + k] += g;
        for (int64_t i = 0; i < kLength; ++i)
          grads[k * kLength + i] += g * (xb[i] - mean);
      }
  }
  return float(loss / double(batch));
}

int init(uint64_t seed, float *params, float *state, char *, size_t) {
  // A small LCG: deterministic in the seed, all this fake needs.
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < kWeights; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    params[i] = float(double(s >> 40) / double(1ull << 24) * 0.02 - 0.01);
  }
  for (int64_t k = 0; k < kClasses; ++k)
    params[kWeights + k] = 0;
  state[0] = 0;
  return 0;
}

int forward(int64_t batch, const float *params, const float *state,
            const void *const *inputs, float *const *outputs, char *error,
            size_t size) {
  if (checkLabels(batch, inputs, error, size))
    return 1;
  outputs[0][0] = run(batch, params, state[0], inputs, outputs[1], nullptr);
  return 0;
}

int forwardTrain(int64_t batch, const float *params, const float *state,
                 const void *const *inputs, const int64_t *,
                 float *const *outputs, float *newState, char *error,
                 size_t size) {
  if (checkLabels(batch, inputs, error, size))
    return 1;
  float mean = batchMean(batch, static_cast<const float *>(inputs[0]));
  outputs[0][0] = run(batch, params, mean, inputs, outputs[1], nullptr);
  newState[0] = (1 - kMomentum) * state[0] + kMomentum * mean;
  return 0;
}

int backward(int64_t batch, const float *params, const float *,
             const void *const *inputs, const int64_t *, float *loss,
             float *grads, char *error, size_t size) {
  if (checkLabels(batch, inputs, error, size))
    return 1;
  std::vector<float> logits(size_t(batch * kClasses));
  float mean = batchMean(batch, static_cast<const float *>(inputs[0]));
  *loss = run(batch, params, mean, inputs, logits.data(), grads);
  return 0;
}

int trainStep(int64_t batch, float *params, float *m, float *v, float *state,
              float lr, float step, const void *const *inputs,
              const int64_t *, float *const *outputs, char *error,
              size_t size) {
  if (step < 1)
    return fail(error, size, "step counts from 1");
  if (checkLabels(batch, inputs, error, size))
    return 1;
  std::vector<float> grads(kWeights + kClasses);
  float mean = batchMean(batch, static_cast<const float *>(inputs[0]));
  *outputs[0] = run(batch, params, mean, inputs, outputs[1], grads.data());
  state[0] = (1 - kMomentum) * state[0] + kMomentum * mean;
  const float c1 = 1 - std::pow(kBeta1, step), c2 = 1 - std::pow(kBeta2, step);
  for (int64_t i = 0; i < kWeights + kClasses; ++i) {
    bool recurrent = i >= kWeights;
    float rate = recurrent ? lr * kRecurrentFactor : lr;
    m[i] = kBeta1 * m[i] + (1 - kBeta1) * grads[i];
    v[i] = kBeta2 * v[i] + (1 - kBeta2) * grads[i] * grads[i];
    float update = (m[i] / c1) / (std::sqrt(v[i] / c2) + kEps);
    if (!recurrent)
      update += kWeightDecay * params[i];
    params[i] -= rate * update;
  }
  return 0;
}

const lruc_model kModel = {
    FAKE_ABI_VERSION,
    sizeof(lruc_model),
    "fake",
    kManifest,
    kWeights + kClasses,
    1,
    2,
    kParams,
    1,
    kState,
    3,
    kInputs,
    2,
    kOutputs,
    init,
    forward,
    forwardTrain,
    backward,
    trainStep,
};

} // namespace

#ifdef FAKE_NO_SYMBOL
extern "C" __attribute__((visibility("default"))) int lruc_fake_other(void) {
  return 0;
}
#else
extern "C" __attribute__((visibility("default"))) const lruc_model *
lruc_model_get(uint32_t abi_version) {
  return abi_version == FAKE_ABI_VERSION ? &kModel : nullptr;
}
#endif
