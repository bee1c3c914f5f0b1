//===- CoreTest.cpp - Randomness and parameter init of runtime/core -------===//
//
// Philox against Random123's published known-answer vectors (kat_vectors),
// then the properties of what is drawn from it: dropout masks keep the right
// fraction and are pure functions of their coordinates; each init kind has
// the distribution docs/dialect.md gives it. Statistical bounds are about
// six standard deviations wide, and the draws are deterministic, so these
// tests never flake. Last, the room under an address-space cap as read
// from /proc's texts, and the x86 extensions a library's records name
// that a CPU lacks.
//
//===----------------------------------------------------------------------===//

#include "lruc/core/AddressSpace.h"
#include "lruc/core/CpuFeatures.h"
#include "lruc/core/Init.h"
#include "lruc/core/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace lruc::core;

constexpr size_t kSamples = 100000;

TEST(Philox, KnownAnswerZeros) {
  PhiloxCounter out = philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out,
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, KnownAnswerOnes) {
  PhiloxCounter out =
      philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                 {0xffffffff, 0xffffffff});
  EXPECT_EQ(out,
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(Philox, KnownAnswerPi) {
  PhiloxCounter out =
      philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                 {0xa4093822, 0x299f31d0});
  EXPECT_EQ(out,
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Uniform, Ranges) {
  EXPECT_EQ(uniform24(0), 0.0);
  EXPECT_LT(uniform24(0xffffffff), 1.0);
  EXPECT_GT(uniformOpen(0), 0.0);
  EXPECT_LT(uniformOpen(0xffffffff), 1.0);
  EXPECT_EQ(uniform24(0x80000000), 0.5);
}

TEST(Fnv1a, KnownAnswers) {
  EXPECT_EQ(fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a32("foobar"), 0xbf9cf968u);
}

double keptFraction(uint64_t seed, uint32_t step, uint32_t site, double rate) {
  size_t kept = 0;
  for (uint64_t i = 0; i < kSamples; ++i)
    kept += dropoutKeep(seed, step, site, i, rate);
  return double(kept) / kSamples;
}

TEST(Dropout, KeepsOneMinusRate) {
  for (double rate : {0.1, 0.5}) {
    double sigma = std::sqrt(rate * (1 - rate) / kSamples);
    EXPECT_NEAR(keptFraction(42, 7, 3, rate), 1 - rate, 6 * sigma) << rate;
  }
  EXPECT_EQ(keptFraction(42, 7, 3, 0.0), 1.0);
}

TEST(Dropout, PureFunctionOfItsCoordinates) {
  for (uint64_t i = 0; i < 1000; ++i)
    EXPECT_EQ(dropoutKeep(5, 2, 1, i, 0.5), dropoutKeep(5, 2, 1, i, 0.5));
  // The index's high word, the site, the step and the seed each change it:
  // two independent masks at rate 0.5 agree on about half the elements.
  auto agreement = [](auto other) {
    size_t same = 0;
    for (uint64_t i = 0; i < kSamples; ++i)
      same += dropoutKeep(5, 2, 1, i, 0.5) == other(i);
    return double(same) / kSamples;
  };
  double sigma = std::sqrt(0.25 / kSamples);
  EXPECT_NEAR(agreement([](uint64_t i) {
                return dropoutKeep(5, 2, 1, i + (uint64_t(1) << 32), 0.5);
              }),
              0.5, 6 * sigma);
  EXPECT_NEAR(
      agreement([](uint64_t i) { return dropoutKeep(5, 2, 2, i, 0.5); }), 0.5,
      6 * sigma);
  EXPECT_NEAR(
      agreement([](uint64_t i) { return dropoutKeep(5, 3, 1, i, 0.5); }), 0.5,
      6 * sigma);
  EXPECT_NEAR(
      agreement([](uint64_t i) { return dropoutKeep(6, 2, 1, i, 0.5); }), 0.5,
      6 * sigma);
}

TEST(Dropout, FourElementsPerPhiloxCall) {
  // Elements 4k..4k+3 read the four words of the call at block k.
  PhiloxCounter words = philox4x32({3, 0, 1, 2}, {5, 0});
  for (uint64_t j = 0; j < 4; ++j)
    EXPECT_EQ(dropoutKeep(5, 2, 1, 12 + j, 0.5), uniform24(words[j]) >= 0.5);
}

TEST(Dropout, IntegerThresholdIsTheSameTest) {
  for (double rate : {0.0, 1e-9, 0.1, 0.25, 1.0 / 3, 0.5, 0.9, 1.0})
    for (uint32_t u : {0u, 255u, 256u, 0x80000000u, 0x7fffffffu, 0xffffffffu,
                       uint32_t(rate * 4294967295.0), 0x19999a00u, 0x19999900u})
      EXPECT_EQ((u >> 8) >= dropoutThreshold(rate), uniform24(u) >= rate)
          << rate << " " << u;
}

std::vector<double> init(const InitSpec &spec, const std::string &name,
                         uint64_t seed = 1, size_t n = kSamples) {
  std::vector<double> values(n);
  EXPECT_TRUE(initParameter(spec, name, seed, values));
  return values;
}

double mean(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return sum / v.size();
}

double stddev(const std::vector<double> &v) {
  double m = mean(v), sum = 0;
  for (double x : v)
    sum += (x - m) * (x - m);
  return std::sqrt(sum / v.size());
}

InitSpec normal(double std) {
  InitSpec spec;
  spec.kind = InitKind::Normal;
  spec.std = std;
  return spec;
}

TEST(Init, ZerosAndOnes) {
  InitSpec spec;
  EXPECT_EQ(init(spec, "z", 1, 5), std::vector<double>(5, 0.0));
  spec.kind = InitKind::Ones;
  EXPECT_EQ(init(spec, "o", 1, 5), std::vector<double>(5, 1.0));
}

TEST(Init, DeterministicAndRoundedToFloat) {
  std::vector<double> a = init(normal(0.5), "blocks.0.w", 7, 1000);
  EXPECT_EQ(a, init(normal(0.5), "blocks.0.w", 7, 1000));
  for (double x : a)
    EXPECT_EQ(x, double(float(x)));
  // Element i does not depend on the parameter's size.
  std::vector<double> prefix = init(normal(0.5), "blocks.0.w", 7, 10);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin()));
  EXPECT_NE(a, init(normal(0.5), "blocks.0.w", 8, 1000));
}

