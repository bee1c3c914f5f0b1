//===- Io.h - Files, gzip and PNG for the data readers ----------*- C++ -*-===//
//
// Thin wrappers over the standard libraries for the formats the LRA release
// and Fashion-MNIST use: zlib for gzip, libpng (its simplified png_image API)
// for PNG. Every failure is a DataError naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_DATA_IO_H
#define LRUC_DATA_IO_H

#include "lruc/data/Error.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace lruc::data {

/// The whole of `path`. Throws DataError "PATH: cannot open: REASON".
std::string readFile(const std::filesystem::path &path);

/// Writes `bytes` to `path` (creating its parent directories) through a
/// temporary file renamed into place (core::writeFileAtomically), so a
/// reader never sees half a file.
void writeFile(const std::filesystem::path &path, std::string_view bytes);

/// Gzip (RFC 1952) of `bytes`, as `gzip -n` would write it: no name, no
/// time stamp, so the same input always gives the same bytes.
std::string gzipCompress(std::string_view bytes);

/// The data of the gzip stream `bytes` (one member). `name` is the file the
/// bytes came from, for messages. Throws DataError when the stream is
/// corrupt or truncated, or inflates to more than `maxBytes`.
std::string gunzip(std::string_view bytes, const std::string &name,
                   size_t maxBytes);

/// An 8-bit grayscale image, row-major.
struct GrayImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;

  uint8_t at(int x, int y) const { return pixels[size_t(y) * width + x]; }
  uint8_t &at(int x, int y) { return pixels[size_t(y) * width + x]; }
};

/// Decodes PNG `bytes` to 8-bit gray (libpng converts colour, alpha,
/// palette and 16-bit images). Throws DataError "NAME: …" when the bytes are
/// not a PNG, are corrupt, or the image has more than `maxPixels` pixels.
GrayImage decodePng(std::string_view bytes, const std::string &name,
                    size_t maxPixels);

/// The 8-bit grayscale PNG of `image` (deterministic: no time stamp).
std::string encodePng(const GrayImage &image);

} // namespace lruc::data

#endif // LRUC_DATA_IO_H
