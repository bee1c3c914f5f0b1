//===- EmitSupport.h - What the C++ and CUDA emitters share -----*- C++ -*-===//
//
// Both backends write C++ (host C++ for the CPU library, CUDA C++ for the
// device kernels) from the same kernel-level IR: types and sizes as C++
// expressions of the batch `B`, literals, the scalar expression of each
// elementwise primitive, and the statements that compute one element of an
// lru.fused group. Only the loop (or thread) around an element differs.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_CODEGEN_EMITSUPPORT_H
#define LRUC_CODEGEN_EMITSUPPORT_H

#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace lruc::emit {

mlir::RankedTensorType tensorType(mlir::Value v);
bool isComplex(mlir::Type type);

/// The C++ element type of a tensor type (`cfloat` for complex<f32>), or ""
/// if it has none here.
std::string elementType(mlir::Type type);

/// A dim as C++: the batch `B` when dynamic.
std::string dimExpr(int64_t d);
/// The product of `dims` as C++ ("1" for none).
std::string productExpr(llvm::ArrayRef<int64_t> dims);
/// A C++ string literal of `s`.
std::string quoted(llvm::StringRef s);
/// The element count of `v`'s tensor as C++.
std::string countExpr(mlir::Value v);

/// The model input a gather's or scatter_add's indices are (as given or
/// through lru.zero_padding; empty for a value computed otherwise) and
/// their steps a sequence (0 unless they are [B, L]): what both backends
/// call an index outside the table.
struct IndexOrigin {
  std::string input;
  int64_t steps = 0;
  /// The function argument the indices are (null for a computed value).
  mlir::BlockArgument argument;
};
IndexOrigin indexOrigin(mlir::Value indices);

/// Row-major coordinates of flat indices of a shape, as C++.
class Coordinates {
public:
  explicit Coordinates(llvm::ArrayRef<int64_t> shape) : shape(shape) {}
  explicit Coordinates(mlir::RankedTensorType type)
      : shape(type.getShape()) {}

  /// The stride of dim k (never involves the batch: only dim 0 is dynamic).
  std::string stride(int64_t k) const {
    return productExpr(shape.drop_front(k + 1));
  }
  /// Coordinate k of the flat index `flat`.
  std::string coordinate(int64_t k, llvm::StringRef flat) const {
    std::string q = "(" + flat.str() + " / (" + stride(k) + "))";
    return k == 0 ? q : "(" + q + " % " + dimExpr(shape[k]) + ")";
  }

private:
  llvm::ArrayRef<int64_t> shape;
};

/// Where lru.broadcast `op` reads its input for the result's element at
/// flat index `flat`; or, given `column`, for the element of row `flat` (a
/// row: every dim but the last) and of `column` in the last dim.
std::string broadcastSourceIndex(::lru::BroadcastOp op, llvm::StringRef flat,
                                 llvm::StringRef column = "");

std::string floatLiteral(double v);
/// The C++ literals of `attr`'s elements (one for a splat).
std::vector<std::string> elementLiterals(mlir::DenseElementsAttr attr);
/// The value of a splat constant as C++.
std::string splatLiteral(mlir::arith::ConstantOp op);

/// `expr` with `$0`, `$1`, ... replaced by `args`.
std::string substitute(llvm::StringRef expr, llvm::ArrayRef<std::string> args);

/// The C++ expression of an elementwise op on scalars `$0`, `$1`, ..., its
/// helper functions taken from namespace `math` (lruc::cpu or lruc::gpu,
/// which define the same names), or nullopt for an op that is not
/// elementwise.
std::optional<std::string> scalarTemplate(mlir::Operation *op,
                                          llvm::StringRef math);

/// The loop structure of an lru.fused group, as both emitters lay it out.
struct FusedLayout {
  /// Rows then the last dim (static): a bias reads in[j], a per-row value
  /// in[o] instead of in[(i / inner) % count].
  bool nested = false;
  std::string last, rows; ///< C++ sizes when nested
  /// The group's scan, if any: the group then runs along time, per
  /// sequence `s` and channel `j` ([B, L, N], L and N static).
  ::lru::ScanOp scan;
  std::string steps; ///< the scan's L
  /// The group's sums (lru::FusedOp::hasReductions): its rows run in
  /// chunks, each chunk summed into its row of each sum's buffer, the rows
  /// then added into the first (lruc::cpu::sumPartials, or a kernel).
  bool sums = false;
  std::string chunks; ///< the number of chunks, C++ of B

  static FusedLayout of(::lru::FusedOp op);

