//===- GradCheckTest.cpp - Derivative rules against finite differences ----===//
//
// For every derivative rule: a tiny @forward_train applying the op to
// trainable parameters, reduced to a loss with fixed random weights (so no
// symmetry hides a wrong sign). lruc derives @backward; the fp64 reference
// interpreter runs it, and each gradient element is compared with a central
// finite difference of the loss, also in fp64.
//
//===----------------------------------------------------------------------===//

#include "FiniteDifferences.h"
#include "lruc/Autodiff.h"
#include "lruc/Interpreter.h"

#include "lru/LRUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using lruc::Tensor;

constexpr int64_t B = 2, L = 4, H = 3;

Tensor realTensor(std::vector<int64_t> shape, std::vector<double> values) {
  Tensor t;
  t.shape = std::move(shape);
  t.kind = Tensor::Kind::Real;
  t.re = std::move(values);
  return t;
}

Tensor intTensor(std::vector<int64_t> shape, std::vector<int64_t> values) {
  Tensor t;
  t.shape = std::move(shape);
  t.kind = Tensor::Kind::Int;
  t.ints = std::move(values);
  return t;
}

/// Deterministic, irregular values in (-1, 1).
std::vector<double> wave(size_t n, double phase) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(1.7 * double(i) + phase) * 0.9;
  return v;
}

/// The inputs every case may use: x [B, L, H] features, tokens [B, L] in
/// [0, 8), lengths (one sequence padded), labels [B], a dropout key.
std::vector<Tensor> standardArgs() {
  return {
      realTensor({B, L, H}, wave(B * L * H, 0.3)),
      intTensor({B, L}, {1, 7, 3, 3, 0, 5, 2, 6}),
      intTensor({B}, {4, 2}),
      intTensor({B}, {1, 4}),
      intTensor({2}, {7, 3}),
  };
}

const char *kSignature =
    "func.func @forward_train(%x: tensor<?x4x3xf32>, %tokens: tensor<?x4xi32>, "
    "%lengths: tensor<?xi32>, %labels: tensor<?xi32>, %key: tensor<2xi64>) -> "
    "tensor<f32> {\n";

/// A parameter declaration: `%name` of `type`, normal(std) initialised.
std::string param(const std::string &name, const std::string &type,
                  double std = 0.7) {
  return "  %" + name + " = lru.param \"" + name +
         "\" init(normal) {std = " + std::to_string(std) +
         " : f64} group(decay) : " + type + "\n";
}

struct Case {
  std::string name;
  std::string body;       ///< ops computing %out from params and inputs
  std::string outType;    ///< the type of %out
};

/// Builds the whole forward function for `c`: params and body, then the
/// weighted sum of %out as the loss. Weights are `state` parameters, so they
/// are initialised like the others but never differentiated; they take the
/// names `w`, `wre` and `wim`, which cases must leave free.
std::string forwardText(const Case &c) {
  std::string type = c.outType;
  bool complex = type.find("complex") != std::string::npos;
  std::string realType = type;
  if (complex)
    realType.replace(realType.find("complex<f32>"), 12, "f32");
  // Static shape for the weights: the batch dim is B.
  std::string staticType = realType;
  if (staticType.find("?") != std::string::npos)
    staticType.replace(staticType.find("?"), 1, std::to_string(B));
  size_t rank = std::count(realType.begin(), realType.end(), 'x');
  if (realType == "tensor<f32>")
    rank = 0;
  std::string dims;
  for (size_t i = 0; i < rank; ++i)
    dims += (i ? ", " : "") + std::to_string(i);

  std::string text = std::string("module {\n") + kSignature + c.body;
  auto part = [&](const std::string &value, const std::string &w) {
    text += "  %" + w + " = lru.param \"" + w +
            "\" init(normal) {std = 1.0 : f64} group(state) : " + staticType +
            "\n";
    text += "  %" + w + "b = lru.broadcast %" + w + " like %" + value +
            " dims [" + dims + "] : (" + staticType + ", " + realType +
            ") -> " + realType + "\n";
    text += "  %" + w + "m = lru.mul %" + value + ", %" + w + "b : " +
            realType + "\n";
    text += "  %" + w + "s = lru.reduce_sum %" + w + "m dims [" + dims +
            "] : " + realType + " -> tensor<f32>\n";
  };
  if (complex) {
    text += "  %outre = lru.re %out : " + type + " -> " + realType + "\n";
    text += "  %outim = lru.im %out : " + type + " -> " + realType + "\n";
    part("outre", "wre");
    part("outim", "wim");
    text += "  %loss = lru.add %wres, %wims : tensor<f32>\n";
  } else {
    part("out", "w");
    text += "  %loss = lru.neg %ws : tensor<f32>\n";
  }
  text += "  return %loss : tensor<f32>\n}\n}\n";
  return text;
}

