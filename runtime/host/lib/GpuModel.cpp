//===- GpuModel.cpp - A model library run on a CUDA device ----------------===//

#include "lruc/host/GpuModel.h"

#include "lruc/cuda/DeferredStatus.h"
#include "lruc/cuda/Device.h"
#include "lruc/cuda/PtxCache.h"
#include "lruc/host/Evaluate.h"
#include "lruc_gpu.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lruc::host {

namespace {

constexpr size_t kAlignment = 256; // what lruc_gpu.h asks of the workspace

size_t aligned(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

} // namespace

std::unique_ptr<GpuModel> GpuModel::open(const ModelLibrary &library,
                                         int ordinal, std::string &whyNot) {
  auto get = reinterpret_cast<const lruc_gpu_model *(*)(uint32_t)>(
      library.findSymbol("lruc_gpu_model_get"));
  auto source = reinterpret_cast<const char *(*)()>(
      library.findSymbol("lruc_cuda_source"));
  const lruc_gpu_model *gpu = get ? get(LRUC_GPU_ABI_VERSION) : nullptr;
  if (!gpu || !source) {
    whyNot = get ? "the library's GPU half speaks another version of "
                   "lruc_gpu.h (rebuild it with this lruc)"
                 : "the library carries no CUDA kernels";
    return nullptr;
  }
  if (gpu->struct_size != sizeof(lruc_gpu_model))
    throw HostError(fmt::format(
        "{}: its lruc_gpu_model is {} bytes, this runtime's {}: built by "
        "another lruc",
        library.path().string(), gpu->struct_size, sizeof(lruc_gpu_model)));
  std::unique_ptr<cuda::Device> device = cuda::Device::open(ordinal, whyNot);
  if (!device)
    return nullptr;
  return std::unique_ptr<GpuModel>(
      new GpuModel(library, *gpu, std::move(device)));
}

std::unique_ptr<GpuModel> GpuModel::openForDevice(const ModelLibrary &library,
                                                  const std::string &device,
                                                  const char *tool,
                                                  Matmul matmul) {
  auto onCpu = [&]() -> std::unique_ptr<GpuModel> {
    if (matmul == Matmul::tf32)
      std::fprintf(stderr,
                   "%s: warning: --matmul tf32 is for a GPU; on the CPU the "
                   "products are fp32\n",
                   tool);
    else if (matmul == Matmul::bf16) // fp32: a library's products already
      library.setCpuMatmul(matmul);
    return nullptr;
  };
  if (device == "cpu")
    return onCpu();
  std::string whyNot;
  std::unique_ptr<GpuModel> gpu = open(library, 0, whyNot);
  if (!gpu) {
    if (device == "gpu")
      throw HostError(fmt::format("{}: --device gpu: {}",
                                  library.path().string(), whyNot));
    return onCpu();
  }
  gpu->setMatmul(matmul);
  std::string cache = kernelCacheDirectory();
  std::fprintf(stderr,
               "%s: compiling the CUDA kernels for %s (NVRTC, once per model "
               "and device%s%s)\n",
               tool, gpu->deviceDescription().c_str(),
               cache.empty() ? "" : "; cached in ", cache.c_str());
  gpu->loadKernels();
  if (const std::string &warning = gpu->device_->kernelWarning();
      !warning.empty())
    std::fprintf(stderr, "%s: warning: %s\n", tool, warning.c_str());
  return gpu;
}

void GpuModel::loadKernels() {
  auto source = reinterpret_cast<const char *(*)()>(
      library_.findSymbol("lruc_cuda_source"));
  std::string error;
  if (!device_->loadKernels(source(), gpu_.kernels, gpu_.num_kernels, error))
    fail(fmt::format("compiling and loading the CUDA kernels for {}",
                     device_->arch()),
         error);
}

std::string GpuModel::kernelCacheDirectory() {
  return cuda::defaultPtxCacheDirectory();
}

GpuModel::GpuModel(const ModelLibrary &library, const lruc_gpu_model &gpu,
                   std::unique_ptr<cuda::Device> device)
    : library_(library), gpu_(gpu), device_(std::move(device)),
      deferred_(std::make_unique<cuda::DeferredStatusOps>(*device_->ops())) {
  const char *graphs = std::getenv("LRUC_CUDA_GRAPHS");
  stepGraphs_ = !graphs || std::string(graphs) != "0";
}

GpuModel::~GpuModel() { releaseMemory(); }

void GpuModel::releaseMemory() {
  // Queued work may still use what is freed here.
  std::string ignored;
  device_->synchronize(ignored);
  device_->release(pool_);
  pool_ = nullptr;
  poolBytes_ = 0;
  reservedBatch_ = 0;
  carryBatch_ = 0;
  device_->destroyGraph(stepGraph_);
  stepGraph_ = nullptr;
  stepSetUp_ = false;
  device_->releaseHost(stepHost_);
  stepHost_ = nullptr;
  for (QueuedStep &slot : slots_) {
    device_->releaseHost(slot.host);
    device_->destroyEvent(slot.done);
    slot = QueuedStep{};
  }
  nextSlot_ = queued_ = 0;
}

void GpuModel::setMatmul(Matmul precision) {
  std::string error;
  const cuda::Matmul onDevice = precision == Matmul::tf32 ? cuda::Matmul::tf32
                                : precision == Matmul::bf16
                                    ? cuda::Matmul::bf16
                                    : cuda::Matmul::fp32;
  if (!device_->setMatmul(onDevice, error))
    throw HostError(library_.path().string() + ": " + error);
  matmul_ = precision;
}

std::string GpuModel::deviceDescription() const {
  return fmt::format(
      "{} ({}{}{})", device_->name(), device_->arch(),
      gpu_.activations == LRUC_GPU_BF16 ? ", bfloat16 activations" : "",
      matmul_ == Matmul::tf32   ? ", TF32 products"
      : matmul_ == Matmul::bf16 ? ", bfloat16 products"
                                : "");
}

void GpuModel::fail(const std::string &what, const std::string &message) const {
  throw HostError(
      fmt::format("{}: {} on the GPU: {}", library_.path().string(), what,
                  message));
}

GpuModel::Staging GpuModel::stagingFor(const std::vector<TensorInfo> &inputs,
                                      const std::vector<TensorInfo> &outputs,
                                      int64_t batch) {
  Staging staging;
  for (const TensorInfo &input : inputs) {
    staging.inputAt.push_back(staging.bytes);
    staging.bytes += aligned(inputBytes(input, batch));
  }
  for (const TensorInfo &output : outputs) {
    staging.outputAt.push_back(staging.bytes);
    staging.bytes += aligned(outputElements(output, batch) * sizeof(float));
  }
  staging.statusAt = staging.bytes;
  staging.bytes += cuda::DeferredStatusOps::kMaxStatusBytes;
  return staging;
}

void GpuModel::reserve(int64_t batch) {
  const Manifest &m = library_.manifest();
  releaseMemory();

  // Each array's offset in the pool, and the pool's size.
  size_t bytes = 0;
  auto carve = [&](size_t size) {
    const size_t at = bytes;
    bytes += aligned(size);
    return at;
  };
  const size_t paramBytes = m.paramFloats * sizeof(float);
  const size_t stateBytes = m.stateFloats * sizeof(float);
  const size_t paramsAt = carve(paramBytes), adamMAt = carve(paramBytes),
               adamVAt = carve(paramBytes), gradsAt = carve(paramBytes),
               evalParamsAt = carve(paramBytes), stateAt = carve(stateBytes),
               evalStateAt = carve(stateBytes);
  std::vector<size_t> inputsAt, outputsAt, stepOutputsAt;
  for (const TensorInfo &input : m.inputs)
    inputsAt.push_back(carve(inputBytes(input, batch)));
  for (const TensorInfo &output : m.outputs)
    outputsAt.push_back(carve(outputElements(output, batch) * sizeof(float)));
  size_t carryAt = 0;
  if (m.step) {
    carryAt = carve(size_t(batch) * m.step->carryFloats * sizeof(float));
    for (const TensorInfo &output : m.step->outputs)
      stepOutputsAt.push_back(
          carve(outputElements(output, batch) * sizeof(float)));
  }
  const size_t workspaceAt = carve(gpu_.workspace_bytes(batch));

  std::string error;
  pool_ = device_->allocate(bytes, error);
  if (!pool_)
    fail(fmt::format("{:.1f} MiB of device memory for batch {}",
                     double(bytes) / (1 << 20), batch),
         error);
  poolBytes_ = bytes;
  reservedBatch_ = batch;
  char *base = static_cast<char *>(pool_);
  auto floats = [&](size_t at) { return reinterpret_cast<float *>(base + at); };
  params_ = floats(paramsAt);
  adamM_ = floats(adamMAt);
  adamV_ = floats(adamVAt);
  grads_ = floats(gradsAt);
  gradZeros_.assign(m.paramFloats, 0.0f);
  evalParams_ = floats(evalParamsAt);
  state_ = floats(stateAt);
  evalState_ = floats(evalStateAt);
  workspace_ = base + workspaceAt;
  inputs_.clear();
  for (size_t at : inputsAt)
    inputs_.push_back(base + at);
  outputs_.clear();
  for (size_t at : outputsAt)
    outputs_.push_back(floats(at));
  carry_ = m.step ? floats(carryAt) : nullptr;
  stepOutputs_.clear();
  for (size_t at : stepOutputsAt)
    stepOutputs_.push_back(floats(at));
  // A step input goes where its sequence input goes: one step of it is no
  // larger than the whole sequence.
  stepInputs_.clear();
  if (m.step)
    for (const TensorInfo &input : m.step->inputs) {
      const TensorInfo *whole = m.findInput(input.name);
      if (!whole)
        fail("step mode",
             fmt::format("step input '{}' has no sequence input", input.name));
      stepInputs_.push_back(inputs_[size_t(whole - m.inputs.data())]);
    }

  // Page-locked host memory: a slot per queued train step, and a token's
  // way in and out of a step graph.
  auto allocateHost = [&](size_t size) {
    auto *host = static_cast<char *>(device_->allocateHost(size, error));
    if (!host) {
      releaseMemory();
      fail("reserving page-locked host memory", error);
    }
    return host;
  };
  trainStaging_ = stagingFor(m.inputs, m.outputs, batch);
  for (QueuedStep &slot : slots_) {
    slot.host = allocateHost(trainStaging_.bytes);
    if (!(slot.done = device_->createEvent(error))) {
      releaseMemory();
      fail("reserving page-locked host memory", error);
    }
  }
  if (m.step) {
    stepStaging_ = stagingFor(m.step->inputs, m.step->outputs, batch);
    stepHost_ = allocateHost(stepStaging_.bytes);
  }
}

void GpuModel::copy(void *dst, const void *src, size_t bytes, int kind,
                    const char *what) const {
  if (bytes == 0)
    return;
  const lruc_gpu_ops &ops = *device_->ops();
  if (int r = ops.copy(ops.context, dst, src, bytes, kind)) {
    std::string error;
    if (device_->synchronize(error))
      error = fmt::format("copy failed ({})", r);
    fail(what, error);
  }
}

void GpuModel::upload(const Checkpoint &c) {
  const Manifest &m = library_.manifest();
  if (!pool_)
    fail("upload", "no device memory reserved (reserve first)");
  if (!c.hasOptimizerState())
    fail("upload", "the checkpoint has no optimizer state");
  const size_t paramBytes = m.paramFloats * sizeof(float);
  copy(params_, c.params.data(), paramBytes, LRUC_COPY_HOST_TO_DEVICE,
       "upload");
  copy(adamM_, c.adamM.data(), paramBytes, LRUC_COPY_HOST_TO_DEVICE, "upload");
  copy(adamV_, c.adamV.data(), paramBytes, LRUC_COPY_HOST_TO_DEVICE, "upload");
  copy(state_, c.state.data(), m.stateFloats * sizeof(float),
       LRUC_COPY_HOST_TO_DEVICE, "upload");
}

void GpuModel::download(Checkpoint &c) const {
  const Manifest &m = library_.manifest();
  const size_t paramBytes = m.paramFloats * sizeof(float);
  c.params.resize(m.paramFloats);
  c.adamM.resize(m.paramFloats);
  c.adamV.resize(m.paramFloats);
  c.state.resize(m.stateFloats);
  copy(c.params.data(), params_, paramBytes, LRUC_COPY_DEVICE_TO_HOST,
       "download");
  copy(c.adamM.data(), adamM_, paramBytes, LRUC_COPY_DEVICE_TO_HOST,
       "download");
  copy(c.adamV.data(), adamV_, paramBytes, LRUC_COPY_DEVICE_TO_HOST,
       "download");
  copy(c.state.data(), state_, m.stateFloats * sizeof(float),
       LRUC_COPY_DEVICE_TO_HOST, "download");
}

void GpuModel::checkBatch(int64_t batch, const char *entry) const {
  if (batch <= 0 || batch > reservedBatch_)
    fail(entry, fmt::format("batch {} outside the reserved 1..{}", batch,
                            reservedBatch_));
}

const void *const *GpuModel::uploadInputs(int64_t batch,
                                          const void *const *inputs) {
  const Manifest &m = library_.manifest();
  for (size_t i = 0; i < m.inputs.size(); ++i)
    copy(inputs_[i], inputs[i], inputBytes(m.inputs[i], batch),
         LRUC_COPY_HOST_TO_DEVICE, "uploading a batch");
  return inputs_.data();
}

void GpuModel::downloadOutputs(int64_t batch, float *const *outputs) {
  const Manifest &m = library_.manifest();
  for (size_t o = 0; o < m.outputs.size(); ++o)
    copy(outputs[o], outputs_[o],
         outputElements(m.outputs[o], batch) * sizeof(float),
         LRUC_COPY_DEVICE_TO_HOST, "reading the outputs");
}

void GpuModel::queueTrainStep(int64_t batch, float lr, int64_t step,
                              const void *const *inputs,
                              const int64_t dropoutKey[2]) {
  checkBatch(batch, "train_step");
  if (queued_ == kMaxQueuedSteps)
    fail("train_step", fmt::format("{} steps queued already (finish one "
                                   "first)",
                                   queued_));
  const Manifest &m = library_.manifest();
  // The slot's last step has been finished, so its copies are done.
  QueuedStep &slot = slots_[nextSlot_];
  std::string error;
  auto queueCopy = [&](void *dst, const void *src, size_t bytes, int kind) {
    if (!device_->copyAsync(dst, src, bytes, kind, error))
      fail("train_step", error);
  };
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    char *staged = slot.host + trainStaging_.inputAt[i];
    const size_t bytes = inputBytes(m.inputs[i], batch);
    std::memcpy(staged, inputs[i], bytes);
    queueCopy(inputs_[i], staged, bytes, LRUC_COPY_HOST_TO_DEVICE);
  }
  char message[512] = "";
  if (gpu_.train_step(deferred_->ops(), workspace_, batch, params_, adamM_,
                      adamV_, state_, lr, float(step), inputs_.data(),
                      dropoutKey, outputs_.data(), message, sizeof message))
    fail("train_step", message);
  queueCopy(slot.host + trainStaging_.statusAt, deferred_->status(),
            deferred_->statusBytes(), LRUC_COPY_DEVICE_TO_HOST);
  for (size_t o = 0; o < m.outputs.size(); ++o)
    queueCopy(slot.host + trainStaging_.outputAt[o], outputs_[o],
              outputElements(m.outputs[o], batch) * sizeof(float),
              LRUC_COPY_DEVICE_TO_HOST);
  if (!device_->record(slot.done, error))
    fail("train_step", error);
  slot.batch = batch;
  slot.step = step;
  nextSlot_ = (nextSlot_ + 1) % kMaxQueuedSteps;
  ++queued_;
}

