//===- CpuLibraryTest.cpp - model.so against the reference interpreter ----===//
//
// Every model of models/ and examples/, shrunk, compiled to a CPU library
// (the C++ emitter and the host compiler, as `lruc -o model.so` does),
// loaded with dlopen and run through its C ABI: initial parameters,
// forward (eval and train), backward and one train_step must match the fp64
// reference interpreter on the same batch, within fp32 tolerances; step
// mode, fed the batch one step at a time, must give after each step what
// the interpreter's forward gives on that prefix.
//
//===----------------------------------------------------------------------===//

#include "GpuScheduleCheck.h"
#include "GpuSimulator.h"
#include "ModelFixture.h"
#include "RandomModel.h"

#include "lruc/Codegen.h"
#include "lruc/cuda/Device.h"
#include "lruc_gpu.h"
#include "lruc_model.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <thread>

namespace {

using lruc::Tensor;
using lruc::testing::Buffers;
using lruc::testing::GpuArrays;
using lruc::testing::ModelCase;
using lruc::testing::expectGpuScheduleMatchesCpu;
using lruc::testing::gpuHalfOf;

/// A loaded library, closed at the end of the test.
struct Library {
  void *handle = nullptr;
  const lruc_model *model = nullptr;
  ~Library() {
    if (handle)
      dlclose(handle);
  }
};

/// A loaded library's kernel thread pool (`lruc_cpu_set_threads`), given
/// back at the end of a scope at the size a library starts with:
/// LRUC_NUM_THREADS, else every core.
class LibraryThreads {
public:
  explicit LibraryThreads(void *handle)
      : set_(reinterpret_cast<void (*)(int)>(
            dlsym(handle, "lruc_cpu_set_threads"))) {}
  ~LibraryThreads() {
    if (!set_)
      return;
    const char *threads = std::getenv("LRUC_NUM_THREADS");
    set_(threads ? std::atoi(threads)
                 : int(std::thread::hardware_concurrency()));
  }
  LibraryThreads(const LibraryThreads &) = delete;
  LibraryThreads &operator=(const LibraryThreads &) = delete;

  bool found() const { return set_ != nullptr; }
  void set(int threads) const { set_(threads); }

private:
  void (*set_)(int);
};

/// The model inputs (every argument but the dropout key) as buffers.
Buffers inputBuffers(mlir::func::FuncOp func, const std::vector<Tensor> &args) {
  Buffers buffers;
  buffers.floats.reserve(args.size());
  buffers.int32s.reserve(args.size());
  for (unsigned i = 0; i < args.size(); ++i) {
    if (lruc::testing::inputTag(func, i) == "dropout_key")
      continue;
    if (args[i].kind == Tensor::Kind::Int) {
      buffers.int32s.emplace_back(args[i].ints.begin(), args[i].ints.end());
      buffers.pointers.push_back(buffers.int32s.back().data());
      buffers.bytes.push_back(args[i].ints.size() * sizeof(int32_t));
    } else {
      buffers.floats.emplace_back(args[i].re.begin(), args[i].re.end());
      buffers.pointers.push_back(buffers.floats.back().data());
      buffers.bytes.push_back(args[i].re.size() * sizeof(float));
    }
  }
  return buffers;
}

/// Expects `actual` (fp32) to match `expected` (fp64) within
/// tolerance * (1 + max |expected|) elementwise: errors of fp32 arithmetic
/// scale with the tensor's magnitude, not each element's.
void expectClose(const float *actual, const std::vector<double> &expected,
                 double tolerance, const std::string &what) {
  double scale = 1;
  for (double e : expected)
    scale = std::max(scale, 1 + std::abs(e));
  for (size_t k = 0; k < expected.size(); ++k)
    ASSERT_NEAR(actual[k], expected[k], tolerance * scale)
        << what << "[" << k << "]";
}

/// The manifest entry of parameter `name` of `m`, or with `isState` of the
/// running statistic `name`; null if there is none.
const lruc_param_info *entryOf(const lruc_model &m, const std::string &name,
                               bool isState) {
  const lruc_param_info *entries = isState ? m.state : m.params;
  int count = isState ? m.num_state : m.num_params;
  for (int i = 0; i < count; ++i)
    if (entries[i].name == name)
      return &entries[i];
  return nullptr;
}

/// Whether a file is mapped into this process (/proc/self/maps).
bool isMapped(const std::string &path) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(path) != std::string::npos)
      return true;
  return false;
}

bool isSequenceTag(const std::string &tag) {
  return tag == "tokens" || tag == "features";
}

/// The floats of a carry block of `batch` examples that the manifest's step
/// carries name (lruc_model.h: each a dense [batch, ...] array at batch *
/// offset), each once; what the host keeps of a stream between runs
/// (lru-predict --carry-out, lruc/host/StreamCarries.h).
std::vector<std::pair<int64_t, int64_t>> carryRanges(const lruc_model &m,
                                                     int64_t batch) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(m.manifest);
  EXPECT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const llvm::json::Array *carries =
      doc ? doc->getAsObject()->getObject("step")->getArray("carries")
          : nullptr;
  for (const llvm::json::Value &carry :
       carries ? *carries : llvm::json::Array{}) {
    const llvm::json::Object &c = *carry.getAsObject();
    const std::string name = c.getString("name")->str();
    int64_t floats = *c.getString("dtype") == "complex64" ? 2 : 1;
    const llvm::json::Array &shape = *c.getArray("shape");
    for (size_t d = 1; d < shape.size(); ++d) // [batch, ...]
      floats *= *shape[d].getAsInteger();
    const int64_t offset = *c.getInteger("offset");
    EXPECT_LE(offset + floats, int64_t(m.carry_floats)) << name;
    for (auto [begin, end] : ranges)
      EXPECT_TRUE(batch * offset >= end || batch * (offset + floats) <= begin)
          << name << " overlaps another carry";
    ranges.emplace_back(batch * offset, batch * (offset + floats));
  }
  return ranges;
}

/// The arguments of `forward` that are sequence inputs (what step mode
/// reads a step of), and their steps.
std::vector<unsigned> sequenceInputs(mlir::func::FuncOp forward,
                                     const std::vector<Tensor> &args,
                                     int64_t &steps) {
  std::vector<unsigned> sequences;
  for (unsigned i = 0; i < args.size(); ++i)
    if (isSequenceTag(lruc::testing::inputTag(forward, i))) {
      sequences.push_back(i);
      steps = args[i].shape[1];
    }
  return sequences;
}

/// Step t of the sequence inputs `sequences` of `args` (@forward's
/// inputs, `batch` examples of `steps` steps), for the streams [first,
/// first + count): step mode's inputs for one call.
Buffers stepInputsAt(const std::vector<Tensor> &args,
                     const std::vector<unsigned> &sequences, int64_t batch,
                     int64_t steps, int64_t t, int64_t first, int64_t count) {
  Buffers inputs;
  inputs.floats.reserve(sequences.size());
  inputs.int32s.reserve(sequences.size());
  for (unsigned i : sequences) {
    const Tensor &seq = args[i];
    int64_t width = seq.numElements() / (batch * steps);
    if (seq.kind == Tensor::Kind::Int) {
      std::vector<int32_t> slice;
      for (int64_t b = first; b < first + count; ++b)
        for (int64_t k = 0; k < width; ++k)
          slice.push_back(seq.ints[(b * steps + t) * width + k]);
      inputs.int32s.push_back(std::move(slice));
      inputs.pointers.push_back(inputs.int32s.back().data());
    } else {
      std::vector<float> slice;
      for (int64_t b = first; b < first + count; ++b)
        for (int64_t k = 0; k < width; ++k)
          slice.push_back(float(seq.re[(b * steps + t) * width + k]));
      inputs.floats.push_back(std::move(slice));
      inputs.pointers.push_back(inputs.floats.back().data());
    }
  }
  return inputs;
}

/// The floats of step mode's one output for one stream.
int64_t stepOutputWidth(const lruc_model &m) {
  const lruc_tensor_info &out = m.step_outputs[0];
  int64_t width = 1;
  for (int32_t d = 1; d < out.rank; ++d)
    width *= out.shape[d];
  return width;
}

