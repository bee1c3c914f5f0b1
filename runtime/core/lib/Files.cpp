//===- Files.cpp - Writing files so that readers never see half of one ----===//

#include "lruc/core/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lruc::core {

bool writeFileAtomically(const std::string &path, std::string_view bytes,
                         std::string &error) {
  auto fail = [&](const char *what, int code) {
    error = path + ": cannot " + what + ": " + std::strerror(code);
    return false;
  };
  std::string dir = ".";
  if (size_t slash = path.rfind('/'); slash != std::string::npos)
    dir = slash == 0 ? "/" : path.substr(0, slash);
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