void GpuModel::finishTrainStep(float *const *outputs) {
  if (queued_ == 0)
    fail("train_step", "no step queued");
  QueuedStep &slot =
      slots_[(nextSlot_ - queued_ + kMaxQueuedSteps) % kMaxQueuedSteps];
  --queued_;
  std::string error;
  if (!device_->wait(slot.done, error))
    fail("train_step", error);
  char message[512] = "";
  if (gpu_.status_error("train_step", slot.host + trainStaging_.statusAt,
                        message, sizeof message))
    fail(fmt::format("train_step {}", slot.step), message);
  const Manifest &m = library_.manifest();
  for (size_t o = 0; o < m.outputs.size(); ++o)
    std::memcpy(outputs[o], slot.host + trainStaging_.outputAt[o],
                outputElements(m.outputs[o], slot.batch) * sizeof(float));
}

void GpuModel::accumulateGradients(int64_t batch, float scale, bool first,
                                   const void *const *inputs,
                                   const int64_t dropoutKey[2],
                                   float *const *outputs) {
  checkBatch(batch, "accumulate_gradients");
  if (queued_ != 0)
    fail("accumulate_gradients", "train steps are queued (finish them first)");
  const Manifest &m = library_.manifest();
  if (first) {
    copy(grads_, gradZeros_.data(), m.paramFloats * sizeof(float),
         LRUC_COPY_HOST_TO_DEVICE, "accumulate_gradients");
  }
  const void *const *deviceInputs = uploadInputs(batch, inputs);
  char message[512] = "";
  if (gpu_.accumulate_gradients(device_->ops(), workspace_, batch, params_,
                                state_, grads_, scale, deviceInputs, dropoutKey,
                                outputs_.data(), message, sizeof message))
    fail("accumulate_gradients", message);
  downloadOutputs(batch, outputs);
}

