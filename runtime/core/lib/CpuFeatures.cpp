//===- CpuFeatures.cpp - The x86 extensions of this CPU -------------------===//

#include "lruc/core/CpuFeatures.h"

#include <algorithm>

namespace lruc::core {

std::vector<std::string>
missingCpuFeatures(std::string_view records,
                   bool (*supports)(std::string_view name)) {
  std::vector<std::string> missing;
  size_t at = 0;
  while (at < records.size()) {
    const size_t end = std::min(
        records.find_first_of(std::string_view(" \0", 2), at), records.size());
    const std::string_view name = records.substr(at, end - at);
    at = end + 1;
    if (name.empty() || supports(name) ||
        std::find(missing.begin(), missing.end(), name) != missing.end())
      continue;
    missing.emplace_back(name);
  }
  return missing;
}

bool cpuSupports(std::string_view name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports takes a literal: one line per name of
  // LRUC_CPU_FEATURES_COMPILED.
#define LRUC_CPU_CHECK(literal)                                                \
  if (name == literal)                                                         \
    return __builtin_cpu_supports(literal) != 0;
  LRUC_CPU_CHECK("sse4.1")
  LRUC_CPU_CHECK("sse4.2")
  LRUC_CPU_CHECK("popcnt")
  LRUC_CPU_CHECK("avx")
  LRUC_CPU_CHECK("avx2")
  LRUC_CPU_CHECK("fma")
  LRUC_CPU_CHECK("bmi")
  LRUC_CPU_CHECK("bmi2")
  LRUC_CPU_CHECK("avx512f")
  LRUC_CPU_CHECK("avx512vl")
  LRUC_CPU_CHECK("avx512bw")
  LRUC_CPU_CHECK("avx512dq")
  LRUC_CPU_CHECK("avx512cd")
  LRUC_CPU_CHECK("avx512vnni")
  LRUC_CPU_CHECK("avx512bf16")
  LRUC_CPU_CHECK("avx512vbmi")
  LRUC_CPU_CHECK("avx512vbmi2")
  LRUC_CPU_CHECK("avx512ifma")
  LRUC_CPU_CHECK("avx512bitalg")
  LRUC_CPU_CHECK("avx512vpopcntdq")
  LRUC_CPU_CHECK("gfni")
  LRUC_CPU_CHECK("vpclmulqdq")
#undef LRUC_CPU_CHECK
#else
  (void)name;
#endif
  return true;
}

} // namespace lruc::core
