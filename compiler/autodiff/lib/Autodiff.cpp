//===- Autodiff.cpp - Reverse-mode differentiation at compile time --------===//
//
// 1. Clone the forward function; its body computes every forward value.
// 2. Mark the active values: trainable parameters and whatever depends on
//    them. Integer tensors, running statistics and constants stay inactive,
//    so no adjoint is ever built for them.
// 3. Walk the cloned ops backwards from the loss (adjoint 1), asking each
//    active op's AutodiffOpInterface for its operands' adjoints and summing
//    the contributions of values used more than once.
// 4. Return the loss and the parameter adjoints; drop what is unused.
//
//===----------------------------------------------------------------------===//

#include "lruc/Autodiff.h"

#include "lru/Autodiff.h"
#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace mlir;

namespace lruc {
namespace {

bool isTrainable(lru::ParamOp param) {
  return param.getGroup() != lru::ParamGroup::state;
}

/// Removes side-effect-free ops whose results are unused, last first.
void eraseDeadOps(Block &body) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      if (op.hasTrait<OpTrait::IsTerminator>() || !op.use_empty() ||
          !isMemoryEffectFree(&op))
        continue;
      op.erase();
      changed = true;
    }
  }
}

/// A clone of the forward function that also computes the gradients.
struct Differentiated {
  func::FuncOp func;
  SmallVector<lru::ParamOp> params; ///< trainable, in order
  SmallVector<Value> grads;         ///< one per param
  SmallVector<BlockArgument> inputs; ///< real inputs, when asked for
  SmallVector<Value> inputGrads;     ///< one per input
};

/// Whether `arg` is a real-valued model input (features, targets): the
/// inputs whose gradients `deriveBackward` can return.
bool isRealInput(func::FuncOp func, BlockArgument arg) {
  return func.getArgAttr(arg.getArgNumber(), "lru.input") &&
         isa<FloatType>(cast<ShapedType>(arg.getType()).getElementType());
}

/// Clones `forward` as `name` and builds, before its return, the adjoint of
/// every trainable parameter (and of every real input, with
/// `withInputs`). The return is left as the forward's.
FailureOr<Differentiated> differentiate(func::FuncOp forward, StringRef name,
                                        bool withInputs = false) {
  Block &forwardBody = forward.getBody().front();
  auto forwardReturn = cast<func::ReturnOp>(forwardBody.getTerminator());
  if (forwardReturn.getNumOperands() == 0 ||
      forwardReturn.getOperand(0).getType() !=
          RankedTensorType::get({}, Float32Type::get(forward.getContext())))
    return forward.emitOpError("must return the loss (tensor<f32>) first");

  // 1. The clone.
  OpBuilder builder(forward);
  builder.setInsertionPointAfter(forward);
  Differentiated d;
  d.func = cast<func::FuncOp>(builder.clone(*forward));
  d.func.setSymName(name);
  SymbolTable::setSymbolVisibility(d.func, SymbolTable::Visibility::Public);
  Block &body = d.func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(&op);

  // 2. Activity.
  llvm::DenseSet<Value> active;
  if (withInputs)
    for (BlockArgument arg : body.getArguments())
      if (isRealInput(d.func, arg)) {
        d.inputs.push_back(arg);
        active.insert(arg);
      }
  for (Operation *op : forwardOps) {
    if (auto param = dyn_cast<lru::ParamOp>(op)) {
      if (isTrainable(param)) {
        d.params.push_back(param);
        active.insert(param.getResult());
      }
      continue;
    }
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return active.contains(v); }))
      for (Value result : op->getResults())
        if (isa<FloatType, ComplexType>(
                cast<ShapedType>(result.getType()).getElementType()))
          active.insert(result);
  }

  // 3. Adjoints, accumulated per value.
  builder.setInsertionPoint(ret);
  llvm::DenseMap<Value, Value> adjoint;
  auto accumulate = [&](Value value, Value contribution, Location loc) {
    auto [it, inserted] = adjoint.try_emplace(value, contribution);
    if (!inserted)
      it->second = builder.create<lru::AddOp>(loc, contribution.getType(),
                                              it->second, contribution);
  };
  Value loss = ret.getOperand(0);
  auto lossType = cast<RankedTensorType>(loss.getType());
  adjoint[loss] = builder.create<arith::ConstantOp>(
      ret.getLoc(), DenseElementsAttr::get(lossType, 1.0f));

  lru::AdjointBuilder adjoints(builder, ret.getLoc());
  for (Operation *op : llvm::reverse(forwardOps)) {
    if (isa<lru::ParamOp>(op))
      continue;
    SmallVector<Value> resultAdjoints;
    bool any = false;
    for (Value result : op->getResults()) {
      Value a = active.contains(result) ? adjoint.lookup(result) : Value();
      resultAdjoints.push_back(a);
      any |= bool(a);
    }
    if (!any)
      continue;
    auto rule = dyn_cast<lru::AutodiffOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no derivative rule; it cannot appear "
                             "between the parameters and the loss");
    adjoints.setLoc(op->getLoc());
    SmallVector<Value> operandAdjoints;
    if (failed(rule.buildAdjoints(adjoints, resultAdjoints, operandAdjoints)))
      return failure();
    for (auto [operand, contribution] :
         llvm::zip(op->getOperands(), operandAdjoints))
      if (contribution && active.contains(operand))
        accumulate(operand, contribution, op->getLoc());
  }

  // Gradients in parameter order; zero where the loss does not depend on one.
  for (lru::ParamOp param : d.params) {
    Value grad = adjoint.lookup(param.getResult());
    if (!grad)
      grad = builder.create<arith::ConstantOp>(
          param.getLoc(), DenseElementsAttr::get(param.getType(), 0.0f));
    d.grads.push_back(grad);
  }
  // Zero where the loss does not depend on an input: a broadcast scalar,
  // since inputs have a dynamic batch dim.
  for (BlockArgument input : d.inputs) {
    Value grad = adjoint.lookup(input);
    if (!grad)
      grad = adjoints.zerosLike(input);
    d.inputGrads.push_back(grad);
  }
  return d;
}

