//===- InterpreterTest.cpp - The fp64 reference interpreter ---------------===//
//
// Each primitive on small hand-computed examples; the scan against a plain
// sequential loop written here, in every variant (forward/reverse, constant
// and time-varying lambda, real and complex, with and without init and
// lengths); parameter init through runtime/core; and the errors, each with
// its diagnostic.
//
//===----------------------------------------------------------------------===//

#include "lruc/Interpreter.h"

#include "lruc/core/Init.h"
#include "lruc/core/Random.h"

#include "lru/LRUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <string>
#include <vector>

namespace {

using lruc::Tensor;
using Complex = std::complex<double>;

class Interpreter : public ::testing::Test {
protected:
  Interpreter() {
    context_.loadDialect<lru::LRUDialect, mlir::func::FuncDialect,
                         mlir::arith::ArithDialect>();
  }

  /// Parses `text` (a module) and returns its function @f.
  mlir::func::FuncOp parse(const std::string &text) {
    module_ = mlir::parseSourceString<mlir::ModuleOp>(text, &context_);
    EXPECT_TRUE(module_) << text;
    return module_ ? module_->lookupSymbol<mlir::func::FuncOp>("f") : nullptr;
  }

  /// Runs @f of `text`, expecting success, and returns its first result.
  Tensor run(const std::string &text, std::vector<Tensor> args,
             const lruc::ParameterStore &params = {}) {
    mlir::func::FuncOp f = parse(text);
    if (!f)
      return {};
    auto results = lruc::interpret(f, args, params);
    EXPECT_TRUE(mlir::succeeded(results)) << diagnostics_;
    return mlir::succeeded(results) ? (*results)[0] : Tensor{};
  }

  /// Runs @f of `text`, expecting failure, and returns the diagnostics.
  std::string runFails(const std::string &text, std::vector<Tensor> args,
                       const lruc::ParameterStore &params = {}) {
    mlir::func::FuncOp f = parse(text);
    if (!f)
      return "";
    EXPECT_TRUE(mlir::failed(lruc::interpret(f, args, params)));
    return diagnostics_;
  }