TEST(Init, NamesAreIndependentStreams) {
  std::vector<double> a = init(normal(1), "blocks.0.lru.B_re");
  std::vector<double> b = init(normal(1), "blocks.0.lru.B_im");
  double ma = mean(a), mb = mean(b), cov = 0;
  for (size_t i = 0; i < kSamples; ++i)
    cov += (a[i] - ma) * (b[i] - mb);
  double correlation = cov / kSamples / (stddev(a) * stddev(b));
  EXPECT_LT(std::abs(correlation), 6 / std::sqrt(double(kSamples)));
}

TEST(Init, NormalMeanAndStd) {
  std::vector<double> v = init(normal(0.3), "head.weight");
  EXPECT_NEAR(mean(v), 0.0, 6 * 0.3 / std::sqrt(double(kSamples)));
  // The sample std of n normals has relative error ~ 1/sqrt(2n).
  EXPECT_NEAR(stddev(v), 0.3, 6 * 0.3 / std::sqrt(2.0 * kSamples));
}

TEST(Init, UniformRange) {
  InitSpec spec;
  spec.kind = InitKind::Uniform;
  spec.low = -2;
  spec.high = 3;
  std::vector<double> v = init(spec, "u");
  for (double x : v) {
    ASSERT_GE(x, -2.0);
    ASSERT_LT(x, 3.0);
  }
  EXPECT_NEAR(mean(v), 0.5, 6 * 5 / std::sqrt(12.0 * kSamples));
}

