//===- Dynamic.h - Libraries opened at run time -----------------*- C++ -*-===//
//
// NVRTC, the CUDA driver and cuBLAS are opened with dlopen, never linked:
// lruc and every model library build and run where CUDA is absent.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CUDA_DYNAMIC_H
#define LRUC_CUDA_DYNAMIC_H

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

namespace lruc::cuda::detail {

/// The first of: $`variable`, then each of `names` on the loader's path and
/// under /usr/local/cuda/lib64, that dlopen opens; null when none does.
inline void *openFirst(const char *variable,
                       const std::vector<std::string> &names) {
  std::vector<std::string> candidates;
  if (const char *path = std::getenv(variable); path && *path)
    candidates.push_back(path);
  for (const std::string &name : names) {
    candidates.push_back(name);
    candidates.push_back("/usr/local/cuda/lib64/" + name);
  }
  for (const std::string &candidate : candidates)
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
  return nullptr;
}

/// Binds function pointers from one library; the first missing symbol is
/// remembered.
class Binder {
public:
  Binder(void *handle, std::string library)
      : handle(handle), library(std::move(library)) {}
  template <typename F> void operator()(F &fn, const char *symbol) {
    void *address = dlsym(handle, symbol);
    if (!address && missing.empty())
      missing = library + " lacks " + symbol;
    fn = reinterpret_cast<std::remove_reference_t<F>>(address);
  }
  bool complete() const { return missing.empty(); }
  const std::string &failure() const { return missing; }

private:
  void *handle;
  std::string library, missing;
};

} // namespace lruc::cuda::detail

#endif // LRUC_CUDA_DYNAMIC_H
