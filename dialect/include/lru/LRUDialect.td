//===- LRUDialect.td - The lru dialect ---------------------*- tablegen -*-===//
//
// The model-level dialect of lruc: one op per layer of a linear recurrent unit
// network (Orvieto et al., "Resurrecting Recurrent Neural Networks for Long
// Sequences"), on tensors of f32 (activations, parameters) and i32 (tokens,
// labels, lengths).
//
//===----------------------------------------------------------------------===//

#ifndef LRU_DIALECT_TD
#define LRU_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def LRU_Dialect : Dialect {
  let name = "lru";
  let cppNamespace = "::lru";
  let summary = "Model-level ops for linear recurrent unit networks";
  let description = [{
    Ops at the level of layers: embedding, linear, the LRU recurrence and its
    generalised (input-dependent decay) form, GLU, norms, pooling and losses.
    Parameters are values produced by `lru.param`, so differentiation can
    reach them. Sequence activations are `[B, L, H]`, pooled ones `[B, H]`;
    the batch dimension `B` may be dynamic, all others are static. Every op
    but `lru.param` infers its result type from its operands.
  }];
}

//===----------------------------------------------------------------------===//
// Enums (printed as bare keywords: `init(lru_nu)`, `lru.pool mean ...`)
//===----------------------------------------------------------------------===//

def LRU_InitKind : I32EnumAttr<"InitKind", "how a parameter is initialised", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"normal", 2>,
    I32EnumAttrCase<"uniform", 3>,
    I32EnumAttrCase<"lru_nu", 4>,
    I32EnumAttrCase<"lru_theta", 5>,
    I32EnumAttrCase<"lru_gamma", 6>
  ]> {
  let cppNamespace = "::lru";
}

def LRU_ParamGroup : I32EnumAttr<"ParamGroup",
    "the optimizer group of a parameter", [
    I32EnumAttrCase<"decay", 0>,
    I32EnumAttrCase<"recurrent", 1>,
    I32EnumAttrCase<"state", 2>
  ]> {
  let cppNamespace = "::lru";
}

def LRU_GLRUForm : I32EnumAttr<"GLRUForm",
    "the form of the generalised LRU's decay", [
    I32EnumAttrCase<"plain", 0>,
    I32EnumAttrCase<"stable", 1>,
    I32EnumAttrCase<"normalized", 2>
  ]> {
  let cppNamespace = "::lru";
}

def LRU_PoolKind : I32EnumAttr<"PoolKind", "how a sequence is pooled", [
    I32EnumAttrCase<"mean", 0>,
    I32EnumAttrCase<"last", 1>
  ]> {
  let cppNamespace = "::lru";
}

//===----------------------------------------------------------------------===//
// Base class and type constraints
//===----------------------------------------------------------------------===//

class LRU_Op<string mnemonic, list<Trait> traits = []>
    : Op<LRU_Dialect, mnemonic, traits>;

def LRU_F32Tensor : RankedTensorOf<[F32]>;
def LRU_I32Tensor : RankedTensorOf<[I32]>;
def LRU_Scalar : 0DTensorOf<[F32]>;
def LRU_AnyTensor : RankedTensorOf<[F32, Complex<F32>]>;
def LRU_ComplexTensor : RankedTensorOf<[Complex<F32>]>;
def LRU_I64Tensor : RankedTensorOf<[I64]>;

#endif // LRU_DIALECT_TD
