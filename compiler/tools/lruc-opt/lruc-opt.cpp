//===- lruc-opt.cpp - The lruc modular optimizer driver -------------------===//
//
// Reads textual IR, runs the passes named on the command line and prints the
// result, as mlir-opt does, with the lru dialect registered. Used by the lit
// tests of every pass.
//
//===----------------------------------------------------------------------===//

#include "lru/LRUDialect.h"
#include "lruc/AutodiffPasses.h"
#include "lruc/Transforms/Passes.h"
#include "lruc/Version.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<lru::LRUDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
  // Generic passes: canonicalize, cse, symbol-dce, ...
  mlir::registerTransformsPasses();
  lruc::registerLRUCAutodiffPasses();
  lruc::registerLRUCPasses();
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << LRUC_VERSION_LINE << "\n  LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  });
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "lruc modular optimizer driver\n", registry));
}
