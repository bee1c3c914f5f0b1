//===- ModelLibrary.cpp - Load a compiled model library -------------------===//

#include "lruc/host/ModelLibrary.h"

#include "lruc/core/CpuFeatures.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <system_error>
#include <utility>

namespace lruc::host {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "?";
}

size_t dtypeSize(DType dtype) { return dtype == DType::I64 ? 8 : 4; }

const TensorInfo *Manifest::findInput(std::string_view name) const {
  for (const TensorInfo &input : inputs)
    if (input.name == name)
      return &input;
  return nullptr;
}

uint64_t Manifest::trainingStateBytes(bool gradientSums) const {
  return (paramFloats * (gradientSums ? 4 : 3) + stateFloats) * sizeof(float);
}

std::optional<uint64_t> Manifest::workspaceBytes(std::string_view function,
                                                 int64_t batch) const {
  auto it = workspace.find(function);
  if (it == workspace.end() || batch < 0)
    return std::nullopt;
  return it->second.perExample * uint64_t(batch) + it->second.fixed;
}

const ParamInfo *Manifest::findParam(std::string_view name) const {
  for (const ParamInfo &param : params)
    if (param.name == name)
      return &param;
  return nullptr;
}

namespace {

// A library is foreign code: its structs are read defensively, so a broken
// one is an error message rather than a crash of the host.
constexpr int32_t kMaxRank = 8;
constexpr int32_t kMaxEntries = 1 << 20;

std::vector<int64_t> shapeOf(int32_t rank, const int64_t *dims,
                             const std::string &what) {
  if (rank < 0 || rank > kMaxRank || (rank > 0 && !dims))
    throw HostError(fmt::format("{} has an invalid rank {}", what, rank));
  return std::vector<int64_t>(dims, dims + rank);
}

std::string nameOf(const char *name, const std::string &what) {
  if (!name || !*name)
    throw HostError(fmt::format("{} has no name", what));
  return name;
}

std::vector<ParamInfo> paramsOf(const lruc_param_info *infos, int32_t count,
                                uint64_t blockFloats, std::string_view block,
                                const std::string &source) {
  if (count < 0 || count > kMaxEntries || (count > 0 && !infos))
    throw HostError(fmt::format("{}: invalid {} table ({} entries)", source,
                                block, count));
  std::vector<ParamInfo> result;
  for (int32_t i = 0; i < count; ++i) {
    const lruc_param_info &info = infos[i];
    ParamInfo param;
    std::string what = fmt::format("{}: {} {}", source, block, i);
    param.name = nameOf(info.name, what);
    what = fmt::format("{}: {} {}", source, block, param.name);
    param.shape = shapeOf(info.rank, info.shape, what);
    if (info.group < LRUC_GROUP_DECAY || info.group > LRUC_GROUP_STATE)
      throw HostError(fmt::format("{} has an unknown group {}", what, info.group));
    param.group = ParamGroup(info.group);
    param.offset = info.offset;
    param.size = info.size;
    uint64_t elements = 1;
    for (int64_t d : param.shape) {
      if (d < 0)
        throw HostError(fmt::format("{} has a negative dimension", what));
      elements *= uint64_t(d);
    }
    if (elements != param.size || param.offset > blockFloats ||
        param.size > blockFloats - param.offset)
      throw HostError(fmt::format(
          "{}: {} floats at offset {} do not fit its shape or the {} floats "
          "of the block",
          what, param.size, param.offset, blockFloats));
    param.init = info.init ? info.init : "";
    result.push_back(std::move(param));
  }
  return result;
}

std::vector<TensorInfo> tensorsOf(const lruc_tensor_info *infos, int32_t count,
                                  std::string_view kind,
                                  const std::string &source) {
  if (count < 0 || count > kMaxEntries || (count > 0 && !infos))
    throw HostError(fmt::format("{}: invalid {} table ({} entries)", source,
                                kind, count));
  std::vector<TensorInfo> result;
  for (int32_t i = 0; i < count; ++i) {
    const lruc_tensor_info &info = infos[i];
    TensorInfo tensor;
    tensor.name = nameOf(info.name, fmt::format("{}: {} {}", source, kind, i));
    std::string what = fmt::format("{}: {} {}", source, kind, tensor.name);
    tensor.shape = shapeOf(info.rank, info.shape, what);
    if (info.dtype < LRUC_F32 || info.dtype > LRUC_I64)
      throw HostError(fmt::format("{} has an unknown dtype {}", what, info.dtype));
    tensor.dtype = DType(info.dtype);
    result.push_back(std::move(tensor));
  }
  return result;
}

template <typename T>
T get(const json &object, const char *key, T fallback) {
  auto it = object.find(key);
  return it == object.end() ? fallback : it->template get<T>();
}

/// The manifest's params (or state) must name the same tensors, in the same
/// places, as the C tables; the init JSON is taken from it.
void mergeManifestParams(const json &list, std::vector<ParamInfo> &params,
                         std::string_view block, const std::string &source) {
  if (!list.is_array() || list.size() != params.size())
    throw HostError(fmt::format(
        "{}: the manifest lists {} {} entries, the library's table {}", source,
        list.is_array() ? list.size() : 0, block, params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const json &entry = list[i];
    std::string name = entry.at("name").get<std::string>();
    auto offset = entry.at("offset").get<uint64_t>();
    auto shape = entry.at("shape").get<std::vector<int64_t>>();
    if (name != params[i].name || offset != params[i].offset ||
        shape != params[i].shape)
      throw HostError(fmt::format(
          "{}: {} {} of the manifest ({}) disagrees with the library's table "
          "({})",
          source, block, i, name, params[i].name));
    if (auto init = entry.find("init"); init != entry.end())
      params[i].init = init->dump();
  }
}

/// The manifest's step carries: each inside the carry block, none
/// overlapping another.
std::vector<CarryInfo> carriesOf(const json &list, uint64_t carryFloats,
                                 const std::string &source) {
  std::vector<CarryInfo> carries;
  for (const json &entry : list) {
    CarryInfo carry;
    carry.name = entry.at("name").get<std::string>();
    const auto dtype = entry.at("dtype").get<std::string>();
    if (dtype != "float" && dtype != "complex64")
      throw HostError(fmt::format("{}: step carry {} has dtype {}", source,
                                  carry.name, dtype));
    carry.complex = dtype == "complex64";
    auto shape = entry.at("shape").get<std::vector<int64_t>>();
    if (shape.empty() || shape[0] != -1)
      throw HostError(fmt::format("{}: step carry {} is not [batch, ...]",
                                  source, carry.name));
    carry.shape.assign(shape.begin() + 1, shape.end());
    for (int64_t d : carry.shape)
      if (d < 0)
        throw HostError(fmt::format("{}: step carry {} has a dynamic dim",
                                    source, carry.name));
    carry.offset = entry.at("offset").get<uint64_t>();
    for (const CarryInfo &other : carries)
      if (carry.offset < other.offset + other.floats() &&
          other.offset < carry.offset + carry.floats())
        throw HostError(fmt::format("{}: step carries {} and {} overlap",
                                    source, other.name, carry.name));
    if (carry.offset + carry.floats() > carryFloats)
      throw HostError(fmt::format(
          "{}: step carry {} ends at {} floats, past the block's {}", source,
          carry.name, carry.offset + carry.floats(), carryFloats));
    carries.push_back(std::move(carry));
  }
  return carries;
}

} // namespace

TrainSettings parseTrainSettings(std::string_view trainJson,
                                 const std::string &source) {
  json t;
  try {
    t = json::parse(trainJson);
  } catch (const json::exception &e) {
    throw HostError(fmt::format("{}: train settings are not valid JSON: {}",
                                source, e.what()));
  }
  TrainSettings s;
  try {
    if (!t.is_object())
      throw HostError(fmt::format("{}: train settings are not a JSON object",
                                  source));
    s.task = get<std::string>(t, "task", "");
    s.dataPath = get<std::string>(t, "data", "");
    s.batch = get<int64_t>(t, "batch", s.batch);
    s.accumulate = get<int64_t>(t, "accumulate", s.accumulate);
    if (s.accumulate < 1)
      throw HostError(fmt::format("{}: train setting accumulate {} is not "
                                  "positive",
                                  source, s.accumulate));
    if (t.contains("steps"))
      s.steps = t["steps"].get<int64_t>();
    if (t.contains("epochs"))
      s.epochs = t["epochs"].get<int64_t>();
    s.lr = get<double>(t, "lr", s.lr);
    s.beta1 = get<double>(t, "beta1", s.beta1);
    s.beta2 = get<double>(t, "beta2", s.beta2);
    s.eps = get<double>(t, "eps", s.eps);
    s.weightDecay = get<double>(t, "weight_decay", s.weightDecay);
    s.recurrentLrFactor =
        get<double>(t, "recurrent_lr_factor", s.recurrentLrFactor);
    std::string schedule = get<std::string>(t, "schedule", "warmup_cosine");
    if (schedule == "constant")
      s.schedule = ScheduleKind::Constant;
    else if (schedule == "warmup_cosine")
      s.schedule = ScheduleKind::WarmupCosine;
    else
      throw HostError(fmt::format(
          "{}: unknown schedule \"{}\" (known: constant, warmup_cosine)",
          source, schedule));
    s.warmup = get<double>(t, "warmup", s.warmup);
    s.floor = get<double>(t, "floor", s.floor);
    if (t.contains("clip"))
      s.clip = t["clip"].get<double>();
    s.seed = get<uint64_t>(t, "seed", s.seed);
    s.dropoutSeed = get<uint64_t>(t, "dropout_seed", s.seed);
    s.evalEvery = get<int64_t>(t, "eval_every", s.evalEvery);
  } catch (const json::exception &e) {
    throw HostError(
        fmt::format("{}: invalid train settings: {}", source, e.what()));
  }
  return s;
}

namespace {

/// A 64-bit ELF file open for reading its headers.
struct ElfFile {
  std::ifstream in;
  Elf64_Ehdr header;
  uint64_t size = 0; ///< of the file
};

/// `path` as a 64-bit ELF file; nullopt for anything else (left to dlopen
/// to refuse) and for a file that cannot be read.
std::optional<ElfFile> openElf(const fs::path &path) {
  ElfFile file{std::ifstream(path, std::ios::binary), {}, 0};
  std::error_code ec;
  file.size = fs::file_size(path, ec);
  if (ec ||
      !file.in.read(reinterpret_cast<char *>(&file.header),
                    sizeof file.header) ||
      std::memcmp(file.header.e_ident, ELFMAG, SELFMAG) != 0 ||
      file.header.e_ident[EI_CLASS] != ELFCLASS64)
    return std::nullopt;
  return file;
}

/// Throws when `path` is a 64-bit ELF file shorter than its own headers say
/// (a copy or a build cut short). dlopen maps such a file and the process
/// dies of SIGBUS on the first page past its end, instead of an error.
/// Anything else that is not a valid library is left to dlopen to refuse.
void checkNotTruncated(const fs::path &path, const std::string &source) {
  std::optional<ElfFile> elf = openElf(path);
  if (!elf)
    return;
  auto &[in, header, size] = *elf;
  // Every end computed in 64 bits from 16- and 64-bit fields: a corrupt
  // offset near 2^64 wraps, so it is compared before it is added to.
  uint64_t needed = 0;
  auto extent = [&](uint64_t offset, uint64_t bytes) {
    needed = std::max(needed, offset > UINT64_MAX - bytes ? UINT64_MAX
                                                          : offset + bytes);
  };
  extent(header.e_phoff, uint64_t(header.e_phnum) * header.e_phentsize);
  extent(header.e_shoff, uint64_t(header.e_shnum) * header.e_shentsize);
  if (needed <= size && header.e_phentsize == sizeof(Elf64_Phdr)) {
    in.seekg(std::streamoff(header.e_phoff));
    for (unsigned i = 0; i < header.e_phnum; ++i) {
      Elf64_Phdr segment;
      if (!in.read(reinterpret_cast<char *>(&segment), sizeof segment))
        break;
      extent(segment.p_offset, segment.p_filesz);
    }
  }
  if (needed > size)
    throw HostError(fmt::format(
        "{}: truncated: {} bytes, but its ELF headers describe {} (a copy or "
        "build cut short?): build it again with `lruc model.lru -o model.so`",
        source, size, needed));
}

/// The contents of the section `name` of the 64-bit ELF file `path`; empty
/// where it has none (a library of an lruc before the section, or not
/// ELF). Every offset is checked against the file: a corrupt header reads
/// as no section.
std::string elfSection(const fs::path &path, std::string_view name) {
  std::optional<ElfFile> elf = openElf(path);
  if (!elf)
    return "";
  // Named references, not a structured binding: C++17 lets no lambda
  // capture one (`contents` below reads the file and its size).
  std::ifstream &in = elf->in;
  const Elf64_Ehdr &header = elf->header;
  const uint64_t size = elf->size;
  if (header.e_shentsize != sizeof(Elf64_Shdr) ||
      header.e_shstrndx >= header.e_shnum || header.e_shoff > size ||
      uint64_t(header.e_shnum) * sizeof(Elf64_Shdr) > size - header.e_shoff)
    return "";
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  in.seekg(std::streamoff(header.e_shoff));
  if (!in.read(reinterpret_cast<char *>(sections.data()),
               std::streamsize(sections.size() * sizeof(Elf64_Shdr))))
    return "";
  auto contents = [&](const Elf64_Shdr &section) {
    std::string bytes;
    if (section.sh_type == SHT_NOBITS || section.sh_offset > size ||
        section.sh_size > size - section.sh_offset)
      return bytes;
    bytes.resize(section.sh_size);
    in.seekg(std::streamoff(section.sh_offset));
    if (!in.read(bytes.data(), std::streamsize(bytes.size())))
      bytes.clear();
    return bytes;
  };
  const std::string names = contents(sections[header.e_shstrndx]);
  for (const Elf64_Shdr &section : sections) {
    if (section.sh_name >= names.size())
      continue;
    if (std::string_view(names.c_str() + section.sh_name) == name)
      return contents(section);
  }
  return "";
}

/// Throws when the library at `path` was compiled for x86 extensions this
/// CPU lacks (lruc/core/CpuFeatures.h): loaded, it would die of SIGILL.
void checkCpuFeatures(const fs::path &path, const std::string &source) {
  const std::string records = elfSection(path, core::kCpuFeaturesSection);
  char why[1024];
  if (core::describeMissingCpuFeatures(records.data(), records.size(), why,
                                       sizeof why))
    throw HostError(fmt::format("{}: {}", source, why));
}

} // namespace

ModelLibrary ModelLibrary::open(const fs::path &path) {
  ModelLibrary library;
  library.path_ = path;
  const std::string source = path.string();

  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw HostError(fmt::format("{}: no such file", source));
  if (fs::is_directory(status))
    throw HostError(fmt::format(
        "{}: is a directory, not a model library (make one with `lruc "
        "model.lru -o model.so`)",
        source));

  checkNotTruncated(path, source);
  checkCpuFeatures(path, source);
  // dlopen searches the library path for a name without a slash; a path the
  // user typed is meant as a file.
  std::string openPath = path.has_parent_path() ? source : "./" + source;
  dlerror();
  library.handle_ = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library.handle_) {
    const char *error = dlerror();
    const std::string why = error ? error : "dlopen failed";
    // dlerror names the file that failed: this one (not a library), or a
    // library it needs (absent on this machine, or no memory to map it).
    const bool itself =
        why.rfind(openPath + ":", 0) == 0 || why.rfind(source + ":", 0) == 0;
    // A model file given where its library goes: say what to do with it.
    const std::string modelFile =
        path.extension() == ".lru"
            ? fmt::format(" (a model file: compile it first, `lruc {} -o "
                          "{}.so`, and pass the library)",
                          source, path.stem().string())
            : "";
    throw HostError(itself
                        ? fmt::format("{}: not a shared library: {}{}", source,
                                      why, modelFile)
                        : fmt::format("{}: cannot load a library it needs: {}",
                                      source, why));
  }
  using GetFn = const lruc_model *(*)(uint32_t);
  dlerror();
  auto get = reinterpret_cast<GetFn>(dlsym(library.handle_, "lruc_model_get"));
  if (!get)
    throw HostError(fmt::format(
        "{}: not an lruc model library (no lruc_model_get symbol; make one "
        "with `lruc model.lru -o model.so`)",
        source));
  library.model_ = get(LRUC_ABI_VERSION);
  if (!library.model_) {
    // Ask which version it speaks, so the message can say so.
    for (uint32_t version = 0; version < 64; ++version) {
      if (version == LRUC_ABI_VERSION)
        continue;
      if (const lruc_model *other = get(version)) {
        throw HostError(fmt::format(
            "{}: built for ABI v{}, this runtime speaks v{}: rebuild it with "
            "this lruc",
            source, other->abi_version, LRUC_ABI_VERSION));
      }
    }
    throw HostError(fmt::format(
        "{}: does not speak ABI v{} (lruc_model_get({}) returned NULL): "
        "rebuild it with this lruc",
        source, LRUC_ABI_VERSION, LRUC_ABI_VERSION));
  }
  const lruc_model &m = *library.model_;
  if (m.abi_version != LRUC_ABI_VERSION)
    throw HostError(fmt::format(
        "{}: built for ABI v{}, this runtime speaks v{}: rebuild it with this "
        "lruc",
        source, m.abi_version, LRUC_ABI_VERSION));
  if (m.struct_size < sizeof(lruc_model))
    throw HostError(fmt::format(
        "{}: its lruc_model struct has {} bytes, ABI v{} has {}: rebuild it "
        "with this lruc",
        source, m.struct_size, LRUC_ABI_VERSION, sizeof(lruc_model)));
  if (!m.init || !m.forward || !m.forward_train || !m.backward ||
      !m.train_step)
    throw HostError(
        fmt::format("{}: an entry point of lruc_model is missing", source));

