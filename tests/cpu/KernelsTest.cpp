//===- KernelsTest.cpp - The CPU kernels against the fp64 interpreter -----===//
//
// Each kernel of runtime/cpu on deterministic inputs, against the same
// primitive run by the fp64 reference interpreter: a one-op function is
// written as IR text, interpreted in double precision on the very float
// values the kernel gets, and the kernel's fp32 result is compared with it.
//
// Tolerance: |kernel − reference| ≤ rtol · max(|reference|, floor), floor 1
// unless a test says otherwise (values of order 1 are compared relatively,
// values near 0 absolutely, where a float result's error is that of the
// order-1 terms it was computed from). rtol is 1e-5 for elementwise work and
// short sums (a few float roundings, each ≤ 2^-24 ≈ 6e-8, of terms of order
// 1; copies and masks are exact); looser for the long scans, where the
// state's rounding errors persist for ~1/(1 − |λ|) steps (see LongScans).
//
//===----------------------------------------------------------------------===//

#include "lruc/cpu/Kernels.h"
#include "lruc/core/Random.h"

#include "lruc/Interpreter.h"

#include "lru/LRUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using lruc::Tensor;
using lruc::cpu::cfloat;
using lruc::cpu::Shape;
using Dims = std::vector<int64_t>;

constexpr double kRtol = 1e-5;
constexpr double kScanRtol = 1e-4; // 2048-step scans: see LongScans

//===----------------------------------------------------------------------===//
// Values, types and comparisons
//===----------------------------------------------------------------------===//

int64_t count(const Dims &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

Shape shapeOf(const Dims &dims) {
  Shape shape;
  shape.rank = int(dims.size());
  std::copy(dims.begin(), dims.end(), shape.dims);
  return shape;
}

template <class T> std::string elementName() {
  return std::is_same_v<T, cfloat> ? "complex<f32>" : "f32";
}

/// "tensor<2x3xf32>" for dims {2, 3}.
std::string typeOf(const Dims &dims, const std::string &element) {
  std::string text = "tensor<";
  for (int64_t d : dims)
    text += std::to_string(d) + "x";
  return text + element + ">";
}
template <class T> std::string typeOf(const Dims &dims) {
  return typeOf(dims, elementName<T>());
}

std::string join(const Dims &values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text;
}

/// Deterministic, irregular floats in (-scale, scale).
std::vector<float> wave(int64_t n, double phase, double scale = 1) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = float(scale * 0.9 * std::sin(1.7 * double(i) + phase));
  return v;
}

/// Values of T: real ones from `wave`, complex ones from two waves.
template <class T>
std::vector<T> values(int64_t n, double phase, double scale = 1) {
  std::vector<float> re = wave(n, phase, scale);
  if constexpr (std::is_same_v<T, float>) {
    return re;
  } else {
    std::vector<float> im = wave(n, phase + 2.1, scale);
    std::vector<cfloat> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = {re[i], im[i]};
    return v;
  }
}

Tensor tensorOf(const Dims &dims, const std::vector<float> &v) {
  return Tensor::real(dims, std::vector<double>(v.begin(), v.end()));
}
Tensor tensorOf(const Dims &dims, const std::vector<cfloat> &v) {
  std::vector<double> re, im;
  for (cfloat c : v) {
    re.push_back(c.real());
    im.push_back(c.imag());
  }
  return Tensor::complex(dims, re, im);
}
Tensor tensorOf(const Dims &dims, const std::vector<int32_t> &v) {
  return Tensor::integers(dims, std::vector<int64_t>(v.begin(), v.end()));
}

/// Checks that `actual` is `reference` exactly (copies, masks).
template <class T>
void expectExact(const std::vector<T> &actual, const Tensor &reference) {
  ASSERT_EQ(int64_t(actual.size()), reference.numElements());
  ASSERT_EQ(reference.kind == Tensor::Kind::Complex,
            (std::is_same_v<T, cfloat>));
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_EQ(double(std::real(actual[i])), reference.re[i]) << "element " << i;
    if constexpr (std::is_same_v<T, cfloat>) {
      ASSERT_EQ(double(actual[i].imag()), reference.im[i]) << "element " << i;
    }
  }
}

/// Checks |actual − reference| ≤ rtol · max(|reference|, floor) element by
/// element (complex values by their modulus) and reports the worst one.
template <class T>
void expectClose(const std::vector<T> &actual, const Tensor &reference,
                 double rtol = kRtol, double floor = 1) {
  ASSERT_EQ(int64_t(actual.size()), reference.numElements());
  ASSERT_EQ(reference.kind == Tensor::Kind::Complex,
            (std::is_same_v<T, cfloat>));
  double worst = 0;
  size_t worstAt = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    std::complex<double> ref(reference.re[i], std::is_same_v<T, cfloat>
                                                  ? reference.im[i]
                                                  : 0.0);
    std::complex<double> got(std::real(actual[i]), std::imag(actual[i]));
    double error = std::abs(got - ref);
    double ratio =
        error == 0 ? 0 : error / (rtol * std::max(std::abs(ref), floor));
    if (!(ratio <= worst)) { // also catches NaN
      worst = ratio;
      worstAt = i;
      if (std::isnan(ratio))
        break;
    }
  }
  EXPECT_LE(worst, 1.0) << "element " << worstAt << ": kernel "
                        << actual[worstAt] << ", reference "
                        << reference.re[worstAt]
                        << (std::is_same_v<T, cfloat>
                                ? " + i " + std::to_string(
                                                reference.im[worstAt])
                                : std::string())
                        << " (error " << worst << " times the tolerance)";
}

/// A module with one function @f(args) -> result whose body ends in `%y`.
std::string fn(const std::string &args, const std::string &result,
               const std::string &body) {
  return "func.func @f(" + args + ") -> " + result + " {\n  " + body +
         "\n  return %y : " + result + "\n}\n";
}

//===----------------------------------------------------------------------===//
// The fixture: the interpreter on one-op functions
//===----------------------------------------------------------------------===//

class CpuKernels : public ::testing::Test {
protected:
  CpuKernels() {
    context_.loadDialect<lru::LRUDialect, mlir::func::FuncDialect,
                         mlir::arith::ArithDialect>();
  }

  /// Interprets @f of `text` on `args`, expecting success; its result.
  Tensor reference(const std::string &text, std::vector<Tensor> args) {
    SCOPED_TRACE(text);
    diagnostics_.clear();
    module_ = mlir::parseSourceString<mlir::ModuleOp>(text, &context_);
    EXPECT_TRUE(module_) << diagnostics_;
    if (!module_)
      return {};
    auto f = module_->lookupSymbol<mlir::func::FuncOp>("f");
    auto results = lruc::interpret(f, args, {});
    EXPECT_TRUE(mlir::succeeded(results)) << diagnostics_;
    return mlir::succeeded(results) ? (*results)[0] : Tensor{};
  }

  // Each checks a kernel against the interpreter on one case.
  template <class T> void checkBroadcast(Dims x, Dims dims, Dims y);
  template <class T> void checkReduceSum(Dims x, Dims dims, double rtol);
  template <class T> void checkConcat(std::vector<Dims> parts, int dim);
  template <class T> void checkSlice(Dims x, int dim, int64_t offset,
                                     int64_t size);
  template <class T> void checkShift(bool reverse, bool withInit,
                                     bool withLengths);
  template <class T>
  void checkScan(const std::vector<T> &lambda, bool perStep,
                 const std::vector<T> &b, const std::vector<T> *init,
                 const std::vector<int32_t> *lengths, bool reverse,
                 int64_t batch, int64_t steps, int64_t width, double rtol,
                 double floor);

  mlir::MLIRContext context_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  std::string diagnostics_;
  mlir::ScopedDiagnosticHandler handler_{&context_, [this](mlir::Diagnostic &d) {
                                           diagnostics_ += d.str() + "\n";
                                           return mlir::success();
                                         }};
};

//===----------------------------------------------------------------------===//
// Scalar functions
//===----------------------------------------------------------------------===//

/// -40..40 in steps of 1/8, and large and tiny magnitudes of both signs.
std::vector<float> scalarInputs() {
  std::vector<float> x;
  for (int i = -320; i <= 320; ++i)
    x.push_back(float(i) / 8);
  for (float v : {1e-30f, 1e-6f, 1e-3f, 88.0f, 89.0f, 100.0f, 1e4f, 1e6f,
                  1e19f, 1e20f, 1e30f, 3e38f})
    for (float sign : {-1.0f, 1.0f})
      x.push_back(sign * v);
  return x;
}