class GradCheck : public ::testing::TestWithParam<Case> {
protected:
  GradCheck() {
    context_.loadDialect<lru::LRUDialect, mlir::func::FuncDialect,
                         mlir::arith::ArithDialect>();
  }
  mlir::MLIRContext context_;
};

double lossOf(mlir::func::FuncOp forward, const std::vector<Tensor> &args,
              const lruc::ParameterStore &params) {
  auto results = lruc::interpret(forward, args, params);
  EXPECT_TRUE(mlir::succeeded(results));
  if (mlir::failed(results))
    return NAN;
  return (*results)[0].re[0];
}

TEST_P(GradCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  std::string text = forwardText(c);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context_);
  ASSERT_TRUE(module) << text;
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward_train");
  auto backward = lruc::deriveBackward(forward);
  ASSERT_TRUE(mlir::succeeded(backward)) << text;

  auto store = lruc::initParameters(forward, /*seed=*/11);
  ASSERT_TRUE(mlir::succeeded(store));
  std::vector<Tensor> args = standardArgs();
  auto grads = lruc::interpret(*backward, args, *store);
  ASSERT_TRUE(mlir::succeeded(grads)) << text;

  auto names = (*backward)->getAttrOfType<mlir::ArrayAttr>("lru.gradients");
  ASSERT_EQ(names.size() + 1, grads->size());
  ASSERT_GT(names.size(), 0u) << "no parameter to check";
  for (auto [i, nameAttr] : llvm::enumerate(names)) {
    std::string name = mlir::cast<mlir::StringAttr>(nameAttr).str();
    // Every element of small parameters, a spread of larger ones.
    lruc::testing::expectMatchesFiniteDifferences(
        [&] { return lossOf(forward, args, *store); }, (*store)[name].re,
        (*grads)[i + 1].re, /*samples=*/12, c.name + ": " + name);
  }
}

// Shorthands for the types the cases use.
const std::string kSeq = "tensor<?x4x3xf32>";
const std::string kSeqC = "tensor<?x4x3xcomplex<f32>>";
const std::string kVec = "tensor<3xf32>";
const std::string kVecC = "tensor<3xcomplex<f32>>";

std::string unary(const std::string &op, const std::string &prelude = "") {
  return param("p", kVec) + prelude + "  %out = lru." + op + " : " + kVec +
         "\n";
}

/// %c = p1 + i p2 (vectors) and %s = a complex sequence from x and p3.
const std::string kComplexVec = param("p1", kVec) + param("p2", kVec) +
                                "  %c = lru.complex %p1, %p2 : " + kVec +
                                " -> " + kVecC + "\n";
const std::string kComplexSeq =
    param("q", kVec) + "  %qb = lru.broadcast %q like %x dims [2] : (" + kVec +
    ", " + kSeq + ") -> " + kSeq + "\n  %qx = lru.mul %x, %qb : " + kSeq +
    "\n  %s = lru.complex %x, %qx : " + kSeq + " -> " + kSeqC + "\n";