  mlir::MLIRContext context_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  std::string diagnostics_;
  mlir::ScopedDiagnosticHandler handler_{
      &context_, [this](mlir::Diagnostic &d) {
        diagnostics_ += d.str() + "\n";
        for (mlir::Diagnostic &note : d.getNotes())
          diagnostics_ += "note: " + note.str() + "\n";
        return mlir::success();
      }};
};

/// A module with one function @f(args) -> result whose body is `body`
/// (ending in `%y`).
std::string fn(const std::string &args, const std::string &result,
               const std::string &body) {
  return "func.func @f(" + args + ") -> " + result + " {\n" + body +
         "\n  return %y : " + result + "\n}\n";
}

void expectValues(const std::vector<double> &actual,
                  const std::vector<double> &expected, double tol = 1e-12) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

/// Deterministic, irregular values in (-1, 1).
std::vector<double> wave(size_t n, double phase) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(1.7 * double(i) + phase) * 0.9;
  return v;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST_F(Interpreter, RealUnary) {
  const std::string t = "tensor<4xf32>";
  Tensor x = Tensor::real({4}, {-2, -0.5, 0, 1.5});
  auto unary = [&](const std::string &op) {
    return run(fn("%x: " + t, t, "  %y = lru." + op + " : " + t), {x}).re;
  };
  expectValues(unary("neg %x"), {2, 0.5, 0, -1.5});
  expectValues(unary("exp %x"),
               {std::exp(-2), std::exp(-0.5), 1, std::exp(1.5)});
  expectValues(unary("step %x"), {0, 0, 0, 1});
  expectValues(unary("relu %x"), {0, 0, 0, 1.5});
  expectValues(unary("tanh %x"),
               {std::tanh(-2), std::tanh(-0.5), 0, std::tanh(1.5)});
  expectValues(unary("sigmoid %x"),
               {1 / (1 + std::exp(2)), 1 / (1 + std::exp(0.5)), 0.5,
                1 / (1 + std::exp(-1.5))});
  expectValues(unary("softplus %x"),
               {std::log(1 + std::exp(-2)), std::log(1 + std::exp(-0.5)),
                std::log(2), std::log(1 + std::exp(1.5))});
  Tensor positive = Tensor::real({4}, {0.25, 1, 4, 9});
  auto onPositive = [&](const std::string &op) {
    return run(fn("%x: " + t, t, "  %y = lru." + op + " %x : " + t), {positive})
        .re;
  };
  expectValues(onPositive("log"),
               {std::log(0.25), 0, std::log(4), std::log(9)});
  expectValues(onPositive("sqrt"), {0.5, 1, 2, 3});
  expectValues(onPositive("rsqrt"), {2, 1, 0.5, 1.0 / 3});
  Tensor gaps = Tensor::real({4}, {-2, NAN, 0, NAN});
  auto onGaps = [&](const std::string &op) {
    return run(fn("%x: " + t, t, "  %y = lru." + op + " %x : " + t), {gaps}).re;
  };
  expectValues(onGaps("not_nan"), {1, 0, 1, 0});
  expectValues(onGaps("nan_to_zero"), {-2, 0, 0, 0});
  // masked: x where the mask is not 0; a NaN or an infinity it drops is 0.
  Tensor values = Tensor::real({4}, {-2, NAN, INFINITY, NAN});
  Tensor mask = Tensor::real({4}, {1, 0, 0, 1});
  std::vector<double> kept =
      run(fn("%x: " + t + ", %m: " + t, t, "  %y = lru.masked %x, %m : " + t),
          {values, mask})
          .re;
  ASSERT_EQ(kept.size(), 4u);
  EXPECT_EQ(kept[0], -2);
  EXPECT_EQ(kept[1], 0);
  EXPECT_EQ(kept[2], 0);
  EXPECT_TRUE(std::isnan(kept[3]));
}

TEST_F(Interpreter, GeluAndItsDerivative) {
  const std::string t = "tensor<4xf32>";
  Tensor x = Tensor::real({4}, {-2, -0.5, 0.3, 1.5});
  for (std::string mode : {"", " approximate"}) {
    std::vector<double> gelu =
        run(fn("%x: " + t, t, "  %y = lru.gelu %x" + mode + " : " + t), {x}).re;
    std::vector<double> grad =
        run(fn("%x: " + t, t, "  %y = lru.gelu_grad %x" + mode + " : " + t),
            {x})
            .re;
    for (size_t i = 0; i < 4; ++i) {
      double v = x.re[i];
      double expected = mode.empty()
                            ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                            : 0.5 * v *
                                  (1 + std::tanh(std::sqrt(2 / M_PI) *
                                                 (v + 0.044715 * v * v * v)));
      EXPECT_NEAR(gelu[i], expected, 1e-12) << mode << " " << v;
    }
    // gelu_grad is the derivative of gelu: a central difference of gelu.
    const double h = 1e-6;
    Tensor up = x, down = x;
    for (size_t i = 0; i < 4; ++i) {
      up.re[i] += h;
      down.re[i] -= h;
    }
    std::vector<double> geluUp =
        run(fn("%x: " + t, t, "  %y = lru.gelu %x" + mode + " : " + t), {up})
            .re;
    std::vector<double> geluDown =
        run(fn("%x: " + t, t, "  %y = lru.gelu %x" + mode + " : " + t), {down})
            .re;
    for (size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(grad[i], (geluUp[i] - geluDown[i]) / (2 * h), 1e-8) << mode;
  }
}

TEST_F(Interpreter, RealBinary) {
  const std::string t = "tensor<3xf32>";
  Tensor a = Tensor::real({3}, {1, -2, 3}), b = Tensor::real({3}, {4, 5, -6});
  auto binary = [&](const std::string &op) {
    return run(fn("%a: " + t + ", %b: " + t, t,
                  "  %y = lru." + op + " %a, %b : " + t),
               {a, b})
        .re;
  };
  expectValues(binary("add"), {5, 3, -3});
  expectValues(binary("sub"), {-3, -7, 9});
  expectValues(binary("mul"), {4, -10, -18});
  expectValues(binary("div"), {0.25, -0.4, -0.5});
  expectValues(binary("max"), {4, 5, 3});
}

TEST_F(Interpreter, ComplexArithmetic) {
  const std::string r = "tensor<2xf32>", c = "tensor<2xcomplex<f32>>";
  Tensor re1 = Tensor::real({2}, {1, -0.5}), im1 = Tensor::real({2}, {2, 1.5});
  Tensor re2 = Tensor::real({2}, {0.3, 2}), im2 = Tensor::real({2}, {-1, 0.25});
  std::string args = "%a: " + r + ", %b: " + r + ", %c: " + r + ", %d: " + r;
  std::string make = "  %p = lru.complex %a, %b : " + r + " -> " + c +
                     "\n  %q = lru.complex %c, %d : " + r + " -> " + c + "\n";
  auto parts = [&](const std::string &op) {
    std::string body = make + "  %z = " + op + "\n  %re = lru.re %z : " + c +
                       " -> " + r + "\n  %im = lru.im %z : " + c + " -> " + r +
                       "\n  %y = lru.concat %re, %im dim 0 : (" + r + ", " + r +
                       ") -> tensor<4xf32>";
    return run(fn(args, "tensor<4xf32>", body), {re1, im1, re2, im2}).re;
  };
  Complex p[2] = {{1, 2}, {-0.5, 1.5}}, q[2] = {{0.3, -1}, {2, 0.25}};
  auto expect = [&](const std::string &op, auto f) {
    std::vector<double> y = parts(op);
    ASSERT_EQ(y.size(), 4u);
    for (int i = 0; i < 2; ++i) {
      Complex e = f(p[i], q[i]);
      EXPECT_NEAR(y[i], e.real(), 1e-12) << op;
      EXPECT_NEAR(y[2 + i], e.imag(), 1e-12) << op;
    }
  };
  expect("lru.mul %p, %q : " + c, [](Complex x, Complex y) { return x * y; });
  expect("lru.div %p, %q : " + c, [](Complex x, Complex y) { return x / y; });
  expect("lru.add %p, %q : " + c, [](Complex x, Complex y) { return x + y; });
  expect("lru.sub %p, %q : " + c, [](Complex x, Complex y) { return x - y; });
  expect("lru.exp %p : " + c, [](Complex x, Complex) { return std::exp(x); });
  expect("lru.neg %p : " + c, [](Complex x, Complex) { return -x; });
  expect("lru.conj %p : " + c, [](Complex x, Complex) { return std::conj(x); });
  // The formula of docs/primitives.md: exp(a+ib) = e^a (cos b + i sin b).
  expect("lru.exp %q : " + c, [](Complex, Complex y) {
    return std::exp(y.real()) * Complex(std::cos(y.imag()), std::sin(y.imag()));
  });
}

TEST_F(Interpreter, Constants) {
  std::string body =
      "  %a = arith.constant dense<2.5> : tensor<2xf32>\n"
      "  %b = arith.constant dense<[1.0, -3.0]> : tensor<2xf32>\n"
      "  %y = lru.mul %a, %b : tensor<2xf32>";
  expectValues(run(fn("", "tensor<2xf32>", body), {}).re, {2.5, -7.5});
  Tensor ints =
      run(fn("", "tensor<3xi32>",
             "  %y = arith.constant dense<[4, -1, 7]> : tensor<3xi32>"),
          {});
  EXPECT_EQ(ints.kind, Tensor::Kind::Int);
  EXPECT_EQ(ints.ints, (std::vector<int64_t>{4, -1, 7}));
  Tensor key = run(fn("", "tensor<2xi64>",
                      "  %y = arith.constant dense<[9, 1]> : tensor<2xi64>"),
                   {});
  EXPECT_EQ(key.ints, (std::vector<int64_t>{9, 1}));
  Tensor c = run(fn("", "tensor<2xcomplex<f32>>",
                    "  %y = arith.constant dense<(1.5, -2.0)> : "
                    "tensor<2xcomplex<f32>>"),
                 {});
  EXPECT_EQ(c.kind, Tensor::Kind::Complex);
  expectValues(c.re, {1.5, 1.5});
  expectValues(c.im, {-2, -2});
  Tensor scalar = run(
      fn("", "tensor<f32>", "  %y = arith.constant dense<1.0> : tensor<f32>"),
      {});
  EXPECT_TRUE(scalar.shape.empty());
  expectValues(scalar.re, {1});
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

TEST_F(Interpreter, Broadcast) {
  Tensor like = Tensor::zeros({2, 3}, Tensor::Kind::Real);
  std::string args = "%x: tensor<3xf32>, %like: tensor<?x3xf32>";
  Tensor rows = run(fn(args, "tensor<?x3xf32>",
                       "  %y = lru.broadcast %x like %like dims [1] : "
                       "(tensor<3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>"),
                    {Tensor::real({3}, {1, 2, 3}), like});
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{2, 3}));
  expectValues(rows.re, {1, 2, 3, 1, 2, 3});
  Tensor columns =
      run(fn("%x: tensor<?xf32>, %like: tensor<?x3xf32>", "tensor<?x3xf32>",
             "  %y = lru.broadcast %x like %like dims [0] : "
             "(tensor<?xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>"),
          {Tensor::real({2}, {7, 8}), like});
  expectValues(columns.re, {7, 7, 7, 8, 8, 8});
  Tensor scalar =
      run(fn("%x: tensor<f32>, %like: tensor<?x3xf32>", "tensor<?x3xf32>",
             "  %y = lru.broadcast %x like %like dims [] : "
             "(tensor<f32>, tensor<?x3xf32>) -> tensor<?x3xf32>"),
          {Tensor::real({}, {4}), like});
  expectValues(scalar.re, std::vector<double>(6, 4));
  // Middle dim of three: x [2, 4] into [2, 3, 4] along dims 0 and 2.
  Tensor middle = run(
      fn("%x: tensor<2x4xf32>, %like: tensor<2x3x4xf32>", "tensor<2x3x4xf32>",
         "  %y = lru.broadcast %x like %like dims [0, 2] : "
         "(tensor<2x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>"),
      {Tensor::real({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}),
       Tensor::zeros({2, 3, 4}, Tensor::Kind::Real)});
  std::vector<double> expected;
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        expected.push_back(b * 4 + k);
  expectValues(middle.re, expected);
}

TEST_F(Interpreter, ReduceSum) {
  Tensor x = Tensor::real({2, 3}, {1, 2, 3, 4, 5, 6});
  auto reduce = [&](const std::string &dims, const std::string &type) {
    return run(fn("%x: tensor<2x3xf32>", type,
                  "  %y = lru.reduce_sum %x dims [" + dims +
                      "] : tensor<2x3xf32> -> " + type),
               {x})
        .re;
  };
  expectValues(reduce("0", "tensor<3xf32>"), {5, 7, 9});
  expectValues(reduce("1", "tensor<2xf32>"), {6, 15});
  expectValues(reduce("0, 1", "tensor<f32>"), {21});
  Tensor c = run(fn("%x: tensor<2xcomplex<f32>>", "tensor<complex<f32>>",
                    "  %y = lru.reduce_sum %x dims [0] : "
                    "tensor<2xcomplex<f32>> -> tensor<complex<f32>>"),
                 {Tensor::complex({2}, {1, 2}, {3, -5})});
  expectValues(c.re, {3});
  expectValues(c.im, {-2});
}

TEST_F(Interpreter, ConcatAndSlice) {
  Tensor a = Tensor::real({2, 1}, {1, 2});
  Tensor b = Tensor::real({2, 2}, {3, 4, 5, 6});
  Tensor joined =
      run(fn("%a: tensor<?x1xf32>, %b: tensor<?x2xf32>", "tensor<?x3xf32>",
             "  %y = lru.concat %a, %b dim 1 : (tensor<?x1xf32>, "
             "tensor<?x2xf32>) -> tensor<?x3xf32>"),
          {a, b});
  EXPECT_EQ(joined.shape, (std::vector<int64_t>{2, 3}));
  expectValues(joined.re, {1, 3, 4, 2, 5, 6});
  Tensor stacked =
      run(fn("%a: tensor<2x2xf32>, %b: tensor<2x2xf32>", "tensor<4x2xf32>",
             "  %y = lru.concat %a, %b dim 0 : (tensor<2x2xf32>, "
             "tensor<2x2xf32>) -> tensor<4x2xf32>"),
          {b, Tensor::real({2, 2}, {7, 8, 9, 10})});
  expectValues(stacked.re, {3, 4, 5, 6, 7, 8, 9, 10});
  Tensor x = Tensor::real({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor sliced = run(fn("%x: tensor<?x4xf32>", "tensor<?x2xf32>",
                         "  %y = lru.slice %x dim 1 offset 1 size 2 : "
                         "tensor<?x4xf32> -> tensor<?x2xf32>"),
                      {x});
  expectValues(sliced.re, {1, 2, 5, 6});
  Tensor row = run(fn("%x: tensor<2x4xf32>", "tensor<1x4xf32>",
                      "  %y = lru.slice %x dim 0 offset 1 size 1 : "
                      "tensor<2x4xf32> -> tensor<1x4xf32>"),
                   {x});
  expectValues(row.re, {4, 5, 6, 7});
}

TEST_F(Interpreter, View) {
  // A complex [B, 2] is the floats [B, 4] of interleaved parts; the batch
  // is the argument's.
  Tensor z = Tensor::complex({2, 2}, {1, 2, 3, 4}, {-1, -2, -3, -4});
  Tensor floats =
      run(fn("%z: tensor<?x2xcomplex<f32>>", "tensor<?x4xf32>",
             "  %y = lru.view %z : tensor<?x2xcomplex<f32>> -> "
             "tensor<?x4xf32>"),
          {z});
  EXPECT_EQ(floats.shape, (std::vector<int64_t>{2, 4}));
  expectValues(floats.re, {1, -1, 2, -2, 3, -3, 4, -4});
  Tensor back = run(fn("%x: tensor<?x4xf32>", "tensor<?x2xcomplex<f32>>",
                       "  %y = lru.view %x : tensor<?x4xf32> -> "
                       "tensor<?x2xcomplex<f32>>"),
                    {floats});
  expectValues(back.re, {1, 2, 3, 4});
  expectValues(back.im, {-1, -2, -3, -4});
  // Rows (a[n], b[n]) of a [2, 4] are the alternating rows of a [4, 2].
  Tensor rows = run(fn("%x: tensor<2x4xf32>", "tensor<4x2xf32>",
                       "  %y = lru.view %x : tensor<2x4xf32> -> "
                       "tensor<4x2xf32>"),
                    {Tensor::real({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})});
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{4, 2}));
  expectValues(rows.re, {0, 1, 2, 3, 4, 5, 6, 7});
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

const std::string kShiftArgs = "%x: tensor<?x4x1xf32>, %init: tensor<?x1xf32>, "
                               "%len: tensor<?xi32>";

TEST_F(Interpreter, Shift) {
  Tensor x = Tensor::real({1, 4, 1}, {1, 2, 3, 4});
  Tensor init = Tensor::real({1, 1}, {9});
  Tensor len = Tensor::integers({1}, {3});
  auto shift = [&](const std::string &operands, const std::string &types) {
    return run(fn(kShiftArgs, "tensor<?x4x1xf32>",
                  "  %y = lru.shift %x " + operands + " : (tensor<?x4x1xf32>" +
                      types + ") -> tensor<?x4x1xf32>"),
               {x, init, len})
        .re;
  };
  expectValues(shift("", ""), {0, 1, 2, 3});
  expectValues(shift("reverse", ""), {2, 3, 4, 0});
  expectValues(
      shift("init %init lengths %len", ", tensor<?x1xf32>, tensor<?xi32>"),
      {9, 1, 2, 0});
  // Reversed, the last real step (t = 2) reads init; padding is 0.
  expectValues(shift("init %init lengths %len reverse",
                     ", tensor<?x1xf32>, tensor<?xi32>"),
               {2, 3, 9, 0});
  expectValues(shift("lengths %len reverse", ", tensor<?xi32>"), {2, 3, 0, 0});
}

TEST_F(Interpreter, LengthMask) {
  Tensor len = Tensor::integers({3}, {3, 0, 4});
  auto mask = [&](const std::string &kind) {
    return run(fn("%len: tensor<?xi32>", "tensor<?x4xf32>",
                  "  %y = lru.length_mask " + kind +
                      " %len : tensor<?xi32> -> tensor<?x4xf32>"),
               {len})
        .re;
  };
  expectValues(mask("prefix"), {1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1});
  expectValues(mask("last"), {0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1});
}

TEST_F(Interpreter, ZeroPadding) {
  // Steps past each length are 0, whatever they held; a bad length is an
  // error naming the sequence.
  const std::string t = "tensor<?x4xi32>";
  std::string body =
      "  %y = lru.zero_padding %x, %len : " + t + ", tensor<?xi32>";
  Tensor x =
      Tensor::integers({3, 4}, {5, -1, 9, 70000, 1, 2, 3, 4, -7, 0, 8, 6});
  Tensor y = run(fn("%x: " + t + ", %len: tensor<?xi32>", t, body),
                 {x, Tensor::integers({3}, {2, 0, 4})});
  EXPECT_EQ(y.kind, Tensor::Kind::Int);
  EXPECT_EQ(y.ints,
            (std::vector<int64_t>{5, -1, 0, 0, 0, 0, 0, 0, -7, 0, 8, 6}));
  std::string errors =
      runFails(fn("%x: " + t + ", %len: tensor<?xi32>", t, body),
               {x, Tensor::integers({3}, {2, 5, 4})});
  EXPECT_NE(errors.find("'lru.zero_padding' op length 5 of sequence 1 is "
                        "outside [0, 4]"),
            std::string::npos)
      << errors;
}

TEST_F(Interpreter, ScanByHand) {
  // x_t = 0.5 x_{t-1} + b_t on b = 1, 2, 3: 1, 2.5, 4.25.
  Tensor lambda = Tensor::real({1}, {0.5});
  Tensor b = Tensor::real({1, 3, 1}, {1, 2, 3});
  std::string args = "%l: tensor<1xf32>, %b: tensor<?x3x1xf32>, "
                     "%len: tensor<?xi32>";
  auto scan = [&](const std::string &rest, const std::string &types) {
    return run(fn(args, "tensor<?x3x1xf32>",
                  "  %y = lru.scan %l, %b " + rest +
                      " : (tensor<1xf32>, tensor<?x3x1xf32>" + types +
                      ") -> tensor<?x3x1xf32>"),
               {lambda, b, Tensor::integers({1}, {2})})
        .re;
  };
  expectValues(scan("", ""), {1, 2.5, 4.25});
  // Reverse: x_t = 0.5 x_{t+1} + b_t from t = 2 down: 2.75, 3.5, 3.
  expectValues(scan("reverse", ""), {2.75, 3.5, 3});
  // With length 2 the reverse scan starts at t = 1: 2, 2, and padding 0.
  expectValues(scan("lengths %len reverse", ", tensor<?xi32>"), {2, 2, 0});
  expectValues(scan("lengths %len", ", tensor<?xi32>"), {1, 2.5, 0});
}

/// The scan as a plain sequential loop over each sequence, in complex
/// arithmetic (real inputs have zero imaginary parts).
std::vector<Complex> referenceScan(const std::vector<Complex> &lambda,
                                   const std::vector<Complex> &b,
                                   const std::vector<Complex> *init,
                                   const std::vector<int64_t> *lengths,
                                   bool reverse, int64_t B, int64_t L,
                                   int64_t N) {
  bool constant = int64_t(lambda.size()) == N;
  std::vector<Complex> x(b.size(), 0.0);
  for (int64_t s = 0; s < B; ++s) {
    int64_t length = lengths ? (*lengths)[s] : L;
    for (int64_t n = 0; n < N; ++n) {
      Complex carry = init ? (*init)[s * N + n] : 0.0;
      if (!reverse) {
        for (int64_t t = 0; t < length; ++t) {
          int64_t i = (s * L + t) * N + n;
          carry = (constant ? lambda[n] : lambda[i]) * carry + b[i];
          x[i] = carry;
        }
      } else {
        for (int64_t t = length - 1; t >= 0; --t) {
          int64_t i = (s * L + t) * N + n;
          carry = (constant ? lambda[n] : lambda[i]) * carry + b[i];
          x[i] = carry;
        }
      }
    }
  }
  return x;
}

Tensor tensorOf(std::vector<int64_t> shape, const std::vector<Complex> &v,
                bool complex) {
  std::vector<double> re, im;
  for (Complex c : v) {
    re.push_back(c.real());
    im.push_back(c.imag());
  }
  return complex ? Tensor::complex(std::move(shape), re, im)
                 : Tensor::real(std::move(shape), re);
}

std::vector<Complex> complexValues(size_t n, double phase, bool complex,
                                   double scale) {
  std::vector<double> re = wave(n, phase), im = wave(n, phase + 2.1);
  std::vector<Complex> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back(scale * Complex(re[i], complex ? im[i] : 0.0));
  return v;
}

TEST_F(Interpreter, ScanMatchesASequentialLoop) {
  constexpr int64_t B = 3, L = 5, N = 2;
  std::vector<int64_t> lengths = {5, 2, 0};
  for (bool complex : {false, true})
    for (bool timeVarying : {false, true})
      for (bool reverse : {false, true})
        for (bool withInitAndLengths : {false, true}) {
          std::string element = complex ? "complex<f32>" : "f32";
          std::string seq = "tensor<?x5x2x" + element + ">";
          std::string lambdaType =
              timeVarying ? seq : "tensor<2x" + element + ">";
          std::string initType = "tensor<?x2x" + element + ">";
          std::vector<Complex> lambda =
              complexValues(timeVarying ? B * L * N : N, 0.4, complex, 0.95);
          std::vector<Complex> b = complexValues(B * L * N, 1.1, complex, 1);
          std::vector<Complex> init = complexValues(B * N, 2.3, complex, 1);
          std::string operands =
              withInitAndLengths ? " init %i lengths %len" : "";
          std::string types =
              withInitAndLengths ? ", " + initType + ", tensor<?xi32>" : "";
          std::string text =
              fn("%l: " + lambdaType + ", %b: " + seq + ", %i: " + initType +
                     ", %len: tensor<?xi32>",
                 seq,
                 "  %y = lru.scan %l, %b" + operands +
                     (reverse ? " reverse" : "") + " : (" + lambdaType + ", " +
                     seq + types + ") -> " + seq);
          Tensor y =
              run(text, {tensorOf(timeVarying ? std::vector<int64_t>{B, L, N}
                                              : std::vector<int64_t>{N},
                                  lambda, complex),
                         tensorOf({B, L, N}, b, complex),
                         tensorOf({B, N}, init, complex),
                         Tensor::integers({B}, lengths)});
          std::vector<Complex> expected = referenceScan(
              lambda, b, withInitAndLengths ? &init : nullptr,
              withInitAndLengths ? &lengths : nullptr, reverse, B, L, N);
          SCOPED_TRACE(text);
          ASSERT_EQ(y.re.size(), expected.size());
          for (size_t i = 0; i < expected.size(); ++i) {
            EXPECT_NEAR(y.re[i], expected[i].real(), 1e-12) << i;
            if (complex) {
              EXPECT_NEAR(y.im[i], expected[i].imag(), 1e-12) << i;
            }
          }
        }
}

//===----------------------------------------------------------------------===//
// Dense algebra and lookups
//===----------------------------------------------------------------------===//

TEST_F(Interpreter, Matmul) {
  Tensor x = Tensor::real({2, 2}, {1, 2, 3, 4});
  // nt: x Wᵀ with W [3, 2].
  Tensor nt =
      run(fn("%x: tensor<?x2xf32>, %w: tensor<3x2xf32>", "tensor<?x3xf32>",
             "  %y = lru.matmul nt %x, %w : (tensor<?x2xf32>, "
             "tensor<3x2xf32>) -> tensor<?x3xf32>"),
          {x, Tensor::real({3, 2}, {1, 0, 2, 1, 0, 3})});
  expectValues(nt.re, {1, 4, 6, 3, 10, 12});
  // nn: x W with W [2, 3], x with a leading batch dim [1, 2, 2].
  Tensor nn =
      run(fn("%x: tensor<?x2x2xf32>, %w: tensor<2x3xf32>", "tensor<?x2x3xf32>",
             "  %y = lru.matmul nn %x, %w : (tensor<?x2x2xf32>, "
             "tensor<2x3xf32>) -> tensor<?x2x3xf32>"),
          {Tensor::real({1, 2, 2}, {1, 2, 3, 4}),
           Tensor::real({2, 3}, {1, 0, 2, 0, 1, 3})});
  EXPECT_EQ(nn.shape, (std::vector<int64_t>{1, 2, 3}));
  expectValues(nn.re, {1, 2, 8, 3, 4, 18});
  // tn: Σ over every leading index of aᵀ b, a [2, 1, 2], b [2, 1, 1].
  Tensor tn = run(
      fn("%a: tensor<?x1x2xf32>, %b: tensor<?x1x1xf32>", "tensor<2x1xf32>",
         "  %y = lru.matmul tn %a, %b : (tensor<?x1x2xf32>, "
         "tensor<?x1x1xf32>) -> tensor<2x1xf32>"),
      {Tensor::real({2, 1, 2}, {1, 2, 3, 4}), Tensor::real({2, 1, 1}, {5, 6})});
  expectValues(tn.re, {23, 34});
}

TEST_F(Interpreter, GatherAndScatterAdd) {
  Tensor table = Tensor::real({3, 2}, {0, 1, 10, 11, 20, 21});
  Tensor indices = Tensor::integers({2, 2}, {2, 0, 1, 2});
  Tensor rows =
      run(fn("%t: tensor<3x2xf32>, %i: tensor<?x2xi32>", "tensor<?x2x2xf32>",
             "  %y = lru.gather %t, %i : (tensor<3x2xf32>, "
             "tensor<?x2xi32>) -> tensor<?x2x2xf32>"),
          {table, indices});
  expectValues(rows.re, {20, 21, 0, 1, 10, 11, 20, 21});
  // Row 2 is picked twice: its updates add up.
  Tensor updates = Tensor::real({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor sums =
      run(fn("%u: tensor<?x2x2xf32>, %i: tensor<?x2xi32>", "tensor<3x2xf32>",
             "  %y = lru.scatter_add %u, %i : (tensor<?x2x2xf32>, "
             "tensor<?x2xi32>) -> tensor<3x2xf32>"),
          {updates, indices});
  expectValues(sums.re, {3, 4, 5, 6, 8, 10});
}

//===----------------------------------------------------------------------===//
// Losses and randomness
//===----------------------------------------------------------------------===//

TEST_F(Interpreter, SoftmaxCrossEntropy) {
  Tensor logits = Tensor::real({2, 3}, {0, 0, 0, 1, 2, 3});
  Tensor labels = Tensor::integers({2}, {0, 2});
  Tensor loss =
      run(fn("%z: tensor<?x3xf32>, %k: tensor<?xi32>", "tensor<?xf32>",
             "  %y = lru.softmax_cross_entropy %z, %k : "
             "(tensor<?x3xf32>, tensor<?xi32>) -> tensor<?xf32>"),
          {logits, labels});
  double lse = std::log(std::exp(1) + std::exp(2) + std::exp(3));
  expectValues(loss.re, {std::log(3), lse - 3});
  Tensor grad = run(
      fn("%z: tensor<?x3xf32>, %k: tensor<?xi32>, %g: tensor<?xf32>",
         "tensor<?x3xf32>",
         "  %y = lru.softmax_cross_entropy_grad %z, %k, %g : "
         "(tensor<?x3xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?x3xf32>"),
      {logits, labels, Tensor::real({2}, {1, 2})});
  expectValues(grad.re, {1.0 / 3 - 1, 1.0 / 3, 1.0 / 3, 2 * std::exp(1 - lse),
                         2 * std::exp(2 - lse), 2 * (std::exp(3 - lse) - 1)});

  // Label smoothing s = 0.25: the target (1 - s) onehot + s / 3, so the
  // loss is lse - 0.75 z[label] - 0.25 mean(z).
  Tensor smoothed =
      run(fn("%z: tensor<?x3xf32>, %k: tensor<?xi32>", "tensor<?xf32>",
             "  %y = lru.softmax_cross_entropy %z, %k "
             "{label_smoothing = 0.25 : f32} : "
             "(tensor<?x3xf32>, tensor<?xi32>) -> tensor<?xf32>"),
          {logits, labels});
  expectValues(smoothed.re, {std::log(3), lse - 0.75 * 3 - 0.25 * 2});
  Tensor smoothedGrad = run(
      fn("%z: tensor<?x3xf32>, %k: tensor<?xi32>, %g: tensor<?xf32>",
         "tensor<?x3xf32>",
         "  %y = lru.softmax_cross_entropy_grad %z, %k, %g "
         "{label_smoothing = 0.25 : f32} : "
         "(tensor<?x3xf32>, tensor<?xi32>, tensor<?xf32>) -> tensor<?x3xf32>"),
      {logits, labels, Tensor::real({2}, {1, 2})});
  const double spread = 0.25 / 3;
  expectValues(smoothedGrad.re,
               {1.0 / 3 - 0.75 - spread, 1.0 / 3 - spread, 1.0 / 3 - spread,
                2 * (std::exp(1 - lse) - spread),
                2 * (std::exp(2 - lse) - spread),
                2 * (std::exp(3 - lse) - 0.75 - spread)});
}

TEST_F(Interpreter, DropoutMask) {
  constexpr int64_t n = 64;
  Tensor x = Tensor::real({2, n / 2}, wave(n, 0.7));
  Tensor key = Tensor::integers({2}, {123, 5});
  std::string args = "%x: tensor<?x32xf32>, %key: tensor<2xi64>";
  auto dropout = [&](const std::string &rate) {
    return run(fn(args, "tensor<?x32xf32>",
                  "  %y = lru.dropout_mask %x, %key rate " + rate +
                      " site 3 : tensor<?x32xf32>, tensor<2xi64>"),
               {x, key})
        .re;
  };
  std::vector<double> y = dropout("0.25");
  ASSERT_EQ(y.size(), size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    bool keep = lruc::core::dropoutKeep(123, 5, 3, uint64_t(i), 0.25);
    // Scaled by the float every path multiplies by (core::dropoutScale).
    EXPECT_EQ(y[i], keep ? x.re[i] * double(float(1.0 / 0.75)) : 0.0) << i;
  }
  expectValues(dropout("0.0"), x.re);
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

const char *kRing = R"(
func.func @f() -> tensor<4xf32> {
  %nu = lru.param "l.nu_log" init(lru_nu) {r_max = 0.99 : f64, r_min = 0.5 : f64} group(recurrent) : tensor<4xf32>
  %gamma = lru.param "l.gamma_log" init(lru_gamma) {nu = "l.nu_log", theta = "l.theta_log"} group(recurrent) : tensor<4xf32>
  %theta = lru.param "l.theta_log" init(lru_theta) {max_phase = 3.0 : f64} group(recurrent) : tensor<4xf32>
  %w = lru.param "w" init(normal) {std = 2 : i64} group(decay) : tensor<2x3xf32>
  %b = lru.param "b" init(uniform) {low = -1.0 : f64, high = 1.0 : f64} group(decay) : tensor<3xf32>
  %o = lru.param "o" init(ones) group(state) : tensor<3xf32>
  %y = lru.add %nu, %gamma : tensor<4xf32>
  return %y : tensor<4xf32>
}
)";

TEST_F(Interpreter, InitParametersThroughCore) {
  mlir::func::FuncOp f = parse(kRing);
  auto store = lruc::initParameters(f, 17);
  ASSERT_TRUE(mlir::succeeded(store)) << diagnostics_;
  ASSERT_EQ(store->size(), 6u);
  EXPECT_EQ((*store)["w"].shape, (std::vector<int64_t>{2, 3}));

  using namespace lruc::core;
  auto expected = [](InitSpec spec, const char *name, size_t n,
                     const std::vector<double> *nu = nullptr) {
    std::vector<double> v(n);
    EXPECT_TRUE(initParameter(spec, name, 17, v, nu));
    return v;
  };
  InitSpec nu;
  nu.kind = InitKind::LruNu;
  nu.rMin = 0.5;
  nu.rMax = 0.99;
  EXPECT_EQ((*store)["l.nu_log"].re, expected(nu, "l.nu_log", 4));
  InitSpec gamma;
  gamma.kind = InitKind::LruGamma;
  EXPECT_EQ((*store)["l.gamma_log"].re,
            expected(gamma, "l.gamma_log", 4, &(*store)["l.nu_log"].re));
  InitSpec theta;
  theta.kind = InitKind::LruTheta;
  theta.maxPhase = 3;
  EXPECT_EQ((*store)["l.theta_log"].re, expected(theta, "l.theta_log", 4));
  InitSpec normal;
  normal.kind = InitKind::Normal;
  normal.std = 2; // an integer attribute counts as a number
  EXPECT_EQ((*store)["w"].re, expected(normal, "w", 6));
  InitSpec uniform;
  uniform.kind = InitKind::Uniform;
  uniform.low = -1;
  EXPECT_EQ((*store)["b"].re, expected(uniform, "b", 3));
  EXPECT_EQ((*store)["o"].re, std::vector<double>(3, 1.0));

  // The store feeds lru.param.
  auto results = lruc::interpret(f, {}, *store);
  ASSERT_TRUE(mlir::succeeded(results)) << diagnostics_;
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ((*results)[0].re[i],
              (*store)["l.nu_log"].re[i] + (*store)["l.gamma_log"].re[i]);
}

TEST_F(Interpreter, SharedParameterNameIsOneParameter) {
  mlir::func::FuncOp f = parse(R"(
func.func @f() -> tensor<2xf32> {
  %a = lru.param "w" init(normal) {std = 1.0 : f64} group(decay) : tensor<2xf32>
  %b = lru.param "w" init(normal) {std = 1.0 : f64} group(decay) : tensor<2xf32>
  %y = lru.sub %a, %b : tensor<2xf32>
  return %y : tensor<2xf32>
}
)");
  auto store = lruc::initParameters(f, 1);
  ASSERT_TRUE(mlir::succeeded(store));
  EXPECT_EQ(store->size(), 1u);
  auto results = lruc::interpret(f, {}, *store);
  ASSERT_TRUE(mlir::succeeded(results));
  expectValues((*results)[0].re, {0, 0});
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_F(Interpreter, InitErrors) {
  mlir::func::FuncOp f = parse(R"(
func.func @f() -> tensor<4xf32> {
  %gamma = lru.param "l.gamma_log" init(lru_gamma) {nu = "l.nu", theta = "l.theta_log"} group(recurrent) : tensor<4xf32>
  return %gamma : tensor<4xf32>
}
)");
  EXPECT_TRUE(mlir::failed(lruc::initParameters(f, 1)));
  EXPECT_NE(diagnostics_.find("'lru.param' op parameter 'l.gamma_log' "
                              "derives from 'l.nu', which is not a nu "
                              "parameter"),
            std::string::npos)
      << diagnostics_;

  diagnostics_.clear();
  f = parse(R"(
func.func @f() -> tensor<2xf32> {
  %a = lru.param "w" init(normal) {std = 1.0 : f64} group(decay) : tensor<2xf32>
  %b = lru.param "w" init(zeros) group(decay) : tensor<2xf32>
  %y = lru.sub %a, %b : tensor<2xf32>
  return %y : tensor<2xf32>
}
)");
  EXPECT_TRUE(mlir::failed(lruc::initParameters(f, 1)));
  EXPECT_NE(diagnostics_.find("declares parameter 'w' again with another "
                              "type or init"),
            std::string::npos)
      << diagnostics_;
  EXPECT_NE(diagnostics_.find("first declared here"), std::string::npos);
}

const char *kGather = R"(
func.func @f(%tokens: tensor<?x4xi32> {lru.input = "tokens"}) -> tensor<?x4x3xf32> {
  %t = lru.param "table" init(normal) {std = 1.0 : f64} group(decay) : tensor<8x3xf32>
  %y = lru.gather %t, %tokens : (tensor<8x3xf32>, tensor<?x4xi32>) -> tensor<?x4x3xf32>
  return %y : tensor<?x4x3xf32>
}
)";

TEST_F(Interpreter, MissingParameter) {
  std::string errors =
      runFails(kGather, {Tensor::integers({1, 4}, {0, 1, 2, 3})});
  EXPECT_NE(errors.find("'lru.param' op parameter 'table' is not in the store"),
            std::string::npos)
      << errors;
}

TEST_F(Interpreter, MisshapenParameter) {
  lruc::ParameterStore params;
  params["table"] = Tensor::real({3, 8}, std::vector<double>(24, 0.0));
  std::string errors =
      runFails(kGather, {Tensor::integers({1, 4}, {0, 1, 2, 3})}, params);
  EXPECT_NE(errors.find("parameter 'table' expects 'tensor<8x3xf32>', the "
                        "store holds a real tensor of shape [3, 8]"),
            std::string::npos)
      << errors;
}

TEST_F(Interpreter, BadArguments) {
  lruc::ParameterStore params;
  params["table"] = Tensor::real({8, 3}, std::vector<double>(24, 0.0));
  std::string errors = runFails(
      kGather, {Tensor::integers({2, 5}, std::vector<int64_t>(10, 0))}, params);
  EXPECT_NE(errors.find("'func.func' op argument #0 ('tokens') expects "
                        "'tensor<?x4xi32>', got an integer tensor of shape "
                        "[2, 5]"),
            std::string::npos)
      << errors;

  diagnostics_.clear();
  errors = runFails(kGather, {Tensor::real({2, 4}, std::vector<double>(8, 0))},
                    params);
  EXPECT_NE(errors.find("got a real tensor of shape [2, 4]"), std::string::npos)
      << errors;

  diagnostics_.clear();
  errors = runFails(kGather, {Tensor::integers({2, 4}, {1, 2})}, params);
  EXPECT_NE(errors.find("whose values do not match its shape"),
            std::string::npos)
      << errors;

  diagnostics_.clear();
  errors = runFails(kGather, {}, params);
  EXPECT_NE(errors.find("takes 1 arguments, got 0"), std::string::npos)
      << errors;
}

TEST_F(Interpreter, TokenOutOfRange) {
  lruc::ParameterStore params;
  params["table"] = Tensor::real({8, 3}, std::vector<double>(24, 0.0));
  std::string errors = runFails(
      kGather, {Tensor::integers({2, 4}, {0, 1, 2, 3, 4, 9, 6, 7})}, params);
  EXPECT_NE(errors.find("'lru.gather' op index 9 at [1, 1] is outside the "
                        "table's rows [0, 8)"),
            std::string::npos)
      << errors;
}

TEST_F(Interpreter, LabelOutOfRange) {
  std::string errors =
      runFails(fn("%z: tensor<?x3xf32>, %k: tensor<?xi32>", "tensor<?xf32>",
                  "  %y = lru.softmax_cross_entropy %z, %k : "
                  "(tensor<?x3xf32>, tensor<?xi32>) -> tensor<?xf32>"),
               {Tensor::real({2, 3}, std::vector<double>(6, 0.0)),
                Tensor::integers({2}, {1, -1})});
  EXPECT_NE(errors.find("label -1 at [1] is outside the classes [0, 3)"),
            std::string::npos)
      << errors;
}

TEST_F(Interpreter, LengthOutOfRange) {
  std::string errors = runFails(
      fn("%l: tensor<1xf32>, %b: tensor<?x3x1xf32>, %len: tensor<?xi32>",
         "tensor<?x3x1xf32>",
         "  %y = lru.scan %l, %b lengths %len : (tensor<1xf32>, "
         "tensor<?x3x1xf32>, tensor<?xi32>) -> tensor<?x3x1xf32>"),
      {Tensor::real({1}, {0.5}), Tensor::real({2, 3, 1}, wave(6, 0)),
       Tensor::integers({2}, {3, 4})});
  EXPECT_NE(errors.find("'lru.scan' op length 4 of sequence 1 is outside "
                        "[0, 3]"),
            std::string::npos)
      << errors;
}

TEST_F(Interpreter, InconsistentBatchSizes) {
  // Both `?`s are the batch, but nothing in the types says so.
  std::string errors = runFails(
      fn("%a: tensor<?x2xf32>, %b: tensor<?x2xf32>", "tensor<?x2xf32>",
         "  %y = lru.add %a, %b : tensor<?x2xf32>"),
      {Tensor::real({1, 2}, {1, 2}), Tensor::real({2, 2}, {1, 2, 3, 4})});
  EXPECT_NE(errors.find("'lru.add' op operands have shapes [1, 2] and [2, 2]"),
            std::string::npos)
      << errors;
}

TEST_F(Interpreter, UnsupportedOp) {
  std::string errors = runFails(
      fn("%x: tensor<2x4xf32>, %s: tensor<4xf32>", "tensor<2x4xf32>",
         "  %y = lru.layer_norm %x, %s, %s : (tensor<2x4xf32>, tensor<4xf32>, "
         "tensor<4xf32>) -> tensor<2x4xf32>"),
      {Tensor::real({2, 4}, wave(8, 0)), Tensor::real({4}, wave(4, 1))});
  EXPECT_NE(errors.find("'lru.layer_norm' op is not supported by the "
                        "reference interpreter"),
            std::string::npos)
      << errors;
}

} // namespace