/// lruc::cpu::exp (libm-free, so that loops vectorise): relative error below
/// 1e-6 where e^x is a normal float, inf above, 0 below, NaN for NaN.
TEST_F(CpuKernels, Exp) {
  std::vector<float> x = scalarInputs();
  for (float v : {88.7f, 88.72f, -87.3f, -87.33f, 0.34657359f, -0.34657359f})
    x.push_back(v);
  Dims dims = {int64_t(x.size())};
  std::string t = typeOf<float>(dims);
  Tensor ref = reference(fn("%x: " + t, t, "%y = lru.exp %x : " + t),
                         {tensorOf(dims, x)});
  for (size_t i = 0; i < x.size(); ++i) {
    float got = lruc::cpu::exp(x[i]);
    double expected = ref.re[i];
    if (expected > double(std::numeric_limits<float>::max()))
      EXPECT_EQ(got, std::numeric_limits<float>::infinity()) << x[i];
    else if (expected < double(std::numeric_limits<float>::min()))
      EXPECT_EQ(got, 0.0f) << x[i];
    else
      EXPECT_LE(std::abs(got - expected), 1e-6 * expected)
          << "exp(" << x[i] << "): " << got << ", reference " << expected;
  }
  EXPECT_TRUE(std::isnan(lruc::cpu::exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST_F(CpuKernels, ScalarFunctions) {
  std::vector<float> x = scalarInputs();
  Dims dims = {int64_t(x.size())};
  std::string t = typeOf<float>(dims);
  auto check = [&](const std::string &op, float (*kernel)(float),
                   bool relativeToX, double floor) {
    SCOPED_TRACE(op);
    Tensor ref =
        reference(fn("%x: " + t, t, "%y = lru." + op + " : " + t),
                  {tensorOf(dims, x)});
    ASSERT_EQ(ref.numElements(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      float got = kernel(x[i]);
      ASSERT_TRUE(std::isfinite(got)) << op << " at " << x[i];
      double scale = std::max(std::abs(ref.re[i]), floor);
      if (relativeToX)
        scale = std::max(scale, double(std::abs(x[i])));
      EXPECT_LE(std::abs(got - ref.re[i]), kRtol * scale)
          << op << " at " << x[i] << ": kernel " << got << ", reference "
          << ref.re[i];
    }
  };
  // sigmoid and softplus are computed without cancellation: relative to
  // the value itself, down to float's smallest normal number (sigmoid(-89)
  // is a denormal 2e-39 that float's e^89 = inf turns into 0).
  double normal = double(std::numeric_limits<float>::min()) / kRtol;
  check("sigmoid %x", lruc::cpu::sigmoid, false, normal);
  check("softplus %x", lruc::cpu::softplus, false, normal);
  // gelu = ½ x (1 + erf(x/√2)) loses (1 + erf) to cancellation for x < 0:
  // an error of ~2^-24 |x|, so relative to max(|gelu(x)|, |x|).
  check(
      "gelu %x", [](float v) { return lruc::cpu::gelu(v, false); }, true, 0);
  check(
      "gelu %x approximate",
      [](float v) { return lruc::cpu::gelu(v, true); }, true, 0);
  // gelu' = Φ(x) + x φ(x) likewise, with terms of order 1.
  check(
      "gelu_grad %x", [](float v) { return lruc::cpu::geluGrad(v, false); },
      false, 1);
  check(
      "gelu_grad %x approximate",
      [](float v) { return lruc::cpu::geluGrad(v, true); }, false, 1);
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

template <class T> void CpuKernels::checkBroadcast(Dims x, Dims dims, Dims y) {
  SCOPED_TRACE("broadcast " + typeOf<T>(x) + " dims [" + join(dims) +
               "] to " + typeOf<T>(y));
  std::vector<T> input = values<T>(count(x), 0.3);
  std::string like = typeOf(y, "f32");
  Tensor ref = reference(
      fn("%x: " + typeOf<T>(x) + ", %like: " + like, typeOf<T>(y),
         "%y = lru.broadcast %x like %like dims [" + join(dims) + "] : (" +
             typeOf<T>(x) + ", " + like + ") -> " + typeOf<T>(y)),
      {tensorOf(x, input), Tensor::zeros(y, Tensor::Kind::Real)});
  std::vector<T> out(size_t(count(y)), T(-7));
  lruc::cpu::broadcast<T>(input.data(), shapeOf(x), dims.data(), out.data(),
                          shapeOf(y));
  expectExact(out, ref); // a copy
}

TEST_F(CpuKernels, Broadcast) {
  auto both = [&](Dims x, Dims dims, Dims y) {
    checkBroadcast<float>(x, dims, y);
    checkBroadcast<cfloat>(x, dims, y);
  };
  both({3}, {1}, {2, 3});                      // rows
  both({2}, {0}, {2, 3});                      // columns
  both({}, {}, {2, 3});                        // a scalar
  both({}, {}, {});                            // scalar to scalar
  both({4}, {0}, {4});                         // identity
  both({2, 3, 4}, {0, 1, 2}, {2, 3, 4});       // identity, merged
  both({2, 4}, {0, 2}, {2, 3, 4});             // the middle dim repeats
  both({3, 4}, {1, 2}, {2, 3, 4});             // the first dim repeats
  both({2, 3}, {0, 1}, {2, 3, 4});             // the last dim repeats
  both({4}, {1}, {2, 4, 3});                   // one dim inside two
  both({5}, {2}, {2, 1, 5});                   // a size-1 dim
  both({2, 3}, {1, 3}, {2, 2, 2, 3, 2});       // rank 5, alternating
  both({2, 2}, {0, 5}, {2, 3, 1, 2, 3, 2});    // rank 6
  both({3}, {1}, {0, 3});                      // empty result
}

template <class T>
void CpuKernels::checkReduceSum(Dims x, Dims dims, double rtol) {
  SCOPED_TRACE("reduce_sum " + typeOf<T>(x) + " dims [" + join(dims) + "]");
  Dims y;
  uint32_t mask = 0;
  for (int64_t d : dims)
    mask |= 1u << d;
  for (size_t d = 0; d < x.size(); ++d)
    if (!(mask >> d & 1u))
      y.push_back(x[d]);
  std::vector<T> input = values<T>(count(x), 0.7);
  Tensor ref = reference(fn("%x: " + typeOf<T>(x), typeOf<T>(y),
                            "%y = lru.reduce_sum %x dims [" + join(dims) +
                                "] : " + typeOf<T>(x) + " -> " +
                                typeOf<T>(y)),
                         {tensorOf(x, input)});
  std::vector<T> out(size_t(count(y)), T(-7));
  lruc::cpu::reduceSum<T>(input.data(), shapeOf(x), mask, out.data());
  expectClose(out, ref, rtol);
}

TEST_F(CpuKernels, ReduceSum) {
  for (bool complex : {false, true}) {
    auto check = [&](Dims x, Dims dims, double rtol = kRtol) {
      if (complex)
        checkReduceSum<cfloat>(x, dims, rtol);
      else
        checkReduceSum<float>(x, dims, rtol);
    };
    // Every subset of the dims of a rank-3 tensor (up to 60 terms a sum).
    for (uint32_t mask = 0; mask < 8; ++mask) {
      Dims dims;
      for (int64_t d = 0; d < 3; ++d)
        if (mask >> d & 1u)
          dims.push_back(d);
      check({3, 4, 5}, dims);
    }
    check({2, 3, 4, 5}, {0, 2});
    check({2, 3, 4, 5}, {1, 3});
    check({2, 3, 4, 5}, {0, 1, 3});
    check({2, 1, 4}, {1});
    check({7}, {0});
    check({}, {});
    check({0, 3}, {0}); // an empty sum is 0
    // BatchNorm's statistics: [B, L, H] over B and L, 2048 terms a sum.
    // Summed in order in float, the error grows like √n · 2^-24 of Σ|x|
    // (~1000 here, against sums of order 10), up to n · 2^-24 if the
    // roundings agree in sign: 1e-4 of max(|sum|, 1); measured 2e-6.
    check({8, 256, 6}, {0, 1}, 1e-4);
    check({8, 256, 6}, {1, 2}, 1e-4);
  }
}

// A fused group's sums are completed by sumPartials: the rows of partial
// sums added in row order, in double, into the first row; none gives 0.
TEST(CpuSums, SumPartialsAddsTheRowsInOrderIntoTheFirst) {
  for (int64_t width : {1, 3, 64, 65, 200}) {
    for (int64_t chunks : {0, 1, 2, 37}) {
      SCOPED_TRACE("width " + std::to_string(width) + ", chunks " +
                   std::to_string(chunks));
      std::vector<float> rows(size_t(std::max<int64_t>(chunks, 1) * width));
      std::vector<double> expected(size_t(width), 0.0);
      for (int64_t c = 0; c < chunks; ++c)
        for (int64_t j = 0; j < width; ++j) {
          // Terms that float sums would lose: 1e8 and then small ones.
          float v = c == 0 ? 1e8f : float(0.25 + 0.001 * double(j % 7));
          rows[size_t(c * width + j)] = v;
          expected[size_t(j)] += double(v);
        }
      if (chunks == 0)
        std::fill(rows.begin(), rows.end(), 5.0f); // must become 0
      lruc::cpu::sumPartials(rows.data(), chunks, width);
      for (int64_t j = 0; j < width; ++j)
        EXPECT_EQ(rows[size_t(j)], float(expected[size_t(j)])) << "column " << j;
    }
  }
}

template <class T> void CpuKernels::checkConcat(std::vector<Dims> parts,
                                               int dim) {
  Dims y = parts[0];
  y[size_t(dim)] = 0;
  std::string args, operands, types;
  std::vector<Tensor> inputs;
  std::vector<std::vector<T>> data;
  std::vector<Shape> shapes;
  for (size_t p = 0; p < parts.size(); ++p) {
    y[size_t(dim)] += parts[p][size_t(dim)];
    std::string name = "%a" + std::to_string(p);
    args += (p ? ", " : "") + name + ": " + typeOf<T>(parts[p]);
    operands += (p ? ", " : "") + name;
    types += (p ? ", " : "") + typeOf<T>(parts[p]);
    data.push_back(values<T>(count(parts[p]), 0.5 + double(p)));
    inputs.push_back(tensorOf(parts[p], data.back()));
    shapes.push_back(shapeOf(parts[p]));
  }
  std::string text = fn(args, typeOf<T>(y),
                        "%y = lru.concat " + operands + " dim " +
                            std::to_string(dim) + " : (" + types + ") -> " +
                            typeOf<T>(y));
  SCOPED_TRACE(text);
  Tensor ref = reference(text, inputs);
  std::vector<const T *> pointers;
  for (const std::vector<T> &d : data)
    pointers.push_back(d.data());
  std::vector<T> out(size_t(count(y)), T(-7));
  lruc::cpu::concat<T>(pointers.data(), shapes.data(), int(parts.size()), dim,
                       out.data());
  expectExact(out, ref);
}

template <class T>
void CpuKernels::checkSlice(Dims x, int dim, int64_t offset, int64_t size) {
  Dims y = x;
  y[size_t(dim)] = size;
  std::string text =
      fn("%x: " + typeOf<T>(x), typeOf<T>(y),
         "%y = lru.slice %x dim " + std::to_string(dim) + " offset " +
             std::to_string(offset) + " size " + std::to_string(size) + " : " +
             typeOf<T>(x) + " -> " + typeOf<T>(y));
  SCOPED_TRACE(text);
  std::vector<T> input = values<T>(count(x), 0.9);
  Tensor ref = reference(text, {tensorOf(x, input)});
  std::vector<T> out(size_t(count(y)), T(-7));
  lruc::cpu::slice<T>(input.data(), shapeOf(x), dim, offset, size, out.data());
  expectExact(out, ref);
}

TEST_F(CpuKernels, ConcatAndSlice) {
  auto both = [&](auto check) {
    check(float());
    check(cfloat());
  };
  both([&](auto zero) {
    using T = decltype(zero);
    checkConcat<T>({{2, 3, 4}, {1, 3, 4}, {3, 3, 4}}, 0);
    checkConcat<T>({{2, 1, 4}, {2, 3, 4}, {2, 2, 4}}, 1);
    checkConcat<T>({{2, 3, 1}, {2, 3, 2}, {2, 3, 5}}, 2);
    checkConcat<T>({{3}, {4}}, 0);
    checkConcat<T>({{2, 0, 3}, {2, 2, 3}}, 1); // an empty part
    checkConcat<T>({{2, 5}}, 1);               // one part
    checkSlice<T>({4, 5, 3}, 0, 1, 2);
    checkSlice<T>({4, 5, 3}, 1, 2, 3);
    checkSlice<T>({4, 5, 3}, 2, 1, 1);
    checkSlice<T>({4, 5, 3}, 1, 0, 5); // all of it
    checkSlice<T>({6}, 0, 4, 2);
  });
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

TEST_F(CpuKernels, LengthMask) {
  const int64_t batch = 5, steps = 8;
  std::vector<int32_t> lengths = {0, 3, 8, 1, 7};
  std::string result = typeOf({batch, steps}, "f32");
  for (bool last : {false, true}) {
    std::string kind = last ? "last" : "prefix";
    Tensor ref = reference(fn("%len: tensor<5xi32>", result,
                              "%y = lru.length_mask " + kind +
                                  " %len : tensor<5xi32> -> " + result),
                           {tensorOf({batch}, lengths)});
    std::vector<float> out(static_cast<size_t>(batch * steps), -7);
    std::string error;
    ASSERT_TRUE(lruc::cpu::lengthMask(lengths.data(), nullptr, batch, steps,
                                      last, out.data(), error))
        << error;
    expectExact(out, ref);
  }
  // Scored: real steps whose label is not negative.
  std::vector<int32_t> labels(size_t(batch * steps), 1);
  for (size_t k = 0; k < labels.size(); k += 3)
    labels[k] = k % 2 ? -100 : -1;
  Tensor ref = reference(
      fn("%len: tensor<5xi32>, %k: " + typeOf({batch, steps}, "i32"), result,
         "%y = lru.length_mask prefix %len scored %k : "
         "tensor<5xi32>, " +
             typeOf({batch, steps}, "i32") + " -> " + result),
      {tensorOf({batch}, lengths), tensorOf({batch, steps}, labels)});
  std::vector<float> out(static_cast<size_t>(batch * steps), -7);
  std::string error;
  ASSERT_TRUE(lruc::cpu::lengthMask(lengths.data(), labels.data(), batch, steps,
                                    false, out.data(), error))
      << error;
  expectExact(out, ref);
  EXPECT_EQ(std::count(out.begin(), out.end(), 1.0f), 13); // of 19 real
}

TEST_F(CpuKernels, ZeroPadding) {
  // [5, 8, 2] integers, none 0: kept up to each length, 0 past it
  // (negative and large values there too).
  const int64_t batch = 5, steps = 8, width = 2;
  std::vector<int32_t> lengths = {0, 3, 8, 1, 7};
  std::vector<int32_t> x(size_t(batch * steps * width));
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = k % 3 ? int32_t(k) * 1000003 : -1 - int32_t(k);
  std::string t = typeOf({batch, steps, width}, "i32");
  Tensor ref = reference(
      fn("%x: " + t + ", %len: tensor<5xi32>", t,
         "%y = lru.zero_padding %x, %len : " + t + ", tensor<5xi32>"),
      {tensorOf({batch, steps, width}, x), tensorOf({batch}, lengths)});
  std::vector<int32_t> out(x.size(), 7);
  std::string error;
  ASSERT_TRUE(lruc::cpu::zeroPadding(x.data(), lengths.data(), batch, steps,
                                     width, out.data(), error))
      << error;
  EXPECT_EQ(std::vector<int64_t>(out.begin(), out.end()), ref.ints);
  EXPECT_EQ(std::count(out.begin(), out.end(), 0), width * (40 - 19));
  EXPECT_EQ(out[size_t(2 * steps * width)], x[size_t(2 * steps * width)]);
}

TEST_F(CpuKernels, LabelWeight) {
  // Labels in range, negative (not scored) and past the classes: 0.
  std::vector<int32_t> labels = {0, 2, 1, -1, 3, -100, 2, 0};
  std::vector<float> weights = {0.5f, 0.0f, 2.25f};
  const int64_t count = int64_t(labels.size());
  std::string t = typeOf({2, 4}, "i32"), result = typeOf({2, 4}, "f32");
  Tensor ref = reference(fn("%k: " + t, result,
                            "%y = lru.label_weight %k weights [0.5, 0.0, "
                            "2.25] : " +
                                t + " -> " + result),
                         {tensorOf({2, 4}, labels)});
  std::vector<float> out(size_t(count), -7);
  lruc::cpu::labelWeight(labels.data(), count, weights.data(),
                         int64_t(weights.size()), out.data());
  expectExact(out, ref);
  EXPECT_EQ(out, (std::vector<float>{0.5f, 2.25f, 0, 0, 0, 0, 2.25f, 0.5f}));
}

/// Sequences [3, 6, 20]: 20 channels cover a full block of the scan's 16
/// and a remainder; lengths full, partial and empty.
constexpr int64_t kBatch = 3, kSteps = 6, kWidth = 20;
const std::vector<int32_t> kLengths = {6, 3, 0};

template <class T>
void CpuKernels::checkShift(bool reverse, bool withInit, bool withLengths) {
  Dims seq = {kBatch, kSteps, kWidth}, state = {kBatch, kWidth};
  std::string operands = std::string(withInit ? " init %i" : "") +
                         (withLengths ? " lengths %len" : "") +
                         (reverse ? " reverse" : "");
  std::string types = typeOf<T>(seq) +
                      (withInit ? ", " + typeOf<T>(state) : "") +
                      (withLengths ? ", tensor<3xi32>" : "");
  std::string text =
      fn("%x: " + typeOf<T>(seq) + ", %i: " + typeOf<T>(state) +
             ", %len: tensor<3xi32>",
         typeOf<T>(seq),
         "%y = lru.shift %x" + operands + " : (" + types + ") -> " +
             typeOf<T>(seq));
  SCOPED_TRACE(text);
  std::vector<T> x = values<T>(count(seq), 0.1);
  std::vector<T> init = values<T>(count(state), 1.3);
  Tensor ref = reference(text, {tensorOf(seq, x), tensorOf(state, init),
                                tensorOf({kBatch}, kLengths)});
  std::vector<T> out(size_t(count(seq)), T(-7));
  std::string error;
  ASSERT_TRUE(lruc::cpu::shift<T>(x.data(), withInit ? init.data() : nullptr,
                                  withLengths ? kLengths.data() : nullptr,
                                  reverse, kBatch, kSteps, kWidth, out.data(),
                                  error))
      << error;
  expectExact(out, ref);
}

TEST_F(CpuKernels, ShiftInEveryVariant) {
  for (bool reverse : {false, true})
    for (bool withInit : {false, true})
      for (bool withLengths : {false, true}) {
        checkShift<float>(reverse, withInit, withLengths);
        checkShift<cfloat>(reverse, withInit, withLengths);
      }
}

template <class T>
void CpuKernels::checkScan(const std::vector<T> &lambda, bool perStep,
                           const std::vector<T> &b, const std::vector<T> *init,
                           const std::vector<int32_t> *lengths, bool reverse,
                           int64_t batch, int64_t steps, int64_t width,
                           double rtol, double floor) {
  Dims seq = {batch, steps, width}, state = {batch, width};
  Dims lambdaDims = perStep ? seq : Dims{width};
  std::string lengthsType = typeOf({batch}, "i32");
  std::string operands = std::string(init ? " init %i" : "") +
                         (lengths ? " lengths %len" : "") +
                         (reverse ? " reverse" : "");
  std::string types = typeOf<T>(lambdaDims) + ", " + typeOf<T>(seq) +
                      (init ? ", " + typeOf<T>(state) : "") +
                      (lengths ? ", " + lengthsType : "");
  std::string text = fn("%l: " + typeOf<T>(lambdaDims) +
                            ", %b: " + typeOf<T>(seq) +
                            ", %i: " + typeOf<T>(state) + ", %len: " +
                            lengthsType,
                        typeOf<T>(seq),
                        "%y = lru.scan %l, %b" + operands + " : (" + types +
                            ") -> " + typeOf<T>(seq));
  SCOPED_TRACE(text);
  std::vector<T> zeros(size_t(count(state)));
  std::vector<int32_t> full(static_cast<size_t>(batch), int32_t(steps));
  Tensor ref = reference(
      text, {tensorOf(lambdaDims, lambda), tensorOf(seq, b),
             tensorOf(state, init ? *init : zeros),
             tensorOf({batch}, lengths ? *lengths : full)});
  std::vector<T> out(size_t(count(seq)), T(-7));
  std::string error;
  ASSERT_TRUE(lruc::cpu::scan<T>(lambda.data(), perStep, b.data(),
                                 init ? init->data() : nullptr,
                                 lengths ? lengths->data() : nullptr, reverse,
                                 batch, steps, width, out.data(), error))
      << error;
  expectClose(out, ref, rtol, floor);
}

TEST_F(CpuKernels, ScanInEveryVariant) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    Dims seq = {kBatch, kSteps, kWidth};
    // |λ| < 0.9 (complex ones too: both parts below 0.63).
    std::vector<T> constant = values<T>(kWidth, 0.4, 0.7);
    std::vector<T> perStep = values<T>(count(seq), 0.8, 0.7);
    std::vector<T> b = values<T>(count(seq), 1.1);
    std::vector<T> init = values<T>(kBatch * kWidth, 2.3);
    for (bool isPerStep : {false, true})
      for (bool reverse : {false, true})
        for (bool withInit : {false, true})
          for (bool withLengths : {false, true})
            checkScan<T>(isPerStep ? perStep : constant, isPerStep, b,
                         withInit ? &init : nullptr,
                         withLengths ? &kLengths : nullptr, reverse, kBatch,
                         kSteps, kWidth, kRtol, 1);
  };
  run(float());
  run(cfloat());
}

/// The LRU's λ: modulus from r_min to r_max over the channels, phases
/// spread over (0, 2π).
std::vector<cfloat> lruLambda(int64_t width, double rMin, double rMax) {
  std::vector<cfloat> lambda;
  for (int64_t n = 0; n < width; ++n) {
    double r = rMin + (rMax - rMin) * double(n) / double(width - 1);
    lambda.push_back(std::polar(float(r), float(0.1 + 6.1 * double(n) /
                                                          double(width))));
  }
  return lambda;
}

TEST_F(CpuKernels, LongScans) {
  // 2048 steps of the LRU at |λ| up to 0.999 (the paper's r_max for
  // Path-X). Each step rounds the state (a few times 2^-24 ≈ 6e-8 relative,
  // for a complex product), and those errors decay like |λ|^k: independent
  // ones add up to ~√(1/(1 − |λ|²)) ≈ 22 times one step's, ~4e-6 of the
  // state's size; errors that all had one sign would reach 1/(1 − |λ|) =
  // 1000 times, ~2e-4. Measured: under 3e-6 of max(|x|, 1). rtol 1e-4 keeps
  // a margin of 30 over that, and any mistake in the recurrence (a step
  // skipped or taken twice, a wrong start) is an O(1) error.
  constexpr int64_t batch = 2, steps = 2048, width = 24;
  Dims seq = {batch, steps, width};
  std::vector<cfloat> lambda = lruLambda(width, 0.5, 0.999);
  std::vector<cfloat> b = values<cfloat>(count(seq), 0.2);
  std::vector<cfloat> init = values<cfloat>(batch * width, 0.6);
  std::vector<int32_t> lengths = {2048, 1500};
  for (bool reverse : {false, true}) {
    checkScan<cfloat>(lambda, false, b, &init, &lengths, reverse, batch,
                      steps, width, kScanRtol, 1);
    // Real λ in (0.5, 0.999), the same argument.
    std::vector<float> real(static_cast<size_t>(width));
    for (int64_t n = 0; n < width; ++n)
      real[size_t(n)] = std::abs(lambda[size_t(n)]);
    checkScan<float>(real, false, values<float>(count(seq), 0.2), nullptr,
                     nullptr, reverse, batch, steps, width, kScanRtol, 1);
  }
  // The generalised LRU: λ_t = exp(a_t + iθ) with a_t = −softplus(·) varying
  // per step, |λ_t| in about (0.59, 0.99).
  std::vector<cfloat> perStep(static_cast<size_t>(count(seq)));
  std::vector<float> gate = wave(count(seq), 0.9, 2.5);
  for (int64_t i = 0; i < count(seq); ++i) {
    float a = -lruc::cpu::softplus(gate[size_t(i)] - 3.0f) - 0.005f;
    perStep[size_t(i)] =
        std::exp(cfloat(a, float(0.2 + 0.25 * double(i % width))));
  }
  for (bool reverse : {false, true})
    checkScan<cfloat>(perStep, true, b, nullptr, &lengths, reverse, batch,
                      steps, width, kScanRtol, 1);
}

//===----------------------------------------------------------------------===//
// Dense algebra and lookups
//===----------------------------------------------------------------------===//

/// The few-row form a test sets, back to Automatic when the test ends
/// (also when an assertion ends it early).
struct FewRowFormGuard {
  ~FewRowFormGuard() {
    lruc::cpu::setFewRowProducts(lruc::cpu::FewRowProducts::Automatic);
  }
};

TEST_F(CpuKernels, Matmul) {
  // Sums of up to 99 products of values in (-1, 1): a few roundings of
  // terms of order 1 each, well within 1e-5 of max(|y|, 1).
  auto check = [&](const std::string &kind, Dims lhs, Dims rhs, Dims y) {
    std::string text = fn("%x: " + typeOf<float>(lhs) + ", %w: " +
                              typeOf<float>(rhs),
                          typeOf<float>(y),
                          "%y = lru.matmul " + kind + " %x, %w : (" +
                              typeOf<float>(lhs) + ", " + typeOf<float>(rhs) +
                              ") -> " + typeOf<float>(y));
    SCOPED_TRACE(text);
    std::vector<float> a = values<float>(count(lhs), 0.2);
    std::vector<float> w = values<float>(count(rhs), 1.9);
    Tensor ref = reference(text, {tensorOf(lhs, a), tensorOf(rhs, w)});
    std::vector<float> out(static_cast<size_t>(count(y)), -7);
    int64_t rows = count(Dims(lhs.begin(), lhs.end() - 1));
    if (kind == "nt")
      lruc::cpu::matmulNT(a.data(), w.data(), rows, rhs[0], rhs[1],
                          out.data());
    else if (kind == "nn")
      lruc::cpu::matmulNN(a.data(), w.data(), rows, rhs[0], rhs[1],
                          out.data());
    else
      lruc::cpu::matmulTN(a.data(), w.data(), rows, lhs.back(), rhs.back(),
                          out.data());
    expectClose(out, ref);
    if (kind == "tn")
      return;
    // An epilogue's rows of the product, in three ranges (one of a single
    // row, the sgemv path, one empty), on the calling thread.
    int64_t width = y.back();
    std::vector<float> parts(out.size(), -7);
    for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, rows / 3},
                          {rows / 3, rows / 3 + 1},
                          {rows / 3 + 1, rows / 3 + 1},
                          {rows / 3 + 1, rows}}) {
      if (r1 > rows)
        continue;
      if (kind == "nt")
        lruc::cpu::matmulNTRows(a.data(), w.data(), r0, r1, rhs[0], rhs[1],
                                parts.data());
      else
        lruc::cpu::matmulNNRows(a.data(), w.data(), r0, r1, rhs[0], rhs[1],
                                parts.data());
    }
    if (rows * width > 0)
      expectClose(parts, ref);
    // Step mode's scan epilogue: ranges of the product's columns (one of a
    // single column, one empty), all rows, on the calling thread.
    std::vector<float> columns(out.size(), -7);
    for (auto [c0, c1] : {std::pair<int64_t, int64_t>{0, width / 3},
                          {width / 3, width / 3 + 1},
                          {width / 3 + 1, width / 3 + 1},
                          {width / 3 + 1, width}}) {
      if (c1 > width)
        continue;
      if (kind == "nt")
        lruc::cpu::matmulNTColumns(a.data(), w.data(), rows, rhs[0], rhs[1],
                                   columns.data(), c0, c1);
      else
        lruc::cpu::matmulNNColumns(a.data(), w.data(), rows, rhs[0], rhs[1],
                                   columns.data(), c0, c1);
    }
    if (rows * width > 0)
      expectClose(columns, ref);
  };
  check("nt", {2, 3, 7}, {5, 7}, {2, 3, 5});
  check("nt", {4, 33, 65}, {47, 65}, {4, 33, 47});
  check("nt", {7}, {5, 7}, {5}); // a single row
  check("nt", {3, 0}, {4, 0}, {3, 4}); // nothing to sum: zeros
  // Few rows (step mode), in every form whatever OpenBLAS runs: lruc's dot
  // products, 16 and 8 floats a vector, passes of up to 8 and 4 rows
  // (weight rows in fours, in twos from 5 and 3 rows a pass, odd passes
  // too, and one by one; k with and without a partial vector); calls of up to
  // 4 rows, a partial last one, and (k = 1024) blocks of 32 weight rows with a
  // partial last one; or sgemv per row. 33 rows take one call.
  using lruc::cpu::FewRowProducts;
  FewRowFormGuard formGuard;
  for (FewRowProducts how :
       {FewRowProducts::DotProducts, FewRowProducts::DotProductsAvx2,
        FewRowProducts::SmallCalls, FewRowProducts::General}) {
    lruc::cpu::setFewRowProducts(how);
    for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 33})
      for (int64_t n : {1, 19, 40})
        for (int64_t k : {9, 16, 128, 1024})
          check("nt", {rows, k}, {n, k}, {rows, n});
  }
  check("nn", {2, 3, 5}, {5, 7}, {2, 3, 7});
  check("nn", {4, 33, 47}, {47, 65}, {4, 33, 65});
  check("tn", {2, 3, 5}, {2, 3, 7}, {5, 7});
  check("tn", {3, 33, 20}, {3, 33, 9}, {20, 9}); // 99 rows summed
  check("tn", {0, 3, 5}, {0, 3, 7}, {5, 7});     // no rows: zeros
}