  Manifest &manifest = library.manifest_;
  manifest.model = m.name ? m.name : "";
  manifest.paramFloats = m.param_floats;
  manifest.stateFloats = m.state_floats;
  manifest.params =
      paramsOf(m.params, m.num_params, m.param_floats, "param", source);
  manifest.state =
      paramsOf(m.state, m.num_state, m.state_floats, "state", source);
  manifest.inputs = tensorsOf(m.inputs, m.num_inputs, "input", source);
  manifest.outputs = tensorsOf(m.outputs, m.num_outputs, "output", source);
  if (manifest.outputs.size() < 2 || !manifest.outputs[0].shape.empty())
    throw HostError(fmt::format(
        "{}: forward must return the loss (a scalar) then the predictions",
        source));
  if (m.step && m.step_reset) {
    StepInfo step;
    step.carryFloats = m.carry_floats;
    step.inputs = tensorsOf(m.step_inputs, m.num_step_inputs, "step input",
                            source);
    step.outputs = tensorsOf(m.step_outputs, m.num_step_outputs,
                             "step output", source);
    manifest.step = std::move(step);
  } else {
    manifest.stepUnavailable = m.step_unavailable && *m.step_unavailable
                                   ? m.step_unavailable
                                   : "the library has no step mode";
  }

  json doc;
  try {
    doc = json::parse(m.manifest ? m.manifest : "");
  } catch (const json::exception &e) {
    throw HostError(fmt::format("{}: its manifest is not valid JSON: {}",
                                source, e.what()));
  }
  try {
    if (!doc.is_object())
      throw HostError(
          fmt::format("{}: its manifest is not a JSON object", source));
    mergeManifestParams(doc.at("params"), manifest.params, "param", source);
    mergeManifestParams(doc.at("state"), manifest.state, "state", source);
    if (manifest.step)
      manifest.step->carries = carriesOf(doc.at("step").at("carries"),
                                         manifest.step->carryFloats, source);
    if (auto weights = doc.find("class_weights"); weights != doc.end())
      manifest.classWeights = weights->get<std::vector<float>>();
    if (auto workspace = doc.find("workspace"); workspace != doc.end())
      for (const auto &[function, size] : workspace->items())
        manifest.workspace[function] = {size.at("per_example").get<uint64_t>(),
                                        size.at("fixed").get<uint64_t>()};
    if (auto train = doc.find("train");
        train != doc.end() && train->is_object() && !train->empty())
      manifest.train = parseTrainSettings(train->dump(), source);
  } catch (const json::exception &e) {
    throw HostError(fmt::format("{}: invalid manifest: {}", source, e.what()));
  }
  return library;
}