void GpuModel::applyGradients(float lr, int64_t step) {
  char message[512] = "";
  if (gpu_.apply_gradients(device_->ops(), workspace_, params_, adamM_, adamV_,
                           grads_, lr, float(step), message, sizeof message))
    fail("apply_gradients", message);
}

void GpuModel::evaluateTrainingBlocks() {
  const Manifest &m = library_.manifest();
  copy(evalParams_, params_, m.paramFloats * sizeof(float),
       LRUC_COPY_DEVICE_TO_DEVICE, "evaluation");
  copy(evalState_, state_, m.stateFloats * sizeof(float),
       LRUC_COPY_DEVICE_TO_DEVICE, "evaluation");
}

void GpuModel::evaluateCheckpoint(const Checkpoint &c) {
  const Manifest &m = library_.manifest();
  copy(evalParams_, c.params.data(), m.paramFloats * sizeof(float),
       LRUC_COPY_HOST_TO_DEVICE, "evaluation");
  copy(evalState_, c.state.data(), m.stateFloats * sizeof(float),
       LRUC_COPY_HOST_TO_DEVICE, "evaluation");
}

void GpuModel::forward(int64_t batch, const void *const *inputs,
                       float *const *outputs) {
  checkBatch(batch, "forward");
  const void *const *deviceInputs = uploadInputs(batch, inputs);
  char message[512] = "";
  if (gpu_.forward(device_->ops(), workspace_, batch, evalParams_,
                   evalState_, deviceInputs, outputs_.data(), message,
                   sizeof message))
    fail("forward", message);
  downloadOutputs(batch, outputs);
}

