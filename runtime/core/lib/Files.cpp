//===- Files.cpp - Writing files so that readers never see half of one ----===//

#include "lruc/core/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lruc::core {

namespace {

/// The directory part of `path` ("." for none).
std::string directoryOf(const std::string &path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Writes `bytes` over what `path` names, in place.
bool writeInPlace(const std::string &path, std::string_view bytes,
                  std::string &error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  int code = fd < 0 ? errno : 0;
  for (const char *p = bytes.data(), *end = p + bytes.size();
       code == 0 && p < end;) {
    const ssize_t written = ::write(fd, p, size_t(end - p));
    if (written >= 0)
      p += written;
    else if (errno != EINTR)
      code = errno;
  }
  if (fd >= 0 && ::close(fd) != 0 && code == 0)
    code = errno;
  if (code != 0)
    error = path + ": cannot write: " + std::strerror(code);
  return code == 0;
}

} // namespace

std::string followLinks(std::string path) {
  // As many levels as the kernel follows before ELOOP.
  for (int level = 0; level < 40; ++level) {
    struct stat link;
    if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode))
      return path;
    std::string target(size_t(link.st_size > 0 ? link.st_size : 4096), '\0');
    const ssize_t length =
        ::readlink(path.c_str(), target.data(), target.size());
    if (length <= 0)
      return path;
    target.resize(size_t(length));
    path = target[0] == '/' ? target : directoryOf(path) + "/" + target;
  }
  return path;
}

bool isWrittenInPlace(const std::string &path) {
  struct stat existing;
  return ::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode) &&
         !S_ISDIR(existing.st_mode);
}

bool writeFileAtomically(const std::string &given, std::string_view bytes,
                         std::string &error) {
  // Asked of the path given: the kernel follows /dev/stdout to a pipe.
  if (isWrittenInPlace(given))
    return writeInPlace(given, bytes, error);
  const std::string path = followLinks(given);
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) {
    error = path + ": is a directory, not a file";
    return false;
  }
  auto fail = [&](const char *what, int code) {
    error = path + ": cannot " + what + ": " + std::strerror(code);
    return false;
  };
  const std::string dir = directoryOf(path);
  std::string temporary = path + ".tmp-XXXXXX";
  int fd = mkstemp(temporary.data());
  if (fd < 0)
    return fail("create a temporary file next to it", errno);
  auto abandon = [&](const char *what) {
    int code = errno;
    ::close(fd);
    ::unlink(temporary.c_str());
    return fail(what, code);
  };
  // mkstemp creates 0600; the file is as readable as any other output.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  const char *p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t written = ::write(fd, p, left);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return abandon("write");
    }
    p += written;
    left -= size_t(written);
  }
  if (::fsync(fd) != 0)
    return abandon("fsync");
  if (::close(fd) != 0) {
    int code = errno;
    ::unlink(temporary.c_str());
    return fail("close", code);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    int code = errno;
    ::unlink(temporary.c_str());
    return fail("rename the temporary file over it", code);
  }
  // The rename is durable once the directory entry is.
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
  return true;
}

} // namespace lruc::core
