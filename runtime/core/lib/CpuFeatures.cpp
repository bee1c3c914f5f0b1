//===- CpuFeatures.cpp - The x86 extensions of this CPU -------------------===//
//
// Plain C inside: see CpuFeatures.h.
//
//===----------------------------------------------------------------------===//

#include "lruc/core/CpuFeatures.h"

#include <cstdio>
#include <cstring>

namespace lruc::core {
namespace {

/// Whether the `length` bytes at `name` spell `literal`.
bool spells(const char *name, size_t length, const char *literal) {
  return std::strlen(literal) == length &&
         std::memcmp(name, literal, length) == 0;
}

bool isSeparator(char c) { return c == ' ' || c == '\0'; }

/// Appends the `length` bytes at `text` to the NUL-terminated string in
/// `out` (`size` bytes), as much as fits.
void append(char *out, size_t size, const char *text, size_t length) {
  if (size == 0)
    return;
  size_t at = std::strlen(out);
  if (length > size - 1 - at)
    length = size - 1 - at;
  std::memcpy(out + at, text, length);
  out[at + length] = '\0';
}

} // namespace

bool cpuSupports(const char *name, size_t length) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Before any question: a library may be loaded before the runtime's
  // constructor that fills in what the CPU has ran.
  __builtin_cpu_init();
  // __builtin_cpu_supports takes a literal: one line per name of
  // LRUC_CPU_FEATURES_COMPILED.
#define LRUC_CPU_CHECK(literal)                                                \
  if (spells(name, length, literal))                                           \
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
  (void)length;
#endif
  return true;
}

int missingCpuFeatures(const char *records, size_t bytes,
                       bool (*supports)(const char *name, size_t length),
                       char *names, size_t size) {
  if (size > 0)
    names[0] = '\0';
  // The names found missing so far, for the once each (only names
  // cpuSupports knows can be missing: fewer than this).
  constexpr int kMostMissing = 64;
  const char *found[kMostMissing];
  size_t foundLength[kMostMissing];
  int count = 0;
  size_t at = 0;
  while (at < bytes) {
    size_t end = at;
    while (end < bytes && !isSeparator(records[end]))
      ++end;
    const char *name = records + at;
    const size_t length = end - at;
    at = end + 1;
    if (length == 0 || supports(name, length))
      continue;
    bool seen = false;
    for (int i = 0; i < count && !seen; ++i)
      seen =
          foundLength[i] == length && std::memcmp(found[i], name, length) == 0;
    if (seen || count == kMostMissing)
      continue;
    if (count > 0)
      append(names, size, ", ", 2);
    append(names, size, name, length);
    found[count] = name;
    foundLength[count] = length;
    ++count;
  }
  return count;
}

bool describeMissingCpuFeatures(const char *records, size_t bytes,
                                char *message, size_t size) {
  char names[512];
  if (missingCpuFeatures(records, bytes, cpuSupports, names, sizeof names) == 0)
    return false;
  std::snprintf(message, size,
                "compiled for a CPU with %s, which this CPU lacks (a library "
                "is built for the machine that compiles it): compile it on "
                "this machine (`lruc model.lru -o model.so`), or with `lruc "
                "--portable` for any x86-64 CPU with AVX2 and FMA",
                names);
  return true;
}

} // namespace lruc::core
