//===- AutodiffPasses.h - Passes that derive gradients ----------*- C++ -*-===//
#ifndef LRUC_AUTODIFFPASSES_H
#define LRUC_AUTODIFFPASSES_H

#include "mlir/Pass/Pass.h"

namespace lruc {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "lruc/AutodiffPasses.h.inc"
} // namespace lruc

#endif // LRUC_AUTODIFFPASSES_H