/// Feeds `args` (@forward's inputs) to the library's step mode one step at
/// a time from a reset carry and checks each step's predictions against
/// the interpreter's @forward on the prefix so far (its `lengths` set to
/// the prefix length), or, for per-step predictions, against step t of
/// @forward on the whole sequence.
void expectStepModeMatches(const lruc_model &m, mlir::func::FuncOp forward,
                           std::vector<Tensor> args,
                           const lruc::ParameterStore &store,
                           const std::vector<float> &params,
                           const std::vector<float> &state, int64_t batch,
                           const std::string &name) {
  ASSERT_NE(m.step_reset, nullptr);
  ASSERT_EQ(m.num_step_outputs, 1);
  bool perStep = m.step_outputs[0].rank == 3;
  int64_t steps = 0, outSize = batch * stepOutputWidth(m);
  std::vector<unsigned> sequences = sequenceInputs(forward, args, steps),
                        lengths;
  for (unsigned i = 0; i < args.size(); ++i)
    if (lruc::testing::inputTag(forward, i) == "lengths")
      lengths.push_back(i);
  ASSERT_EQ(int(sequences.size()), m.num_step_inputs);

  std::vector<float> carry(batch * m.carry_floats, 1.0f);
  char message[512] = "";
  ASSERT_EQ(m.step_reset(batch, carry.data(), message, sizeof message), 0);
  for (float v : carry)
    ASSERT_EQ(v, 0.0f);
  std::vector<Tensor> wholeExpected;
  for (int64_t t = 0; t < steps; ++t) {
    if (t == steps / 2) {
      // Halfway, the stream goes on from the carries the manifest names
      // alone (NaN elsewhere): they must be all the step reads.
      std::vector<float> named(carry.size(),
                               std::numeric_limits<float>::quiet_NaN());
      for (auto [begin, end] : carryRanges(m, batch))
        std::copy(carry.begin() + begin, carry.begin() + end,
                  named.begin() + begin);
      carry = std::move(named);
    }
    Buffers stepInputs =
        stepInputsAt(args, sequences, batch, steps, t, 0, batch);
    std::vector<float> got(outSize);
    float *outputs[] = {got.data()};
    ASSERT_EQ(m.step(batch, params.data(), state.data(), carry.data(),
                     stepInputs.pointers.data(), outputs, message,
                     sizeof message),
              0)
        << message;

    std::vector<double> expected;
    if (perStep) {
      if (wholeExpected.empty()) {
        for (unsigned i : lengths)
          std::fill(args[i].ints.begin(), args[i].ints.end(), steps);
        auto result = lruc::interpret(forward, args, store);
        ASSERT_TRUE(mlir::succeeded(result));
        wholeExpected = std::move(*result);
      }
      const std::vector<double> &all = wholeExpected[1].re;
      int64_t width = outSize / batch;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t k = 0; k < width; ++k)
          expected.push_back(all[(b * steps + t) * width + k]);
    } else {
      ASSERT_FALSE(lengths.empty()) << "a pooled model without lengths";
      for (unsigned i : lengths)
        std::fill(args[i].ints.begin(), args[i].ints.end(), t + 1);
      auto result = lruc::interpret(forward, args, store);
      ASSERT_TRUE(mlir::succeeded(result));
      expected = (*result)[1].re;
    }
    expectClose(got.data(), expected, 1e-4,
                name + " step " + std::to_string(t));
  }
}

/// Step mode over 9 streams on 2 threads, in parts of 4 and 5
/// (lruc::cpu::forStreamParts), predicts what each stream predicts alone,
/// step after step, and so does the whole batch on one thread: the parts
/// read and write their own rows of every input, output and carry.
void expectStreamPartsMatchStreamsAlone(void *handle, const lruc_model &m,
                                        mlir::func::FuncOp forward,
                                        const std::vector<float> &params,
                                        const std::vector<float> &state,
                                        const std::string &name) {
  LibraryThreads threads(handle);
  ASSERT_TRUE(threads.found());
  constexpr int64_t kStreams = 9;
  std::vector<Tensor> args = lruc::testing::makeBatch(forward, kStreams, 2);
  int64_t steps = 0;
  const std::vector<unsigned> sequences = sequenceInputs(forward, args, steps);
  const int64_t width = stepOutputWidth(m);
  char message[512] = "";
  // Each step's predictions of streams [first, first + count) together.
  auto run = [&](int64_t first, int64_t count) {
    std::vector<float> carry(count * m.carry_floats), out(count * width);
    std::vector<std::vector<float>> predictions;
    EXPECT_EQ(m.step_reset(count, carry.data(), message, sizeof message), 0);
    for (int64_t t = 0; t < steps; ++t) {
      Buffers inputs =
          stepInputsAt(args, sequences, kStreams, steps, t, first, count);
      float *outputs[] = {out.data()};
      EXPECT_EQ(m.step(count, params.data(), state.data(), carry.data(),
                       inputs.pointers.data(), outputs, message,
                       sizeof message),
                0)
          << name << ": " << message;
      predictions.push_back(out);
    }
    return predictions;
  };
  threads.set(2);
  const auto inParts = run(0, kStreams);
  threads.set(1);
  const auto oneThread = run(0, kStreams);
  for (int64_t b = 0; b < kStreams; ++b) {
    const auto alone = run(b, 1);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t k = 0; k < width; ++k) {
        const float expected = alone[t][k];
        const float tolerance = 1e-5f * (1 + std::abs(expected));
        ASSERT_NEAR(inParts[t][b * width + k], expected, tolerance)
            << name << ": stream " << b << " step " << t << " [" << k << "]";
        ASSERT_NEAR(oneThread[t][b * width + k], expected, tolerance)
            << name << " (one thread): stream " << b << " step " << t;
      }
  }
}

/// The GPU schedule of the library at `handle`, run by the simulator on
/// the CUDA source the library carries (GpuSimulator.h).
void expectSimulatedScheduleMatchesCpu(void *handle, const lruc_model &m,
                                       const Buffers &inputs,
                                       const int64_t key[2],
                                       const std::vector<float> &params,
                                       const std::vector<float> &state,
                                       const std::vector<size_t> &outputSizes,
                                       int64_t batch, const std::string &name) {
  const lruc_gpu_model *g = nullptr;
  const char *source = nullptr;
  gpuHalfOf(handle, g, source);
  if (::testing::Test::HasFatalFailure())
    return;
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("lruc-sim", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, name + ".sim.so");
  lruc::testing::GpuSimulator sim;
  std::string error;
  bool loaded = sim.load(source, path.str().str(), error);
  llvm::sys::fs::remove_directories(dir);
  ASSERT_TRUE(loaded) << error;
  GpuArrays memory(
      *sim.ops(),
      [](size_t bytes) {
        return std::aligned_alloc(256, (bytes + 255) / 256 * 256);
      },
      [](void *p) { std::free(p); });
  expectGpuScheduleMatchesCpu(*g, *sim.ops(), memory, m, inputs, key, params,
                              state, outputSizes, batch, name);
  EXPECT_GT(sim.launches(), 0);
  EXPECT_GT(sim.gemms(), 0);
  EXPECT_GT(sim.cooperativeBlocks(), 0); // the block sums
}

/// Builds the library of `module` (a copy through the backend's passes,
/// with `recompute`: by default every LRU's states recomputed,
/// Recompute::AllStates, which `lruc --recompute=states` is where it
/// shrinks the workspace; recomputation only adds copies of ops the default
/// pipeline has, so this covers its ops too) with its
/// CUDA kernels embedded, as `lruc -o` builds it, and loads it into `lib`;
/// `libPath` is where it was (its directory is gone, the mapping stays).
void buildLibrary(mlir::MLIRContext &context, mlir::ModuleOp module,
                  const std::string &name, const std::string &errors,
                  Library &lib, std::string &libPath,
                  const lruc::CudaOptions &cudaOptions = {},
                  lruc::Recompute recompute = lruc::Recompute::AllStates) {
  mlir::OwningOpRef<mlir::ModuleOp> lowered = module.clone();
  mlir::PassManager pm(&context);
  lruc::buildCpuPipeline(pm, recompute);
  ASSERT_TRUE(mlir::succeeded(pm.run(*lowered))) << errors;
  lruc::CppOptions options;
  options.embedCuda = true;
  options.cuda = cudaOptions;
  lruc::LibrarySource source;
  ASSERT_TRUE(mlir::succeeded(lruc::emitCpp(*lowered, source, options)))
      << errors;
  std::string expectedCuda;
  llvm::raw_string_ostream cuda(expectedCuda);
  ASSERT_TRUE(mlir::succeeded(lruc::emitCuda(*lowered, cuda, cudaOptions)))
      << errors;
  cuda.flush();
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("lruc-test", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, name + ".so");
  libPath = path.str().str();
  std::string error;
  lruc::HostCompiler compiler;
  ASSERT_TRUE(
      lruc::defaultHostCompiler(lruc::CpuTarget::Native, compiler, error))
      << error;
  ASSERT_TRUE(lruc::compileLibrary(source, libPath, compiler, error)) << error;
  lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  llvm::sys::fs::remove_directories(dir);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto get = reinterpret_cast<const lruc_model *(*)(uint32_t)>(
      dlsym(lib.handle, "lruc_model_get"));
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(get(LRUC_ABI_VERSION + 1), nullptr);
  lib.model = get(LRUC_ABI_VERSION);
  ASSERT_NE(lib.model, nullptr);
  auto cudaSource = reinterpret_cast<const char *(*)()>(
      dlsym(lib.handle, "lruc_cuda_source"));
  ASSERT_NE(cudaSource, nullptr);
  EXPECT_EQ(std::string(cudaSource()), expectedCuda);
}