/// Replaces `func`'s return with `results` and fixes its type.
void setResults(func::FuncOp func, ValueRange results) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder builder(ret);
  builder.create<func::ReturnOp>(ret.getLoc(), results);
  ret.erase();
  func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(),
                                               results.getTypes()));
}

/// Tags each of `func`'s results from `first` on as the argument in
/// `replaced` it is the new value of (`{lru.adam_m = "head.weight"}`):
/// the ABI writes it where that argument was read (docs/autodiff.md).
void tagUpdates(func::FuncOp func, unsigned first, ValueRange replaced) {
  for (auto [i, arg] : llvm::enumerate(replaced))
    func.setResultAttrs(
        first + unsigned(i),
        func.getArgAttrDict(cast<BlockArgument>(arg).getArgNumber()));
}

ArrayAttr paramNames(OpBuilder &builder, ArrayRef<lru::ParamOp> params) {
  SmallVector<Attribute> names;
  for (lru::ParamOp param : params)
    names.push_back(builder.getStringAttr(param.getName()));
  return builder.getArrayAttr(names);
}

} // namespace

FailureOr<func::FuncOp> deriveBackward(func::FuncOp forward, StringRef name,
                                       bool inputGradients) {
  FailureOr<Differentiated> d = differentiate(forward, name, inputGradients);
  if (failed(d))
    return failure();
  func::FuncOp backward = d->func;
  Value loss = backward.getBody().front().getTerminator()->getOperand(0);
  SmallVector<Value> results = {loss};
  results.append(d->grads);
  results.append(d->inputGrads);
  setResults(backward, results);
  OpBuilder builder(backward);
  backward->setAttr("lru.gradients", paramNames(builder, d->params));
  if (inputGradients) {
    SmallVector<Attribute> inputNames;
    for (BlockArgument input : d->inputs)
      inputNames.push_back(
          backward.getArgAttr(input.getArgNumber(), "lru.input"));
    backward->setAttr("lru.input_gradients",
                      builder.getArrayAttr(inputNames));
  }
  backward->removeAttr("lru.state_updates");
  eraseDeadOps(backward.getBody().front());
  return backward;
}

