//===- ModelFixture.h - Whole models on the reference interpreter -*- C++ -*-===//
//
// Compiles a model file of models/ or examples/ (shrunk with constant
// overrides) to primitive IR with @backward and @train_step, and makes a
// deterministic batch for it from the argument tags alone: the tests run
// every model without knowing its task.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_MODELFIXTURE_H
#define LRUC_TESTS_MODELFIXTURE_H

#include "lruc/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace lruc::testing {

/// A model file of the source tree and the constants that shrink it, or a
/// model's text itself (`source`, then `path` only names it).
struct ModelCase {
  std::string name;                        ///< the test's name
  std::string path;                        ///< relative to the source root
  std::map<std::string, double> overrides; ///< `-D NAME=VALUE`
  std::string source;                      ///< the text, if not the file's
  bool train = false; ///< compiled with its train section (AdamW settings)
};

/// Every model of models/ and examples/ at a small size (L=6, H=4, N=3,
/// one block), covering token and pixel inputs, dropout, two stacked
/// blocks, bidirectional scans with padding, the generalised LRU and
/// per-step losses.
std::vector<ModelCase> smallModelCases();

/// gtest prints a case by its name.
void PrintTo(const ModelCase &c, std::ostream *os);

/// Parses, checks and lowers `c` (ignoring its train section unless
/// `withTrain` or `c.train`) through -lru-derive-step, lru-decompose,
/// -lru-derive-backward and -lru-derive-train-step. Null, with the diagnostics in `errors`, on
/// failure.
mlir::OwningOpRef<mlir::ModuleOp> compileModel(mlir::MLIRContext &context,
                                               const ModelCase &c,
                                               std::string &errors,
                                               bool withTrain = false);

/// A batch of `batch` examples for `func`'s arguments, by their `lru.input`
/// tags: tokens in range of the embedding table they index, features and
/// targets in (-1, 1) (every fifth target NaN: not scored), lengths with
/// every sequence but the first padded,
/// labels in range of the logits (the function's second result), and the
/// dropout key {seed, step}. `seed` varies the values.
std::vector<Tensor> makeBatch(mlir::func::FuncOp func, int64_t batch,
                              unsigned seed);

/// The value of the `lru.input` tag of `func`'s argument `i`, or "".
std::string inputTag(mlir::func::FuncOp func, unsigned i);

} // namespace lruc::testing

#endif // LRUC_TESTS_MODELFIXTURE_H