/// A model case lowered (`module`, for the interpreter) and built into a
/// loaded library (`lib`, built at `path`); `errors` collects the
/// context's diagnostics.
struct BuiltModel {
  mlir::MLIRContext context;
  std::string errors, path;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  Library lib;
};

/// What a case's library recomputes: every LRU's states for the files of
/// the tree; for a random model, in turn by seed, nothing (lruc's
/// default: each value's own slot in the memory plan), elementwise values,
/// or every LRU's states.
lruc::Recompute recomputeOf(const ModelCase &c) {
  if (c.source.empty())
    return lruc::Recompute::AllStates;
  static const lruc::Recompute kinds[] = {lruc::Recompute::None,
                                          lruc::Recompute::Elementwise,
                                          lruc::Recompute::AllStates};
  unsigned sum = 0; // of the name's characters: random_1, _2, _3 take turns
  for (char ch : c.name)
    sum += static_cast<unsigned char>(ch);
  return kinds[sum % 3];
}

void buildModel(const ModelCase &c, BuiltModel &built,
                const lruc::CudaOptions &cudaOptions = {}) {
  built.module = lruc::testing::compileModel(built.context, c, built.errors);
  ASSERT_TRUE(built.module) << built.errors;
  buildLibrary(built.context, *built.module, c.name, built.errors, built.lib,
               built.path, cudaOptions, recomputeOf(c));
}

class CpuLibrary : public ::testing::TestWithParam<ModelCase> {};