ModelLibrary::ModelLibrary(ModelLibrary &&other) noexcept
    : path_(std::move(other.path_)),
      handle_(std::exchange(other.handle_, nullptr)),
      model_(std::exchange(other.model_, nullptr)),
      manifest_(std::move(other.manifest_)) {}

ModelLibrary &ModelLibrary::operator=(ModelLibrary &&other) noexcept {
  if (this != &other) {
    if (handle_)
      dlclose(handle_);
    path_ = std::move(other.path_);
    handle_ = std::exchange(other.handle_, nullptr);
    model_ = std::exchange(other.model_, nullptr);
    manifest_ = std::move(other.manifest_);
  }
  return *this;
}

ModelLibrary::~ModelLibrary() {
  if (handle_)
    dlclose(handle_);
}

bool ModelLibrary::hasCuda() const {
  return findSymbol("lruc_gpu_model_get") && findSymbol("lruc_cuda_source");
}

void *ModelLibrary::findSymbol(const char *name) const {
  return dlsym(handle_, name);
}

Matmul matmulNamed(const std::string &name) {
  if (name == "fp32")
    return Matmul::fp32;
  if (name == "tf32")
    return Matmul::tf32;
  if (name == "bf16")
    return Matmul::bf16;
  throw HostError(
      fmt::format("matmul {}: unknown (known: fp32, tf32, bf16)", name));
}