AdamWConfig AdamWConfig::fromModule(ModuleOp module) {
  AdamWConfig config;
  auto train = module->getAttrOfType<DictionaryAttr>("lru.train");
  if (!train)
    return config;
  auto number = [&](StringRef key, double &out) {
    if (auto attr = train.getAs<FloatAttr>(key))
      out = attr.getValueAsDouble();
  };
  number("beta1", config.beta1);
  number("beta2", config.beta2);
  number("eps", config.eps);
  number("weight_decay", config.weightDecay);
  number("recurrent_lr_factor", config.recurrentLrFactor);
  if (auto clip = train.getAs<FloatAttr>("clip"))
    config.clip = clip.getValueAsDouble();
  return config;
}

namespace {

/// Appends arguments to a function ahead of its existing ones, each tagged
/// with the block it is bound to (`lru.param = "blocks.0.lru.nu_log"`).
class ArgumentInserter {
public:
  ArgumentInserter(func::FuncOp func, OpBuilder &builder)
      : func_(func), builder_(builder) {}

  Value add(Type type, StringRef tag, StringRef name) {
    func_.insertArgument(index_, type,
                         builder_.getDictionaryAttr(builder_.getNamedAttr(
                             tag, builder_.getStringAttr(name))),
                         func_.getLoc());
    return func_.getBody().front().getArgument(index_++);
  }

  /// One argument per parameter, of its type.
  SmallVector<Value> addEach(ArrayRef<lru::ParamOp> params, StringRef tag) {
    SmallVector<Value> args;
    for (lru::ParamOp param : params)
      args.push_back(add(param.getType(), tag, param.getName()));
    return args;
  }

private:
  func::FuncOp func_;
  OpBuilder &builder_;
  unsigned index_ = 0;
};

/// A forward function differentiated for training: the clone, its running
/// statistics and, by name, the values the forward pass updates them to.
struct TrainingClone {
  Differentiated d;
  SmallVector<lru::ParamOp> state;
  llvm::StringMap<Value> stateUpdates;
  unsigned numOutputs = 0; ///< the loss and the predictions

  /// The updated running statistics, in `state` order (a statistic the
  /// forward pass leaves alone is returned as it came, `args[i]`).
  SmallVector<Value> newStates(ValueRange args) {
    SmallVector<Value> values;
    for (auto [param, arg] : llvm::zip(state, args)) {
      Value updated = stateUpdates.lookup(param.getName());
      values.push_back(updated ? updated : arg);
    }
    return values;
  }

