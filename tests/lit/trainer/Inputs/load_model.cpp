// A user's program that loads a model library with dlopen, as
// runtime/include/lruc_model.h describes, and initialises its parameters;
// where that fails, also tries a train step (each entry point says why).
#include "lruc_model.h"

#include <dlfcn.h>

#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_model LIBRARY\n");
    return 2;
  }
  void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  auto get = reinterpret_cast<const lruc_model *(*)(uint32_t)>(
      dlsym(handle, "lruc_model_get"));
  const lruc_model *model = get ? get(LRUC_ABI_VERSION) : nullptr;
  if (!model) {
    std::fprintf(stderr, "not an lruc model library\n");
    return 2;
  }
  std::printf("model %s: %llu parameters\n", model->name,
              (unsigned long long)model->param_floats);
  std::vector<float> params(model->param_floats), state(model->state_floats);
  char error[1024];
  if (model->init(7, params.data(), state.data(), error, sizeof error) == 0) {
    std::printf("init: ok\n");
    return 0;
  }
  std::printf("init: %s\n", error);
  const int64_t key[2] = {0, 0};
  if (model->train_step(1, nullptr, nullptr, nullptr, nullptr, 0.1f, 1.0f,
                        nullptr, key, nullptr, error, sizeof error) != 0)
    std::printf("train_step: %s\n", error);
  return 1;
}