TEST(Init, LruNuIsUniformOnTheRing) {
  InitSpec spec;
  spec.kind = InitKind::LruNu;
  spec.rMin = 0.4;
  spec.rMax = 0.9;
  std::vector<double> nu = init(spec, "blocks.0.lru.nu_log");
  std::vector<double> squared;
  for (double x : nu) {
    double magnitude = std::exp(-std::exp(x));
    ASSERT_GE(magnitude, 0.4 - 1e-6);
    ASSERT_LE(magnitude, 0.9 + 1e-6);
    squared.push_back(magnitude * magnitude);
  }
  // |λ|² is uniform on [r_min², r_max²] (Lemma 2 of the paper).
  double low = 0.16, high = 0.81;
  EXPECT_NEAR(mean(squared), (low + high) / 2,
              6 * (high - low) / std::sqrt(12.0 * kSamples));
}

// A ring whose radius squares to 0 in double still gives a finite nu_log
// (+inf would make its gradient NaN), of a radius within the ring.
TEST(Init, LruNuOfATinyRingIsFinite) {
  InitSpec spec;
  spec.kind = InitKind::LruNu;
  spec.rMin = 0;
  spec.rMax = 1e-200;
  for (double x : init(spec, "blocks.0.lru.nu_log")) {
    ASSERT_TRUE(std::isfinite(x));
    // |λ| = exp(-exp(x)) <= 1e-200: log |λ| = -exp(x) <= log(1e-200).
    ASSERT_GE(std::exp(x), -std::log(1e-200) * (1 - 1e-6));
  }
}

TEST(Init, LruThetaWithinMaxPhase) {
  InitSpec spec;
  spec.kind = InitKind::LruTheta;
  spec.maxPhase = 0.314;
  std::vector<double> theta = init(spec, "blocks.0.lru.theta_log");
  std::vector<double> phase;
  for (double x : theta) {
    phase.push_back(std::exp(x));
    ASSERT_GT(phase.back(), 0.0);
    ASSERT_LE(phase.back(), 0.314 * (1 + 1e-6));
  }
  EXPECT_NEAR(mean(phase), 0.157, 6 * 0.314 / std::sqrt(12.0 * kSamples));
}

TEST(Init, LruGammaNormalisesTheRing) {
  InitSpec nuSpec;
  nuSpec.kind = InitKind::LruNu;
  nuSpec.rMin = 0.5;
  nuSpec.rMax = 0.99;
  std::vector<double> nu = init(nuSpec, "nu", 3, 64);
  InitSpec gammaSpec;
  gammaSpec.kind = InitKind::LruGamma;
  gammaSpec.nu = "nu";
  gammaSpec.theta = "theta";
  std::vector<double> gamma(64);
  ASSERT_TRUE(initParameter(gammaSpec, "gamma", 3, gamma, &nu));
  for (size_t i = 0; i < nu.size(); ++i) {
    double magnitude = std::exp(-std::exp(nu[i]));
    EXPECT_EQ(gamma[i],
              double(float(std::log(std::sqrt(1 - magnitude * magnitude)))));
  }
  std::vector<double> wrongSize(3);
  EXPECT_FALSE(initParameter(gammaSpec, "gamma", 3, gamma, &wrongSize));
  EXPECT_FALSE(initParameter(gammaSpec, "gamma", 3, gamma, nullptr));
}

std::vector<ParameterDecl> ringDecls() {
  ParameterDecl gamma{"l.gamma_log", {}, 8};
  gamma.init.kind = InitKind::LruGamma;
  gamma.init.nu = "l.nu_log";
  gamma.init.theta = "l.theta_log";
  ParameterDecl nu{"l.nu_log", {}, 8};
  nu.init.kind = InitKind::LruNu;
  nu.init.rMin = 0.9;
  nu.init.rMax = 0.999;
  ParameterDecl w{"w", normal(1), 4};
  return {gamma, w, nu}; // gamma before its nu
}

