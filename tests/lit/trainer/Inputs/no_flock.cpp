// Preloaded by lru-train-unlockable.test: flock fails as on a file system
// that cannot lock a directory.
#include <cerrno>

extern "C" int flock(int, int) {
  errno = ENOLCK;
  return -1;
}