  /// The first row of chunk `c` and the row after its last, as C++ (not
  /// for a scan group, whose chunk is its sequence).
  std::string firstRowOf(llvm::StringRef c) const;
  std::string stopRowOf(llvm::StringRef c) const;
  /// `const int64_t first = ...; const int64_t stop = ...;` for chunk `c`.
  void writeChunkRows(llvm::raw_ostream &k, llvm::StringRef c,
                      llvm::StringRef indent) const;

private:
  int64_t chunkRows = 0, chunksPerExample = 0, rowsPerExample = 0;
};

/// The statements that compute one element of an lru.fused group and store
/// its results. The caller writes the loop or thread around them, which
/// defines `i` (the flat index) and, for a nested group, `o` (the row) and
/// `j` (the index in the last dim); for a scan also `s` (the sequence), `t`
/// (the time step), `length` (the sequence's) and `real` (t is within the
/// sequence), and the channel's state, named by
/// `stateOf(part)` with part "re", "im" (complex) or "" (real); for a group
/// with sums, each sum's accumulator of the element's column, named by
/// `sumOf(output, part)`.
class FusedBody {
public:
  /// How a complex result is written: whole (`out[i] = v`), or as its two
  /// floats, which GCC's vectorizer needs (it gives up on a loop that
  /// stores a std::complex element).
  enum class ComplexStores { Whole, Parts };

  FusedBody(::lru::FusedOp op, llvm::StringRef math, unsigned &counter,
            ComplexStores complexStores = ComplexStores::Whole);

  /// The array that holds the group's input `arg` (C++ name).
  void bindInput(mlir::BlockArgument arg, const std::string &array);
  /// The array bound to the group's input `arg` (scan init, lengths).
  std::string arrayOf(mlir::Value arg) const { return arrays.lookup(arg); }
  const FusedLayout &getLayout() const { return layout; }
  /// The group's dropouts, in body order, and the name of the caller's
  /// keep decisions of each (unique in the group's loop).
  llvm::SmallVector<::lru::DropoutMaskOp> dropouts() const;
  std::string keepName(::lru::DropoutMaskOp dropout) const;
  /// The dropout's place among dropouts() (what keepName numbers).
  unsigned dropoutIndex(::lru::DropoutMaskOp dropout) const;
  /// The loop's parameter that holds a dropout's site (`uint32_t site0`):
  /// a parameter, not a literal, so that the layers' loops are one text.
  std::string siteName(::lru::DropoutMaskOp dropout) const;
  /// A dropout's key array and site, and its threshold (runtime/core's
  /// dropoutThreshold of its rate), as C++ arguments: "in2, site0" and
  /// "1677722u".
  std::string keyAndSiteOf(::lru::DropoutMaskOp dropout) const;
  static std::string thresholdOf(::lru::DropoutMaskOp dropout);
  /// A kept value's scale (runtime/core's dropoutScale of the rate) as a
  /// C++ float literal that reads back exactly: "0x1.555556p+0f".
  static std::string scaleOf(::lru::DropoutMaskOp dropout);
  /// Splat constants as scalar declarations, written once before the loop.
  void writeConstants(llvm::raw_ostream &k);
  /// One element; `outputs` are the arrays of the group's results.
  /// With `productOf` (a scan group only), the first pass of a scan in
  /// chunks: the element stores nothing and adds to no sum, and at real
  /// steps multiplies the running product of λ, named by `productOf(part)`
  /// like the state, so that a chunk's end state is known as a function of
  /// its start state (state · product + end state from zero).
  /// With `scanInputOf` (a scan group only), the scan's input b at this
  /// step is what it returns, given the C++ name of b as the group computes
  /// it (written before; the caller may write statements to `k`): a pass
  /// over a tile can keep b where it was computed for the next pass to
  /// read instead of computing it again. Without `stateOf` the element
  /// ends there: the code up to the scan's input, and no recurrence (a
  /// pass that only computes and keeps b).
  /// `keepOf` (a group with dropouts) names, as a C++ bool, whether the
  /// dropout keeps the element: the caller draws the decisions (Philox, a
  /// block per four neighbours) for a row or a warp's elements at once.
  mlir::LogicalResult writeElement(
      llvm::raw_ostream &k,
      llvm::function_ref<std::string(llvm::StringRef)> stateOf,
      llvm::function_ref<std::string(unsigned, llvm::StringRef)> sumOf,
      llvm::ArrayRef<std::string> outputs,
      llvm::function_ref<std::string(llvm::StringRef)> productOf = nullptr,
      llvm::function_ref<std::string(llvm::raw_ostream &, llvm::StringRef)>
          scanInputOf = nullptr,
      llvm::function_ref<std::string(::lru::DropoutMaskOp)> keepOf = nullptr);

private:
  ::lru::FusedOp op;
  FusedLayout layout;
  std::string math;
  unsigned &counter;
  ComplexStores complexStores;
  llvm::DenseMap<mlir::Value, std::string> scalars, arrays;
};

} // namespace lruc::emit

#endif // LRUC_CODEGEN_EMITSUPPORT_H
