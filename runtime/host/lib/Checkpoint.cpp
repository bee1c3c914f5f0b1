//===- Checkpoint.cpp - Training state in a safetensors file --------------===//

#include "lruc/host/Checkpoint.h"

#include "lruc/core/Bytes.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <new>
#include <set>

namespace lruc::host {

namespace fs = std::filesystem;

namespace {

constexpr const char *kAdamM = "adam_m.";
constexpr const char *kAdamV = "adam_v.";

void checkSize(const std::vector<float> &block, uint64_t expected,
               std::string_view what) {
  if (block.size() != expected)
    throw HostError(fmt::format("checkpoint: the {} block has {} floats; the "
                                "model has {}",
                                what, block.size(), expected));
}

} // namespace

Checkpoint Checkpoint::zeros(const Manifest &manifest) {
  Checkpoint c;
  try {
    c.params.assign(manifest.paramFloats, 0.0f);
    c.state.assign(manifest.stateFloats, 0.0f);
    c.adamM.assign(manifest.paramFloats, 0.0f);
    c.adamV.assign(manifest.paramFloats, 0.0f);
  } catch (const std::bad_alloc &) {
    throw HostError(fmt::format(
        "not enough memory for model '{}': its parameters, AdamW's two "
        "moments and its running statistics take {}",
        manifest.model,
        core::formatBytes(double(manifest.trainingStateBytes(false)))));
  }
  return c;
}

std::string encodeCheckpoint(const Manifest &manifest,
                             const Checkpoint &checkpoint) {
  checkSize(checkpoint.params, manifest.paramFloats, "parameter");
  checkSize(checkpoint.state, manifest.stateFloats, "running-statistics");
  if (checkpoint.hasOptimizerState()) {
    checkSize(checkpoint.adamM, manifest.paramFloats, "adam_m");
    checkSize(checkpoint.adamV, manifest.paramFloats, "adam_v");
  }
  std::vector<TensorToWrite> tensors;
  for (const ParamInfo &p : manifest.params)
    tensors.push_back({p.name, DType::F32, p.shape,
                       checkpoint.params.data() + p.offset});
  for (const ParamInfo &s : manifest.state)
    tensors.push_back({s.name, DType::F32, s.shape,
                       checkpoint.state.data() + s.offset});
  if (checkpoint.hasOptimizerState()) {
    for (const ParamInfo &p : manifest.params)
      tensors.push_back({kAdamM + p.name, DType::F32, p.shape,
                         checkpoint.adamM.data() + p.offset});
    for (const ParamInfo &p : manifest.params)
      tensors.push_back({kAdamV + p.name, DType::F32, p.shape,
                         checkpoint.adamV.data() + p.offset});
  }
  Metadata metadata = checkpoint.metadata;
  metadata["format"] = kCheckpointFormat;
  metadata["format_version"] = kCheckpointFormatVersion;
  metadata["model"] = manifest.model;
  metadata["step"] = std::to_string(checkpoint.step);
  return encodeSafetensors(tensors, metadata);
}

void saveCheckpoint(const fs::path &path, const Manifest &manifest,
                    const Checkpoint &checkpoint) {
  std::string bytes;
  try {
    bytes = encodeCheckpoint(manifest, checkpoint);
  } catch (const HostError &e) {
    throw HostError(fmt::format("{}: {}", path.string(), e.what()));
  }
  writeFileAtomically(path, bytes);
}

Checkpoint decodeCheckpoint(std::string bytes, const std::string &name,
                            const Manifest &manifest,
                            OptimizerState optimizer) {
  SafetensorsFile file = SafetensorsFile::parse(std::move(bytes), name);
  auto error = [&](const std::string &what) {
    return HostError(fmt::format("{}: {}", name, what));
  };
  const Metadata &meta = file.metadata();
  auto format = meta.find("format");
  if (format == meta.end() || format->second != kCheckpointFormat)
    throw error("not an lruc checkpoint (its metadata has no \"format\": "
                "\"lruc-checkpoint\")");
  auto version = meta.find("format_version");
  if (version == meta.end() || version->second != kCheckpointFormatVersion)
    throw error(fmt::format(
        "checkpoint format version {}; this runtime reads version {}",
        version == meta.end() ? "(none)" : version->second,
        kCheckpointFormatVersion));
  auto model = meta.find("model");
  if (model == meta.end() || model->second != manifest.model)
    throw error(fmt::format(
        "a checkpoint of model \"{}\", not of \"{}\"",
        model == meta.end() ? "" : model->second, manifest.model));

  Checkpoint c;
  c.metadata = meta;
  auto step = meta.find("step");
  const std::string stepText = step == meta.end() ? "" : step->second;
  auto [end, ec] = std::from_chars(stepText.data(),
                                   stepText.data() + stepText.size(), c.step);
  if (stepText.empty() || ec != std::errc() ||
      end != stepText.data() + stepText.size() || c.step < 0)
    throw error(fmt::format("metadata \"step\" is \"{}\", not a step count",
                            stepText));

  bool withMoments = false;
  for (const auto &[tensor, stored] : file.tensors())
    withMoments |= tensor.rfind(kAdamM, 0) == 0 || tensor.rfind(kAdamV, 0) == 0;
  if (optimizer == OptimizerState::Required && !withMoments &&
      !manifest.params.empty())
    throw error("holds no optimizer state (adam_m.*, adam_v.*): it cannot "
                "resume training");

  std::set<std::string> expected;
  auto take = [&](const std::string &tensor, const ParamInfo &info,
                  std::vector<float> &block) {
    const StoredTensor *stored = file.find(tensor);
    if (!stored)
      throw error(fmt::format("no tensor \"{}\" (the model has it, shape {})",
                              tensor, shapeString(info.shape)));
    if (stored->dtype != DType::F32 || stored->shape != info.shape)
      throw error(fmt::format(
          "tensor \"{}\" is {} {}; the model has F32 {}", tensor,
          dtypeName(stored->dtype), shapeString(stored->shape),
          shapeString(info.shape)));
    std::memcpy(block.data() + info.offset, file.data() + stored->begin,
                info.size * sizeof(float));
    expected.insert(tensor);
  };
  c.params.assign(manifest.paramFloats, 0.0f);
  c.state.assign(manifest.stateFloats, 0.0f);
  for (const ParamInfo &p : manifest.params)
    take(p.name, p, c.params);
  for (const ParamInfo &s : manifest.state)
    take(s.name, s, c.state);
  if (withMoments) {
    c.adamM.assign(manifest.paramFloats, 0.0f);
    c.adamV.assign(manifest.paramFloats, 0.0f);
    for (const ParamInfo &p : manifest.params) {
      take(kAdamM + p.name, p, c.adamM);
      take(kAdamV + p.name, p, c.adamV);
    }
  }
  for (const auto &[tensor, stored] : file.tensors())
    if (!expected.count(tensor))
      throw error(fmt::format("tensor \"{}\" is not part of model \"{}\"",
                              tensor, manifest.model));
  return c;
}

Checkpoint loadCheckpoint(const fs::path &path, const Manifest &manifest,
                          OptimizerState optimizer) {
  // A run's directory where its checkpoint was meant: name the files in it.
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> inside;
    for (const char *name : {"best.safetensors", "last.safetensors"})
      if (fs::is_regular_file(path / name, ec))
        inside.push_back((path / name).string());
    if (!inside.empty())
      throw HostError(fmt::format(
          "{}: is a run's directory, not a checkpoint: pass one of its "
          "checkpoints ({})",
          path.string(), fmt::join(inside, " or ")));
  }
  return decodeCheckpoint(readWholeFile(path), path.string(), manifest,
                          optimizer);
}

} // namespace lruc::host