// Few-row products (step mode) with weights and rows at any offset from a
// cache line, as the callers' allocations place them: the plain sums.
TEST_F(CpuKernels, MatmulFewRowsAtEveryAlignment) {
  using lruc::cpu::FewRowProducts;
  FewRowFormGuard formGuard;
  for (FewRowProducts how :
       {FewRowProducts::DotProducts, FewRowProducts::DotProductsAvx2,
        FewRowProducts::SmallCalls, FewRowProducts::General}) {
    lruc::cpu::setFewRowProducts(how);
    for (int64_t rows : {1, 2, 3, 4, 7, 8})
      for (int64_t k : {16, 41, 48, 128})
        for (int64_t offset = 0; offset < 16; offset += 3) {
          const int64_t n = 21;
          std::vector<float> aBlock(size_t(rows * k + 32)),
              wBlock(size_t(n * k + 32));
          auto lineAligned = [](std::vector<float> &block) {
            auto address = reinterpret_cast<uintptr_t>(block.data());
            return block.data() + (64 - address % 64) % 64 / sizeof(float);
          };
          float *a = lineAligned(aBlock) + (offset + 5) % 16;
          float *w = lineAligned(wBlock) + offset;
          for (int64_t i = 0; i < rows * k; ++i)
            a[i] = float(std::sin(0.7 * double(i)));
          for (int64_t i = 0; i < n * k; ++i)
            w[i] = float(std::cos(0.3 * double(i)));
          std::vector<float> y(size_t(rows * n), -7);
          lruc::cpu::matmulNT(a, w, rows, n, k, y.data());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0;
              for (int64_t i = 0; i < k; ++i)
                sum += double(a[r * k + i]) * double(w[j * k + i]);
              ASSERT_NEAR(y[size_t(r * n + j)], sum, 1e-5 * (1 + std::abs(sum)))
                  << "form " << int(how) << ", rows " << rows << ", k " << k
                  << ", W at " << offset << " floats past a line, y[" << r
                  << ", " << j << "]";
            }
        }
  }
}