void GpuModel::stepReset(int64_t batch) {
  const Manifest &m = library_.manifest();
  if (!m.step || !gpu_.step_reset)
    fail("step_reset", m.step ? "the GPU half has no step mode"
                              : m.stepUnavailable);
  checkBatch(batch, "step_reset");
  char message[512] = "";
  if (gpu_.step_reset(device_->ops(), batch, carry_, message, sizeof message))
    fail("step_reset", message);
  carryHolds(batch);
}

void GpuModel::carryHolds(int64_t batch) {
  if (batch != carryBatch_) { // a graph is for one batch
    device_->destroyGraph(stepGraph_);
    stepGraph_ = nullptr;
    stepSetUp_ = false;
  }
  carryBatch_ = batch;
}

void GpuModel::stepSetCarry(int64_t batch, const float *carry) {
  const Manifest &m = library_.manifest();
  if (!m.step || !gpu_.step)
    fail("step carry",
         m.step ? "the GPU half has no step mode" : m.stepUnavailable);
  checkBatch(batch, "step carry");
  copy(carry_, carry, size_t(batch) * m.step->carryFloats * sizeof(float),
       LRUC_COPY_HOST_TO_DEVICE, "loading the step carry");
  carryHolds(batch);
}

void GpuModel::stepCarry(float *carry) const {
  if (carryBatch_ == 0)
    fail("step carry", "no carry (step_reset first)");
  copy(carry, carry_,
       size_t(carryBatch_) * library_.manifest().step->carryFloats *
           sizeof(float),
       LRUC_COPY_DEVICE_TO_HOST, "reading the step carry");
}

