//===- Autodiff.h - Building adjoints of lru primitive ops ------*- C++ -*-===//
//
// AdjointBuilder is the vocabulary that derivative rules are written in, both
// the generated ones (LRUDerivatives.td) and the hand-written structural ones:
// small helpers that build primitive ops with the right types. `conj` of a
// real tensor is the tensor itself, so one rule serves real and complex ops.
//
//===----------------------------------------------------------------------===//
#ifndef LRU_AUTODIFF_H
#define LRU_AUTODIFF_H

#include "lru/LRUOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/APFloat.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace lru {

class AdjointBuilder {
public:
  AdjointBuilder(mlir::OpBuilder &builder, mlir::Location loc)
      : b_(builder), loc_(loc) {}

  mlir::OpBuilder &builder() { return b_; }
  mlir::Location loc() const { return loc_; }
  void setLoc(mlir::Location loc) { loc_ = loc; }

  // Elementwise; both operands of a binary op have one type.
  mlir::Value identity(mlir::Value x);
  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value sub(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value div(mlir::Value a, mlir::Value b);
  mlir::Value neg(mlir::Value x);
  mlir::Value conj(mlir::Value x); ///< identity on real tensors
  mlir::Value sigmoid(mlir::Value x);
  mlir::Value step(mlir::Value x);
  mlir::Value notNan(mlir::Value x);
  mlir::Value masked(mlir::Value x, mlir::Value mask);
  mlir::Value geluGrad(mlir::Value x, bool approximate);
  mlir::Value re(mlir::Value x);
  mlir::Value im(mlir::Value x);
  mlir::Value complex(mlir::Value re, mlir::Value im);
  /// x * c for a real constant c.
  mlir::Value scale(mlir::Value x, double c);
  /// A tensor of x's type filled with c (real part c for complex types).
  mlir::Value fillLike(mlir::Value x, double c);
  mlir::Value zerosLike(mlir::Value x) { return fillLike(x, 0.0); }
  mlir::Value onesLike(mlir::Value x) { return fillLike(x, 1.0); }

  // Shapes.
  /// x repeated to `like`'s shape; `dims` maps x's dims to the result's.
  mlir::Value broadcast(mlir::Value x, mlir::Value like,
                        llvm::ArrayRef<int64_t> dims);
  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> dims);
  mlir::Value slice(mlir::Value x, int64_t dim, int64_t offset, int64_t size);
  /// Each sequence's last real step: [B, L, N] -> [B, N] (step L - 1
  /// without lengths).
  mlir::Value lastStep(mlir::Value x, mlir::Value lengths);
  /// Each sequence's first step: [B, L, N] -> [B, N], zero for a sequence
  /// of length 0 (which has no real step).
  mlir::Value firstStep(mlir::Value x, mlir::Value lengths);

  // Structural ops (optional operands may be null).
  mlir::Value matmul(MatmulKind kind, mlir::Value lhs, mlir::Value rhs);
  mlir::Value shift(mlir::Value x, mlir::Value init, mlir::Value lengths,
                    bool reverse);
  mlir::Value scan(mlir::Value lambda, mlir::Value b, mlir::Value init,
                   mlir::Value lengths, bool reverse);
  mlir::Value dropoutMask(mlir::Value x, mlir::Value key, llvm::APFloat rate,
                          uint64_t site);
  mlir::Value gather(mlir::Value table, mlir::Value indices);
  /// scatter_add into a tensor of `table`'s type.
  mlir::Value scatterAdd(mlir::Value updates, mlir::Value indices,
                         mlir::Value table);
  mlir::Value
  softmaxCrossEntropyGrad(mlir::Value logits, mlir::Value labels, mlir::Value g,
                          bool ignoreNegative,
                          const llvm::APFloat &labelSmoothing,
                          std::optional<llvm::ArrayRef<float>> classWeights);

private:
  mlir::OpBuilder &b_;
  mlir::Location loc_;
};

/// Attaches AutodiffOpInterface to every lru op that has a derivative.
void registerAutodiffInterfaces(mlir::MLIRContext &context);

} // namespace lru

#include "lru/LRUInterfaces.h.inc"

#endif // LRU_AUTODIFF_H