TEST_F(CpuKernels, GatherAndScatterAdd) {
  constexpr int64_t vocab = 7, width = 5;
  Dims indexDims = {3, 4}, tableDims = {vocab, width}, rows = {3, 4, width};
  // Repeats (6, 0) and every row but 5.
  std::vector<int32_t> indices = {6, 0, 2, 6, 1, 3, 0, 4, 6, 2, 0, 1};
  std::vector<float> table = values<float>(vocab * width, 0.3);
  std::string indexType = typeOf(indexDims, "i32");
  Tensor gathered = reference(
      fn("%t: " + typeOf<float>(tableDims) + ", %i: " + indexType,
         typeOf<float>(rows),
         "%y = lru.gather %t, %i : (" + typeOf<float>(tableDims) + ", " +
             indexType + ") -> " + typeOf<float>(rows)),
      {tensorOf(tableDims, table), tensorOf(indexDims, indices)});
  std::vector<float> out(static_cast<size_t>(count(rows)), -7);
  std::string error;
  ASSERT_TRUE(lruc::cpu::gather(table.data(), vocab, width, indices.data(),
                                count(indexDims), {}, out.data(), error))
      << error;
  expectExact(out, gathered);

  std::vector<float> updates = values<float>(count(rows), 1.4);
  Tensor summed = reference(
      fn("%u: " + typeOf<float>(rows) + ", %i: " + indexType,
         typeOf<float>(tableDims),
         "%y = lru.scatter_add %u, %i : (" + typeOf<float>(rows) + ", " +
             indexType + ") -> " + typeOf<float>(tableDims)),
      {tensorOf(rows, updates), tensorOf(indexDims, indices)});
  std::vector<float> sums(static_cast<size_t>(vocab * width), -7);
  ASSERT_TRUE(lruc::cpu::scatterAdd(updates.data(), indices.data(),
                                    count(indexDims), {}, vocab, width,
                                    sums.data(), error))
      << error;
  expectClose(sums, summed);
}

//===----------------------------------------------------------------------===//
// Losses and randomness
//===----------------------------------------------------------------------===//