void GpuModel::useStepGraphs(bool on) {
  stepGraphs_ = on;
  device_->destroyGraph(stepGraph_);
  stepGraph_ = nullptr;
}

bool GpuModel::captureStep(int64_t batch) {
  const Manifest &m = library_.manifest();
  // Room for the schedule's own host constants (its status block's reset).
  constexpr size_t kStagingBytes = 4096;
  std::string error;
  bool captured = device_->beginCapture(kStagingBytes, error);
  if (captured) {
    for (size_t i = 0; captured && i < m.step->inputs.size(); ++i)
      captured = device_->copyAsync(
          stepInputs_[i], stepHost_ + stepStaging_.inputAt[i],
          inputBytes(m.step->inputs[i], batch), LRUC_COPY_HOST_TO_DEVICE,
          error);
    char message[512] = "";
    if (captured && gpu_.step(deferred_->ops(), workspace_, batch, evalParams_,
                              evalState_, carry_, stepInputs_.data(),
                              stepOutputs_.data(), message, sizeof message)) {
      error = message;
      captured = false;
    }
    captured = captured &&
               device_->copyAsync(stepHost_ + stepStaging_.statusAt,
                                  deferred_->status(),
                                  deferred_->statusBytes(),
                                  LRUC_COPY_DEVICE_TO_HOST, error);
    for (size_t o = 0; captured && o < m.step->outputs.size(); ++o)
      captured = device_->copyAsync(
          stepHost_ + stepStaging_.outputAt[o], stepOutputs_[o],
          outputElements(m.step->outputs[o], batch) * sizeof(float),
          LRUC_COPY_DEVICE_TO_HOST, error);
    std::string ending;
    stepGraph_ = device_->endCapture(ending); // ends it whatever happened
    if (captured && !stepGraph_)
      error = ending;
    captured = captured && stepGraph_;
  }
  if (!captured) {
    device_->destroyGraph(stepGraph_);
    stepGraph_ = nullptr;
    stepGraphs_ = false;
    std::fprintf(stderr,
                 "lruc: step mode on %s launches its kernels one by one: "
                 "capturing them as a CUDA graph failed (%s)\n",
                 deviceDescription().c_str(), error.c_str());
  }
  return captured;
}