TEST_P(CpuLibrary, MatchesTheReferenceInterpreter) {
  const ModelCase &c = GetParam();
  SCOPED_TRACE(c.source); // a random model's text, to reproduce it
  BuiltModel built;
  buildModel(c, built);
  if (HasFatalFailure())
    return;
  auto &[context, errors, path, module, lib] = built;
  const lruc_model &m = *lib.model;

  // Initial parameters: the same numbers as the interpreter's.
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  auto train = module->lookupSymbol<mlir::func::FuncOp>("forward_train");
  auto backward = module->lookupSymbol<mlir::func::FuncOp>("backward");
  auto store = lruc::initParameters(train, /*seed=*/7);
  ASSERT_TRUE(mlir::succeeded(store));
  std::vector<float> params(m.param_floats), state(m.state_floats);
  char message[512] = "";
  ASSERT_EQ(m.init(7, params.data(), state.data(), message, sizeof message), 0)
      << message;
  for (int i = 0; i < m.num_params + m.num_state; ++i) {
    const lruc_param_info &info =
        i < m.num_params ? m.params[i] : m.state[i - m.num_params];
    const float *block = i < m.num_params ? params.data() : state.data();
    const Tensor &expected = (*store)[info.name];
    ASSERT_EQ(expected.re.size(), info.size) << info.name;
    for (size_t k = 0; k < info.size; ++k)
      ASSERT_EQ(block[info.offset + k], float(expected.re[k]))
          << info.name << "[" << k << "]";
  }

  constexpr int64_t kBatch = 3;
  std::vector<Tensor> args = lruc::testing::makeBatch(train, kBatch, 1);
  const int64_t key[2] = {args.back().ints[0], args.back().ints[1]};
  Buffers inputs = inputBuffers(train, args);
  std::vector<Tensor> evalArgs(args.begin(), args.end() - 1);

  // forward (eval) and forward_train (+ new running statistics).
  auto expectedEval = lruc::interpret(forward, evalArgs, *store);
  auto expectedTrain = lruc::interpret(train, args, *store);
  ASSERT_TRUE(mlir::succeeded(expectedEval) && mlir::succeeded(expectedTrain));
  std::vector<std::vector<float>> outputs;
  for (const Tensor &t : *expectedEval)
    outputs.emplace_back(t.re.size());
  std::vector<float *> outputPtrs;
  for (auto &o : outputs)
    outputPtrs.push_back(o.data());
  ASSERT_EQ(m.forward(kBatch, params.data(), state.data(),
                      inputs.pointers.data(), outputPtrs.data(), message,
                      sizeof message),
            0)
      << message;
  for (size_t r = 0; r < outputs.size(); ++r)
    expectClose(outputs[r].data(), (*expectedEval)[r].re, 1e-4,
                c.name + " forward result " + std::to_string(r));

  // forward_train (+ new running statistics) and backward (the loss and
  // every gradient).
  auto expectedGrads = lruc::interpret(backward, args, *store);
  ASSERT_TRUE(mlir::succeeded(expectedGrads));
  auto names = backward->getAttrOfType<mlir::ArrayAttr>("lru.gradients");
  auto expectTrainAndBackward = [&](const std::string &how) {
    std::vector<float> newState(m.state_floats);
    ASSERT_EQ(m.forward_train(kBatch, params.data(), state.data(),
                              inputs.pointers.data(), key, outputPtrs.data(),
                              newState.data(), message, sizeof message),
              0)
        << message;
    for (size_t r = 0; r < outputs.size(); ++r)
      expectClose(outputs[r].data(), (*expectedTrain)[r].re, 1e-4,
                  c.name + how + " forward_train result " + std::to_string(r));
    auto updates = train->getAttrOfType<mlir::ArrayAttr>("lru.state_updates");
    for (auto [i, name] : llvm::enumerate(updates)) {
      for (int s = 0; s < m.num_state; ++s)
        if (m.state[s].name == mlir::cast<mlir::StringAttr>(name).str())
          expectClose(newState.data() + m.state[s].offset,
                      (*expectedTrain)[outputs.size() + i].re, 1e-4,
                      c.name + how + " new " + m.state[s].name);
    }
    float loss = 0;
    std::vector<float> grads(m.param_floats);
    ASSERT_EQ(m.backward(kBatch, params.data(), state.data(),
                         inputs.pointers.data(), key, &loss, grads.data(),
                         message, sizeof message),
              0)
        << message;
    EXPECT_NEAR(loss, (*expectedGrads)[0].re[0],
                1e-4 * (1 + std::abs((*expectedGrads)[0].re[0])))
        << c.name << how;
    for (auto [i, name] : llvm::enumerate(names))
      for (int p = 0; p < m.num_params; ++p)
        if (m.params[p].name == mlir::cast<mlir::StringAttr>(name).str())
          expectClose(grads.data() + m.params[p].offset,
                      (*expectedGrads)[i + 1].re, 1e-3,
                      c.name + how + " gradient of " + m.params[p].name);
  };
  expectTrainAndBackward("");
  // On one thread the groups that are epilogues of matmuls compute their
  // rows of the products in their own loop (these small batches have fewer
  // parts than 4 threads, and then each product is split on its own).
  {
    LibraryThreads threads(lib.handle);
    ASSERT_TRUE(threads.found());
    threads.set(1);
    expectTrainAndBackward(" (1 thread)");
  }
  if (HasFatalFailure())
    return;

  // The interpreter's arguments: each block argument from its block.
  auto blockArgs = [&](mlir::func::FuncOp func,
                       const std::map<std::string, const float *> &blocks,
                       std::vector<Tensor> inputs) {
    std::vector<Tensor> values;
    size_t input = 0;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto type =
          mlir::cast<mlir::RankedTensorType>(func.getArgument(i).getType());
      const float *block = nullptr;
      std::string name;
      for (const auto &[tag, where] : blocks)
        if (auto attr = func.getArgAttrOfType<mlir::StringAttr>(i, tag)) {
          block = where;
          name = attr.str();
        }
      if (!block) {
        values.push_back(inputs.at(input++));
        continue;
      }
      const lruc_param_info *info =
          entryOf(m, name, /*isState=*/block == state.data());
      EXPECT_NE(info, nullptr) << name;
      if (!info)
        return values;
      values.push_back(Tensor::real(
          std::vector<int64_t>(type.getShape()),
          std::vector<double>(block + info->offset,
                              block + info->offset + info->size)));
    }
    return values;
  };
  auto scalar = [](double v) { return Tensor::real({}, {v}); };

  // train_step: one AdamW step in place, at step 3 from moments that are
  // not 0 (each moment's decay reads the one it overwrites), against the
  // interpreter's @train_step (the model's own AdamW settings, clipping and
  // learning-rate groups). With a second moment away from 0 the update is
  // smooth in the gradient: parameters within 1e-5, the moments as tightly
  // as the gradients.
  const float lr = 1e-3f;
  lruc::testing::AccumulationBlocks startMoments(m.param_floats);
  std::vector<float> adamM = startMoments.moment1,
                     adamV = startMoments.moment2;
  auto trainStep = module->lookupSymbol<mlir::func::FuncOp>("train_step");
  ASSERT_TRUE(trainStep);
  std::vector<Tensor> stepInputs = {scalar(lr), scalar(3.0)};
  stepInputs.insert(stepInputs.end(), args.begin(), args.end());
  auto expectedStep = lruc::interpret(
      trainStep,
      blockArgs(trainStep,
                {{"lru.param", params.data()},
                 {"lru.state", state.data()},
                 {"lru.adam_m", adamM.data()},
                 {"lru.adam_v", adamV.data()}},
                stepInputs),
      *store);
  ASSERT_TRUE(mlir::succeeded(expectedStep));
  std::vector<float> stepParams = params, stepState = state;
  for (auto &o : outputs)
    std::fill(o.begin(), o.end(), NAN);
  ASSERT_EQ(m.train_step(kBatch, stepParams.data(), adamM.data(),
                         adamV.data(), stepState.data(), lr, 3.0f,
                         inputs.pointers.data(), key, outputPtrs.data(),
                         message, sizeof message),
            0)
      << message;
  // Its outputs (loss, predictions) are forward_train's, before the update.
  for (size_t r = 0; r < outputs.size(); ++r)
    expectClose(outputs[r].data(), (*expectedTrain)[r].re, 1e-4,
                c.name + " train_step result " + std::to_string(r));
  for (unsigned r = outputs.size(); r < trainStep.getNumResults(); ++r) {
    const std::vector<double> &expected = (*expectedStep)[r].re;
    for (auto [tag, block] : {std::pair{"lru.param", &stepParams},
                              {"lru.adam_m", &adamM},
                              {"lru.adam_v", &adamV},
                              {"lru.state", &stepState}}) {
      auto name = trainStep.getResultAttrOfType<mlir::StringAttr>(r, tag);
      if (!name)
        continue;
      bool isState = block == &stepState;
      const lruc_param_info *info = entryOf(m, name.str(), isState);
      ASSERT_NE(info, nullptr) << c.name << " train_step result " << r;
      expectClose(block->data() + info->offset, expected,
                  block == &stepParams ? 1e-5 : isState ? 1e-4 : 1e-3,
                  c.name + " train_step " + tag + " " + info->name);
    }
  }
  if (HasFatalFailure())
    return;

  // Gradient accumulation: accumulate_gradients adds half the gradients to
  // given sums (and updates the running statistics as forward_train
  // does); apply_gradients is AdamW on given gradients, at step 3 from
  // given moments, its gradients kept away from 0 (where the update,
  // about sign(g), would not be comparable). Both against the interpreter.
  {
    auto accumulate =
        module->lookupSymbol<mlir::func::FuncOp>("accumulate_gradients");
    auto apply = module->lookupSymbol<mlir::func::FuncOp>("apply_gradients");
    ASSERT_TRUE(accumulate && apply);
    lruc::testing::AccumulationBlocks blocks(m.param_floats);
    auto &[sums, grads, moment1, moment2] = blocks;
    std::vector<Tensor> accumulateInputs = {scalar(0.5)};
    accumulateInputs.insert(accumulateInputs.end(), args.begin(), args.end());
    auto expectedAccumulate =
        lruc::interpret(accumulate,
                        blockArgs(accumulate,
                                  {{"lru.param", params.data()},
                                   {"lru.state", state.data()},
                                   {"lru.gradient", sums.data()}},
                                  accumulateInputs),
                        *store);
    ASSERT_TRUE(mlir::succeeded(expectedAccumulate));
    std::vector<float> accState = state;
    for (auto &o : outputs)
      std::fill(o.begin(), o.end(), NAN);
    ASSERT_EQ(m.accumulate_gradients(kBatch, params.data(), accState.data(),
                                     sums.data(), 0.5f, inputs.pointers.data(),
                                     key, outputPtrs.data(), message,
                                     sizeof message),
              0)
        << message;
    for (size_t r = 0; r < outputs.size(); ++r)
      expectClose(outputs[r].data(), (*expectedAccumulate)[r].re, 1e-4,
                  c.name + " accumulate_gradients result " + std::to_string(r));
    // Then the sums (params order), then the running statistics.
    size_t r = outputs.size();
    for (int p = 0; p < m.num_params; ++p, ++r)
      expectClose(sums.data() + m.params[p].offset, (*expectedAccumulate)[r].re,
                  1e-3,
                  c.name + " accumulated gradient of " + m.params[p].name);
    for (int s = 0; s < m.num_state; ++s, ++r)
      expectClose(accState.data() + m.state[s].offset,
                  (*expectedAccumulate)[r].re, 1e-4,
                  c.name + " accumulate_gradients " + m.state[s].name);

    auto expectedApply =
        lruc::interpret(apply,
                        blockArgs(apply,
                                  {{"lru.param", params.data()},
                                   {"lru.adam_m", moment1.data()},
                                   {"lru.adam_v", moment2.data()},
                                   {"lru.gradient", grads.data()}},
                                  {scalar(lr), scalar(3.0)}),
                        *store);
    ASSERT_TRUE(mlir::succeeded(expectedApply));
    std::vector<float> applied = params;
    ASSERT_EQ(m.apply_gradients(applied.data(), moment1.data(), moment2.data(),
                                grads.data(), lr, 3.0f, message,
                                sizeof message),
              0)
        << message;
    r = 0;
    for (auto [block, what] : {std::pair{&applied, "parameter"},
                               {&moment1, "adam_m"},
                               {&moment2, "adam_v"}})
      for (int p = 0; p < m.num_params; ++p, ++r)
        expectClose(
            block->data() + m.params[p].offset, (*expectedApply)[r].re, 1e-5,
            c.name + " apply_gradients " + what + " " + m.params[p].name);
  }
  if (HasFatalFailure())
    return;

  // The GPU schedule, simulated.
  std::vector<size_t> outputSizes;
  for (const auto &o : outputs)
    outputSizes.push_back(o.size());
  expectSimulatedScheduleMatchesCpu(lib.handle, m, inputs, key, params,
                                    state, outputSizes, kBatch, c.name);
  if (::testing::Test::HasFatalFailure())
    return;

  // Step mode, or why there is none.
  if (module->lookupSymbol("step")) {
    expectStepModeMatches(m, forward, evalArgs, *store, params, state, kBatch,
                          c.name);
    if (HasFatalFailure())
      return;
    // Again after the parameters change, then the running statistics: the
    // values the library keeps from one call to the next (those computed
    // from parameters alone, lru.step_constant) must follow them.
    std::vector<float> params2 = params, state2 = state;
    for (size_t k = 0; k < params2.size(); ++k)
      params2[k] += 0.05f * std::sin(float(k));
    for (float &v : state2)
      v = 1.5f * v + 0.1f; // a variance stays positive
    lruc::ParameterStore store2 = *store;
    for (int i = 0; i < m.num_params + m.num_state; ++i) {
      bool isState = i >= m.num_params;
      const lruc_param_info &info =
          isState ? m.state[i - m.num_params] : m.params[i];
      const float *block = isState ? state2.data() : params2.data();
      std::vector<double> &values = store2.at(info.name).re;
      for (size_t k = 0; k < info.size; ++k)
        values[k] = block[info.offset + k];
    }
    lruc::ParameterStore mixed = store2;
    for (int s = 0; s < m.num_state; ++s)
      mixed.at(m.state[s].name) = store->at(m.state[s].name);
    expectStepModeMatches(m, forward, evalArgs, mixed, params2, state, kBatch,
                          c.name + " (new parameters)");
    if (HasFatalFailure())
      return;
    expectStepModeMatches(m, forward, evalArgs, store2, params2, state2,
                          kBatch, c.name + " (new running statistics)");
    if (HasFatalFailure())
      return;
    expectStreamPartsMatchStreamsAlone(lib.handle, m, forward, params, state,
                                       c.name);
  } else {
    EXPECT_EQ(m.step, nullptr);
    ASSERT_NE(m.step_unavailable, nullptr);
    EXPECT_NE(std::string(m.step_unavailable).find("step mode needs a causal"),
              std::string::npos)
        << m.step_unavailable;
  }

  // Closing the library unmaps it: nothing it started (kernel threads,
  // scratch memory, thread-local destructors) keeps it loaded.
  ASSERT_TRUE(isMapped(path));
  dlclose(lib.handle);
  lib.handle = nullptr;
  EXPECT_FALSE(isMapped(path));
}

/// The lengths of @forward_train's sequence input `tag` in `args`
/// (`lengths` with the input's suffix: `tokens_a` is measured by
/// `lengths_a`), or null for an input that is not such a sequence.
const std::vector<int64_t> *lengthsOf(mlir::func::FuncOp train,
                                      const std::vector<Tensor> &args,
                                      const std::string &tag) {
  for (const char *stem : {"features", "targets", "tokens", "labels"}) {
    if (tag.rfind(stem, 0) != 0)
      continue;
    const std::string lengths = "lengths" + tag.substr(std::strlen(stem));
    for (unsigned k = 0; k < args.size(); ++k)
      if (lruc::testing::inputTag(train, k) == lengths)
        return &args[k].ints;
  }
  return nullptr;
}