/// A stable complex lambda from two parameter vectors: exp(-softplus(a) + i b).
const std::string kLambda =
    param("a", kVec) + param("b", kVec) + "  %sa = lru.softplus %a : " + kVec +
    "\n  %na = lru.neg %sa : " + kVec + "\n  %lc = lru.complex %na, %b : " +
    kVec + " -> " + kVecC + "\n  %lam = lru.exp %lc : " + kVecC + "\n";
const std::string kInitC = param("i1", "tensor<2x3xf32>") +
                           param("i2", "tensor<2x3xf32>") +
                           "  %init = lru.complex %i1, %i2 : tensor<2x3xf32> "
                           "-> tensor<2x3xcomplex<f32>>\n";
/// Lengths with an empty second sequence.
const std::string kEmptyLengths =
    "  %len0 = arith.constant dense<[4, 0]> : tensor<2xi32>\n";
/// A time-varying real lambda in (0, 1): sigmoid(x W^T).
const std::string kLambdaT =
    param("wl", "tensor<3x3xf32>") +
    "  %g = lru.matmul nt %x, %wl : (" + kSeq +
    ", tensor<3x3xf32>) -> " + kSeq + "\n  %lamt = lru.sigmoid %g : " + kSeq +
    "\n";

/// %lg = log(softplus(p) * [1, -1, 1]): a number, NaN, a number.
const std::string kGaps =
    param("p", kVec) + "  %sp = lru.softplus %p : " + kVec +
    "\n  %sign = arith.constant dense<[1.0, -1.0, 1.0]> : " + kVec +
    "\n  %sm = lru.mul %sp, %sign : " + kVec +
    "\n  %lg = lru.log %sm : " + kVec + "\n";

