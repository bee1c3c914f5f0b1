//===- ModelLibrary.h - Load a compiled model library -----------*- C++ -*-===//
//
// `lruc model.lru -o model.so` writes a shared library with the C ABI of
// runtime/include/lruc_model.h. ModelLibrary opens one (dlopen), checks that
// it speaks this runtime's ABI version, reads its manifest into the C++
// structs below, and wraps the entry points so that a failure is a
// HostError naming the library ("model.so: train_step: label 12 is not in
// 0..9").
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_MODELLIBRARY_H
#define LRUC_HOST_MODELLIBRARY_H

#include "lruc/host/Error.h"
#include "lruc_model.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lruc::host {

enum class DType { F32, I32, I64 };

/// "F32", "I32", "I64" (the safetensors names).
std::string_view dtypeName(DType dtype);
size_t dtypeSize(DType dtype);

/// An input or output of the model; shape[0] == -1 is the batch.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

enum class ParamGroup { Decay, Recurrent, State };

/// A trainable parameter, or (group State) a running statistic.
struct ParamInfo {
  std::string name;
  ParamGroup group = ParamGroup::Decay;
  std::vector<int64_t> shape;
  uint64_t offset = 0; ///< in floats, into the param (or state) block
  uint64_t size = 0;   ///< in floats
  std::string init;    ///< JSON, as the manifest writes it
};

enum class ScheduleKind { Constant, WarmupCosine };

/// The model file's `train { ... }` section (docs/language.md); every field
/// can be overridden on lru-train's command line.
struct TrainSettings {
  std::string task;     ///< empty: the model file names no data
  std::string dataPath; ///< empty: the task's default place
  int64_t batch = 32;
  int64_t accumulate = 1; ///< micro-batches a step (lru-train --accumulate)
  std::optional<int64_t> steps, epochs; ///< at most one is set
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.05;
  double recurrentLrFactor = 1.0;
  ScheduleKind schedule = ScheduleKind::WarmupCosine;
  double warmup = 0.1; ///< fraction of the total steps
  double floor = 1e-7;
  std::optional<double> clip;
  uint64_t seed = 0;
  uint64_t dropoutSeed = 0;
  int64_t evalEvery = 0; ///< 0: once per epoch
};

/// One of step mode's carries (a recurrence's state, a running sum of
/// mean pooling): in a carry block of `batch` examples, a dense
/// [batch, shape...] array starting at batch * offset floats.
struct CarryInfo {
  std::string name;     ///< "blocks.0.lru.state", "pool.sum"
  bool complex = false; ///< complex64: each value a pair of floats (re, im)
  std::vector<int64_t> shape; ///< an example's, without the batch
  uint64_t offset = 0;        ///< in floats, per example of the block

  /// An example's floats, complex pairs counted as two.
  uint64_t floats() const {
    uint64_t n = complex ? 2 : 1;
    for (int64_t d : shape)
      n *= uint64_t(d);
    return n;
  }
};

/// Step mode (lruc_model.h): one step of each sequence input in, the
/// predictions after that step out, and a carry block of
/// batch * carryFloats floats between steps.
struct StepInfo {
  uint64_t carryFloats = 0; ///< per example
  std::vector<TensorInfo> inputs, outputs;
  std::vector<CarryInfo> carries; ///< as the manifest's "step" lists them
};

/// Everything the library says about itself.
struct Manifest {
  std::string model;
  uint64_t paramFloats = 0, stateFloats = 0;
  std::vector<ParamInfo> params; ///< trainable, in block order
  std::vector<ParamInfo> state;  ///< running statistics
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  /// Absent when the model was compiled without a train section
  /// (`lruc --no-train`, or a model file without one).
  std::optional<TrainSettings> train;
  /// Absent when the model cannot run step by step; then stepUnavailable
  /// says why.
  std::optional<StepInfo> step;
  std::string stepUnavailable;
  /// A class-weighted cross entropy's weights, one a class (the mean over
  /// a batch is Σ w[label] loss / Σ w[label]); empty without them.
  std::vector<float> classWeights;
  /// What a CPU call of each entry point ("forward", "train_step", "step",
  /// ...) leases as its workspace: perExample * batch + fixed bytes (the
  /// compiler's memory plan). Empty from a library that does not say.
  struct Workspace {
    uint64_t perExample = 0, fixed = 0;
  };
  std::map<std::string, Workspace, std::less<>> workspace;

  const TensorInfo *findInput(std::string_view name) const;
  /// The bytes a run holds for the whole of it: the parameters, AdamW's
  /// two moments and the running statistics, and with `gradientSums`
  /// (gradient accumulation) a sum for each parameter too.
  uint64_t trainingStateBytes(bool gradientSums) const;
  /// The workspace a CPU call of `function` at `batch` leases, if known.
  std::optional<uint64_t> workspaceBytes(std::string_view function,
                                         int64_t batch) const;
  const ParamInfo *findParam(std::string_view name) const;
};