/// Sets every sequence input of `args` (@forward_train's) past each
/// sequence's length: the features and per-step targets [B, L, C] to
/// `value`, the tokens and per-step labels [B, L] to `token`; returns how
/// many values it set.
int fillPadding(mlir::func::FuncOp train, std::vector<Tensor> &args,
                float value, int32_t token) {
  int changed = 0;
  for (unsigned i = 0; i < args.size(); ++i) {
    auto type =
        mlir::cast<mlir::RankedTensorType>(train.getArgument(i).getType());
    const bool integer = type.getElementType().isInteger(32);
    const std::vector<int64_t> *lengths =
        lengthsOf(train, args, lruc::testing::inputTag(train, i));
    if (!lengths || type.getRank() != (integer ? 2 : 3))
      continue;
    const int64_t steps = type.getDimSize(1),
                  width = integer ? 1 : type.getDimSize(2);
    for (size_t b = 0; b < lengths->size(); ++b)
      for (int64_t t = (*lengths)[b]; t < steps; ++t)
        for (int64_t k = 0; k < width; ++k, ++changed) {
          int64_t at = (int64_t(b) * steps + t) * width + k;
          if (integer)
            args[i].ints[at] = token;
          else
            args[i].re[at] = value;
        }
  }
  return changed;
}

/// The models whose padding tests run: features with BatchNorm, dropout
/// and two blocks; per-step features and targets; tokens and per-step
/// labels; two towers of tokens, each with its lengths.
std::vector<ModelCase> paddingCases() {
  // Four random models too, every sequence at least 2 steps long.
  std::vector<ModelCase> random =
      lruc::testing::randomModelCases(/*count=*/4, 1, /*minLength=*/2);
  for (ModelCase &c : random)
    c.name += "_padding";
  std::vector<ModelCase> cases = {{"scifar_padding",
           "models/scifar.lru",
           {{"L", 6}, {"H", 4}, {"N", 3}, {"DEPTH", 2}, {"DROPOUT", 0.25}}},
          {"huber_tags_padding", "tests/models/Inputs/huber_tags.lru", {}},
          {"token_tagging_padding",
           "examples/token_tagging.lru",
           {{"L", 6}, {"H", 4}, {"N", 3}, {"DEPTH", 1}, {"SMOOTHING", 0.1}}},
          {"retrieval_padding",
           "examples/retrieval_small.lru",
           {{"L", 6}, {"H", 4}, {"N", 3}, {"DEPTH", 1}}}};
  cases.insert(cases.end(), random.begin(), random.end());
  return cases;
}

/// What a caller leaves past each sequence's length is never read: the
/// features (and per-step targets) there as 0, NaN or an infinity, the
/// tokens (and per-step labels) as 0, -1 or past the vocabulary, give the
/// same loss, predictions, new running statistics, gradients and updated
/// parameters, bit for bit. A product with a length mask would keep NaN
/// there (NaN * 0 is NaN), and BatchNorm's statistics and the weight
/// gradients would carry it to every example; the embedding's gather and
/// the cross entropy would reject the tokens and labels.
TEST(CpuLibraryPadding, PaddedInputsAreNeverRead) {
  for (const ModelCase &c : paddingCases()) {
    SCOPED_TRACE(c.source); // a random model's text, to reproduce it
    BuiltModel built;
    buildModel(c, built);
    if (HasFatalFailure())
      return;
    auto &[context, errors, path, module, lib] = built;
    const lruc_model &m = *lib.model;
    auto train = module->lookupSymbol<mlir::func::FuncOp>("forward_train");
    constexpr int64_t kBatch = 3;
    std::vector<Tensor> args = lruc::testing::makeBatch(train, kBatch, 1);
    const int64_t key[2] = {args.back().ints[0], args.back().ints[1]};
    for (unsigned i = 0; i < args.size(); ++i) {
      if (lruc::testing::inputTag(train, i).rfind("lengths", 0) != 0)
        continue;
      const std::vector<int64_t> &lengths = args[i].ints;
      ASSERT_EQ(lengths.size(), size_t(kBatch)) << c.name;
      ASSERT_LT(*std::min_element(lengths.begin(), lengths.end()),
                *std::max_element(lengths.begin(), lengths.end()))
          << c.name << ": the batch has no padding";
    }
    std::vector<float> params(m.param_floats), state(m.state_floats);
    char message[512] = "";
    ASSERT_EQ(m.init(7, params.data(), state.data(), message, sizeof message),
              0)
        << message;

    // Everything the library computes from one batch, in one vector.
    auto run = [&](float padding, int32_t token) {
      std::vector<Tensor> padded = args;
      EXPECT_GT(fillPadding(train, padded, padding, token), 0) << c.name;
      Buffers inputs = inputBuffers(train, padded);
      std::vector<float> all, newState(m.state_floats), grads(m.param_floats);
      std::vector<std::vector<float>> outputs;
      for (size_t size : lruc::testing::outputSizes(m, kBatch))
        outputs.emplace_back(size);
      std::vector<float *> outputPtrs;
      for (auto &o : outputs)
        outputPtrs.push_back(o.data());
      auto keep = [&](const std::vector<float> &v) {
        all.insert(all.end(), v.begin(), v.end());
      };
      EXPECT_EQ(m.forward(kBatch, params.data(), state.data(),
                          inputs.pointers.data(), outputPtrs.data(), message,
                          sizeof message),
                0)
          << message;
      for (auto &o : outputs)
        keep(o);
      EXPECT_EQ(m.forward_train(kBatch, params.data(), state.data(),
                                inputs.pointers.data(), key, outputPtrs.data(),
                                newState.data(), message, sizeof message),
                0)
          << message;
      for (auto &o : outputs)
        keep(o);
      keep(newState);
      float loss = 0;
      EXPECT_EQ(m.backward(kBatch, params.data(), state.data(),
                           inputs.pointers.data(), key, &loss, grads.data(),
                           message, sizeof message),
                0)
          << message;
      keep({loss});
      keep(grads);
      std::vector<float> p = params, s = state, m1(m.param_floats, 0.0f),
                         v1(m.param_floats, 0.0f);
      EXPECT_EQ(m.train_step(kBatch, p.data(), m1.data(), v1.data(), s.data(),
                             1e-3f, 1.0f, inputs.pointers.data(), key,
                             outputPtrs.data(), message, sizeof message),
                0)
          << message;
      keep(p);
      keep(m1);
      keep(v1);
      keep(s);
      return all;
    };
    const std::vector<float> zeros = run(0.0f, 0);
    for (float v : zeros)
      ASSERT_TRUE(std::isfinite(v)) << c.name;
    for (auto [padding, token] :
         {std::pair{NAN, -1}, std::pair{INFINITY, INT32_MAX},
          std::pair{-INFINITY, INT32_MIN}, std::pair{1e30f, 1 << 30}}) {
      const std::vector<float> other = run(padding, token);
      ASSERT_EQ(other.size(), zeros.size());
      for (size_t k = 0; k < zeros.size(); ++k)
        ASSERT_EQ(std::memcmp(&other[k], &zeros[k], sizeof(float)), 0)
            << c.name << ", padding " << padding << " / " << token << ": value "
            << k << " is " << other[k] << " against " << zeros[k];
    }

    // A bad token at a real step is still an error, naming the input and
    // the token's example and step.
    for (unsigned i = 0; i < args.size(); ++i) {
      const std::string tag = lruc::testing::inputTag(train, i);
      if (tag.rfind("tokens", 0) != 0)
        continue;
      const std::vector<int64_t> *found = lengthsOf(train, args, tag);
      ASSERT_NE(found, nullptr) << c.name << ": " << tag << " has no lengths";
      const std::vector<int64_t> &lengths = *found;
      // The last real step of the longest example.
      const size_t b = size_t(std::max_element(lengths.begin(), lengths.end()) -
                              lengths.begin());
      const int64_t steps = int64_t(args[i].ints.size()) / kBatch,
                    t = lengths[b] - 1;
      std::vector<Tensor> bad = args;
      bad[i].ints[b * size_t(steps) + size_t(t)] = -1;
      Buffers inputs = inputBuffers(train, bad);
      std::vector<std::vector<float>> outputs;
      std::vector<float *> outputPtrs;
      for (size_t size : lruc::testing::outputSizes(m, kBatch))
        outputPtrs.push_back(outputs.emplace_back(size).data());
      EXPECT_NE(m.forward(kBatch, params.data(), state.data(),
                          inputs.pointers.data(), outputPtrs.data(), message,
                          sizeof message),
                0)
          << c.name;
      const std::string where = tag + "[" + std::to_string(b) + ", " +
                                std::to_string(t) + "] = -1 is outside [0, ";
      EXPECT_NE(std::string(message).find(where), std::string::npos)
          << message << " (expected " << where << ")";
      // A train step that fails leaves the caller's blocks as they were:
      // the update, which writes over them, comes after every check.
      std::vector<float> p = params, s = state, m1(m.param_floats, 0.5f),
                         v1(m.param_floats, 0.25f);
      const std::vector<float> moment1 = m1, moment2 = v1;
      EXPECT_NE(m.train_step(kBatch, p.data(), m1.data(), v1.data(), s.data(),
                             1e-3f, 1.0f, inputs.pointers.data(), key,
                             outputPtrs.data(), message, sizeof message),
                0)
          << c.name;
      EXPECT_NE(std::string(message).find(where), std::string::npos)
          << message << " (expected " << where << ")";
      EXPECT_TRUE(p == params && s == state && m1 == moment1 && v1 == moment2)
          << c.name << ": a failed train_step changed the blocks";
    }
  }
}

