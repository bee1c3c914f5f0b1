//===- Safetensors.h - The safetensors file format --------------*- C++ -*-===//
//
// The format of Hugging Face's `safetensors` (what PyTorch, JAX and numpy
// users open with `safetensors.numpy.load_file`):
//
//   8 bytes   N, the header's size, little-endian u64
//   N bytes   JSON: {"NAME": {"dtype": "F32", "shape": [..],
//                     "data_offsets": [BEGIN, END]}, ...,
//                    "__metadata__": {"KEY": "VALUE", ...}}
//             (padded with spaces to a multiple of 8 bytes)
//   ...       the data: each tensor row-major, little-endian, at
//             [BEGIN, END) counted from the end of the header
//
// The reader checks what the reference implementation checks, so that a
// file one accepts the other does too: the header fits the file and is at
// most 100 MB of JSON; every entry has a known dtype, a shape of
// non-negative dims and offsets whose length matches them; the tensors
// cover the data exactly (no overlap, no gap, nothing after the last).
// Every failure is a HostError naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_SAFETENSORS_H
#define LRUC_HOST_SAFETENSORS_H

#include "lruc/host/ModelLibrary.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace lruc::host {

/// The reference implementation's limit on the header.
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

/// One tensor of a file to write. `data` points at numElements(shape) values
/// of `dtype` (in this machine's byte order: little-endian on every platform
/// lruc runs on).
struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
};

/// A tensor of a parsed file; its bytes stay in the file's buffer.
struct StoredTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; ///< into SafetensorsFile::data()
};

using Metadata = std::map<std::string, std::string>;

/// A whole safetensors file, parsed and checked.
class SafetensorsFile {
public:
  /// Parses `bytes` (the whole file). `name` names it in messages.
  static SafetensorsFile parse(std::string bytes, const std::string &name);
  /// Reads and parses `path`.
  static SafetensorsFile read(const std::filesystem::path &path);

  const std::string &name() const { return name_; }
  const Metadata &metadata() const { return metadata_; }
  const std::map<std::string, StoredTensor> &tensors() const {
    return tensors_;
  }
  const StoredTensor *find(std::string_view tensor) const;
  /// The data section (tensor bytes start at data() + begin).
  const char *data() const { return bytes_.data() + dataStart_; }

  /// Copies tensor `tensor` into `out` (count values of `dtype`); throws when
  /// the tensor is missing or its dtype or element count differ.
  void copyTo(std::string_view tensor, DType dtype, void *out,
              uint64_t count) const;
  /// Tensor `tensor`'s values widened to int64 (stored I32 or I64); throws
  /// when it is missing or holds floats.
  std::vector<int64_t> integers(std::string_view tensor) const;

private:
  std::string name_;
  std::string bytes_;
  uint64_t dataStart_ = 0;
  Metadata metadata_;
  std::map<std::string, StoredTensor> tensors_;
};

/// The bytes of a safetensors file holding `tensors` (in that order) and
/// `metadata`. Throws HostError on a duplicate name or a null data pointer.
std::string encodeSafetensors(const std::vector<TensorToWrite> &tensors,
                              const Metadata &metadata);

/// core::writeFileAtomically (`path` holds the old file or the whole new
/// one, whatever happens mid-write), throwing HostError naming the file.
void writeFileAtomically(const std::filesystem::path &path,
                         std::string_view bytes);

/// Product of the dims (1 for a scalar).
uint64_t numElements(const std::vector<int64_t> &shape);

/// "[2, 3]".
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace lruc::host

#endif // LRUC_HOST_SAFETENSORS_H