  /// Returns the forward's outputs then `updated`, each tagged as the
  /// argument of `replaced` it is the new value of, binds the parameters
  /// and running statistics to `params` and `states` (arguments) and
  /// removes what is dead.
  void finish(ValueRange params, ValueRange states, ValueRange updated,
              ValueRange replaced) {
    func::FuncOp func = d.func;
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    SmallVector<Value> results(ret.getOperands().take_front(numOutputs));
    results.append(updated.begin(), updated.end());
    for (auto [param, arg] : llvm::zip(d.params, params))
      param.getResult().replaceAllUsesWith(arg);
    for (auto [param, arg] : llvm::zip(state, states))
      param.getResult().replaceAllUsesWith(arg);
    setResults(func, results);
    tagUpdates(func, numOutputs, replaced);
    func->removeAttr("lru.state_updates");
    OpBuilder builder(func);
    func->setAttr("lru.params", paramNames(builder, d.params));
    func->setAttr("lru.state", paramNames(builder, state));
    for (lru::ParamOp param : llvm::concat<lru::ParamOp>(d.params, state))
      param.erase();
    eraseDeadOps(func.getBody().front());
  }
};

FailureOr<TrainingClone> differentiateForTraining(func::FuncOp forward,
                                                  StringRef name) {
  FailureOr<Differentiated> d = differentiate(forward, name);
  if (failed(d))
    return failure();
  TrainingClone clone{std::move(*d)};
  Block &body = clone.d.func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  unsigned numForwardResults = ret.getNumOperands();
  if (auto names =
          clone.d.func->getAttrOfType<ArrayAttr>("lru.state_updates")) {
    unsigned first = numForwardResults - names.size();
    for (auto [i, nameAttr] : llvm::enumerate(names))
      clone.stateUpdates[cast<StringAttr>(nameAttr).getValue()] =
          ret.getOperand(first + i);
  }
  clone.numOutputs = numForwardResults - clone.stateUpdates.size();
  for (lru::ParamOp param : body.getOps<lru::ParamOp>())
    if (!isTrainable(param))
      clone.state.push_back(param);
  return clone;
}

/// The parameters, moments and gradients AdamW reads, and what it gives.
struct AdamWValues {
  SmallVector<Value> params, ms, vs, grads;
};

/// AdamW (Loshchilov & Hutter), decoupled weight decay, with the gradients
/// clipped first to a global norm; the recurrent group trains at
/// lr * factor without decay (DESIGN.md §4). `t` counts steps from 1.
AdamWValues buildAdamW(OpBuilder &builder, Location loc,
                       const AdamWConfig &config,
                       ArrayRef<lru::ParamGroup> groups, const AdamWValues &in,
                       Value lr, Value t) {
  lru::AdjointBuilder b(builder, loc);
  auto scalar = RankedTensorType::get({}, builder.getF32Type());
  auto constant = [&](double v) -> Value {
    return builder.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(scalar, float(v)));
  };
  SmallVector<Value> grads(in.grads);
  if (config.clip) {
    // Global norm clipping: g *= clip / max(|g|, clip).
    Value sumSquares;
    for (Value g : grads) {
      int64_t rank = cast<RankedTensorType>(g.getType()).getRank();
      auto all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      Value s = b.reduceSum(b.mul(g, g), all);
      sumSquares = sumSquares ? b.add(sumSquares, s) : s;
    }
    Value norm = builder.create<lru::SqrtOp>(loc, scalar, sumSquares);
    Value clip = constant(*config.clip);
    Value factor = b.div(clip, builder.create<lru::MaxOp>(loc, scalar, norm,
                                                          clip));
    for (Value &g : grads)
      g = b.mul(g, b.broadcast(factor, g, {}));
  }
  // Bias corrections 1 - beta^t, with beta^t = exp(t ln beta).
  auto correction = [&](double beta) {
    Value power = builder.create<lru::ExpOp>(
        loc, scalar, b.mul(t, constant(std::log(beta))));
    return b.sub(constant(1.0), power);
  };
  Value correction1 = correction(config.beta1);
  Value correction2 = correction(config.beta2);
  // One rate for the whole recurrent group (made at its first parameter).
  Value recurrentRate;
  AdamWValues out;
  for (auto [group, p, g, m, v] :
       llvm::zip(groups, in.params, grads, in.ms, in.vs)) {
    bool recurrent = group == lru::ParamGroup::recurrent;
    Value m1 = b.add(b.scale(m, config.beta1), b.scale(g, 1 - config.beta1));
    Value v1 =
        b.add(b.scale(v, config.beta2), b.scale(b.mul(g, g), 1 - config.beta2));
    Value mHat = b.div(m1, b.broadcast(correction1, m1, {}));
    Value vHat = b.div(v1, b.broadcast(correction2, v1, {}));
    Value denominator =
        b.add(builder.create<lru::SqrtOp>(loc, vHat.getType(), vHat),
              b.fillLike(vHat, config.eps));
    Value update = b.div(mHat, denominator);
    double decay = recurrent ? 0.0 : config.weightDecay;
    if (decay != 0)
      update = b.add(update, b.scale(p, decay));
    if (recurrent && !recurrentRate)
      recurrentRate = b.scale(lr, config.recurrentLrFactor);
    Value rate = recurrent ? recurrentRate : lr;
    out.params.push_back(b.sub(p, b.mul(update, b.broadcast(rate, p, {}))));
    out.ms.push_back(m1);
    out.vs.push_back(v1);
  }
  return out;
}

SmallVector<lru::ParamGroup> groupsOf(ArrayRef<lru::ParamOp> params) {
  SmallVector<lru::ParamGroup> groups;
  for (lru::ParamOp param : params)
    groups.push_back(param.getGroup());
  return groups;
}

} // namespace