/// BatchNorm's batch statistics of inputs far from 0 against their spread:
/// sCIFAR's features offset by 100, so that its BatchNorm's input sits
/// 60-250 standard deviations from 0. forward_train from a running mean
/// and variance of 0 (so that the new running variance is the batch's,
/// scaled by the momentum) must match the fp64 interpreter: its outputs as
/// they do near 0, the new running statistics within 1e-4 of each element.
/// A variance taken in one pass as E[x^2] - E[x]^2 (or as sums of
/// deviations from a shift far from the batch's mean, such as a running
/// mean that has not yet followed the batches) loses ((mean - shift) /
/// std)^2 times fp32's rounding: 3e-4 to 2.4e-3 of the variance here.
TEST(CpuLibraryBatchNorm, StatisticsOfInputsFarFromZero) {
  const ModelCase c{"scifar_offset",
                    "models/scifar.lru",
                    {{"L", 6}, {"H", 4}, {"N", 3}, {"DEPTH", 1}}};
  BuiltModel built;
  buildModel(c, built);
  if (HasFatalFailure())
    return;
  auto &[context, errors, path, module, lib] = built;
  const lruc_model &m = *lib.model;
  auto train = module->lookupSymbol<mlir::func::FuncOp>("forward_train");
  constexpr int64_t kBatch = 3;
  std::vector<Tensor> args = lruc::testing::makeBatch(train, kBatch, 1);
  bool offset = false;
  for (unsigned i = 0; i < args.size(); ++i)
    if (lruc::testing::inputTag(train, i) == "features") {
      for (double &v : args[i].re)
        v += 100.0;
      offset = true;
    }
  ASSERT_TRUE(offset) << "sCIFAR has no features input";
  const int64_t key[2] = {args.back().ints[0], args.back().ints[1]};
  Buffers inputs = inputBuffers(train, args);

  auto store = lruc::initParameters(train, /*seed=*/7);
  ASSERT_TRUE(mlir::succeeded(store));
  std::vector<float> params(m.param_floats), state(m.state_floats);
  char message[512] = "";
  ASSERT_EQ(m.init(7, params.data(), state.data(), message, sizeof message), 0)
      << message;
  std::fill(state.begin(), state.end(), 0.0f);
  for (int s = 0; s < m.num_state; ++s)
    std::fill(store->at(m.state[s].name).re.begin(),
              store->at(m.state[s].name).re.end(), 0.0);
  auto expected = lruc::interpret(train, args, *store);
  ASSERT_TRUE(mlir::succeeded(expected));
  // forward_train's results: the model's outputs, then the new statistics.
  auto updates = train->getAttrOfType<mlir::ArrayAttr>("lru.state_updates");
  ASSERT_FALSE(updates.empty());
  const size_t results = expected->size() - updates.size();
  std::vector<std::vector<float>> outputs;
  std::vector<float *> outputPtrs;
  for (size_t r = 0; r < results; ++r)
    outputs.emplace_back((*expected)[r].re.size());
  for (auto &o : outputs)
    outputPtrs.push_back(o.data());
  std::vector<float> newState(m.state_floats);
  ASSERT_EQ(m.forward_train(kBatch, params.data(), state.data(),
                            inputs.pointers.data(), key, outputPtrs.data(),
                            newState.data(), message, sizeof message),
            0)
      << message;
  for (size_t r = 0; r < results; ++r)
    expectClose(outputs[r].data(), (*expected)[r].re, 1e-4,
                "forward_train result " + std::to_string(r));
  for (auto [i, name] : llvm::enumerate(updates))
    for (int s = 0; s < m.num_state; ++s) {
      if (m.state[s].name != mlir::cast<mlir::StringAttr>(name).str())
        continue;
      const std::vector<double> &want = (*expected)[results + i].re;
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_NEAR(newState[m.state[s].offset + k], want[k],
                    1e-4 * std::abs(want[k]))
            << "new " << m.state[s].name << "[" << k << "]";
    }
}

/// A bad token in one stream of a batch that runs in parts (9 streams on 2
/// threads: parts of 4 and 5, lruc::cpu::forStreamParts) fails the call
/// before any stream moves on, naming the token's row in the whole batch.
TEST(CpuLibraryStepStreams, BadTokenMovesNoStream) {
  const ModelCase c{"listops_streams",
                    "models/listops.lru",
                    {{"L", 6}, {"H", 8}, {"N", 4}, {"DEPTH", 2}}};
  BuiltModel built;
  buildModel(c, built);
  if (HasFatalFailure())
    return;
  const lruc_model &m = *built.lib.model;
  ASSERT_NE(m.step, nullptr);
  LibraryThreads threads(built.lib.handle);
  ASSERT_TRUE(threads.found());
  std::vector<float> params(m.param_floats), state(m.state_floats);
  char message[512] = "";
  ASSERT_EQ(m.init(5, params.data(), state.data(), message, sizeof message), 0)
      << message;
  constexpr int64_t kStreams = 9, kVocab = 18, kClasses = 10;
  std::vector<int32_t> now(kStreams);
  for (size_t i = 0; i < now.size(); ++i)
    now[i] = int32_t((i * 7 + 3) % kVocab);
  threads.set(2);
  std::vector<float> carry(kStreams * m.carry_floats), out(kStreams * kClasses);
  ASSERT_EQ(m.step_reset(kStreams, carry.data(), message, sizeof message), 0);
  const void *inputs[] = {now.data()};
  float *outputs[] = {out.data()};
  ASSERT_EQ(m.step(kStreams, params.data(), state.data(), carry.data(), inputs,
                   outputs, message, sizeof message),
            0)
      << message;
  const std::vector<float> before = carry;
  now[6] = kVocab; // in the second part
  EXPECT_NE(m.step(kStreams, params.data(), state.data(), carry.data(), inputs,
                   outputs, message, sizeof message),
            0);
  EXPECT_NE(std::string(message).find("tokens[6, 0] = 18 is outside [0, 18)"),
            std::string::npos)
      << message;
  EXPECT_EQ(
      std::memcmp(carry.data(), before.data(), carry.size() * sizeof(float)), 0)
      << "a failed step moved a stream on";
}

/// Through lruc::cuda::Device (the driver, NVRTC and cuBLAS), the library's
/// schedule against its CPU entry points on one batch: forward, backward
/// and one train step. On a GPU: `lruc-cpu-library-tests
/// --gtest_filter='*GpuDevice*'`. Without one (CI), ctest runs it on the
/// simulated driver (cuda-device-simulated); in the cpu-library run it is
/// skipped, with the reason.
class GpuDevice : public ::testing::TestWithParam<ModelCase> {
protected:
  void SetUp() override {
    std::string error;
    device = lruc::cuda::Device::open(0, error);
    if (!device)
      GTEST_SKIP() << "no GPU here: " << error;
  }
  std::unique_ptr<lruc::cuda::Device> device;
};

/// Model `c` built into `built`, its GPU half in `gpuModel` and its kernels
/// loaded on `device`. On the simulated driver (tests/cuda:
/// cuda-device-simulated), the module that loads is NVRTC's PTX, and what
/// runs is the same source compiled for the CPU.
void loadModelKernels(const ModelCase &c, lruc::cuda::Device &device,
                      BuiltModel &built, const lruc_gpu_model *&gpuModel,
                      const lruc::CudaOptions &cudaOptions = {}) {
  buildModel(c, built, cudaOptions);
  if (::testing::Test::HasFatalFailure())
    return;
  const char *source = nullptr;
  gpuHalfOf(built.lib.handle, gpuModel, source);
  if (::testing::Test::HasFatalFailure())
    return;
  std::string error;
  llvm::SmallString<128> simDir;
  if (device.name() == "lruc simulated GPU") {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("lruc-sim", simDir));
    llvm::SmallString<128> kernels(simDir);
    llvm::sys::path::append(kernels, c.name + ".kernels.so");
    ASSERT_TRUE(lruc::testing::compileSimulatedKernels(
        source, kernels.str().str(), error))
        << error;
    setenv("LRUC_SIMULATED_KERNELS", kernels.c_str(), 1);
  }
  bool loaded = device.loadKernels(source, gpuModel->kernels,
                                   gpuModel->num_kernels, error);
  if (!simDir.empty())
    llvm::sys::fs::remove_directories(simDir);
  ASSERT_TRUE(loaded) << error;
}

