//===- Safetensors.cpp - The safetensors file format ----------------------===//

#include "lruc/host/Safetensors.h"

#include "lruc/core/Files.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <system_error>

namespace lruc::host {

namespace fs = std::filesystem;
using nlohmann::json;

uint64_t numElements(const std::vector<int64_t> &shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d);
  return n;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

namespace {

bool dtypeFromName(std::string_view name, DType &dtype) {
  if (name == "F32")
    dtype = DType::F32;
  else if (name == "I32")
    dtype = DType::I32;
  else if (name == "I64")
    dtype = DType::I64;
  else
    return false;
  return true;
}

/// Byte size of a tensor, or false when it overflows 64 bits.
bool byteSize(const std::vector<int64_t> &shape, DType dtype, uint64_t &bytes) {
  uint64_t n = dtypeSize(dtype);
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / uint64_t(d))
      return false;
    n *= uint64_t(d);
  }
  bytes = n;
  return true;
}

uint64_t readLittleEndian64(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | uint8_t(p[i]);
  return v;
}

} // namespace

SafetensorsFile SafetensorsFile::parse(std::string bytes,
                                       const std::string &name) {
  auto error = [&](const std::string &what) {
    return HostError(fmt::format("{}: not a valid safetensors file: {}", name,
                                 what));
  };
  SafetensorsFile file;
  file.name_ = name;
  if (bytes.size() < 8)
    throw error(fmt::format("{} bytes, shorter than the 8-byte header size",
                            bytes.size()));
  uint64_t headerSize = readLittleEndian64(bytes.data());
  if (headerSize > kMaxSafetensorsHeader)
    throw error(fmt::format("header size {} exceeds the limit of {} bytes",
                            headerSize, kMaxSafetensorsHeader));
  if (headerSize > bytes.size() - 8)
    throw error(fmt::format(
        "header size {} runs past the end of the file ({} bytes): truncated?",
        headerSize, bytes.size()));
  std::string_view header(bytes.data() + 8, headerSize);
  if (header.empty() || header.front() != '{')
    throw error("the header is not a JSON object");

  json doc;
  try {
    doc = json::parse(header);
  } catch (const json::exception &e) {
    throw error(fmt::format("the header is not valid JSON: {}", e.what()));
  }
  if (!doc.is_object())
    throw error("the header is not a JSON object");

  file.dataStart_ = 8 + headerSize;
  const uint64_t dataSize = bytes.size() - file.dataStart_;
  struct Range {
    uint64_t begin, end;
    const std::string *name;
  };
  std::vector<Range> ranges;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string &key = it.key();
    const json &value = it.value();
    if (key == "__metadata__") {
      if (!value.is_object())
        throw error("__metadata__ is not an object of strings");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          throw error(fmt::format("__metadata__ entry \"{}\" is not a string",
                                  m.key()));
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto tensorError = [&](const std::string &what) {
      return error(fmt::format("tensor \"{}\": {}", key, what));
    };
    if (!value.is_object())
      throw tensorError("its entry is not an object");
    auto dtype = value.find("dtype");
    auto shape = value.find("shape");
    auto offsets = value.find("data_offsets");
    if (dtype == value.end() || shape == value.end() ||
        offsets == value.end())
      throw tensorError("needs dtype, shape and data_offsets");
    StoredTensor tensor;
    if (!dtype->is_string())
      throw tensorError("dtype is not a string");
    if (!dtypeFromName(dtype->get_ref<const std::string &>(), tensor.dtype))
      throw tensorError(fmt::format("dtype {} (lruc reads F32, I32, I64)",
                                    dtype->dump()));
    if (!shape->is_array())
      throw tensorError("shape is not an array");
    for (const json &d : *shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw tensorError(fmt::format("shape {} has a dimension that is not "
                                      "a non-negative integer",
                                      shape->dump()));
      tensor.shape.push_back(d.get<int64_t>());
    }
    if (!offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      throw tensorError("data_offsets is not [BEGIN, END]");
    tensor.begin = (*offsets)[0].get<uint64_t>();
    tensor.end = (*offsets)[1].get<uint64_t>();
    uint64_t expected = 0;
    if (!byteSize(tensor.shape, tensor.dtype, expected))
      throw tensorError(fmt::format("shape {} is too large",
                                    shapeString(tensor.shape)));
    if (tensor.end < tensor.begin || tensor.end - tensor.begin != expected)
      throw tensorError(fmt::format(
          "data_offsets [{}, {}] hold {} bytes; dtype {} shape {} needs {}",
          tensor.begin, tensor.end,
          tensor.end >= tensor.begin ? tensor.end - tensor.begin : 0,
          dtypeName(tensor.dtype), shapeString(tensor.shape), expected));
    if (tensor.end > dataSize)
      throw tensorError(fmt::format(
          "data_offsets [{}, {}] run past the end of the data ({} bytes): "
          "truncated?",
          tensor.begin, tensor.end, dataSize));
    auto [where, inserted] = file.tensors_.emplace(key, std::move(tensor));
    ranges.push_back({where->second.begin, where->second.end, &where->first});
  }

  // The tensors tile the data section: sorted by offset, each starts where
  // the last ended and the last ends at the end of the file.
  std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const Range &range : ranges) {
    if (range.begin < at)
      throw error(fmt::format("tensor \"{}\" overlaps the tensor before it",
                              *range.name));
    if (range.begin > at)
      throw error(fmt::format(
          "bytes [{}, {}) of the data belong to no tensor (before \"{}\")", at,
          range.begin, *range.name));
    at = range.end;
  }
  if (at != dataSize)
    throw error(fmt::format(
        "the data has {} bytes after the last tensor", dataSize - at));
  file.bytes_ = std::move(bytes);
  return file;
}

