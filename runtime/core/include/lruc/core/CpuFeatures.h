//===- CpuFeatures.h - The x86 extensions code was compiled for -*- C++ -*-===//
//
// A model library is compiled for the CPU of the machine that builds it
// (-march=native). Run on a CPU without one of the extensions its code
// uses, it would die of SIGILL at the first such instruction. So each part
// of a library (the generated model unit, the runtime's kernels) records
// the extensions it was compiled with in the ELF section `.lruc_cpu`
// (`LRUC_CPU_FEATURES_SECTION`), and the tools read that section from the
// file and compare it with the CPU they run on before they load it
// (runtime/host ModelLibrary). Plain C++17.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CORE_CPUFEATURES_H
#define LRUC_CORE_CPUFEATURES_H

#include <cstddef>
#include <string_view>

// The extensions a compiler targets, as names __builtin_cpu_supports knows
// (GCC's and Clang's alike), each followed by a space.
#ifdef __SSE4_1__
#define LRUC_CPU_SSE4_1 "sse4.1 "
#else
#define LRUC_CPU_SSE4_1 ""
#endif
#ifdef __SSE4_2__
#define LRUC_CPU_SSE4_2 "sse4.2 "
#else
#define LRUC_CPU_SSE4_2 ""
#endif
#ifdef __POPCNT__
#define LRUC_CPU_POPCNT "popcnt "
#else
#define LRUC_CPU_POPCNT ""
#endif
#ifdef __AVX__
#define LRUC_CPU_AVX "avx "
#else
#define LRUC_CPU_AVX ""
#endif
#ifdef __AVX2__
#define LRUC_CPU_AVX2 "avx2 "
#else
#define LRUC_CPU_AVX2 ""
#endif
#ifdef __FMA__
#define LRUC_CPU_FMA "fma "
#else
#define LRUC_CPU_FMA ""
#endif
#ifdef __BMI__
#define LRUC_CPU_BMI "bmi "
#else
#define LRUC_CPU_BMI ""
#endif
#ifdef __BMI2__
#define LRUC_CPU_BMI2 "bmi2 "
#else
#define LRUC_CPU_BMI2 ""
#endif
#ifdef __AVX512F__
#define LRUC_CPU_AVX512F "avx512f "
#else
#define LRUC_CPU_AVX512F ""
#endif
#ifdef __AVX512VL__
#define LRUC_CPU_AVX512VL "avx512vl "
#else
#define LRUC_CPU_AVX512VL ""
#endif
#ifdef __AVX512BW__
#define LRUC_CPU_AVX512BW "avx512bw "
#else
#define LRUC_CPU_AVX512BW ""
#endif
#ifdef __AVX512DQ__
#define LRUC_CPU_AVX512DQ "avx512dq "
#else
#define LRUC_CPU_AVX512DQ ""
#endif
#ifdef __AVX512CD__
#define LRUC_CPU_AVX512CD "avx512cd "
#else
#define LRUC_CPU_AVX512CD ""
#endif
#ifdef __AVX512VNNI__
#define LRUC_CPU_AVX512VNNI "avx512vnni "
#else
#define LRUC_CPU_AVX512VNNI ""
#endif
#ifdef __AVX512BF16__
#define LRUC_CPU_AVX512BF16 "avx512bf16 "
#else
#define LRUC_CPU_AVX512BF16 ""
#endif
#ifdef __AVX512VBMI__
#define LRUC_CPU_AVX512VBMI "avx512vbmi "
#else
#define LRUC_CPU_AVX512VBMI ""
#endif
#ifdef __AVX512VBMI2__
#define LRUC_CPU_AVX512VBMI2 "avx512vbmi2 "
#else
#define LRUC_CPU_AVX512VBMI2 ""
#endif
#ifdef __AVX512IFMA__
#define LRUC_CPU_AVX512IFMA "avx512ifma "
#else
#define LRUC_CPU_AVX512IFMA ""
#endif
#ifdef __AVX512BITALG__
#define LRUC_CPU_AVX512BITALG "avx512bitalg "
#else
#define LRUC_CPU_AVX512BITALG ""
#endif
#ifdef __AVX512VPOPCNTDQ__
#define LRUC_CPU_AVX512VPOPCNTDQ "avx512vpopcntdq "
#else
#define LRUC_CPU_AVX512VPOPCNTDQ ""
#endif
#ifdef __GFNI__
#define LRUC_CPU_GFNI "gfni "
#else
#define LRUC_CPU_GFNI ""
#endif
#ifdef __VPCLMULQDQ__
#define LRUC_CPU_VPCLMULQDQ "vpclmulqdq "
#else
#define LRUC_CPU_VPCLMULQDQ ""
#endif

/// The extensions the including translation unit is compiled for.
#define LRUC_CPU_FEATURES_COMPILED                                             \
  LRUC_CPU_SSE4_1 LRUC_CPU_SSE4_2 LRUC_CPU_POPCNT LRUC_CPU_AVX LRUC_CPU_AVX2   \
      LRUC_CPU_FMA LRUC_CPU_BMI LRUC_CPU_BMI2 LRUC_CPU_AVX512F                 \
          LRUC_CPU_AVX512VL LRUC_CPU_AVX512BW LRUC_CPU_AVX512DQ                \
              LRUC_CPU_AVX512CD LRUC_CPU_AVX512VNNI LRUC_CPU_AVX512BF16        \
                  LRUC_CPU_AVX512VBMI LRUC_CPU_AVX512VBMI2 LRUC_CPU_AVX512IFMA \
                      LRUC_CPU_AVX512BITALG LRUC_CPU_AVX512VPOPCNTDQ           \
                          LRUC_CPU_GFNI LRUC_CPU_VPCLMULQDQ

/// Records the including unit's extensions in its library's `.lruc_cpu`
/// section (the linker joins every unit's records, each ending in a NUL).
#define LRUC_CPU_FEATURES_SECTION(name)                                        \
  __attribute__((section(".lruc_cpu"), used)) static const char name[] =       \
      LRUC_CPU_FEATURES_COMPILED

namespace lruc::core {

/// The ELF section that holds a library's records.
inline constexpr std::string_view kCpuFeaturesSection = ".lruc_cpu";

// The functions below are plain C inside (no template or inline function of
// the standard library): a model library runs them when it is loaded
// (lruc::cpu::modelForThisCpu) on a CPU that may lack the extensions, and an
// inline function's one copy in the library may be the copy compiled for
// them.

/// Whether this CPU has the extension named by the `length` bytes at
/// `name` (one of the names above); true for names it does not know, and
/// on machines other than x86-64.
bool cpuSupports(const char *name, size_t length);

/// The extensions named in the `bytes` bytes of `records` (names separated
/// by spaces or NULs) that `supports` says the CPU lacks, each once, in the
/// order first named, joined by ", " into `names` (NUL-terminated, cut
/// short to fit `size` bytes); returns how many.
int missingCpuFeatures(const char *records, size_t bytes,
                       bool (*supports)(const char *name, size_t length),
                       char *names, size_t size);

/// Where this CPU lacks an extension named in `records` (cpuSupports):
/// writes why code compiled with them cannot run here and what to do into
/// `message` ("compiled for a CPU with avx512f, avx512bw, which this CPU
/// lacks ...", NUL-terminated, cut short to fit `size` bytes) and returns
/// true; else false, `message` untouched.
bool describeMissingCpuFeatures(const char *records, size_t bytes,
                                char *message, size_t size);

} // namespace lruc::core

#endif // LRUC_CORE_CPUFEATURES_H
