//===- MLIRGen.cpp - The checked AST to the lru dialect -------------------===//
//
// Walks the checked model once, top to bottom, creating parameters as it meets
// the layers that own them. The front end has already checked every size, so
// this file asserts rather than diagnoses; the module verifier is the final
// safety net.
//
//===----------------------------------------------------------------------===//

#include "lruc/MLIRGen.h"

#include "lru/LRUDialect.h"
#include "lru/LRUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <string>

using namespace mlir;

namespace lruc {
namespace {

/// Builds one model. Values flow as tensors of shape [B, L, H] (or [B, H]
/// after pooling); `width_` tracks H as layers change it.
class ModelGen {
public:
  ModelGen(MLIRContext &context, const ast::Model &model)
      : model_(model), builder_(&context) {}

  OwningOpRef<ModuleOp> run();

private:
  // --- Locations and types ---------------------------------------------------
  Location loc(ast::Loc l) {
    return FileLineColLoc::get(builder_.getStringAttr(model_.file), l.line,
                               l.col);
  }
  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder_.getF32Type());
  }
  RankedTensorType i32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder_.getI32Type());
  }

  // --- Parameters ------------------------------------------------------------
  Value param(Location l, const std::string &name, ArrayRef<int64_t> shape,
              lru::InitKind init, DictionaryAttr args, lru::ParamGroup group);
  Value zeros(Location l, const std::string &name, ArrayRef<int64_t> shape,
              lru::ParamGroup group = lru::ParamGroup::decay) {
    return param(l, name, shape, lru::InitKind::zeros, {}, group);
  }
  Value ones(Location l, const std::string &name, ArrayRef<int64_t> shape,
             lru::ParamGroup group = lru::ParamGroup::decay) {
    return param(l, name, shape, lru::InitKind::ones, {}, group);
  }
  Value normal(Location l, const std::string &name, ArrayRef<int64_t> shape,
               double std, lru::ParamGroup group = lru::ParamGroup::decay) {
    return param(l, name, shape, lru::InitKind::normal,
                 dict({{"std", std}}), group);
  }
  /// PyTorch's default for linear layers: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  Value fanInUniform(Location l, const std::string &name,
                     ArrayRef<int64_t> shape, int64_t fanIn) {
    double bound = 1.0 / std::sqrt(double(fanIn));
    return param(l, name, shape, lru::InitKind::uniform,
                 dict({{"low", -bound}, {"high", bound}}),
                 lru::ParamGroup::decay);
  }
  DictionaryAttr dict(std::initializer_list<std::pair<StringRef, double>> kv) {
    SmallVector<NamedAttribute> attrs;
    for (auto &[key, value] : kv)
      attrs.push_back(builder_.getNamedAttr(key, builder_.getF64FloatAttr(value)));
    return builder_.getDictionaryAttr(attrs);
  }

  // --- Model pieces ----------------------------------------------------------
  Value linear(Location l, const std::string &prefix, Value x, int64_t out,
               bool bias = true);
  Value encoder(Value input);
  Value tower(Value input, Value lengths);
  Value block(const ast::Block &block, int64_t index, Value x, Value lengths);
  Value layer(const ast::Layer &layer, const std::string &prefix, Value x,
              Value lengths);
  Value activation(Location l, ast::ActivationKind kind, Value x,
                   bool approximate = false);
  Value head(Value features);
  /// The parameters every diagonal recurrence has: the ring-initialised
  /// nu_log and theta_log, B, C and D (DESIGN.md §4).
  struct RecurrentParams {
    Value nu, theta, bRe, bIm, cRe, cIm, d;
  };
  RecurrentParams recurrentParams(Location l, const std::string &prefix,
                                  int64_t n, double rMin, double rMax,
                                  double maxPhase);
  DictionaryAttr trainAttr(const ast::Train &train);

  const ast::Model &model_;
  OpBuilder builder_;
  int64_t width_ = 0;
  int64_t dropoutSites_ = 0;
  llvm::StringMap<Value> params_;
};

