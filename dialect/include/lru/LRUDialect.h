//===- LRUDialect.h - The lru dialect ---------------------------*- C++ -*-===//
//
// The model-level dialect of lruc (see docs/dialect.md).
//
//===----------------------------------------------------------------------===//
#ifndef LRU_LRUDIALECT_H
#define LRU_LRUDIALECT_H

#include "mlir/IR/Dialect.h"

#include "lru/LRUDialect.h.inc"

#endif // LRU_LRUDIALECT_H
