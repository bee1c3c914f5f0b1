//===- Error.h - The one exception of the host runtime ----------*- C++ -*-===//
//
// Everything in lruc::host throws HostError for a problem with a file or a
// model library: the message is complete and names the file
// ("run/last.safetensors: tensor head.bias: shape [10] but the model has
// [12]"), so a tool prints it as it is and exits.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_ERROR_H
#define LRUC_HOST_ERROR_H

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace lruc::host {

class HostError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `path` opened for reading; HostError "PATH: no such file", "PATH: is a
/// directory, not a file", "PATH: is a device, not a file" or "PATH:
/// cannot open: REASON" otherwise (a pipe opens).
std::ifstream openForReading(const std::filesystem::path &path,
                             std::ios::openmode mode = std::ios::in);

/// The whole of `path`'s bytes; HostError as openForReading, or on a read
/// error.
std::string readWholeFile(const std::filesystem::path &path);

} // namespace lruc::host

#endif // LRUC_HOST_ERROR_H