Value ModelGen::param(Location l, const std::string &name,
                      ArrayRef<int64_t> shape, lru::InitKind init,
                      DictionaryAttr args, lru::ParamGroup group) {
  // A second tower (two-tower retrieval) asks for the same names again and
  // shares the first tower's parameters.
  auto [it, inserted] = params_.try_emplace(name, Value());
  if (inserted)
    it->second = builder_.create<lru::ParamOp>(l, f32(shape), name, init, args,
                                               group);
  assert(cast<ShapedType>(it->second.getType()).getShape() == shape &&
         "a shared parameter keeps its shape");
  return it->second;
}

Value ModelGen::linear(Location l, const std::string &prefix, Value x,
                       int64_t out, bool bias) {
  int64_t in = width_;
  Value w = fanInUniform(l, prefix + ".weight", {out, in}, in);
  Value b = bias ? fanInUniform(l, prefix + ".bias", {out}, in) : Value();
  width_ = out;
  return builder_.create<lru::LinearOp>(l, x, w, b);
}

ModelGen::RecurrentParams
ModelGen::recurrentParams(Location l, const std::string &prefix, int64_t n,
                          double rMin, double rMax, double maxPhase) {
  const int64_t h = width_;
  auto recurrent = lru::ParamGroup::recurrent;
  RecurrentParams p;
  p.nu = param(l, prefix + ".nu_log", {n}, lru::InitKind::lru_nu,
               dict({{"r_min", rMin}, {"r_max", rMax}}), recurrent);
  p.theta = param(l, prefix + ".theta_log", {n}, lru::InitKind::lru_theta,
                  dict({{"max_phase", maxPhase}}), recurrent);
  // B is scaled by 1/sqrt(2H): Glorot with the variance halved between the
  // real and imaginary parts (DESIGN.md §4).
  double bStd = 1.0 / std::sqrt(2.0 * double(h));
  double cStd = 1.0 / std::sqrt(double(n));
  p.bRe = normal(l, prefix + ".B_re", {n, h}, bStd, recurrent);
  p.bIm = normal(l, prefix + ".B_im", {n, h}, bStd, recurrent);
  p.cRe = normal(l, prefix + ".C_re", {h, n}, cStd);
  p.cIm = normal(l, prefix + ".C_im", {h, n}, cStd);
  p.d = normal(l, prefix + ".D", {h}, 1.0);
  return p;
}

Value ModelGen::activation(Location l, ast::ActivationKind kind, Value x,
                           bool approximate) {
  switch (kind) {
  case ast::ActivationKind::GELU:
    return builder_.create<lru::GeluOp>(l, x, approximate);
  case ast::ActivationKind::ReLU:
    return builder_.create<lru::ReluOp>(l, x);
  case ast::ActivationKind::Tanh:
    return builder_.create<lru::TanhOp>(l, x);
  }
  llvm_unreachable("unknown activation");
}

Value ModelGen::encoder(Value input) {
  const ast::Encoder &enc = model_.encoder;
  Location l = loc(enc.loc);
  if (enc.kind == ast::EncoderKind::Embedding) {
    Value table =
        normal(l, "encoder.weight", {model_.input.vocab, enc.width}, 1.0);
    width_ = enc.width;
    return builder_.create<lru::EmbedOp>(l, input, table);
  }
  width_ = model_.input.channels;
  return linear(l, "encoder", input, enc.width);
}