TEST_F(CpuKernels, SoftmaxCrossEntropyAndItsGradient) {
  Dims logitDims = {3, 4, 6}, rowDims = {3, 4};
  const int64_t rows = 12, classes = 6;
  std::vector<float> logits = values<float>(rows * classes, 0.5, 4);
  // A row far from 0 (exp would overflow a float without the max shift),
  // and a confident row whose loss is tiny.
  for (int64_t k = 0; k < classes; ++k) {
    logits[size_t(k)] = 80.0f + float(k);
    logits[size_t(classes + k)] = k == 2 ? 30.0f : -float(k);
  }
  // Class weights, one of them 0.
  const std::vector<float> weights = {1.0f, 0.5f, 2.0f, 0.0f, 1.5f, 3.0f};
  const std::string weightsAttr =
      "class_weights = array<f32: 1.0, 0.5, 2.0, 0.0, 1.5, 3.0>";
  struct Case {
    bool ignore;
    float smoothing;
    bool weighted;
  };
  for (auto [ignore, smoothing, weighted] :
       {Case{false, 0.0f, false}, Case{true, 0.0f, false},
        Case{false, 0.1f, false}, Case{true, 0.25f, false},
        Case{false, 0.0f, true}, Case{true, 0.2f, true}}) {
    // Ignoring negative labels: rows 3 and 7 are not scored.
    std::vector<int32_t> labels = {5, 2, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3};
    if (ignore)
      labels[3] = -1, labels[7] = -100;
    std::string attr = ignore ? "ignore_negative" : "";
    if (smoothing != 0.0f)
      attr += std::string(attr.empty() ? "" : ", ") +
              "label_smoothing = " + std::to_string(smoothing) + " : f32";
    if (weighted)
      attr += std::string(attr.empty() ? "" : ", ") + weightsAttr;
    if (!attr.empty())
      attr = " {" + attr + "}";
    SCOPED_TRACE(attr);
    std::vector<float> g = values<float>(rows, 2.2);
    std::string zT = typeOf<float>(logitDims), kT = typeOf(rowDims, "i32"),
                rT = typeOf<float>(rowDims);
    std::vector<Tensor> args = {tensorOf(logitDims, logits),
                                tensorOf(rowDims, labels),
                                tensorOf(rowDims, g)};
    std::string argList = "%z: " + zT + ", %k: " + kT + ", %g: " + rT;
    std::string error;

    Tensor loss = reference(fn(argList, rT,
                               "%y = lru.softmax_cross_entropy %z, %k" + attr +
                                   " : (" + zT + ", " + kT + ") -> " + rT),
                            args);
    std::vector<float> out(static_cast<size_t>(rows), -7);
    ASSERT_TRUE(lruc::cpu::softmaxCrossEntropy(
        logits.data(), labels.data(), rows, classes, ignore, smoothing,
        weighted ? weights.data() : nullptr, out.data(), error))
        << error;
    expectClose(out, loss);
    // The confident row's loss (~e^-30) is right relatively, not only to
    // 1e-5.
    if (smoothing == 0.0f && !weighted) {
      EXPECT_NEAR(out[1], loss.re[1], 1e-5 * loss.re[1]);
    }
    if (ignore) {
      EXPECT_TRUE(out[3] == 0.0f && out[7] == 0.0f && out[4] > 0.0f);
    }

    Tensor grad =
        reference(fn(argList, zT,
                     "%y = lru.softmax_cross_entropy_grad %z, %k, %g" + attr +
                         " : (" + zT + ", " + kT + ", " + rT + ") -> " + zT),
                  args);
    std::vector<float> dlogits(static_cast<size_t>(rows * classes), -7);
    ASSERT_TRUE(lruc::cpu::softmaxCrossEntropyGrad(
        logits.data(), labels.data(), g.data(), rows, classes, ignore,
        smoothing, weighted ? weights.data() : nullptr, dlogits.data(), error))
        << error;
    expectClose(dlogits, grad);
    if (ignore) {
      for (int64_t row : {3, 7})
        EXPECT_EQ(std::count(dlogits.begin() + row * classes,
                             dlogits.begin() + (row + 1) * classes, 0.0f),
                  classes);
    }
  }
}