void ModelLibrary::setCpuMatmul(Matmul matmul) const {
  if (matmul == Matmul::tf32)
    throw HostError("tf32 matrix products are a GPU's; the CPU's are fp32 "
                    "or bf16");
  auto set = reinterpret_cast<int (*)(int, char *, size_t)>(
      findSymbol("lruc_cpu_set_matmul"));
  if (!set)
    throw HostError(fmt::format("{}: has no lruc_cpu_set_matmul (built by an "
                                "older lruc: build it again)",
                                path_.string()));
  char error[512] = "";
  if (set(matmul == Matmul::bf16, error, sizeof error))
    fail("lruc_cpu_set_matmul", error);
}

void ModelLibrary::fail(std::string_view entry, const char *message) const {
  throw HostError(fmt::format("{}: {}: {}", path_.string(), entry,
                              *message ? message : "failed (no message)"));
}

// Messages are short sentences; 1 KiB leaves room for a file name or two.
using Message = std::array<char, 1024>;

void ModelLibrary::stepReset(int64_t batch, float *carry) const {
  if (!manifest_.step)
    fail("step_reset", manifest_.stepUnavailable.c_str());
  Message message{};
  if (model_->step_reset(batch, carry, message.data(), message.size()))
    fail("step_reset", message.data());
}