SafetensorsFile SafetensorsFile::read(const fs::path &path) {
  return parse(readWholeFile(path), path.string());
}

const StoredTensor *SafetensorsFile::find(std::string_view tensor) const {
  auto it = tensors_.find(std::string(tensor));
  return it == tensors_.end() ? nullptr : &it->second;
}

void SafetensorsFile::copyTo(std::string_view tensor, DType dtype, void *out,
                             uint64_t count) const {
  const StoredTensor *stored = find(tensor);
  if (!stored)
    throw HostError(fmt::format("{}: no tensor \"{}\"", name_, tensor));
  if (stored->dtype != dtype || numElements(stored->shape) != count)
    throw HostError(fmt::format(
        "{}: tensor \"{}\" is {} {}; expected {} values of {}", name_, tensor,
        dtypeName(stored->dtype), shapeString(stored->shape), count,
        dtypeName(dtype)));
  if (count > 0) // an empty tensor's `out` may be null
    std::memcpy(out, data() + stored->begin, stored->end - stored->begin);
}

std::vector<int64_t> SafetensorsFile::integers(std::string_view tensor) const {
  const StoredTensor *stored = find(tensor);
  if (!stored)
    throw HostError(fmt::format("{}: no tensor \"{}\"", name_, tensor));
  const uint64_t count = numElements(stored->shape);
  std::vector<int64_t> values(count);
  if (stored->dtype == DType::I64) {
    copyTo(tensor, DType::I64, values.data(), count);
  } else if (stored->dtype == DType::I32) {
    std::vector<int32_t> narrow(count);
    copyTo(tensor, DType::I32, narrow.data(), count);
    std::copy(narrow.begin(), narrow.end(), values.begin());
  } else {
    throw HostError(fmt::format("{}: tensor \"{}\" is {}; expected integers "
                                "(I32 or I64)",
                                name_, tensor, dtypeName(stored->dtype)));
  }
  return values;
}

std::string encodeSafetensors(const std::vector<TensorToWrite> &tensors,
                              const Metadata &metadata) {
  // nlohmann's ordered_json keeps the tensors in the caller's order, which
  // makes the files easy to read with a hex dump or `head -c`.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::set<std::string_view> seen;
  uint64_t offset = 0;
  for (const TensorToWrite &t : tensors) {
    if (t.name == "__metadata__" || !seen.insert(t.name).second)
      throw HostError(fmt::format("safetensors: tensor name \"{}\" is used "
                                  "twice or reserved",
                                  t.name));
    uint64_t bytes = numElements(t.shape) * dtypeSize(t.dtype);
    if (bytes && !t.data)
      throw HostError(
          fmt::format("safetensors: tensor \"{}\" has no data", t.name));
    header[t.name] = {{"dtype", dtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // The reference writer pads the header with spaces so that the data
  // starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(char(n >> (8 * i) & 0xff));
  out += text;
  for (const TensorToWrite &t : tensors)
    out.append(static_cast<const char *>(t.data),
               numElements(t.shape) * dtypeSize(t.dtype));
  return out;
}

void writeFileAtomically(const fs::path &path, std::string_view bytes) {
  std::string error;
  if (!core::writeFileAtomically(path.string(), bytes, error))
    throw HostError(error);
}

std::ifstream openForReading(const fs::path &path, std::ios::openmode mode) {
  // A directory opens as a stream whose first read throws libstdc++'s
  // "basic_filebuf::underflow error", which names no file.
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status))
    throw HostError(
        fmt::format("{}: is a directory, not a file", path.string()));
  // A device (/dev/zero, a terminal, a disk) named by mistake would be read
  // until memory runs out; a pipe is read to its end.
  if (fs::is_character_file(status) || fs::is_block_file(status))
    throw HostError(fmt::format("{}: is a device, not a file", path.string()));
  std::ifstream in(path, mode);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec))
      throw HostError(fmt::format("{}: no such file", path.string()));
    throw HostError(fmt::format("{}: cannot open: {}", path.string(),
                                std::strerror(errno)));
  }
  return in;
}

std::string readWholeFile(const fs::path &path) {
  std::ifstream in = openForReading(path, std::ios::binary);
  // In blocks, not a character at a time (3-4x slower on a 1 GB file): a
  // regular file's size and one byte more (its end is then seen in the
  // same read); a pipe's blocks from 1 MiB, doubling.
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  size_t have = 0;
  size_t want = ec ? size_t(1) << 20 : size_t(size) + 1;
  std::string bytes;
  for (;;) {
    bytes.resize(have + want);
    in.read(bytes.data() + have, std::streamsize(want));
    have += size_t(in.gcount());
    if (!in)
      break;
    want = std::max(want, have);
  }
  bytes.resize(have);
  if (in.bad())
    throw HostError(fmt::format("{}: read error", path.string()));
  return bytes;
}

} // namespace lruc::host