Value ModelGen::layer(const ast::Layer &layer, const std::string &prefix,
                      Value x, Value lengths) {
  Location l = loc(layer.loc);
  const int64_t h = width_;
  auto recurrent = lru::ParamGroup::recurrent;

  if (auto *lruLayer = std::get_if<ast::LRULayer>(&layer.kind)) {
    const int64_t n = lruLayer->state;
    RecurrentParams p = recurrentParams(l, prefix, n, lruLayer->rMin,
                                        lruLayer->rMax, lruLayer->maxPhase);
    Value gamma;
    if (lruLayer->gammaNorm) {
      // gamma_log = log(sqrt(1 - |lambda|^2)) is computed from the initial
      // nu_log and theta_log, which the init arguments name.
      auto args = builder_.getDictionaryAttr(
          {builder_.getNamedAttr("nu", builder_.getStringAttr(prefix + ".nu_log")),
           builder_.getNamedAttr("theta",
                                 builder_.getStringAttr(prefix + ".theta_log"))});
      gamma = param(l, prefix + ".gamma_log", {n}, lru::InitKind::lru_gamma,
                    args, recurrent);
    }
    Value cRevRe, cRevIm;
    if (lruLayer->bidirectional) {
      double cStd = 1.0 / std::sqrt(double(n));
      cRevRe = normal(l, prefix + ".C_rev_re", {h, n}, cStd);
      cRevIm = normal(l, prefix + ".C_rev_im", {h, n}, cStd);
    }
    return builder_.create<lru::RecurrenceOp>(l, x, p.nu, p.theta, gamma, p.bRe,
                                              p.bIm, p.cRe, p.cIm, cRevRe,
                                              cRevIm, p.d, lengths);
  }

  if (auto *glru = std::get_if<ast::GLRULayer>(&layer.kind)) {
    const int64_t n = glru->state;
    RecurrentParams p =
        recurrentParams(l, prefix, n, glru->rMin, glru->rMax, glru->maxPhase);
    // A zero gate makes the layer start out as a plain LRU.
    Value gate = zeros(l, prefix + ".U", {n, h}, recurrent);
    lru::GLRUForm form = lru::GLRUForm::plain;
    switch (glru->form) {
    case ast::GLRUForm::Plain: form = lru::GLRUForm::plain; break;
    case ast::GLRUForm::Stable: form = lru::GLRUForm::stable; break;
    case ast::GLRUForm::Normalized: form = lru::GLRUForm::normalized; break;
    }
    return builder_.create<lru::GeneralizedRecurrenceOp>(
        l, x, gate, p.nu, p.theta, p.bRe, p.bIm, p.cRe, p.cIm, p.d, lengths,
        form);
  }

  if (auto *lin = std::get_if<ast::LinearLayer>(&layer.kind))
    return linear(l, prefix, x, lin->width, lin->bias);

  if (auto *glu = std::get_if<ast::GLULayer>(&layer.kind)) {
    Value wGate = fanInUniform(l, prefix + ".gate.weight", {h, h}, h);
    Value bGate = fanInUniform(l, prefix + ".gate.bias", {h}, h);
    Value wValue, bValue;
    if (glu->variant == ast::GLUVariant::Full) {
      wValue = fanInUniform(l, prefix + ".value.weight", {h, h}, h);
      bValue = fanInUniform(l, prefix + ".value.bias", {h}, h);
    }
    return builder_.create<lru::GluOp>(l, x, wGate, bGate, wValue, bValue);
  }

  if (auto *act = std::get_if<ast::ActivationLayer>(&layer.kind))
    return activation(l, act->kind, x, act->approximate);

  if (auto *mlp = std::get_if<ast::MLPLayer>(&layer.kind)) {
    Value hidden = linear(l, prefix + ".fc1", x, mlp->hidden);
    hidden = activation(l, mlp->activation, hidden);
    return linear(l, prefix + ".fc2", hidden, h);
  }

  if (auto *drop = std::get_if<ast::DropoutLayer>(&layer.kind))
    return builder_.create<lru::DropoutOp>(l, x, drop->rate, dropoutSites_++);

  llvm_unreachable("unknown layer kind");
}

/// The name a layer's parameters live under: its kind, with an ordinal when
/// the block holds several layers of that kind (`linear.0`, `linear.1`).
static const char *layerKindName(const ast::Layer &layer) {
  return std::visit(
      [](auto &&l) -> const char * {
        using T = std::decay_t<decltype(l)>;
        if constexpr (std::is_same_v<T, ast::LRULayer>) return "lru";
        else if constexpr (std::is_same_v<T, ast::GLRULayer>) return "glru";
        else if constexpr (std::is_same_v<T, ast::LinearLayer>) return "linear";
        else if constexpr (std::is_same_v<T, ast::GLULayer>) return "glu";
        else if constexpr (std::is_same_v<T, ast::MLPLayer>) return "mlp";
        else return nullptr; // no parameters
      },
      layer.kind);
}