// 400 elements: 12 groups of 8 Philox blocks (6 of 16 with AVX-512) and 4
// blocks alone; 111: a partial last block.
TEST_F(CpuKernels, DropoutMaskKeepsTheInterpretersPositions) {
  for (Dims dims : {Dims{4, 100}, Dims{3, 37}}) {
  // Nonzero values, so a kept element is never 0.
  std::vector<float> x = values<float>(count(dims), 0.7);
  for (float &v : x)
    v = v >= 0 ? v + 0.05f : v - 0.05f;
  std::string t = typeOf<float>(dims);
  const int64_t keys[][2] = {{123, 5}, {-9, 70000}, {int64_t(1) << 40, 0}};
  for (const auto &key : keys)
    for (double rate : {0.0, 0.1, 0.5, 0.9})
      for (uint32_t site : {0u, 7u}) {
        char rateText[32]; // a float literal: "0.0", not "0"
        std::snprintf(rateText, sizeof rateText, "%#.17g", rate);
        std::string text =
            fn("%x: " + t + ", %key: tensor<2xi64>", t,
               "%y = lru.dropout_mask %x, %key rate " + std::string(rateText) +
                   " site " + std::to_string(site) + " : " + t +
                   ", tensor<2xi64>");
        SCOPED_TRACE(text + " key {" + std::to_string(key[0]) + ", " +
                     std::to_string(key[1]) + "}");
        Tensor ref =
            reference(text, {tensorOf(dims, x),
                             Tensor::integers({2}, {key[0], key[1]})});
        std::vector<float> out(x.size(), -7);
        lruc::cpu::dropoutMask(x.data(), count(dims), key, rate, site,
                               out.data());
        ASSERT_EQ(ref.re.size(), out.size());
        int64_t kept = 0;
        for (size_t i = 0; i < out.size(); ++i) {
          ASSERT_EQ(out[i] != 0, ref.re[i] != 0) << "position " << i;
          // x / (1 − rate) in double, rounded: the interpreter's value.
          EXPECT_EQ(out[i], float(ref.re[i])) << "position " << i;
          kept += out[i] != 0;
        }
        if (rate == 0)
          EXPECT_EQ(kept, count(dims));
        else
          EXPECT_NEAR(double(kept) / double(count(dims)), 1 - rate, 0.12);
      }
  }
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_F(CpuKernels, LengthsOutsideTheSequenceAreErrors) {
  const int64_t batch = 4, steps = 16, width = 2;
  std::vector<float> x(static_cast<size_t>(batch * steps * width)), y(x.size());
  std::vector<cfloat> cx(x.size()), cy(x.size()), lambda(width);
  std::vector<float> mask(static_cast<size_t>(batch * steps));
  for (auto [lengths, message] :
       {std::pair{std::vector<int32_t>{16, 0, 3, 20},
                  "lengths[3] = 20 is outside [0, 16]"},
        std::pair{std::vector<int32_t>{4, -1, 3, 20},
                  "lengths[1] = -1 is outside [0, 16]"}}) {
    std::string error;
    EXPECT_FALSE(lruc::cpu::lengthMask(lengths.data(), nullptr, batch, steps,
                                       false, mask.data(), error));
    EXPECT_EQ(error, message);
    error.clear();
    std::vector<int32_t> tokens(static_cast<size_t>(batch * steps));
    EXPECT_FALSE(lruc::cpu::zeroPadding(tokens.data(), lengths.data(), batch,
                                        steps, 1, tokens.data(), error));
    EXPECT_EQ(error, message);
    error.clear();
    EXPECT_FALSE(lruc::cpu::shift<float>(x.data(), nullptr, lengths.data(),
                                         false, batch, steps, width, y.data(),
                                         error));
    EXPECT_EQ(error, message);
    error.clear();
    EXPECT_FALSE(lruc::cpu::shift<cfloat>(cx.data(), nullptr, lengths.data(),
                                          true, batch, steps, width,
                                          cy.data(), error));
    EXPECT_EQ(error, message);
    error.clear();
    EXPECT_FALSE(lruc::cpu::scan<float>(x.data(), true, x.data(), nullptr,
                                        lengths.data(), false, batch, steps,
                                        width, y.data(), error));
    EXPECT_EQ(error, message);
    error.clear();
    EXPECT_FALSE(lruc::cpu::scan<cfloat>(lambda.data(), false, cx.data(),
                                         nullptr, lengths.data(), true, batch,
                                         steps, width, cy.data(), error));
    EXPECT_EQ(error, message);
  }
}

TEST_F(CpuKernels, IndicesAndLabelsOutOfRangeAreErrors) {
  const int64_t vocab = 32, width = 3;
  std::vector<float> table(static_cast<size_t>(vocab * width)), rows(6 * width);
  for (auto [indices, message] :
       {std::pair{std::vector<int32_t>{0, 31, 2, 3, 4, 40},
                  "indices[5] = 40 is outside [0, 32)"},
        std::pair{std::vector<int32_t>{0, 32, 2, 3, 4, 5},
                  "indices[1] = 32 is outside [0, 32)"},
        std::pair{std::vector<int32_t>{-3, 1, 2, 3, 4, 5},
                  "indices[0] = -3 is outside [0, 32)"}}) {
    std::string error;
    EXPECT_FALSE(lruc::cpu::gather(table.data(), vocab, width, indices.data(),
                                   6, {}, rows.data(), error));
    EXPECT_EQ(error, message);
    error.clear();
    EXPECT_FALSE(lruc::cpu::scatterAdd(rows.data(), indices.data(), 6, {},
                                       vocab, width, table.data(), error));
    EXPECT_EQ(error, message);
  }
  // A model's tokens [2, 3] are named with their example and step.
  std::vector<int32_t> tokens = {0, 31, 2, 3, -1, 5};
  std::string error;
  EXPECT_FALSE(lruc::cpu::gather(table.data(), vocab, width, tokens.data(), 6,
                                 {"tokens_b", 3}, rows.data(), error));
  EXPECT_EQ(error, "tokens_b[1, 1] = -1 is outside [0, 32)");
  error.clear();
  EXPECT_FALSE(lruc::cpu::scatterAdd(rows.data(), tokens.data(), 6,
                                     {"tokens_b", 3}, vocab, width,
                                     table.data(), error));
  EXPECT_EQ(error, "tokens_b[1, 1] = -1 is outside [0, 32)");

  const int64_t classes = 5;
  std::vector<float> logits(4 * classes), loss(4), g(4, 1);
  for (auto [labels, message] :
       {std::pair{std::vector<int32_t>{0, 4, 7, 1},
                  "labels[2] = 7 is outside [0, 5)"},
        std::pair{std::vector<int32_t>{-1, 4, 2, 1},
                  "labels[0] = -1 is outside [0, 5)"}}) {
    std::string error;
    EXPECT_FALSE(lruc::cpu::softmaxCrossEntropy(logits.data(), labels.data(), 4,
                                                classes, false, 0.0f, nullptr,
                                                loss.data(), error));
    EXPECT_EQ(error, message);
    error.clear();
    EXPECT_FALSE(lruc::cpu::softmaxCrossEntropyGrad(
        logits.data(), labels.data(), g.data(), 4, classes, false, 0.0f,
        nullptr, logits.data(), error));
    EXPECT_EQ(error, message);
    // Ignoring negative labels still refuses one past the classes.
    error.clear();
    EXPECT_EQ(lruc::cpu::softmaxCrossEntropy(logits.data(), labels.data(), 4,
                                             classes, true, 0.0f, nullptr,
                                             loss.data(), error),
              labels[2] != 7);
    EXPECT_EQ(error, labels[2] == 7 ? message : "");
  }
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

/// Restores the pool's size at the end of a test.
struct ThreadCountGuard {
  int saved = lruc::cpu::threadCount();
  ~ThreadCountGuard() { lruc::cpu::setThreadCount(saved); }
};

// A concat of more than one thread's range of elements (2^16 each at
// least): the ranges start inside parts and inside the outer dims, on
// pools of one to eight threads, and give every element in its place.
TEST(CpuThreads, ConcatSplitsItsCopies) {
  ThreadCountGuard guard;
  const std::vector<int64_t> sizes = {300, 1, 0, 500}; // along dim 1
  constexpr int64_t kOuter = 3, kInner = 70;
  std::vector<std::vector<float>> parts;
  std::vector<const float *> pointers;
  std::vector<lruc::cpu::Shape> shapes;
  for (size_t p = 0; p < sizes.size(); ++p) {
    parts.push_back(values<float>(kOuter * sizes[p] * kInner, 0.1 * double(p)));
    shapes.push_back(lruc::cpu::Shape{3, {kOuter, sizes[p], kInner}});
  }
  for (const std::vector<float> &part : parts)
    pointers.push_back(part.data());
  const int64_t total = 801;
  for (int threads : {1, 2, 3, 8}) {
    lruc::cpu::setThreadCount(threads);
    std::vector<float> y(size_t(kOuter * total * kInner), -7.0f);
    lruc::cpu::concat<float>(pointers.data(), shapes.data(), int(sizes.size()),
                             1, y.data());
    for (int64_t o = 0, at = 0; o < kOuter; ++o)
      for (size_t p = 0; p < sizes.size(); ++p)
        for (int64_t e = 0; e < sizes[p] * kInner; ++e, ++at)
          ASSERT_EQ(y[size_t(at)], parts[p][size_t(o * sizes[p] * kInner + e)])
              << threads << " threads, outer " << o << ", part " << p;
  }
}

// Weight gradients (y [n, k] = x^T w over many rows, matmulTN) with the
// rows enough for two or more parts are summed in parts of the rows, one
// a thread, then added: every element is its plain sum on pools of one to
// eight threads, a part boundary inside the rows whatever the count, and
// a second call (the partial blocks reused) gives the same.
TEST(CpuThreads, WeightGradientsSplitTheirSums) {
  ThreadCountGuard guard;
  const int64_t rows = 3 * 4096 + 17, n = 9, k = 21;
  std::vector<float> x = values<float>(rows * n, 0.4),
                     w = values<float>(rows * k, 1.1);
  std::vector<double> expected(size_t(n * k), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j)
        expected[size_t(i * k + j)] +=
            double(x[size_t(r * n + i)]) * double(w[size_t(r * k + j)]);
  for (int threads : {1, 2, 3, 8}) {
    lruc::cpu::setThreadCount(threads);
    for (int call = 0; call < 2; ++call) {
      std::vector<float> y(size_t(n * k), -7.0f);
      lruc::cpu::matmulTN(x.data(), w.data(), rows, n, k, y.data());
      for (size_t e = 0; e < y.size(); ++e)
        ASSERT_NEAR(y[e], expected[e], 1e-5 * (1 + std::abs(expected[e])))
            << threads << " threads, element " << e << ", call " << call;
    }
  }
}

// Products computed together (lru.together runs, epilogues with few rows):
// each y is its own product's plain sums, every column written once,
// whether the threads split the columns of all of them (few rows, sizes
// from one 16-column block to several parts) or each by its rows (many),
// mixed in one call, with empty products (no rows, no columns, k = 0), on
// pools of one to eight threads. More products than one region takes.
TEST(CpuThreads, MatmulsTogetherComputeEachProduct) {
  ThreadCountGuard guard;
  struct Shape {
    int64_t rows, n, k;
    bool nn;
  };
  const std::vector<Shape> shapes = {
      {1, 256, 128, false}, {1, 256, 128, false}, {1, 128, 256, true},
      {3, 40, 9, false},    {1, 16, 128, false},  {2, 7, 33, true},
      {600, 40, 48, false}, {0, 16, 8, false},    {4, 0, 8, true},
      {5, 21, 0, false},    {1, 19, 1024, false}, {7, 300, 64, true}};
  for (int threads : {1, 2, 3, 8}) {
    lruc::cpu::setThreadCount(threads);
    for (size_t count : {size_t(2), size_t(3), shapes.size()}) {
      std::vector<std::vector<float>> xs, ws, ys;
      std::vector<lruc::cpu::Matmul> products;
      for (size_t i = 0; i < count; ++i) {
        const Shape &s = shapes[i];
        // nt: y [rows, n] = x [rows, k] w [n, k]^T; nn: y [rows, k] =
        // x [rows, n] w [n, k].
        int64_t inner = s.nn ? s.n : s.k, outer = s.nn ? s.k : s.n;
        xs.push_back(values<float>(s.rows * inner, 0.3 + 0.1 * double(i)));
        ws.push_back(values<float>(s.n * s.k, 1.7 + 0.1 * double(i)));
        ys.emplace_back(size_t(s.rows * outer), -7.0f);
      }
      for (size_t i = 0; i < count; ++i)
        products.push_back({xs[i].data(), ws[i].data(), shapes[i].rows,
                            shapes[i].n, shapes[i].k, ys[i].data(),
                            shapes[i].nn});
      // The initializer_list the generated code passes, from the vector.
      switch (count) {
      case 2:
        lruc::cpu::matmulsTogether({products[0], products[1]});
        break;
      case 3:
        lruc::cpu::matmulsTogether({products[0], products[1], products[2]});
        break;
      default:
        lruc::cpu::matmulsTogether(
            {products[0], products[1], products[2], products[3], products[4],
             products[5], products[6], products[7], products[8], products[9],
             products[10], products[11]});
      }
      for (size_t i = 0; i < count; ++i) {
        const Shape &s = shapes[i];
        int64_t inner = s.nn ? s.n : s.k, outer = s.nn ? s.k : s.n;
        for (int64_t r = 0; r < s.rows; ++r)
          for (int64_t j = 0; j < outer; ++j) {
            double sum = 0;
            for (int64_t t = 0; t < inner; ++t)
              sum += double(xs[i][size_t(r * inner + t)]) *
                     double(ws[i][size_t(s.nn ? t * s.k + j : j * s.k + t)]);
            ASSERT_NEAR(ys[i][size_t(r * outer + j)], sum,
                        1e-5 * (1 + std::abs(sum)))
                << threads << " threads, " << count << " products, product "
                << i << ", y[" << r << ", " << j << "]";
          }
      }
    }
  }
}

// Few-row products split by columns give the same bits as one thread, in
// every form: which columns a part gets changes no column's sum (the
// partition follows the thread count; tests of the others rely on that).
TEST(CpuThreads, FewRowProductsDoNotDependOnTheSplit) {
  ThreadCountGuard guard;
  FewRowFormGuard formGuard;
  using lruc::cpu::FewRowProducts;
  struct Shape {
    int64_t rows, n, k;
  };
  for (FewRowProducts how :
       {FewRowProducts::DotProducts, FewRowProducts::DotProductsAvx2,
        FewRowProducts::SmallCalls, FewRowProducts::General}) {
    lruc::cpu::setFewRowProducts(how);
    for (Shape s : {Shape{1, 256, 128}, Shape{3, 301, 72}, Shape{8, 130, 40}}) {
      std::vector<float> x = values<float>(s.rows * s.k, 0.4);
      std::vector<float> w1 = values<float>(s.n * s.k, 1.3);
      std::vector<float> w2 = values<float>(s.n * s.k, 2.1);
      auto product = [&] {
        std::vector<float> y1(size_t(s.rows * s.n)), y2(y1.size());
        lruc::cpu::matmulsTogether({{x.data(), w1.data(), s.rows, s.n, s.k,
                                     y1.data(), false},
                                    {x.data(), w2.data(), s.rows, s.n, s.k,
                                     y2.data(), false}});
        y1.insert(y1.end(), y2.begin(), y2.end());
        return y1;
      };
      lruc::cpu::setThreadCount(1);
      const std::vector<float> alone = product();
      for (int threads : {2, 3}) {
        lruc::cpu::setThreadCount(threads);
        for (int repeat = 0; repeat < 20; ++repeat) {
          std::vector<float> split = product();
          ASSERT_EQ(0, std::memcmp(split.data(), alone.data(),
                                   alone.size() * sizeof(float)))
              << "form " << int(how) << ", " << threads << " threads, "
              << s.rows << " x " << s.n << " x " << s.k << ", call "
              << repeat;
        }
      }
    }
  }
}

// lruc's dot products give a row the same bits whatever rows share its
// pass (1 to 8 rows: passes of up to 4 rows (AVX2) or 8 (AVX-512), with 4
// or 2 weight rows at a time) and whichever form takes a column (n not a
// multiple of 4 or 2: the last weight rows one at a time): step mode's
// streams in parts compute each stream as it would alone.
TEST(CpuThreads, DotProductsDoNotDependOnTheRows) {
  ThreadCountGuard guard;
  FewRowFormGuard formGuard;
  lruc::cpu::setThreadCount(1);
  using lruc::cpu::FewRowProducts;
  for (FewRowProducts how :
       {FewRowProducts::DotProducts, FewRowProducts::DotProductsAvx2}) {
    lruc::cpu::setFewRowProducts(how);
    for (int64_t n : {1, 2, 5, 130, 257})
      for (int64_t k : {9, 72, 128}) {
        const int64_t most = 8;
        std::vector<float> x = values<float>(most * k, 0.4);
        std::vector<float> w = values<float>(n * k, 1.3);
        for (int64_t rows = 1; rows <= most; ++rows) {
          std::vector<float> together(size_t(rows * n));
          lruc::cpu::matmulNT(x.data(), w.data(), rows, n, k, together.data());
          for (int64_t r = 0; r < rows; ++r) {
            std::vector<float> alone(static_cast<size_t>(n));
            lruc::cpu::matmulNT(x.data() + r * k, w.data(), 1, n, k,
                                alone.data());
            ASSERT_EQ(0, std::memcmp(together.data() + r * n, alone.data(),
                                     alone.size() * sizeof(float)))
                << "form " << int(how) << ", row " << r << " of " << rows
                << ", n " << n << ", k " << k;
          }
        }
      }
  }
}

TEST(CpuThreads, ProductColumnBlocksShareWholeVectors) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3, 8}) {
    lruc::cpu::setThreadCount(threads);
    for (int64_t n : {1, 3, 16, 17, 256, 301, 1024})
      for (int64_t work : {int64_t(1), int64_t(128), int64_t(1) << 14}) {
        const int64_t block = lruc::cpu::productColumnBlock(n, work);
        const int64_t parts = (n + block - 1) / block;
        SCOPED_TRACE(::testing::Message()
                     << threads << " threads, " << n << " columns of " << work);
        EXPECT_EQ(0, block % 16);
        EXPECT_GE(parts, 1);
        EXPECT_LE(parts, threads);
        // A part is at least 2^14 multiply-adds, as matmulsTogether's are,
        // unless there is only one.
        if (parts > 1) {
          EXPECT_GE(n * work / parts, int64_t(1) << 14);
        }
      }
  }
  lruc::cpu::setThreadCount(2);
  EXPECT_EQ(128, lruc::cpu::productColumnBlock(256, 256)); // two halves
  EXPECT_EQ(256, lruc::cpu::productColumnBlock(256, 1));   // too little work
}