/// Reads the `train` object of a manifest (the keys lruc's MLIRGen writes).
/// `source` names the library in messages. Throws HostError.
TrainSettings parseTrainSettings(std::string_view trainJson,
                                 const std::string &source);

/// The arithmetic of a model's matrix products. fp32: the default, and
/// the agreement checks'. tf32, a GPU's: on tensor cores, inputs rounded
/// to 10 bits of mantissa, sums in fp32 (what JAX's default precision and
/// PyTorch's allow_tf32 give). bf16: inputs rounded to bfloat16's 8 bits of
/// mantissa, sums in fp32 (what PyTorch's autocast and JAX's "bfloat16"
/// precision give to their matrix products): on a CPU with AMX or
/// AVX512-BF16 through oneDNN, on a GPU through cuBLAS's tensor cores
/// (CUBLAS_COMPUTE_32F_FAST_16BF, twice tf32's rate); step mode's products
/// of a few rows stay fp32 (on a GPU, those of 2 to 64 rows). Each is
/// several times faster than fp32 where the hardware has it.
enum class Matmul { fp32, tf32, bf16 };
/// The Matmul that `--matmul NAME` names ("fp32", "tf32", "bf16"); a
/// HostError for another name.
Matmul matmulNamed(const std::string &name);

/// A loaded model library; closes it when destroyed. Move-only.
class ModelLibrary {
public:
  /// Loads `path` (dlopen RTLD_NOW | RTLD_LOCAL). Throws HostError naming
  /// the file when it does not exist, is not a shared library (with
  /// dlerror's text), lacks `lruc_model_get` ("not an lruc model library"),
  /// speaks another ABI version, or carries a manifest that does not agree
  /// with its C structs.
  static ModelLibrary open(const std::filesystem::path &path);

  ModelLibrary(ModelLibrary &&other) noexcept;
  ModelLibrary &operator=(ModelLibrary &&other) noexcept;
  ModelLibrary(const ModelLibrary &) = delete;
  ModelLibrary &operator=(const ModelLibrary &) = delete;
  ~ModelLibrary();

  const std::filesystem::path &path() const { return path_; }
  const Manifest &manifest() const { return manifest_; }
  const lruc_model &raw() const { return *model_; }
  /// A symbol of the library or of a library it links (dlsym on its
  /// handle), e.g. OpenBLAS's openblas_set_num_threads; null if none.
  void *findSymbol(const char *name) const;
  /// The arithmetic of the CPU library's products from now on: fp32 or
  /// bf16 (runtime/cpu's MatmulPrecision, for every thread). Throws
  /// HostError when this machine cannot multiply bfloat16 (no oneDNN, a
  /// CPU without AMX or AVX512-BF16) or for tf32, a GPU's.
  void setCpuMatmul(Matmul matmul) const;
  /// Whether the library carries CUDA kernels and their host schedule
  /// (lruc_gpu.h; GpuModel runs them).
  bool hasCuda() const;

  // The entry points; each throws HostError "LIBRARY: ENTRY: MESSAGE" when
  // the library reports an error. Buffers are as lruc_model.h describes.
  void init(uint64_t seed, float *params, float *state) const;
  void forward(int64_t batch, const float *params, const float *state,
               const void *const *inputs, float *const *outputs) const;
  void backward(int64_t batch, const float *params, const float *state,
                const void *const *inputs, const int64_t dropoutKey[2],
                float *loss, float *grads) const;
  /// One AdamW step in place; `outputs` get the batch's loss and
  /// predictions (train mode, before the update), as forward's do.
  void trainStep(int64_t batch, float *params, float *adamM, float *adamV,
                 float *state, float lr, int64_t step,
                 const void *const *inputs, const int64_t dropoutKey[2],
                 float *const *outputs) const;
  /// Gradient accumulation (lruc_model.h): `grads` += scale x the batch's
  /// gradients, `state` updated and `outputs` written as by trainStep; then
  /// one AdamW update from `grads`.
  void accumulateGradients(int64_t batch, const float *params, float *state,
                           float *grads, float scale, const void *const *inputs,
                           const int64_t dropoutKey[2],
                           float *const *outputs) const;
  void applyGradients(float *params, float *adamM, float *adamV,
                      const float *grads, float lr, int64_t step) const;
  /// Step mode; both throw HostError (with the library's reason) when the
  /// model has none.
  void stepReset(int64_t batch, float *carry) const;
  void step(int64_t batch, const float *params, const float *state,
            float *carry, const void *const *inputs,
            float *const *outputs) const;

private:
  ModelLibrary() = default;
  [[noreturn]] void fail(std::string_view entry, const char *message) const;

  std::filesystem::path path_;
  void *handle_ = nullptr;
  const lruc_model *model_ = nullptr;
  Manifest manifest_;
};

} // namespace lruc::host

#endif // LRUC_HOST_MODELLIBRARY_H