Value ModelGen::block(const ast::Block &block, int64_t index, Value x,
                      Value lengths) {
  const std::string prefix = "blocks." + std::to_string(index);
  const int64_t h = width_;
  Value y = x;
  if (block.norm != ast::NormKind::None) {
    Location l = loc(block.normLoc);
    Value scale = ones(l, prefix + ".norm.scale", {h});
    Value bias = zeros(l, prefix + ".norm.bias", {h});
    if (block.norm == ast::NormKind::Batch) {
      Value mean = zeros(l, prefix + ".norm.running_mean", {h},
                         lru::ParamGroup::state);
      Value var = ones(l, prefix + ".norm.running_var", {h},
                       lru::ParamGroup::state);
      y = builder_.create<lru::BatchNormOp>(l, y, scale, bias, mean, var,
                                            lengths);
    } else {
      y = builder_.create<lru::LayerNormOp>(l, y, scale, bias);
    }
  }

  llvm::StringMap<int> kindCount, kindSeen;
  for (const ast::Layer &layer : block.layers)
    if (const char *kind = layerKindName(layer))
      ++kindCount[kind];
  for (const ast::Layer &layer : block.layers) {
    std::string name = prefix;
    if (const char *kind = layerKindName(layer)) {
      name += std::string(".") + kind;
      if (kindCount[kind] > 1)
        name += "." + std::to_string(kindSeen[kind]++);
    }
    y = this->layer(layer, name, y, lengths);
  }
  assert(width_ == h && "the front end checks that blocks keep their width");
  return builder_.create<lru::AddOp>(loc(block.loc), x, y);
}

Value ModelGen::tower(Value input, Value lengths) {
  Value x = encoder(input);
  int64_t index = 0;
  for (const ast::Block &b : model_.blocks)
    for (int64_t r = 0; r < b.repeat; ++r)
      x = block(b, index++, x, lengths);
  Location l = loc(model_.pool.loc);
  switch (model_.pool.kind) {
  case ast::PoolKind::Mean:
    return builder_.create<lru::PoolOp>(l, x, lengths, lru::PoolKind::mean);
  case ast::PoolKind::Last:
    return builder_.create<lru::PoolOp>(l, x, lengths, lru::PoolKind::last);
  case ast::PoolKind::None:
    return x;
  }
  llvm_unreachable("unknown pool kind");
}

Value ModelGen::head(Value features) {
  const ast::Head &h = model_.head;
  Location l = loc(h.loc);
  if (h.kind == ast::HeadKind::Linear)
    return linear(l, "head", features, h.classes);
  Value hidden = linear(l, "head.fc1", features, h.hidden);
  hidden = activation(l, h.activation, hidden);
  return linear(l, "head.fc2", hidden, h.classes);
}

DictionaryAttr ModelGen::trainAttr(const ast::Train &t) {
  SmallVector<NamedAttribute> attrs;
  auto i64 = [&](StringRef key, int64_t v) {
    attrs.push_back(builder_.getNamedAttr(key, builder_.getI64IntegerAttr(v)));
  };
  auto f64 = [&](StringRef key, double v) {
    attrs.push_back(builder_.getNamedAttr(key, builder_.getF64FloatAttr(v)));
  };
  auto str = [&](StringRef key, StringRef v) {
    attrs.push_back(builder_.getNamedAttr(key, builder_.getStringAttr(v)));
  };
  i64("batch", t.batch);
  if (t.accumulate > 1)
    i64("accumulate", t.accumulate);
  if (t.steps)
    i64("steps", *t.steps);
  if (t.epochs)
    i64("epochs", *t.epochs);
  f64("lr", t.lr);
  f64("beta1", t.beta1);
  f64("beta2", t.beta2);
  f64("eps", t.eps);
  f64("weight_decay", t.weightDecay);
  f64("recurrent_lr_factor", t.recurrentLrFactor);
  str("schedule", t.schedule.kind == ast::ScheduleKind::Constant
                      ? "constant"
                      : "warmup_cosine");
  f64("warmup", t.schedule.warmup);
  f64("floor", t.schedule.floor);
  if (t.clip)
    f64("clip", *t.clip);
  i64("seed", int64_t(t.seed));
  i64("dropout_seed", int64_t(t.dropoutSeed));
  i64("eval_every", t.evalEvery);
  if (t.data) {
    str("task", t.data->task);
    if (!t.data->path.empty())
      str("data", t.data->path);
  }
  return builder_.getDictionaryAttr(attrs);
}

