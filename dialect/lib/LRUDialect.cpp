//===- LRUDialect.cpp - The lru dialect -----------------------------------===//

#include "lru/LRUDialect.h"
#include "lru/Autodiff.h"
#include "lru/LRUOps.h"

using namespace mlir;
using namespace lru;

#include "lru/LRUDialect.cpp.inc"

void LRUDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "lru/LRUOps.cpp.inc"
      >();
  registerAutodiffInterfaces(*getContext());
}
