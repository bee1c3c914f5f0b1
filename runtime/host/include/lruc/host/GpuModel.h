//===- GpuModel.h - A model library run on a CUDA device --------*- C++ -*-===//
//
// A model library's GPU half (runtime/include/lruc_gpu.h: its CUDA source
// and the host schedule that launches it) on a CUDA device through
// lruc::cuda::Device: the library's kernels compiled by NVRTC (cached on
// disk) and loaded once; the parameters, AdamW's moments and the running
// statistics kept on the device between calls; each call uploads a batch's
// inputs and brings back its outputs (the loss and the predictions). Step
// mode keeps its carry on the device: a step uploads one step of the
// inputs and brings back that step's predictions, all of it one CUDA graph
// (captured at the second step of a batch) launched once a token.
//
// A train step can be queued (queueTrainStep) and its results taken later
// (finishTrainStep): the step's inputs go through page-locked host memory,
// its status block, loss and predictions come back the same way, and
// nothing waits for the device until they are taken, so the host can
// prepare the next batch, and queue it, while the device works.
//
// Device memory is one allocation per model, made by `reserve` for the
// largest batch: the training blocks (parameters, m, v, running
// statistics), a copy of the parameters and statistics that evaluation
// and step mode read, each input and output at that batch, step mode's
// carry and outputs, and the schedule's workspace (laid out by the
// compiler's memory plan; workspace_bytes). Nothing is allocated while
// training or streaming.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_GPUMODEL_H
#define LRUC_HOST_GPUMODEL_H

#include "lruc/host/Checkpoint.h"
#include "lruc/host/ModelLibrary.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct lruc_gpu_model;
namespace lruc::cuda {
class Device;
class DeferredStatusOps;
struct Graph;
}

namespace lruc::host {

class GpuModel {
public:
  /// `library` on CUDA device `ordinal`. Null, with the reason in
  /// `whyNot`, when the library carries no GPU half or the machine has no
  /// driver, cuBLAS or such device.
  static std::unique_ptr<GpuModel> open(const ModelLibrary &library,
                                        int ordinal, std::string &whyNot);
  /// What a tool's `--device cpu|gpu|auto` asks for: null for cpu, and for
  /// auto where the library or the machine has no GPU; for gpu, a HostError
  /// with the reason then. A model it returns has its kernels loaded, after
  /// a line on stderr that `tool` is compiling them, its GEMMs in
  /// `matmul` arithmetic. On the CPU, tf32 is a warning on stderr (the
  /// products stay fp32) and bf16 sets the library's products
  /// (ModelLibrary::setCpuMatmul); on a GPU, both are cuBLAS's.
  static std::unique_ptr<GpuModel> openForDevice(const ModelLibrary &library,
                                                 const std::string &device,
                                                 const char *tool,
                                                 Matmul matmul);
  /// Compiles the library's kernels for the device (NVRTC, once per source
  /// and device: cached under cuda::defaultPtxCacheDirectory()) and loads
  /// them; before anything else. Throws HostError when they do not compile
  /// or load (a bug in lruc: the message holds NVRTC's log).
  void loadKernels();
  /// Where loadKernels caches the PTX ("" when nowhere).
  static std::string kernelCacheDirectory();
  ~GpuModel();
  GpuModel(const GpuModel &) = delete;
  GpuModel &operator=(const GpuModel &) = delete;

  /// "NAME (sm_NN)", with ", bfloat16 activations" for a library built
  /// so and ", TF32 products" or ", bfloat16 products" after setMatmul.
  std::string deviceDescription() const;

  /// The arithmetic of the matrix products from now on (fp32 when
  /// opened). Throws HostError when cuBLAS refuses.
  void setMatmul(Matmul precision);

  /// Device memory for batches of up to `batch` examples, in one
  /// allocation (the pool), and the page-locked host memory queued steps
  /// go through; the blocks it held are lost, and so are queued steps.
  /// Throws HostError when the device has too little memory.
  void reserve(int64_t batch);
  int64_t reservedBatch() const { return reservedBatch_; }
  size_t poolBytes() const { return poolBytes_; }

  /// The training blocks (parameters, optimizer state, running statistics)
  /// to and from the device. `upload` needs the optimizer state.
  void upload(const Checkpoint &checkpoint);
  void download(Checkpoint &checkpoint) const;

  /// One AdamW step on the training blocks, as ModelLibrary::trainStep, in
  /// two halves: `queueTrainStep` copies host `inputs` (bindInputs) and
  /// queues the step without waiting for the device (at most
  /// kMaxQueuedSteps queued); `finishTrainStep` waits for the oldest queued
  /// step and writes its host `outputs` (OutputBuffers), or throws
  /// HostError with what its kernels reported (a label out of range, ...).
  static constexpr int kMaxQueuedSteps = 2;
  void queueTrainStep(int64_t batch, float lr, int64_t step,
                      const void *const *inputs, const int64_t dropoutKey[2]);
  void finishTrainStep(float *const *outputs);

  /// Gradient accumulation on the training blocks (lruc_model.h), each call
  /// waiting for its results (no train step may be queued):
  /// `accumulateGradients` adds `scale` times a batch's gradients to the
  /// device's gradient sums (zeroed first when `first`), updates the
  /// running statistics and writes host `outputs`; `applyGradients` is the
  /// AdamW update from the sums.
  void accumulateGradients(int64_t batch, float scale, bool first,
                           const void *const *inputs,
                           const int64_t dropoutKey[2], float *const *outputs);
  void applyGradients(float lr, int64_t step);