TEST(Init, SetResolvesGammaAfterNu) {
  ParameterValues values;
  ASSERT_FALSE(initParameters(ringDecls(), 9, values).has_value());
  ASSERT_EQ(values.size(), 3u);
  std::vector<double> gamma(8);
  ASSERT_TRUE(initParameter(ringDecls()[0].init, "l.gamma_log", 9, gamma,
                            &values["l.nu_log"]));
  EXPECT_EQ(values["l.gamma_log"], gamma);
  EXPECT_EQ(values["w"], init(normal(1), "w", 9, 4));
}

TEST(Init, SetErrors) {
  ParameterValues values;
  std::vector<ParameterDecl> decls = ringDecls();
  decls[2].name = "l.other";
  std::optional<InitError> error = initParameters(decls, 9, values);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->param, "l.gamma_log");
  EXPECT_EQ(error->message, "derives from 'l.nu_log', which is not a nu "
                            "parameter");

  decls = ringDecls();
  decls[2].numElements = 7;
  error = initParameters(decls, 9, values);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message,
            "derives from 'l.nu_log', which has 7 elements, not 8");

  decls = ringDecls();
  decls.push_back(decls[1]);
  error = initParameters(decls, 9, values);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->param, "w");
  EXPECT_EQ(error->message, "is declared twice");
}

TEST(AddressSpace, LeftUnderACap) {
  const char *status = "Name:\tlru-train\nVmPeak:\t  900000 kB\n"
                       "VmSize:\t  800000 kB\n";
  EXPECT_FALSE(lruc::core::addressSpaceLeftFrom(status, std::nullopt));
  EXPECT_EQ(lruc::core::addressSpaceLeftFrom(status, uint64_t(1000000) * 1024),
            std::optional<uint64_t>(200000ull * 1024));
  EXPECT_EQ(lruc::core::addressSpaceLeftFrom(status, uint64_t(1024)),
            std::optional<uint64_t>(0));
  EXPECT_EQ(lruc::core::addressSpaceLeftFrom("", uint64_t(5000)),
            std::optional<uint64_t>(5000));
}

TEST(AddressSpace, ProcFileBytes) {
  const char *meminfo = "MemTotal:       24000000 kB\n"
                        "MemAvailable:   22000000 kB\n";
  EXPECT_EQ(lruc::core::procBytesAt(meminfo, "MemAvailable:"),
            std::optional<uint64_t>(22000000ull * 1024));
  EXPECT_FALSE(lruc::core::procBytesAt(meminfo, "MemFree:"));
  EXPECT_FALSE(lruc::core::procBytesAt("MemFree: lots\n", "MemFree:"));
  EXPECT_EQ(lruc::core::leadingNumber(" \t4294967296\n"),
            std::optional<uint64_t>(4294967296ull));
  EXPECT_FALSE(lruc::core::leadingNumber("max\n"));
  // This process: no cap unless the test runs under one.
  EXPECT_TRUE(lruc::core::procBytesAt(
                  lruc::core::readSmallFile("/proc/self/status"), "VmSize:")
                  .has_value());
}

// A CPU with AVX2 and FMA and no AVX-512, for the records below.
bool zen3(const char *name, size_t length) {
  const std::string_view n(name, length);
  return n.rfind("avx512", 0) != 0 && n != "gfni";
}

/// missingCpuFeatures' names on zen3, joined, and how many it counted.
std::pair<std::string, int> missingOnZen3(std::string_view records,
                                          size_t size = 256) {
  std::string names(size, 'x');
  const int count = missingCpuFeatures(records.data(), records.size(), zen3,
                                       names.data(), size);
  return {size > 0 ? std::string(names.c_str()) : names, count};
}