/// The library of model `c` built with `cudaOptions`, its GPU schedule
/// through `device` against its CPU entry points (expectGpuScheduleMatchesCpu,
/// its whole-sequence tolerances times `looser`), with `padding` past each
/// length when given (and token -1).
void expectDeviceMatchesCpu(lruc::cuda::Device &device, const ModelCase &c,
                            const lruc::CudaOptions &cudaOptions, double looser,
                            std::optional<float> padding = std::nullopt) {
  BuiltModel built;
  const lruc_gpu_model *gpuModel = nullptr;
  loadModelKernels(c, device, built, gpuModel, cudaOptions);
  if (::testing::Test::HasFatalFailure())
    return;
  auto &[context, errors, path, module, lib] = built;
  const lruc_model &m = *lib.model;
  const lruc_gpu_model &g = *gpuModel;

  std::vector<float> params(m.param_floats), state(m.state_floats);
  char message[512] = "";
  ASSERT_EQ(m.init(7, params.data(), state.data(), message, sizeof message), 0)
      << message;
  constexpr int64_t kBatch = 3;
  auto train = module->lookupSymbol<mlir::func::FuncOp>("forward_train");
  std::vector<Tensor> args = lruc::testing::makeBatch(train, kBatch, 1);
  if (padding) {
    ASSERT_GT(fillPadding(train, args, *padding, -1), 0) << c.name;
  }
  const int64_t key[2] = {args.back().ints[0], args.back().ints[1]};
  Buffers inputs = inputBuffers(train, args);
  lruc::cuda::Device &gpu = device;
  std::string error;
  GpuArrays memory = lruc::testing::deviceArrays(gpu);
  expectGpuScheduleMatchesCpu(g, *gpu.ops(), memory, m, inputs, key, params,
                              state, lruc::testing::outputSizes(m, kBatch),
                              kBatch, c.name, looser);
  EXPECT_TRUE(gpu.synchronize(error)) << error;
}

TEST_P(GpuDevice, MatchesTheCpuLibrary) {
  expectDeviceMatchesCpu(*device, GetParam(), {}, 1.0);
}

/// NaN (and token -1) past each length, which the CPU library never reads
/// (CpuLibraryPadding): neither does the GPU schedule.
class GpuDevicePadding : public GpuDevice {};

TEST_P(GpuDevicePadding, MatchesTheCpuLibrary) {
  expectDeviceMatchesCpu(*device, GetParam(), {}, 1.0, NAN);
}

/// `lruc --gpu-storage=bf16`: the sequence-sized activations stored in
/// bfloat16 (GpuStorage.h) on the device, fp32 on the CPU: the
/// whole-sequence results within kBf16Looser times the fp32 tolerances;
/// step mode, fp32 on both sides, as tightly as ever.
class GpuDeviceBf16 : public GpuDevice {};

TEST_P(GpuDeviceBf16, MatchesTheCpuLibrary) {
  lruc::CudaOptions options;
  options.storage = lruc::CudaStorage::Bf16;
  expectDeviceMatchesCpu(*device, GetParam(), options,
                         lruc::testing::kBf16Looser);
}

/// The small models, and models whose width is a multiple of 32: the CUDA
/// emitter runs their elementwise groups by columns (CudaEmitter's
/// writeColumnLoops), the small models' (H = 4) by flat index. A BatchNorm,
/// dropout (tiles of 4 rows) and GLU block at H = 32; an embedding, GLUs
/// and per-step scans at H = 64; and at H = 1024 over one step, a grid of
/// fewer threads than columns (the dropout tiles' kernels ask for a thread
/// a 4 elements: 3 rows x 1024 columns take 3 blocks of 256).
std::vector<ModelCase> gpuModelCases() {
  std::vector<ModelCase> cases = lruc::testing::smallModelCases();
  cases.push_back(
      {"scifar_wide",
       "models/scifar.lru",
       {{"L", 6}, {"H", 32}, {"N", 3}, {"DEPTH", 2}, {"DROPOUT", 0.25}}});
  cases.push_back({"text_wide",
                   "models/text.lru",
                   {{"L", 6}, {"H", 64}, {"N", 5}, {"DEPTH", 1}}});
  cases.push_back(
      {"scifar_one_wide_step",
       "models/scifar.lru",
       {{"L", 1}, {"H", 1024}, {"N", 3}, {"DEPTH", 1}, {"DROPOUT", 0.25}}});
  // Random models of widths 32 (seed 13: the generalised LRU, clipping;
  // seed 24: features, label smoothing) and 64 (seed 29: two towers), whose
  // kernels run by columns.
  for (uint64_t seed : {13, 24, 29})
    for (ModelCase &c : lruc::testing::randomModelCases(/*count=*/1, seed))
      cases.push_back(std::move(c));
  return cases;
}

/// Models that cover what bfloat16 storage touches: an embedding and
/// GLUs (text), a feature encoder's fp32 GEMM, BatchNorm and dropout
/// (scifar), bidirectional scans (pathfinder), two towers (retrieval), a
/// half GLU's weight read through its bfloat16 shadow (pathx), scans
/// chained over several blocks of a sequence (text_long), the kernels by
/// columns with bfloat16 arrays (scifar_wide; the other wide models' loops
/// are the same code, checked in fp32 by GpuDevice), per-step logits in
/// bfloat16 read by the cross entropy (token_tagging, weighted_tags), and
/// per-step predictions against targets of which some are NaN (tagging).
std::vector<ModelCase> bf16ModelCases() {
  std::vector<ModelCase> cases;
  for (const ModelCase &c : gpuModelCases())
    for (const char *name :
         {"text", "scifar_two_blocks_dropout", "pathfinder_bidirectional",
          "retrieval_two_towers", "pathx_bidirectional", "text_long",
          "scifar_wide", "token_tagging", "weighted_tags", "tagging"})
      if (c.name == name)
        cases.push_back(c);
  return cases;
}

/// lruc_gpu_ops.gemm's batches of products through the device: a shared
/// input (stride 0), then outputs in reverse order (a negative stride, which
/// cuBLAS does not document: the device runs those product by product).
TEST(GpuDeviceProducts, BatchesOfAnyStride) {
  std::string error;
  std::unique_ptr<lruc::cuda::Device> device =
      lruc::cuda::Device::open(0, error);
  if (!device)
    GTEST_SKIP() << "no GPU here: " << error;
  constexpr int64_t m = 2, n = 4, k = 3;
  std::vector<float> a(m * k), w(2 * n * k);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i) * 0.5f - 1.0f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(i % 7) - 2.5f;
  // C_p = A W_p^T, row-major.
  auto product = [&](int p) {
    std::vector<float> c(m * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t q = 0; q < k; ++q)
          c[i * n + j] += a[i * k + q] * w[(p * n + j) * k + q];
    return c;
  };
  GpuArrays memory = lruc::testing::deviceArrays(*device);
  const lruc_gpu_ops &ops = *device->ops();
  const float *dA = memory.upload(a), *dW = memory.upload(w);
  auto *dC = static_cast<float *>(memory.upload(nullptr, 2 * m * n * 4));
  for (int64_t strideC : {m * n, -m * n}) {
    float *first = strideC > 0 ? dC : dC + m * n;
    ASSERT_EQ(ops.gemm(ops.context, 0, 1, m, n, k, LRUC_GPU_F32, dA, k, 0, dW,
                       k, n * k, LRUC_GPU_F32, first, n, strideC, 2),
              0);
    std::vector<float> c = memory.download(dC, 2 * m * n);
    for (int p = 0; p < 2; ++p) {
      const std::vector<float> expected = product(p);
      const size_t at = size_t(strideC > 0 ? p : 1 - p) * m * n;
      for (int64_t e = 0; e < m * n; ++e)
        EXPECT_NEAR(c[at + e], expected[e], 1e-5)
            << "product " << p << ", C stride " << strideC << ", element " << e;
    }
  }
}