FailureOr<func::FuncOp> deriveTrainStep(func::FuncOp forward,
                                        const AdamWConfig &config,
                                        StringRef name) {
  FailureOr<TrainingClone> clone = differentiateForTraining(forward, name);
  if (failed(clone))
    return failure();
  func::FuncOp step = clone->d.func;
  OpBuilder builder(step.getBody().front().getTerminator());
  auto scalar = RankedTensorType::get({}, builder.getF32Type());

  // Parameters, moments and state become arguments, ahead of the inputs:
  // (params, m, v, state, lr, step, inputs...).
  ArgumentInserter args(step, builder);
  AdamWValues in;
  in.params = args.addEach(clone->d.params, "lru.param");
  in.ms = args.addEach(clone->d.params, "lru.adam_m");
  in.vs = args.addEach(clone->d.params, "lru.adam_v");
  SmallVector<Value> states = args.addEach(clone->state, "lru.state");
  Value lr = args.add(scalar, "lru.input", "lr");
  Value t = args.add(scalar, "lru.input", "step");
  in.grads = clone->d.grads;
  AdamWValues out = buildAdamW(builder, step.getLoc(), config,
                               groupsOf(clone->d.params), in, lr, t);

  // The loss and the predictions of this forward pass (the trainer's
  // running accuracy), then the updated blocks.
  SmallVector<Value> updated(out.params);
  updated.append(out.ms);
  updated.append(out.vs);
  updated.append(clone->newStates(states));
  SmallVector<Value> replaced(in.params);
  replaced.append(in.ms);
  replaced.append(in.vs);
  replaced.append(states);
  clone->finish(in.params, states, updated, replaced);
  return step;
}

FailureOr<func::FuncOp> deriveAccumulateGradients(func::FuncOp forward,
                                                  StringRef name) {
  FailureOr<TrainingClone> clone = differentiateForTraining(forward, name);
  if (failed(clone))
    return failure();
  func::FuncOp func = clone->d.func;
  OpBuilder builder(func.getBody().front().getTerminator());
  auto scalar = RankedTensorType::get({}, builder.getF32Type());

  // (params, state, gradient sums, scale, inputs...).
  ArgumentInserter args(func, builder);
  SmallVector<Value> params = args.addEach(clone->d.params, "lru.param");
  SmallVector<Value> states = args.addEach(clone->state, "lru.state");
  SmallVector<Value> sums = args.addEach(clone->d.params, "lru.gradient");
  Value scale = args.add(scalar, "lru.input", "grad_scale");

  lru::AdjointBuilder b(builder, func.getLoc());
  SmallVector<Value> updated;
  for (auto [sum, g] : llvm::zip(sums, clone->d.grads))
    updated.push_back(b.add(sum, b.mul(g, b.broadcast(scale, g, {}))));
  updated.append(clone->newStates(states));
  SmallVector<Value> replaced(sums);
  replaced.append(states);
  clone->finish(params, states, updated, replaced);
  return func;
}

FailureOr<func::FuncOp> deriveApplyGradients(func::FuncOp forward,
                                             const AdamWConfig &config,
                                             StringRef name) {
  SmallVector<lru::ParamOp> params;
  for (lru::ParamOp param : forward.getBody().front().getOps<lru::ParamOp>())
    if (isTrainable(param))
      params.push_back(param);
  OpBuilder builder(forward);
  builder.setInsertionPointAfter(forward);
  Location loc = forward.getLoc();
  auto func =
      builder.create<func::FuncOp>(loc, name, builder.getFunctionType({}, {}));
  builder.setInsertionPointToStart(func.addEntryBlock());
  auto ret = builder.create<func::ReturnOp>(loc);
  builder.setInsertionPoint(ret);
  auto scalar = RankedTensorType::get({}, builder.getF32Type());

  // (params, m, v, gradients, lr, step): no batch.
  ArgumentInserter args(func, builder);
  AdamWValues in;
  in.params = args.addEach(params, "lru.param");
  in.ms = args.addEach(params, "lru.adam_m");
  in.vs = args.addEach(params, "lru.adam_v");
  in.grads = args.addEach(params, "lru.gradient");
  Value lr = args.add(scalar, "lru.input", "lr");
  Value t = args.add(scalar, "lru.input", "step");
  AdamWValues out =
      buildAdamW(builder, loc, config, groupsOf(params), in, lr, t);
  SmallVector<Value> results(out.params);
  results.append(out.ms);
  results.append(out.vs);
  setResults(func, results);
  SmallVector<Value> replaced(in.params);
  replaced.append(in.ms);
  replaced.append(in.vs);
  tagUpdates(func, 0, replaced);
  func->setAttr("lru.params", paramNames(builder, params));
  func->setAttr("lru.state", builder.getArrayAttr({}));
  return func;
}

} // namespace lruc