void ModelLibrary::step(int64_t batch, const float *params, const float *state,
                        float *carry, const void *const *inputs,
                        float *const *outputs) const {
  if (!manifest_.step)
    fail("step", manifest_.stepUnavailable.c_str());
  Message message{};
  if (model_->step(batch, params, state, carry, inputs, outputs,
                   message.data(), message.size()))
    fail("step", message.data());
}

void ModelLibrary::init(uint64_t seed, float *params, float *state) const {
  Message message{};
  if (model_->init(seed, params, state, message.data(), message.size()))
    fail("init", message.data());
}

void ModelLibrary::forward(int64_t batch, const float *params,
                           const float *state, const void *const *inputs,
                           float *const *outputs) const {
  Message message{};
  if (model_->forward(batch, params, state, inputs, outputs, message.data(),
                      message.size()))
    fail("forward", message.data());
}

void ModelLibrary::backward(int64_t batch, const float *params,
                            const float *state, const void *const *inputs,
                            const int64_t dropoutKey[2], float *loss,
                            float *grads) const {
  Message message{};
  if (model_->backward(batch, params, state, inputs, dropoutKey, loss, grads,
                       message.data(), message.size()))
    fail("backward", message.data());
}

void ModelLibrary::trainStep(int64_t batch, float *params, float *adamM,
                             float *adamV, float *state, float lr,
                             int64_t step, const void *const *inputs,
                             const int64_t dropoutKey[2],
                             float *const *outputs) const {
  Message message{};
  if (model_->train_step(batch, params, adamM, adamV, state, lr, float(step),
                         inputs, dropoutKey, outputs, message.data(),
                         message.size()))
    fail("train_step", message.data());
}

void ModelLibrary::accumulateGradients(int64_t batch, const float *params,
                                       float *state, float *grads, float scale,
                                       const void *const *inputs,
                                       const int64_t dropoutKey[2],
                                       float *const *outputs) const {
  Message message{};
  if (model_->accumulate_gradients(batch, params, state, grads, scale, inputs,
                                   dropoutKey, outputs, message.data(),
                                   message.size()))
    fail("accumulate_gradients", message.data());
}

void ModelLibrary::applyGradients(float *params, float *adamM, float *adamV,
                                  const float *grads, float lr,
                                  int64_t step) const {
  Message message{};
  if (model_->apply_gradients(params, adamM, adamV, grads, lr, float(step),
                              message.data(), message.size()))
    fail("apply_gradients", message.data());
}

} // namespace lruc::host