/// Products of a few rows (x wᵀ, 2 to 64 rows: step mode's) through the
/// device prelude's kernel, once a model's kernels are loaded, against
/// double sums and against cuBLAS's: rows across a warp and beyond, columns
/// short of and past a block's 8, k split unevenly across a block's warps
/// (1 step, chunks of 64 and a remainder), a batch of two at a negative
/// stride, leading dimensions wider than the rows.
TEST(GpuDeviceProducts, FewRowsKernelMatchesSums) {
  std::string error;
  std::unique_ptr<lruc::cuda::Device> device =
      lruc::cuda::Device::open(0, error);
  if (!device)
    GTEST_SKIP() << "no GPU here: " << error;
  ASSERT_FALSE(device->fewRowKernel()); // no module yet: cuBLAS
  BuiltModel built;
  const lruc_gpu_model *gpuModel = nullptr;
  loadModelKernels(lruc::testing::smallModelCases().front(), *device, built,
                   gpuModel);
  if (HasFatalFailure())
    return;
  ASSERT_TRUE(device->fewRowKernel());
  const lruc_gpu_ops &ops = *device->ops();
  GpuArrays memory = lruc::testing::deviceArrays(*device);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  struct Shape {
    int64_t m, n, k, count;
  };
  for (Shape s : {Shape{2, 8, 64, 1}, Shape{3, 5, 1, 1}, Shape{31, 9, 600, 1},
                  Shape{33, 17, 130, 2}, Shape{64, 40, 515, 2},
                  Shape{50, 24, 8, 1}}) {
    // Leading dimensions past the used columns: x's k + 3, w's k + 1, y's
    // n + 2; the batch's second product first in memory (negative strides).
    const int64_t ldx = s.k + 3, ldw = s.k + 1, ldy = s.n + 2;
    const int64_t xFloats = s.m * ldx, wFloats = s.n * ldw, yFloats = s.m * ldy;
    std::vector<float> x(size_t(s.count * xFloats)), w(size_t(s.count * wFloats));
    for (float &v : x)
      v = uniform(rng);
    for (float &v : w)
      v = uniform(rng);
    const float *dX = memory.upload(x), *dW = memory.upload(w);
    const int64_t last = s.count - 1;
    std::vector<float> results[2];
    for (bool kernel : {true, false}) {
      device->useFewRowKernel(kernel);
      auto *dY = static_cast<float *>(
          memory.upload(nullptr, size_t(s.count * yFloats) * sizeof(float)));
      ASSERT_EQ(ops.gemm(ops.context, 0, 1, s.m, s.n, s.k, LRUC_GPU_F32,
                         dX + last * xFloats, ldx, -xFloats,
                         dW + last * wFloats, ldw, -wFloats, LRUC_GPU_F32,
                         dY + last * yFloats, ldy, -yFloats, s.count),
                0);
      results[kernel] = memory.download(dY, size_t(s.count * yFloats));
    }
    device->useFewRowKernel(true);
    for (int64_t p = 0; p < s.count; ++p)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double want = 0, scale = 0;
          for (int64_t q = 0; q < s.k; ++q) {
            const double term = double(x[p * xFloats + i * ldx + q]) *
                                w[p * wFloats + j * ldw + q];
            want += term;
            scale += std::abs(term);
          }
          const size_t at = size_t(p * yFloats + i * ldy + j);
          for (bool kernel : {true, false})
            EXPECT_NEAR(results[kernel][at], want, 1e-5 * scale + 1e-7)
                << (kernel ? "kernel" : "cuBLAS") << ", " << s.m << " x "
                << s.n << " x " << s.k << ", product " << p << ", y[" << i
                << "][" << j << "]";
        }
  }
}

/// A batch whose products write what another reads or writes would race
/// on a device; the simulator, which runs them in order, refuses it.
TEST(GpuSimulatorProducts, RefuseBatchesThatOverlap) {
  lruc::testing::GpuSimulator sim;
  const lruc_gpu_ops &ops = *sim.ops();
  std::vector<float> a(8, 1.0f), w(16, 1.0f), c(16, 0.0f);
  // Two [2, 2] products of [2, 2] . [2, 2]^T.
  auto gemm = [&](float *out, int64_t strideA, int64_t strideC) {
    return ops.gemm(ops.context, 0, 1, 2, 2, 2, LRUC_GPU_F32, a.data(), 2,
                    strideA, w.data(), 2, 4, LRUC_GPU_F32, out, 2, strideC, 2);
  };
  EXPECT_EQ(gemm(c.data(), 0, 4), 0); // apart: C_1 after C_0
  EXPECT_EQ(c[7], 2.0f);
  EXPECT_NE(gemm(c.data(), 0, 2), 0);      // C_1 overlaps C_0
  EXPECT_NE(gemm(a.data() + 4, 4, -4), 0); // C_1 is A_0
}

/// SimulatedKernels' barriers on two hand-written kernels (the symbols the
/// CUDA emitter's LRUC_GPU_SIMULATE part defines): threads that exchange
/// values through their block's barrier and their warp's, in both block
/// orders; and a barrier half the threads never reach, which a device would
/// hang on: an error that names the kernel, after which the simulator runs
/// kernels as before.
TEST(SimulatedKernels, BarriersExchangeValuesAndAnUnreachedOneIsAnError) {
  const char *source = R"(#include <cstdint>
struct Index { unsigned x; };
struct Dims { Index thread, block, blockDim, gridDim; };
#define EXPORT extern "C" __attribute__((visibility("default")))
extern "C" { // definitions, as the prelude's
__attribute__((visibility("default"))) Dims lruc_sim_now;
__attribute__((visibility("default"))) void (*lruc_sim_wait)(int warp);
}
EXPORT const int8_t lruc_sim_synchronises[] = {1, 1};
EXPORT const char *const lruc_sim_kernel_names[] = {"exchange", "half_barrier"};
EXPORT const int32_t lruc_sim_kernel_count = 2;
EXPORT void lruc_sim_run(int32_t kernel, void **args) {
  const unsigned t = lruc_sim_now.thread.x, n = lruc_sim_now.blockDim.x;
  if (kernel == 1) {
    if (t < 16)
      lruc_sim_wait(-1);
    return;
  }
  static unsigned shared[1024];
  unsigned *out = *static_cast<unsigned **>(args[0]);
  shared[t] = t;
  lruc_sim_wait(-1);
  const unsigned mirrored = shared[n - 1 - t];
  lruc_sim_wait(int(t / 32));
  shared[t] = mirrored + 1000 * lruc_sim_now.block.x;
  lruc_sim_wait(int(t / 32));
  out[lruc_sim_now.block.x * n + t] = shared[t / 32 * 32 + (t + 1) % 32];
}
)";
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("lruc-sim", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "barriers.so");
  std::string error;
  ASSERT_TRUE(lruc::testing::compileSimulatedKernels(source, path.str().str(),
                                                     error))
      << error;
  lruc::testing::SimulatedKernels kernels;
  bool opened = kernels.open(path.str().str(), error);
  llvm::sys::fs::remove_directories(dir);
  ASSERT_TRUE(opened) << error;

  constexpr int32_t kBlocks = 2, kThreads = 96;
  auto exchange = [&] {
    std::vector<unsigned> out(kBlocks * kThreads, ~0u);
    unsigned *data = out.data();
    void *args[] = {&data};
    EXPECT_TRUE(kernels.launch(kernels.find("exchange"), kBlocks, kThreads,
                               args, error))
        << error;
    for (unsigned b = 0; b < kBlocks; ++b)
      for (unsigned t = 0; t < kThreads; ++t) {
        const unsigned neighbour = t / 32 * 32 + (t + 1) % 32;
        ASSERT_EQ(out[b * kThreads + t], kThreads - 1 - neighbour + 1000 * b)
            << "block " << b << ", thread " << t;
      }
  };
  exchange();
  setenv("LRUC_SIMULATED_BLOCK_ORDER", "reverse", 1);
  exchange();
  unsetenv("LRUC_SIMULATED_BLOCK_ORDER");

  EXPECT_FALSE(kernels.launch(kernels.find("half_barrier"), 1, 64, nullptr,
                              error));
  EXPECT_EQ(error, "block 0 of kernel half_barrier cannot go on: 48 of 64 "
                   "threads finished, 16 wait at __syncthreads, the rest at a "
                   "warp shuffle");
  exchange(); // the threads left at the barrier are gone
  EXPECT_EQ(kernels.cooperativeBlocks(), 3 * kBlocks + 1);
}

INSTANTIATE_TEST_SUITE_P(Models, GpuDevice,
                         ::testing::ValuesIn(gpuModelCases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Models, GpuDevicePadding,
                         ::testing::ValuesIn(paddingCases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Models, GpuDeviceBf16,
                         ::testing::ValuesIn(bf16ModelCases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Models, CpuLibrary, ::testing::ValuesIn(lruc::testing::smallModelCases()),
                         [](const auto &info) { return info.param.name; });

// Combinations of the language's constructs that no file of the tree has.
INSTANTIATE_TEST_SUITE_P(
    RandomModels, CpuLibrary,
    ::testing::ValuesIn(lruc::testing::searchedRandomModelCases(/*count=*/8)),
    [](const auto &info) { return info.param.name; });

} // namespace
