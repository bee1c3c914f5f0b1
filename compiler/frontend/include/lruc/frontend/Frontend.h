//===- Frontend.h - Parse and check a .lru model file ----------*- C++ -*-===//
//
// The front end's whole public surface: source text in, a checked ast::Model
// (or diagnostics) out. No MLIR here; MLIRGen is the only consumer that knows
// about IR.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_FRONTEND_FRONTEND_H
#define LRUC_FRONTEND_FRONTEND_H

#include "lruc/frontend/AST.h"
#include "lruc/frontend/Diagnostics.h"

#include <map>
#include <optional>
#include <ostream>
#include <string>

namespace lruc {

/// Values given on the command line (`lruc -D H=256`) that replace the
/// model file's `let` constants of the same name.
using ConstantOverrides = std::map<std::string, double>;

struct FrontendOptions {
  ConstantOverrides overrides;
  /// Skip the `train` section (`lruc --no-train`): for a shrunk model whose
  /// sizes no longer fit its task, or one compiled for inference only.
  bool ignoreTrain = false;
};

/// Parses and checks `source`. Returns the model if no error was reported;
/// otherwise every error (up to the engine's cap) is in `diags`.
std::optional<ast::Model> parseModel(const SourceFile &source,
                                     const FrontendOptions &options,
                                     DiagnosticEngine &diags);

/// Prints the checked model in the indented form of `lruc --emit=ast`.
void printModel(const ast::Model &model, std::ostream &os);

} // namespace lruc

#endif // LRUC_FRONTEND_FRONTEND_H
