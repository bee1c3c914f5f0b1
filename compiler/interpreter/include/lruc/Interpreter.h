//===- Interpreter.h - The fp64 reference interpreter -----------*- C++ -*-===//
//
// Runs one function of primitive-level IR (docs/primitives.md) in double
// precision, with plain loops over row-major tensors. It is the oracle that
// the derivative rules (tests/gradcheck) and every generated kernel are
// checked against, so it is written to be obviously right, not fast.
//
// Parameter init and dropout masks come from runtime/core, the definitions
// the backends share.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_INTERPRETER_H
#define LRUC_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lruc {

/// A dense row-major tensor. f32 tensors are Real (values in `re`),
/// complex<f32> ones Complex (`re` and `im`), i32 and i64 ones Int (`ints`).
struct Tensor {
  std::vector<int64_t> shape;
  enum class Kind { Real, Complex, Int } kind = Kind::Real;
  std::vector<double> re, im;
  std::vector<int64_t> ints;

  /// The product of the dims (1 for a scalar).
  int64_t numElements() const;
  /// Whether the value vectors of `kind` hold numElements() entries.
  bool isConsistent() const;

  static Tensor zeros(std::vector<int64_t> shape, Kind kind);
  static Tensor real(std::vector<int64_t> shape, std::vector<double> values);
  static Tensor complex(std::vector<int64_t> shape, std::vector<double> re,
                        std::vector<double> im);
  static Tensor integers(std::vector<int64_t> shape,
                         std::vector<int64_t> values);
};

/// Parameter values by name (the `name` of each `lru.param`).
using ParameterStore = std::map<std::string, Tensor, std::less<>>;

/// The initial value of every `lru.param` in `func` under `seed`
/// (runtime/core/include/lruc/core/Init.h). A name used by several params
/// must have one type and init. Errors (an lru_gamma whose nu is missing or
/// of another size, conflicting declarations) are emitted at the param.
mlir::FailureOr<ParameterStore> initParameters(mlir::func::FuncOp func,
                                               uint64_t seed);

/// Runs `func` on `args` (one per argument; a `?` dim takes the argument's
/// size) with `params` supplying every `lru.param` by name, and returns the
/// values of its `func.return`. Arguments that do not fit the function type,
/// missing or misshapen params, bad data (an index or label out of range, a
/// length outside [0, L]) and unsupported ops are errors emitted at the
/// offending function or op; nothing asserts.
mlir::FailureOr<std::vector<Tensor>> interpret(mlir::func::FuncOp func,
                                               llvm::ArrayRef<Tensor> args,
                                               const ParameterStore &params);

} // namespace lruc

#endif // LRUC_INTERPRETER_H
