//===- Io.cpp - Files, gzip (zlib) and PNG (libpng) -----------------------===//

#include "lruc/data/Io.h"

#include "Common.h"

#include "lruc/core/Files.h"

#include <png.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <system_error>

namespace lruc::data {

using detail::fail;

std::string readFile(const std::filesystem::path &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(path.string(), "cannot open: is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path.string(), "cannot open: {}", std::strerror(errno));
  std::string bytes;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size > 0) {
    bytes.resize(size_t(size));
    in.seekg(0);
    in.read(bytes.data(), size);
  }
  if (in.bad() || (size > 0 && in.gcount() != size))
    fail(path.string(), "read error");
  return bytes;
}

void writeFile(const std::filesystem::path &path, std::string_view bytes) {
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    fail(path.parent_path().string(), "cannot create directory: {}",
         ec.message());
  std::string error;
  if (!core::writeFileAtomically(path.string(), bytes, error))
    throw DataError(error);
}

//===-- gzip --------------------------------------------------------------===//

namespace {
// windowBits for a gzip (not zlib) stream: 15 + 16.
constexpr int kGzipWindowBits = MAX_WBITS + 16;
constexpr size_t kChunk = 1 << 16;
} // namespace

std::string gzipCompress(std::string_view bytes) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    throw DataError("gzip: deflateInit2 failed");
  // deflateInit2 writes a header with mtime 0 and no name: deterministic.
  std::string out;
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  size_t left = bytes.size();
  int status = Z_OK;
  do {
    uInt take = uInt(std::min<size_t>(left, 1u << 30));
    stream.avail_in = take;
    left -= take;
    int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    do {
      size_t have = out.size();
      out.resize(have + kChunk);
      stream.next_out = reinterpret_cast<Bytef *>(out.data() + have);
      stream.avail_out = kChunk;
      status = deflate(&stream, flush);
      out.resize(have + kChunk - stream.avail_out);
    } while (stream.avail_out == 0);
  } while (left > 0);
  deflateEnd(&stream);
  if (status != Z_STREAM_END)
    throw DataError("gzip: deflate did not finish");
  return out;
}

std::string gunzip(std::string_view bytes, const std::string &name,
                   size_t maxBytes) {
  z_stream stream{};
  if (inflateInit2(&stream, kGzipWindowBits) != Z_OK)
    fail(name, "inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_streamp)> guard(&stream, inflateEnd);
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  size_t left = bytes.size();
  std::string out;
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (stream.avail_in == 0) {
      if (left == 0)
        fail(name, "gzip data ends early ({} bytes, {} decompressed)",
             bytes.size(), out.size());
      uInt take = uInt(std::min<size_t>(left, 1u << 30));
      stream.avail_in = take;
      left -= take;
    }
    size_t have = out.size();
    if (have >= maxBytes)
      fail(name, "decompresses to more than {} bytes", maxBytes);
    size_t room = std::min(kChunk, maxBytes - have);
    out.resize(have + room);
    stream.next_out = reinterpret_cast<Bytef *>(out.data() + have);
    stream.avail_out = uInt(room);
    status = inflate(&stream, Z_NO_FLUSH);
    out.resize(have + room - stream.avail_out);
    if (status == Z_NEED_DICT || status == Z_DATA_ERROR ||
        status == Z_MEM_ERROR || status == Z_STREAM_ERROR)
      fail(name, "not valid gzip data ({})",
           stream.msg ? stream.msg : zError(status));
    if (status == Z_BUF_ERROR && stream.avail_in != 0)
      fail(name, "not valid gzip data (no progress)");
  }
  if (stream.avail_in != 0 || left != 0)
    fail(name, "{} bytes after the end of the gzip data",
         size_t(stream.avail_in) + left);
  return out;
}

//===-- PNG ---------------------------------------------------------------===//

GrayImage decodePng(std::string_view bytes, const std::string &name,
                    size_t maxPixels) {
  // Checked here because libpng, given fewer than 8 bytes, reports only
  // "read beyond end of data".
  constexpr size_t kSignatureBytes = 8;
  if (bytes.size() < kSignatureBytes ||
      png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0,
                  kSignatureBytes) != 0)
    fail(name, "not a PNG file (no PNG signature)");
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    fail(name, "not a readable PNG ({})", image.message);
  std::unique_ptr<png_image, void (*)(png_imagep)> guard(&image,
                                                         png_image_free);
  if (size_t(image.width) * size_t(image.height) > maxPixels)
    fail(name, "image of {}x{} pixels is larger than {} pixels", image.width,
         image.height, maxPixels);
  image.format = PNG_FORMAT_GRAY;
  GrayImage out;
  out.width = int(image.width);
  out.height = int(image.height);
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr))
    fail(name, "corrupt PNG ({})", image.message);
  return out; // png_image_free (the guard) is harmless after finish_read
}

std::string encodePng(const GrayImage &gray) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(gray.width);
  image.height = png_uint_32(gray.height);
  image.format = PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, gray.pixels.data(),
                                 0, nullptr))
    throw DataError(fmt::format("PNG encoder: {}", image.message));
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0,
                                 gray.pixels.data(), 0, nullptr))
    throw DataError(fmt::format("PNG encoder: {}", image.message));
  out.resize(size);
  return out;
}

} // namespace lruc::data