OwningOpRef<ModuleOp> ModelGen::run() {
  Location modelLoc = loc(model_.loc);
  OwningOpRef<ModuleOp> module = ModuleOp::create(modelLoc, model_.name);
  module->getOperation()->setAttr("lru.model", builder_.getStringAttr(model_.name));
  if (model_.train)
    module->getOperation()->setAttr("lru.train", trainAttr(*model_.train));

  // Inputs: the padded batch, the real length of each sequence, the targets.
  const ast::Input &in = model_.input;
  const int64_t b = ShapedType::kDynamic, len = in.length;
  Type seqType = in.kind == ast::InputKind::Features
                     ? Type(f32({b, len, in.channels}))
                     : Type(i32({b, len}));
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  auto addArg = [&](Type type, std::string name) {
    argTypes.push_back(type);
    argNames.push_back(std::move(name));
  };
  if (in.kind == ast::InputKind::TokenPairs) {
    addArg(seqType, "tokens_a");
    addArg(i32({b}), "lengths_a");
    addArg(seqType, "tokens_b");
    addArg(i32({b}), "lengths_b");
  } else {
    addArg(seqType, in.kind == ast::InputKind::Features ? "features" : "tokens");
    addArg(i32({b}), "lengths");
  }
  const bool perStep = model_.pool.kind == ast::PoolKind::None;
  const int64_t classes = model_.head.classes;
  SmallVector<int64_t> outShape = perStep ? SmallVector<int64_t>{b, len, classes}
                                          : SmallVector<int64_t>{b, classes};
  SmallVector<int64_t> labelShape = perStep ? SmallVector<int64_t>{b, len}
                                            : SmallVector<int64_t>{b};
  if (model_.loss.kind == ast::LossKind::CrossEntropy)
    addArg(i32(labelShape), "labels");
  else
    addArg(f32(outShape), "targets");

  auto funcType = builder_.getFunctionType(
      argTypes, {RankedTensorType::get({}, builder_.getF32Type()), f32(outShape)});
  builder_.setInsertionPointToEnd(module->getBody());
  auto func = builder_.create<func::FuncOp>(modelLoc, "forward", funcType);
  for (auto [i, name] : llvm::enumerate(argNames))
    func.setArgAttr(i, "lru.input", builder_.getStringAttr(name));
  Block *entry = func.addEntryBlock();
  builder_.setInsertionPointToStart(entry);

  Value logits, lengths;
  if (in.kind == ast::InputKind::TokenPairs) {
    // Both documents run through the same tower and so the same parameters.
    Value a = tower(entry->getArgument(0), entry->getArgument(1));
    Value second = tower(entry->getArgument(2), entry->getArgument(3));
    Value combined = builder_.create<lru::RetrievalCombineOp>(
        loc(model_.head.loc), a, second);
    width_ = 4 * width_;
    logits = head(combined);
  } else {
    lengths = entry->getArgument(1);
    logits = head(tower(entry->getArgument(0), lengths));
  }

  Value targets = entry->getArguments().back();
  Location lossLoc = loc(model_.loss.loc);
  // Per-step losses skip padded steps; pooled ones have nothing to mask.
  Value lossLengths = perStep ? lengths : Value();
  Value loss;
  if (model_.loss.kind == ast::LossKind::CrossEntropy) {
    SmallVector<float> weights(model_.loss.classWeights.begin(),
                               model_.loss.classWeights.end());
    loss = builder_.create<lru::CrossEntropyOp>(
        lossLoc, logits, targets, lossLengths,
        builder_.getF32FloatAttr(float(model_.loss.labelSmoothing)),
        weights.empty() ? DenseF32ArrayAttr()
                        : builder_.getDenseF32ArrayAttr(weights));
  } else if (model_.loss.kind == ast::LossKind::MeanAbsoluteError) {
    loss =
        builder_.create<lru::L1LossOp>(lossLoc, logits, targets, lossLengths);
  } else if (model_.loss.kind == ast::LossKind::Huber) {
    loss = builder_.create<lru::HuberLossOp>(
        lossLoc, logits, targets, lossLengths,
        builder_.getF32FloatAttr(float(model_.loss.huberDelta)));
  } else {
    loss = builder_.create<lru::MseOp>(lossLoc, logits, targets, lossLengths);
  }
  builder_.create<func::ReturnOp>(modelLoc, ValueRange{loss, logits});

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const ast::Model &model) {
  context.getOrLoadDialect<lru::LRUDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  return ModelGen(context, model).run();
}

} // namespace lruc