void GpuModel::step(int64_t batch, const void *const *inputs,
                    float *const *outputs) {
  const Manifest &m = library_.manifest();
  if (!m.step || !gpu_.step)
    fail("step", m.step ? "the GPU half has no step mode" : m.stepUnavailable);
  if (carryBatch_ == 0 || batch != carryBatch_)
    fail("step", carryBatch_ == 0
                     ? std::string("no carry (step_reset first)")
                     : fmt::format("batch {}, but the carry holds {} "
                                   "sequences",
                                   batch, carryBatch_));
  // The first step of a carry's batch runs kernel by kernel, so that
  // cuBLAS and the module have done their lazy set-up (allocations, loads)
  // before a capture, during which they may not; the next is captured.
  if (!stepGraphs_ || !stepSetUp_ || (!stepGraph_ && !captureStep(batch))) {
    stepByLaunches(batch, inputs, outputs);
    stepSetUp_ = true;
    return;
  }
  // The graph: the token in through stepHost_, one launch, one wait.
  for (size_t i = 0; i < m.step->inputs.size(); ++i)
    std::memcpy(stepHost_ + stepStaging_.inputAt[i], inputs[i],
                inputBytes(m.step->inputs[i], batch));
  std::string error;
  if (!device_->launchGraph(stepGraph_, error) ||
      !device_->synchronize(error))
    fail("step", error);
  char message[512] = "";
  if (gpu_.status_error("step", stepHost_ + stepStaging_.statusAt, message,
                        sizeof message))
    fail("step", message);
  for (size_t o = 0; o < m.step->outputs.size(); ++o)
    std::memcpy(outputs[o], stepHost_ + stepStaging_.outputAt[o],
                outputElements(m.step->outputs[o], batch) * sizeof(float));
}

void GpuModel::stepByLaunches(int64_t batch, const void *const *inputs,
                              float *const *outputs) {
  const Manifest &m = library_.manifest();
  for (size_t i = 0; i < m.step->inputs.size(); ++i)
    copy(stepInputs_[i], inputs[i],
         inputBytes(m.step->inputs[i], batch), LRUC_COPY_HOST_TO_DEVICE,
         "uploading a step");
  char message[512] = "";
  if (gpu_.step(device_->ops(), workspace_, batch, evalParams_, evalState_,
                carry_, stepInputs_.data(), stepOutputs_.data(), message,
                sizeof message))
    fail("step", message);
  for (size_t o = 0; o < m.step->outputs.size(); ++o)
    copy(outputs[o], stepOutputs_[o],
         outputElements(m.step->outputs[o], batch) * sizeof(float),
         LRUC_COPY_DEVICE_TO_HOST, "reading a step's outputs");
}

} // namespace lruc::host