TEST(CpuThreads, ParallelForCoversEachIndexOnce) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3, 8}) {
    lruc::cpu::setThreadCount(threads);
    EXPECT_EQ(lruc::cpu::threadCount(), threads);
    for (int64_t n : {0, 1, 7, 10, 1000})
      for (int64_t grain : {1, 3, 1000}) {
        std::vector<int> hits(size_t(n), 0);
        lruc::cpu::parallelFor(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            ++hits[size_t(i)];
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[size_t(i)], 1) << threads << " threads, n " << n
                                        << ", grain " << grain << ", " << i;
      }
  }
}

// Step mode's streams in parts: one a thread when every thread gets at
// least kLeastStreamsPerThread streams and the weights are few enough
// (else one part on the caller); each part sees one thread and runs its
// regions alone; the first failing part's error and a part's exception
// reach the caller.
TEST(CpuWorkspace, ALeaseSaysWhyItCannotBeHad) {
  std::string error;
  {
    lruc::cpu::WorkspaceLease lease;
    ASSERT_TRUE(lease.take(1000, 64, 3, error)) << error;
    ASSERT_NE(lease.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(lease.data()) % 64, 0u);
    lease.data()[3063] = 1; // all 3064 bytes are there
  }
  lruc::cpu::WorkspaceLease negative;
  EXPECT_FALSE(negative.take(1000, 64, -5, error));
  EXPECT_EQ(error, "batch -5 is negative");
  EXPECT_EQ(negative.data(), nullptr);
  lruc::cpu::WorkspaceLease huge;
  EXPECT_FALSE(huge.take(int64_t(1) << 40, 64, int64_t(1) << 30, error));
  EXPECT_EQ(error, "batch 1073741824: the workspace would pass 2^63 bytes "
                   "(1.0 TiB an example)");
  EXPECT_EQ(huge.data(), nullptr);
}

TEST(CpuThreads, StreamPartsSplitWholeStreams) {
  ThreadCountGuard guard;
  constexpr int64_t kLeast = lruc::cpu::kLeastStreamsPerThread;
  constexpr int64_t kFewBytes = 1 << 20;
  for (int threads : {1, 2, 3}) {
    lruc::cpu::setThreadCount(threads);
    for (int64_t batch : {int64_t(1), kLeast * threads - 1, kLeast * threads,
                          kLeast * threads + 5})
      for (int64_t bytes :
           {kFewBytes, lruc::cpu::kMostStreamPartWeightBytes + 1}) {
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> parts;
        std::vector<int> hits(size_t(batch), 0);
        bool alone = true;
        std::string error;
        ASSERT_TRUE(lruc::cpu::forStreamParts(
            batch, bytes, error,
            [&](int64_t first, int64_t count, std::string &) {
              // In a part: one thread, and a region runs at once on it.
              const bool one = lruc::cpu::threadCount() == 1;
              std::atomic<int> regionParts{0};
              lruc::cpu::parallelFor(100, 1,
                                     [&](int64_t, int64_t) { ++regionParts; });
              std::lock_guard<std::mutex> lock(mutex);
              alone = alone && one && regionParts.load() == 1;
              parts.push_back({first, count});
              for (int64_t b = first; b < first + count; ++b)
                ++hits[size_t(b)];
              return true;
            }));
        const bool expectSplit = threads > 1 && batch >= kLeast * threads &&
                                 bytes <= lruc::cpu::kMostStreamPartWeightBytes;
        EXPECT_EQ(parts.size(), expectSplit ? size_t(threads) : size_t(1))
            << threads << " threads, batch " << batch << ", " << bytes;
        if (expectSplit) {
          EXPECT_TRUE(alone) << "a part saw more than its own thread";
          for (auto [first, count] : parts)
            EXPECT_GE(count, kLeast);
        }
        for (int64_t b = 0; b < batch; ++b)
          ASSERT_EQ(hits[size_t(b)], 1)
              << threads << " threads, batch " << batch << ", stream " << b;
      }
  }

  lruc::cpu::setThreadCount(2);
  std::string error;
  EXPECT_FALSE(lruc::cpu::forStreamParts(
      8, kFewBytes, error, [](int64_t first, int64_t, std::string &why) {
        why = "part at " + std::to_string(first);
        return false;
      }));
  EXPECT_EQ(error, "part at 0"); // the first failing part's
  EXPECT_THROW(lruc::cpu::forStreamParts(
                   8, kFewBytes, error,
                   [](int64_t first, int64_t, std::string &) -> bool {
                     if (first > 0)
                       throw std::runtime_error("in the second part");
                     return true;
                   }),
               std::runtime_error);
  // The pool still runs regions after a part threw.
  std::atomic<int> covered{0};
  lruc::cpu::parallelFor(
      2, 1, [&](int64_t begin, int64_t end) { covered += int(end - begin); });
  EXPECT_EQ(covered.load(), 2);
}

// An entry point's results: sizes around the 64 KiB pieces the copy is
// split into (0 bytes, less than one, several and a ragged end), a result
// that is its own source (updated in place) and one whose source overlaps
// it in part, at 1-3 threads.
TEST(CpuThreads, CopyResultsCopiesEachResultWhole) {
  ThreadCountGuard guard;
  const std::vector<int64_t> sizes = {0, 5, 65536, 3 * 65536 + 17, 1000003};
  for (int threads : {1, 2, 3}) {
    lruc::cpu::setThreadCount(threads);
    std::vector<std::vector<char>> sources, targets;
    for (size_t r = 0; r < sizes.size(); ++r) {
      std::vector<char> source(size_t(sizes[r]));
      for (size_t i = 0; i < source.size(); ++i)
        source[i] = char((i * 7 + r * 13) % 251);
      sources.push_back(source);
      targets.emplace_back(source.size(), char(-1));
    }
    // In place, and overlapping: bytes [100, 300000) moved 64 bytes down.
    std::vector<char> inPlace(200000, 'a'), overlapping(300000);
    for (size_t i = 0; i < overlapping.size(); ++i)
      overlapping[i] = char(i % 253);
    const std::vector<char> before = overlapping;
    std::vector<void *> to;
    std::vector<const void *> from;
    std::vector<int64_t> bytes;
    for (size_t r = 0; r < sizes.size(); ++r) {
      to.push_back(targets[r].data());
      from.push_back(sources[r].data());
      bytes.push_back(sizes[r]);
    }
    to.push_back(inPlace.data());
    from.push_back(inPlace.data());
    bytes.push_back(int64_t(inPlace.size()));
    to.push_back(overlapping.data() + 36);
    from.push_back(overlapping.data() + 100);
    bytes.push_back(int64_t(overlapping.size()) - 100);
    lruc::cpu::copyResults(to.data(), from.data(), bytes.data(),
                           int(to.size()));
    for (size_t r = 0; r < sizes.size(); ++r)
      EXPECT_EQ(targets[r], sources[r])
          << threads << " threads, " << sizes[r] << " bytes";
    EXPECT_EQ(inPlace, std::vector<char>(200000, 'a'));
    for (size_t i = 36; i < overlapping.size() - 64; ++i)
      ASSERT_EQ(overlapping[i], before[i + 64]) << threads << " threads, " << i;
  }
}

// Step mode's pattern: thousands of tiny regions back to back, where
// workers poll between regions and may join one that the others have
// already finished; now and then a pause long enough for them to sleep;
// and two callers at once (one runs alone). Every region must cover each
// index once and return only when every part is done.
TEST(CpuThreads, ManySmallRegionsFromOneOrTwoCallers) {
  ThreadCountGuard guard;
  auto regions = [](int count, int pauseEvery) {
    for (int r = 0; r < count; ++r) {
      const int64_t n = 2 + r % 5;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      lruc::cpu::parallelFor(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          hits[size_t(i)].fetch_add(1, std::memory_order_relaxed);
      });
      for (int64_t i = 0; i < n; ++i)
        if (hits[size_t(i)].load() != 1)
          return false;
      if (pauseEvery && r % pauseEvery == pauseEvery - 1)
        std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    return true;
  };
  for (int threads : {2, 3, 8}) {
    lruc::cpu::setThreadCount(threads);
    EXPECT_TRUE(regions(20000, 2000)) << threads << " threads, one caller";
    bool other = false;
    std::thread second([&] { other = regions(5000, 0); });
    EXPECT_TRUE(regions(5000, 0)) << threads << " threads, two callers";
    second.join();
    EXPECT_TRUE(other) << threads << " threads, the second caller";
  }
}

// Scans split by sequence and channel block, GEMMs by rows: the same
// numbers on one thread as on four (one sequence, so the channels split).
TEST(CpuThreads, ScanAndGemmDoNotDependOnTheThreadCount) {
  ThreadCountGuard guard;
  const int64_t steps = 50, width = 70, rows = 333, n = 48, k = 40;
  auto run = [&](int threads, int64_t batch) {
    lruc::cpu::setThreadCount(threads);
    std::vector<cfloat> lambda(static_cast<size_t>(width));
    std::vector<cfloat> b(static_cast<size_t>(batch * steps * width));
    std::vector<cfloat> x(b.size());
    for (size_t i = 0; i < lambda.size(); ++i)
      lambda[i] = std::polar(0.9f, 0.01f * float(i));
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = cfloat(std::sin(float(i)), std::cos(0.5f * float(i)));
    std::vector<int32_t> lengths(size_t(batch), int32_t(steps - 3));
    std::string error;
    EXPECT_TRUE(lruc::cpu::scan(lambda.data(), false, b.data(),
                                static_cast<const cfloat *>(nullptr),
                                lengths.data(), false, batch, steps, width,
                                x.data(), error))
        << error;
    std::vector<float> a(static_cast<size_t>(rows * k));
    std::vector<float> w(static_cast<size_t>(n * k));
    std::vector<float> y(static_cast<size_t>(rows * n));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = std::sin(float(i));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = std::cos(float(i));
    lruc::cpu::matmulNT(a.data(), w.data(), rows, n, k, y.data());
    return std::pair{x, y};
  };
  for (int64_t batch : {1, 3}) {
    auto [x1, y1] = run(1, batch);
    auto [x4, y4] = run(4, batch);
    EXPECT_EQ(x1, x4) << "batch " << batch;
    ASSERT_EQ(y1.size(), y4.size());
    for (size_t i = 0; i < y1.size(); ++i)
      ASSERT_NEAR(y1[i], y4[i], 1e-5f * (1 + std::abs(y1[i]))) << i;
  }
}