TEST(CpuFeatures, MissingOnesOnceInOrder) {
  // Two units' records, as the linker joins them (each ends in a NUL).
  const std::string records =
      std::string("avx avx2 fma avx512f avx512bw \0", 31) +
      std::string("avx2 gfni avx512f \0", 19);
  EXPECT_EQ(missingOnZen3(records),
            std::pair(std::string("avx512f, avx512bw, gfni"), 3));
  EXPECT_EQ(missingOnZen3("avx avx2 fma "), std::pair(std::string(), 0));
  // No records (a library of an lruc before them): nothing to refuse.
  EXPECT_EQ(missingOnZen3(""), std::pair(std::string(), 0));
  EXPECT_EQ(missingOnZen3(std::string(4, '\0')), std::pair(std::string(), 0));
  // Cut short to fit, still counted; nothing written into no room.
  EXPECT_EQ(missingOnZen3(records, 10), std::pair(std::string("avx512f, "), 3));
  EXPECT_EQ(missingOnZen3(records, 0).second, 3);
}

TEST(CpuFeatures, DescribedOnlyWhereMissing) {
  char message[512] = "untouched";
  // Extensions every x86-64 CPU has, and a name no check knows.
  EXPECT_FALSE(describeMissingCpuFeatures("sse4.1 \0later ", 15, message,
                                          sizeof message));
  EXPECT_STREQ(message, "untouched");
#if defined(__x86_64__) && defined(__linux__)
  if (cpuSupports("avx512f", 7))
    return;
  ASSERT_TRUE(
      describeMissingCpuFeatures("avx2 avx512f ", 13, message, sizeof message));
  EXPECT_EQ(std::string(message).rfind(
                "compiled for a CPU with avx512f, which this CPU lacks (a "
                "library is built for the machine that compiles it)",
                0),
            0u)
      << message;
#endif
}

TEST(CpuFeatures, AgreeWithTheKernelsFlags) {
#if !defined(__x86_64__) || !defined(__linux__)
  GTEST_SKIP() << "x86-64 Linux only";
#else
  // /proc/cpuinfo's names where they differ from __builtin_cpu_supports'.
  std::string text = readSmallFile("/proc/cpuinfo");
  const size_t flags = text.find("\nflags");
  ASSERT_NE(flags, std::string::npos);
  text = text.substr(flags, text.find('\n', flags + 1) - flags) + " ";
  const std::pair<const char *, const char *> names[] = {
      {"sse4.1", "sse4_1"},
      {"sse4.2", "sse4_2"},
      {"popcnt", "popcnt"},
      {"avx", "avx"},
      {"avx2", "avx2"},
      {"fma", "fma"},
      {"bmi", "bmi1"},
      {"bmi2", "bmi2"},
      {"avx512f", "avx512f"},
      {"avx512vl", "avx512vl"},
      {"avx512bw", "avx512bw"},
      {"avx512dq", "avx512dq"},
      {"avx512cd", "avx512cd"},
      {"avx512vnni", "avx512_vnni"},
      {"avx512bf16", "avx512_bf16"},
      {"avx512vbmi", "avx512vbmi"},
      {"avx512vbmi2", "avx512_vbmi2"},
      {"avx512ifma", "avx512ifma"},
      {"avx512bitalg", "avx512_bitalg"},
      {"avx512vpopcntdq", "avx512_vpopcntdq"},
      {"gfni", "gfni"},
      {"vpclmulqdq", "vpclmulqdq"}};
  for (const auto &[name, flag] : names)
    EXPECT_EQ(cpuSupports(name, std::strlen(name)),
              text.find(" " + std::string(flag) + " ") != std::string::npos)
        << name;
  // A name it does not know counts as present; a name is its bytes alone.
  EXPECT_TRUE(cpuSupports("a-name-no-cpu-has", 17));
  EXPECT_EQ(cpuSupports("avx512f", 3), cpuSupports("avx", 3));
#endif
}

} // namespace