  /// What `forward` evaluates: the training blocks as they are now, or
  /// another checkpoint's parameters and statistics.
  void evaluateTrainingBlocks();
  void evaluateCheckpoint(const Checkpoint &checkpoint);
  /// Eval-mode forward on the blocks chosen above, as ModelLibrary::forward.
  void forward(int64_t batch, const void *const *inputs,
               float *const *outputs);

  /// Step mode on the blocks chosen above, as ModelLibrary::stepReset and
  /// step, the carry of `batch` sequences kept on the device: `inputs` and
  /// `outputs` are host memory, one step's (Manifest::step). Both throw
  /// HostError when the model has no step mode; `step` when the batch is
  /// not the one the carry was reset for.
  void stepReset(int64_t batch);
  void step(int64_t batch, const void *const *inputs, float *const *outputs);
  /// The carry of `batch` sequences from host memory (a carry block,
  /// lruc_model.h), in place of stepReset's zeros: streams that continue.
  void stepSetCarry(int64_t batch, const float *carry);
  /// The carry of the batch of the last stepReset or stepSetCarry into
  /// host memory (that batch times StepInfo::carryFloats floats).
  void stepCarry(float *carry) const;
  /// Whether step mode runs as a CUDA graph (default: yes, unless
  /// $LRUC_CUDA_GRAPHS is 0); off, each step launches its kernels one by
  /// one. A graph that cannot be captured falls back to that, with a
  /// warning on stderr.
  void useStepGraphs(bool on);

private:
  /// Where one call's host tensors sit in page-locked memory: each input,
  /// each output, then the status block, laid out for the reserved batch.
  struct Staging {
    std::vector<size_t> inputAt, outputAt;
    size_t statusAt = 0, bytes = 0;
  };

  GpuModel(const ModelLibrary &library, const lruc_gpu_model &gpu,
           std::unique_ptr<cuda::Device> device);
  void releaseMemory();
  static Staging stagingFor(const std::vector<TensorInfo> &inputs,
                            const std::vector<TensorInfo> &outputs,
                            int64_t batch);
  void stepByLaunches(int64_t batch, const void *const *inputs,
                      float *const *outputs);
  /// The carry now holds `batch` sequences (a step graph is for one batch).
  void carryHolds(int64_t batch);
  /// stepGraph_ for the carry's batch; false (and stepGraphs_ off, with a
  /// warning) when the driver cannot capture it.
  bool captureStep(int64_t batch);
  [[noreturn]] void fail(const std::string &what,
                         const std::string &message) const;
  void copy(void *dst, const void *src, size_t bytes, int kind,
            const char *what) const;
  /// Inputs host → device; the device pointers to pass.
  const void *const *uploadInputs(int64_t batch, const void *const *inputs);
  void downloadOutputs(int64_t batch, float *const *outputs);
  void checkBatch(int64_t batch, const char *entry) const;

  const ModelLibrary &library_;
  const lruc_gpu_model &gpu_;
  std::unique_ptr<cuda::Device> device_;
  Matmul matmul_ = Matmul::fp32;
  void *pool_ = nullptr;
  size_t poolBytes_ = 0;
  int64_t reservedBatch_ = 0;
  // Views into the pool.
  float *params_ = nullptr, *adamM_ = nullptr, *adamV_ = nullptr,
        *grads_ = nullptr, *state_ = nullptr, *evalParams_ = nullptr,
        *evalState_ = nullptr;
  std::vector<float> gradZeros_; ///< what zeroes grads_
  void *workspace_ = nullptr;
  std::vector<void *> inputs_;
  std::vector<float *> outputs_;
  // Step mode: its carry and outputs; each step input goes into its
  // sequence input's array (one of inputs_).
  float *carry_ = nullptr;
  std::vector<float *> stepOutputs_;
  std::vector<void *> stepInputs_;
  int64_t carryBatch_ = 0; ///< the batch the carry was reset for; 0: none
  // Step mode as a graph: a token's inputs, outputs and status block pass
  // through stepHost_ (page-locked), which the graph reads and writes.
  bool stepGraphs_ = true;
  cuda::Graph *stepGraph_ = nullptr;
  bool stepSetUp_ = false; ///< a step ran at the carry's batch
  char *stepHost_ = nullptr;

  Staging trainStaging_, stepStaging_; ///< train slots', stepHost_'s

  // Queued train steps: each in a slot of page-locked host memory (its
  // inputs on the way in; its status block, loss and predictions on the
  // way out) with an event after its last copy. Slots are used in turn.
  struct QueuedStep {
    char *host = nullptr; ///< page-locked: inputs, outputs, status block
    void *done = nullptr; ///< event recorded after the step's copies out
    int64_t batch = 0;
    int64_t step = 0;
  };
  QueuedStep slots_[kMaxQueuedSteps];
  int nextSlot_ = 0, queued_ = 0;
  std::unique_ptr<cuda::DeferredStatusOps> deferred_; ///< on device_'s ops
};

} // namespace lruc::host

#endif // LRUC_HOST_GPUMODEL_H