std::vector<Case> cases() {
  std::vector<Case> all = {
      {"neg", unary("neg %p"), kVec},
      {"exp", unary("exp %p"), kVec},
      {"log", unary("log %sp", "  %sp = lru.softplus %p : " + kVec + "\n"),
       kVec},
      {"sigmoid", unary("sigmoid %p"), kVec},
      {"softplus", unary("softplus %p"), kVec},
      {"rsqrt", unary("rsqrt %sp", "  %sp = lru.softplus %p : " + kVec + "\n"),
       kVec},
      {"sqrt", unary("sqrt %sp", "  %sp = lru.softplus %p : " + kVec + "\n"),
       kVec},
      {"tanh", unary("tanh %p"), kVec},
      {"relu", unary("relu %p"), kVec},
      // log of softplus(p) * [1, -1, 1]: NaN in the middle.
      {"nan_to_zero", kGaps + "  %out = lru.nan_to_zero %lg : " + kVec + "\n",
       kVec},
      {"not_nan",
       param("p2", kVec) + kGaps + "  %nn = lru.not_nan %lg : " + kVec +
           "\n  %out = lru.mul %p2, %nn : " + kVec + "\n",
       kVec},
      // The mask [1, 0, 1] keeps the ends; over kGaps it zeroes the NaN.
      {"masked",
       param("p", kVec) + "  %m = arith.constant dense<[1.0, 0.0, 1.0]> : " +
           kVec + "\n  %out = lru.masked %p, %m : " + kVec + "\n",
       kVec},
      {"masked_nan",
       kGaps + "  %m = arith.constant dense<[1.0, 0.0, 1.0]> : " + kVec +
           "\n  %out = lru.masked %lg, %m : " + kVec + "\n",
       kVec},
      {"gelu", unary("gelu %p"), kVec},
      {"gelu_approximate", unary("gelu %p approximate"), kVec},
      {"exp_complex", kComplexVec + "  %out = lru.exp %c : " + kVecC + "\n",
       kVecC},
      {"conj", kComplexVec + "  %out = lru.conj %c : " + kVecC + "\n", kVecC},
      {"re",
       kComplexVec + "  %e = lru.exp %c : " + kVecC +
           "\n  %out = lru.re %e : " + kVecC + " -> " + kVec + "\n",
       kVec},
      {"im",
       kComplexVec + "  %e = lru.exp %c : " + kVecC +
           "\n  %out = lru.im %e : " + kVecC + " -> " + kVec + "\n",
       kVec},
      {"add",
       param("p1", kVec) + param("p2", kVec) +
           "  %out = lru.add %p1, %p2 : " + kVec + "\n",
       kVec},
      {"sub",
       param("p1", kVec) + param("p2", kVec) +
           "  %out = lru.sub %p1, %p2 : " + kVec + "\n",
       kVec},
      {"max",
       param("p1", kVec) + param("p2", kVec) +
           "  %out = lru.max %p1, %p2 : " + kVec + "\n",
       kVec},
      {"mul",
       param("p1", kVec) + param("p2", kVec) +
           "  %out = lru.mul %p1, %p2 : " + kVec + "\n",
       kVec},
      {"div",
       param("p1", kVec) + param("p2", kVec) + "  %d = lru.softplus %p2 : " +
           kVec + "\n  %out = lru.div %p1, %d : " + kVec + "\n",
       kVec},
      {"mul_complex",
       kComplexVec + "  %e = lru.exp %c : " + kVecC +
           "\n  %out = lru.mul %c, %e : " + kVecC + "\n",
       kVecC},
      {"div_complex",
       kComplexVec + "  %e = lru.exp %c : " + kVecC +
           "\n  %out = lru.div %c, %e : " + kVecC + "\n",
       kVecC},
      {"broadcast_reduce",
       param("p", kVec) + "  %pb = lru.broadcast %p like %x dims [2] : (" +
           kVec + ", " + kSeq + ") -> " + kSeq + "\n  %m = lru.mul %pb, %x : " +
           kSeq + "\n  %out = lru.reduce_sum %m dims [0, 1] : " + kSeq +
           " -> " + kVec + "\n",
       kVec},
      // BatchNorm's variance of y = x * p, centred on stop_gradient(mean):
      // the variance's derivative in the mean is 0, so the gradient without
      // that path is still the whole one.
      {"stop_gradient_centred_variance",
       param("p", kVec) + "  %pb = lru.broadcast %p like %x dims [2] : (" +
           kVec + ", " + kSeq + ") -> " + kSeq + "\n  %y = lru.mul %x, %pb : " +
           kSeq + "\n  %sum = lru.reduce_sum %y dims [0, 1] : " + kSeq +
           " -> " + kVec + "\n  %n = arith.constant dense<8.0> : " + kVec +
           "\n  %mean = lru.div %sum, %n : " + kVec +
           "\n  %held = lru.stop_gradient %mean : " + kVec +
           "\n  %hb = lru.broadcast %held like %x dims [2] : (" + kVec + ", " +
           kSeq + ") -> " + kSeq + "\n  %c = lru.sub %y, %hb : " + kSeq +
           "\n  %sq = lru.mul %c, %c : " + kSeq +
           "\n  %ss = lru.reduce_sum %sq dims [0, 1] : " + kSeq + " -> " +
           kVec + "\n  %out = lru.div %ss, %n : " + kVec + "\n",
       kVec},
      {"matmul_nt",
       param("weight", "tensor<2x3xf32>") +
           "  %out = lru.matmul nt %x, %weight : (" + kSeq +
           ", tensor<2x3xf32>) -> tensor<?x4x2xf32>\n",
       "tensor<?x4x2xf32>"},
      {"matmul_nn",
       param("weight", "tensor<3x2xf32>") +
           "  %out = lru.matmul nn %x, %weight : (" + kSeq +
           ", tensor<3x2xf32>) -> tensor<?x4x2xf32>\n",
       "tensor<?x4x2xf32>"},
      {"matmul_tn",
       param("weight", "tensor<3x3xf32>") +
           "  %y = lru.matmul nt %x, %weight : (" + kSeq +
           ", tensor<3x3xf32>) -> " + kSeq +
           "\n  %out = lru.matmul tn %y, %x : (" + kSeq + ", " + kSeq +
           ") -> tensor<3x3xf32>\n",
       "tensor<3x3xf32>"},
      {"concat_slice",
       param("p1", kVec) + param("p2", kVec) +
           "  %c = lru.concat %p1, %p2, %p1 dim 0 : (" + kVec + ", " + kVec +
           ", " + kVec +
           ") -> tensor<9xf32>\n  %e = lru.exp %c : "
           "tensor<9xf32>\n  %out = lru.slice %e dim 0 offset 2 size 5 : "
           "tensor<9xf32> -> tensor<5xf32>\n",
       "tensor<5xf32>"},
      // Views: each float's adjoint goes back to its place (the loss
      // weighs every float differently, so a misplaced one shows).
      {"view_complex_as_floats",
       kComplexSeq + "  %out = lru.view %s : " + kSeqC +
           " -> tensor<?x4x6xf32>\n",
       "tensor<?x4x6xf32>"},
      {"view_floats_as_complex",
       param("p", "tensor<3x4xf32>") +
           "  %v = lru.view %p : tensor<3x4xf32> -> "
           "tensor<3x2xcomplex<f32>>\n  %out = lru.exp %v : "
           "tensor<3x2xcomplex<f32>>\n",
       "tensor<3x2xcomplex<f32>>"},
      {"view_rows",
       param("p1", "tensor<2x3xf32>") + param("p2", "tensor<2x3xf32>") +
           "  %c = lru.concat %p1, %p2 dim 1 : (tensor<2x3xf32>, "
           "tensor<2x3xf32>) -> tensor<2x6xf32>\n  %rows = lru.view %c : "
           "tensor<2x6xf32> -> tensor<4x3xf32>\n  %out = lru.matmul nt %x, "
           "%rows : (" +
           kSeq + ", tensor<4x3xf32>) -> tensor<?x4x4xf32>\n",
       "tensor<?x4x4xf32>"},
      {"gather",
       param("table", "tensor<8x3xf32>") +
           "  %out = lru.gather %table, %tokens : (tensor<8x3xf32>, "
           "tensor<?x4xi32>) -> " +
           kSeq + "\n",
       kSeq},
      {"scatter_add",
       param("u", "tensor<2x4x3xf32>") +
           "  %out = lru.scatter_add %u, %tokens : (tensor<2x4x3xf32>, "
           "tensor<?x4xi32>) -> tensor<8x3xf32>\n",
       "tensor<8x3xf32>"},
      {"softmax_cross_entropy",
       param("logits", "tensor<2x5xf32>") +
           "  %out = lru.softmax_cross_entropy %logits, %labels : "
           "(tensor<2x5xf32>, tensor<?xi32>) -> tensor<2xf32>\n",
       "tensor<2xf32>"},
      {"softmax_cross_entropy_class_weights",
       param("logits", "tensor<2x5xf32>") +
           "  %out = lru.softmax_cross_entropy %logits, %labels "
           "{label_smoothing = 0.2 : f32, class_weights = array<f32: 1.0, "
           "0.5, 2.0, 0.0, 3.0>} : "
           "(tensor<2x5xf32>, tensor<?xi32>) -> tensor<2xf32>\n",
       "tensor<2xf32>"},
      {"softmax_cross_entropy_label_smoothing",
       param("logits", "tensor<2x5xf32>") +
           "  %out = lru.softmax_cross_entropy %logits, %labels "
           "{label_smoothing = 0.2 : f32} : "
           "(tensor<2x5xf32>, tensor<?xi32>) -> tensor<2xf32>\n",
       "tensor<2xf32>"},
      {"dropout",
       param("p", kVec) + "  %pb = lru.broadcast %p like %x dims [2] : (" +
           kVec + ", " + kSeq + ") -> " + kSeq +
           "\n  %m = lru.mul %pb, %x : " + kSeq +
           "\n  %out = lru.dropout_mask %m, %key rate 0.5 site 2 : " + kSeq +
           ", tensor<2xi64>\n",
       kSeq},
      {"shift",
       kComplexSeq + kInitC +
           "  %out = lru.shift %s init %init lengths %lengths : (" + kSeqC +
           ", tensor<2x3xcomplex<f32>>, tensor<?xi32>) -> " + kSeqC + "\n",
       kSeqC},
      {"shift_reverse",
       kComplexSeq + kInitC +
           "  %out = lru.shift %s init %init lengths %lengths reverse : (" +
           kSeqC + ", tensor<2x3xcomplex<f32>>, tensor<?xi32>) -> " + kSeqC +
           "\n",
       kSeqC},
      // A sequence of length 0: init must not reach its (padded) outputs.
      {"shift_empty_sequence",
       kComplexSeq + kInitC + kEmptyLengths +
           "  %out = lru.shift %s init %init lengths %len0 : (" + kSeqC +
           ", tensor<2x3xcomplex<f32>>, tensor<2xi32>) -> " + kSeqC + "\n",
       kSeqC},
      {"shift_reverse_empty_sequence",
       kComplexSeq + kInitC + kEmptyLengths +
           "  %out = lru.shift %s init %init lengths %len0 reverse : (" +
           kSeqC + ", tensor<2x3xcomplex<f32>>, tensor<2xi32>) -> " + kSeqC +
           "\n",
       kSeqC},
      {"scan",
       kComplexSeq + kLambda + "  %out = lru.scan %lam, %s : (" + kVecC + ", " +
           kSeqC + ") -> " + kSeqC + "\n",
       kSeqC},
      {"scan_lengths_init",
       kComplexSeq + kLambda + kInitC +
           "  %out = lru.scan %lam, %s init %init lengths %lengths : (" +
           kVecC + ", " + kSeqC +
           ", tensor<2x3xcomplex<f32>>, "
           "tensor<?xi32>) -> " +
           kSeqC + "\n",
       kSeqC},
      {"scan_reverse_lengths_init",
       kComplexSeq + kLambda + kInitC +
           "  %out = lru.scan %lam, %s init %init lengths %lengths reverse : "
           "(" +
           kVecC + ", " + kSeqC +
           ", tensor<2x3xcomplex<f32>>, "
           "tensor<?xi32>) -> " +
           kSeqC + "\n",
       kSeqC},
      {"scan_empty_sequence",
       kComplexSeq + kLambda + kInitC + kEmptyLengths +
           "  %out = lru.scan %lam, %s init %init lengths %len0 : (" + kVecC +
           ", " + kSeqC + ", tensor<2x3xcomplex<f32>>, tensor<2xi32>) -> " +
           kSeqC + "\n",
       kSeqC},
      {"scan_time_varying",
       kLambdaT + param("i", "tensor<2x3xf32>") +
           "  %out = lru.scan %lamt, %x init %i lengths %lengths : (" + kSeq +
           ", " + kSeq + ", tensor<2x3xf32>, tensor<?xi32>) -> " + kSeq + "\n",
       kSeq},
      {"scan_time_varying_reverse",
       kLambdaT + param("i", "tensor<2x3xf32>") +
           "  %out = lru.scan %lamt, %x init %i lengths %lengths reverse : (" +
           kSeq + ", " + kSeq + ", tensor<2x3xf32>, tensor<?xi32>) -> " + kSeq +
           "\n",
       kSeq},
      {"scan_time_varying_complex",
       kComplexSeq + kLambdaT + param("th", kVec) +
           "  %thb = lru.broadcast %th like %x dims [2] : (" + kVec + ", " +
           kSeq + ") -> " + kSeq + "\n  %lg = lru.log %lamt : " + kSeq +
           "\n  %lct = lru.complex %lg, %thb : " + kSeq + " -> " + kSeqC +
           "\n  %lamc = lru.exp %lct : " + kSeqC +
           "\n  %out = lru.scan %lamc, %s lengths %lengths : (" + kSeqC + ", " +
           kSeqC + ", tensor<?xi32>) -> " + kSeqC + "\n",
       kSeqC},
  };
  return all;
}

INSTANTIATE_TEST_SUITE_P(Rules, GradCheck, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

} // namespace