// Dropout masks split by groups of Philox blocks: the same mask on one
// thread as on four, element by element runtime/core's decision (a count
// large enough for several parts, with a partial last block).
TEST(CpuThreads, DropoutMaskDoesNotDependOnTheThreadCount) {
  ThreadCountGuard guard;
  const int64_t count = 100003, key[2] = {77, 12};
  const double rate = 0.3;
  const uint32_t site = 5;
  std::vector<float> x(static_cast<size_t>(count));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 1.0f + float(i % 13);
  auto run = [&](int threads) {
    lruc::cpu::setThreadCount(threads);
    std::vector<float> y(x.size(), -1.0f);
    lruc::cpu::dropoutMask(x.data(), count, key, rate, site, y.data());
    return y;
  };
  std::vector<float> one = run(1), four = run(4);
  EXPECT_EQ(one, four);
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(four[size_t(i)] != 0,
              lruc::core::dropoutKeep(uint64_t(key[0]), uint32_t(key[1]), site,
                                      uint64_t(i), rate))
        << "position " << i;
}

// A fused loop's row of keep decisions: any start (inside a Philox block
// or on one), any length (runs of one, two and four interleaved groups of
// blocks, the narrow tail, or within one block), a block counter whose low
// word wraps inside a run, element by element runtime/core's decision.
TEST(CpuKernelsDropout, KeepsOfARowAreCoresDecisions) {
  const int64_t key[2] = {int64_t(1) << 35, 9};
  const double rate = 0.25;
  const uint32_t site = 3, threshold = lruc::core::dropoutThreshold(rate);
  const int64_t wrapping = 4 * ((int64_t(1) << 32) - 5) + 2;
  for (int64_t first : {int64_t(0), int64_t(1), int64_t(3), int64_t(4),
                        int64_t(250), int64_t(1021), wrapping})
    for (int64_t count : {1, 2, 5, 32, 64, 127, 256, 300, 1000}) {
      std::vector<uint32_t> keep(size_t(count) + 1, 7u);
      lruc::cpu::dropoutKeeps(key, site, threshold, first, count, keep.data());
      for (int64_t e = 0; e < count; ++e)
        ASSERT_EQ(keep[size_t(e)],
                  lruc::core::dropoutKeep(uint64_t(key[0]), uint32_t(key[1]),
                                          site, uint64_t(first + e), rate)
                      ? 1u
                      : 0u)
            << "first " << first << ", element " << e;
      EXPECT_EQ(keep[size_t(count)], 7u) << "wrote past the row";
    }
}

/// The values step mode keeps from one call to the next follow the exact
/// bits of the parameter ranges they were computed from, and only those.
TEST(StepConstantsLease, IsCurrentOnlyForTheBitsItWasComputedFrom) {
  using Lease = lruc::cpu::StepConstantsLease;
  std::vector<float> params(8, 1.0f), state(4, 2.0f);
  const Lease::Range ranges[] = {{false, 2, 3}, {true, 1, 2}};
  auto lease = [&] {
    return std::make_unique<Lease>(64, params.data(), state.data(), ranges, 2);
  };
  {
    auto first = lease();
    EXPECT_FALSE(first->current());
    reinterpret_cast<float *>(first->data())[0] = 42.0f;
    first->computed();
    EXPECT_TRUE(first->current());
  }
  {
    // The same stream of calls gets its values back.
    auto again = lease();
    EXPECT_TRUE(again->current());
    EXPECT_EQ(reinterpret_cast<float *>(again->data())[0], 42.0f);
    // A call while this one runs gets values of its own.
    EXPECT_FALSE(lease()->current());
  }
  params[0] = 5.0f; // outside the ranges
  state[3] = 5.0f;
  EXPECT_TRUE(lease()->current());
  params[4] = 3.0f; // the last float of a params range
  EXPECT_FALSE(lease()->current());
  lease()->computed();
  EXPECT_TRUE(lease()->current());
  state[1] = -2.0f; // the first float of the state range
  EXPECT_FALSE(lease()->current());
  state[1] = 2.0f; // back to what they were computed from, but not
                   // recorded: a failed call must not count as computed
  EXPECT_FALSE(lease()->current());
  lease()->computed();
  params[2] = -0.0f;
  lease()->computed();
  params[2] = 0.0f; // equal as floats, not as bits
  EXPECT_FALSE(lease()->current());
}

} // namespace

// MatmulPrecision::Bf16: products of at least 64 rows a part and 2^18
// multiply-adds take their inputs rounded to bfloat16 and sum in fp32, in
// every layout and split (rows across threads, a weight gradient's split k,
// an epilogue's rows on the calling thread); smaller ones stay fp32. Each
// result is compared with two fp64 sums: of the bfloat16-rounded inputs,
// which it must match to fp32's rounding (1e-5 of sum |a| |b|), and of the
// inputs as they are, which it must miss by ten times more (the rounding
// happened).
namespace {

struct MatmulPrecisionGuard {
  ~MatmulPrecisionGuard() {
    std::string error;
    lruc::cpu::setMatmulPrecision(lruc::cpu::MatmulPrecision::Fp32, error);
  }
};

/// x rounded to the nearest bfloat16, ties to even, as a float.
float bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  uint32_t lsb = (bits >> 16) & 1u;
  bits = (bits + 0x7fffu + lsb) & 0xffff0000u;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

/// The largest |y - op(A) op(B)| over y, with the inputs as given (or
/// rounded), relative to max sum |a| |b|; y [m, n] dense.
double worstError(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  const std::vector<float> &a, const std::vector<float> &b,
                  const std::vector<float> &y, bool rounded) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        float x = a[size_t(transA ? p * m + i : i * k + p)];
        float w = b[size_t(transB ? j * k + p : p * n + j)];
        if (rounded)
          x = bf16(x), w = bf16(w);
        sum += double(x) * double(w);
        magnitude += std::abs(double(x) * double(w));
      }
      worst = std::max(worst, std::abs(double(y[size_t(i * n + j)]) - sum));
      scale = std::max(scale, magnitude);
    }
  return worst / scale;
}

} // namespace

TEST(CpuMatmulPrecision, Bf16ProductsRoundTheirInputs) {
  MatmulPrecisionGuard precisionGuard;
  ThreadCountGuard threadGuard;
  std::string error;
  if (!lruc::cpu::setMatmulPrecision(lruc::cpu::MatmulPrecision::Bf16, error)) {
    // Refused with a reason, the products still fp32 (where oneDNN or the
    // CPU's bfloat16 arithmetic is missing; lru-train-bf16-unavailable.test).
    EXPECT_NE(error.find("bfloat16 matrix products are unavailable: "),
              std::string::npos);
    EXPECT_EQ(lruc::cpu::matmulPrecision(), lruc::cpu::MatmulPrecision::Fp32);
    GTEST_SKIP() << error;
  }
  EXPECT_EQ(lruc::cpu::matmulPrecision(), lruc::cpu::MatmulPrecision::Bf16);
  lruc::cpu::setThreadCount(2);
  enum Kind { NT, NN, TN, NTRows, NNRows };
  auto check = [&](Kind kind, int64_t rows, int64_t n, int64_t k,
                   bool expectBf16) {
    SCOPED_TRACE("kind " + std::to_string(int(kind)) + ", rows " +
                 std::to_string(rows) + ", n " + std::to_string(n) + ", k " +
                 std::to_string(k));
    // The product as C[m, p] = op(A)[m, q] op(B)[q, p].
    const bool transA = kind == TN, transB = kind == NT || kind == NTRows;
    const int64_t m = kind == TN ? n : rows;
    const int64_t p = kind == TN ? k : kind == NN || kind == NNRows ? k : n;
    const int64_t q = kind == TN ? rows : kind == NN || kind == NNRows ? n : k;
    std::vector<float> a = values<float>(m * q, 0.3);
    std::vector<float> b = values<float>(q * p, 1.7);
    std::vector<float> y(size_t(m * p), -7.0f);
    a[1] = 1.01171875f; // halfway between two bfloat16s: rounds to even
    switch (kind) {
    case NT:
      lruc::cpu::matmulNT(a.data(), b.data(), rows, n, k, y.data());
      break;
    case NN:
      lruc::cpu::matmulNN(a.data(), b.data(), rows, n, k, y.data());
      break;
    case TN:
      lruc::cpu::matmulTN(a.data(), b.data(), rows, n, k, y.data());
      break;
    case NTRows:
    case NNRows:
      // An epilogue's parts: two ranges of rows on this thread.
      for (auto [r0, r1] :
           {std::pair<int64_t, int64_t>{0, rows / 2}, {rows / 2, rows}})
        (kind == NTRows ? lruc::cpu::matmulNTRows : lruc::cpu::matmulNNRows)(
            a.data(), b.data(), r0, r1, n, k, y.data());
      break;
    }
    const double toRounded = worstError(transA, transB, m, p, q, a, b, y, true);
    const double toExact = worstError(transA, transB, m, p, q, a, b, y, false);
    if (expectBf16) {
      EXPECT_LE(toRounded, 1e-5);
      EXPECT_GT(toExact, 10 * toRounded);
    } else {
      EXPECT_LE(toExact, 1e-5);
    }
  };
  check(NT, 300, 70, 130, true); // 150 rows a thread
  check(NN, 257, 90, 65, true);
  check(TN, 500, 96, 80, true);  // y [96, 80]: rows split
  check(TN, 8200, 96, 80, true); // k split in two, each part bfloat16
  check(NTRows, 200, 48, 100, true);
  check(NNRows, 200, 100, 48, true);
  check(NT, 60, 70, 130, false); // fewer than 64 rows: fp32
  check(NT, 300, 3, 10, false);  // too little work a part: fp32
  // A NaN stays a NaN through the rounding.
  std::vector<float> a = values<float>(256 * 64, 0.3);
  std::vector<float> w = values<float>(64 * 64, 1.7), y(256 * 64);
  a[5] = std::numeric_limits<float>::quiet_NaN();
  lruc::cpu::matmulNT(a.data(), w.data(), 256, 64, 64, y.data());
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_FALSE(std::isnan(y[64]));
  // Back to fp32: the same product exact again.
  ASSERT_TRUE(
      lruc::cpu::setMatmulPrecision(lruc::cpu::MatmulPrecision::Fp32, error));
  std::vector<float> b = values<float>(130 * 70, 1.7);
  std::vector<float> x = values<float>(300 * 130, 0.3), z(300 * 70);
  lruc::cpu::matmulNT(x.data(), b.data(), 300, 70, 130, z.data());
  EXPECT_LE(worstError(false, true, 300, 70, 130, x, b, z, false), 1e-5);
}
