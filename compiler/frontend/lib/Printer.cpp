//===- Printer.cpp - The checked model as `lruc --emit=ast` prints it -----===//
//
// One line per node, children indented, every default filled in and every
// node ending in `@line:col`, so tests can check both values and locations.
//
//===----------------------------------------------------------------------===//

#include "lruc/frontend/Frontend.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

namespace lruc {
namespace {

std::string at(ast::Loc loc) { return fmt::format("@{}:{}", loc.line, loc.col); }
const char *boolean(bool b) { return b ? "true" : "false"; }

const char *activationName(ast::ActivationKind kind) {
  switch (kind) {
  case ast::ActivationKind::GELU: return "gelu";
  case ast::ActivationKind::ReLU: return "relu";
  case ast::ActivationKind::Tanh: return "tanh";
  }
  return "?";
}

const char *lossName(ast::LossKind kind) {
  switch (kind) {
  case ast::LossKind::CrossEntropy: return "cross_entropy";
  case ast::LossKind::MeanSquaredError: return "mse";
  case ast::LossKind::MeanAbsoluteError: return "l1";
  case ast::LossKind::Huber: return "huber";
  }
  return "?";
}

std::string layerText(const ast::LayerKind &kind) {
  struct Visitor {
    std::string operator()(const ast::LRULayer &l) const {
      return fmt::format("lru state={} r_min={} r_max={} max_phase={} "
                         "bidirectional={} gamma_norm={}",
                         l.state, l.rMin, l.rMax, l.maxPhase,
                         boolean(l.bidirectional), boolean(l.gammaNorm));
    }
    std::string operator()(const ast::GLRULayer &l) const {
      const char *form = l.form == ast::GLRUForm::Plain    ? "plain"
                         : l.form == ast::GLRUForm::Stable ? "stable"
                                                           : "normalized";
      return fmt::format("glru state={} form={} r_min={} r_max={} max_phase={}",
                         l.state, form, l.rMin, l.rMax, l.maxPhase);
    }
    std::string operator()(const ast::LinearLayer &l) const {
      return fmt::format("linear width={} bias={}", l.width, boolean(l.bias));
    }
    std::string operator()(const ast::GLULayer &l) const {
      return fmt::format("glu variant={}",
                         l.variant == ast::GLUVariant::Full ? "full" : "half");
    }
    std::string operator()(const ast::ActivationLayer &l) const {
      if (l.kind == ast::ActivationKind::GELU)
        return fmt::format("gelu approximate={}", boolean(l.approximate));
      return activationName(l.kind);
    }
    std::string operator()(const ast::MLPLayer &l) const {
      return fmt::format("mlp hidden={} activation={}", l.hidden,
                         activationName(l.activation));
    }
    std::string operator()(const ast::DropoutLayer &l) const {
      return fmt::format("dropout rate={}", l.rate);
    }
  };
  return std::visit(Visitor{}, kind);
}

void printTrain(const ast::Train &t, std::ostream &os) {
  fmt::print(os, "train {}\n", at(t.loc));
  fmt::print(os, "  batch {}\n", t.batch);
  if (t.accumulate > 1)
    fmt::print(os, "  accumulate {}\n", t.accumulate);
  if (t.steps)
    fmt::print(os, "  steps {}\n", *t.steps);
  if (t.epochs)
    fmt::print(os, "  epochs {}\n", *t.epochs);
  fmt::print(os, "  adamw lr={} beta1={} beta2={} eps={} weight_decay={}\n",
             t.lr, t.beta1, t.beta2, t.eps, t.weightDecay);
  fmt::print(os, "  recurrent_lr_factor {}\n", t.recurrentLrFactor);
  if (t.schedule.kind == ast::ScheduleKind::Constant)
    fmt::print(os, "  schedule constant {}\n", at(t.schedule.loc));
  else
    fmt::print(os, "  schedule warmup_cosine warmup={} floor={} {}\n",
               t.schedule.warmup, t.schedule.floor, at(t.schedule.loc));
  if (t.clip)
    fmt::print(os, "  clip {}\n", *t.clip);
  else
    fmt::print(os, "  clip none\n");
  fmt::print(os, "  seed {}\n  dropout_seed {}\n  eval_every {}\n", t.seed,
             t.dropoutSeed, t.evalEvery);
  if (t.data)
    fmt::print(os, "  data {} path=\"{}\" {}\n", t.data->task, t.data->path,
               at(t.data->loc));
}

} // namespace

void printModel(const ast::Model &m, std::ostream &os) {
  fmt::print(os, "model {} {}\n", m.name, at(m.loc));
  const ast::Input &in = m.input;
  switch (in.kind) {
  case ast::InputKind::Tokens:
    fmt::print(os, "  input tokens vocab={} length={} {}\n", in.vocab,
               in.length, at(in.loc));
    break;
  case ast::InputKind::TokenPairs:
    fmt::print(os, "  input token_pairs vocab={} length={} {}\n", in.vocab,
               in.length, at(in.loc));
    break;
  case ast::InputKind::Features:
    fmt::print(os, "  input features channels={} length={} {}\n", in.channels,
               in.length, at(in.loc));
    break;
  }
  fmt::print(os, "  encoder {} width={} {}\n",
             m.encoder.kind == ast::EncoderKind::Embedding ? "embedding"
                                                           : "linear",
             m.encoder.width, at(m.encoder.loc));
  for (const ast::Block &b : m.blocks) {
    const char *norm = b.norm == ast::NormKind::Batch   ? "batch"
                       : b.norm == ast::NormKind::Layer ? "layer"
                                                        : "none";
    fmt::print(os, "  block repeat={} norm={} {}\n", b.repeat, norm, at(b.loc));
    for (const ast::Layer &l : b.layers)
      fmt::print(os, "    {} {}\n", layerText(l.kind), at(l.loc));
  }
  const char *pool = m.pool.kind == ast::PoolKind::Mean   ? "mean"
                     : m.pool.kind == ast::PoolKind::Last ? "last"
                                                          : "none";
  fmt::print(os, "  pool {} {}\n", pool, at(m.pool.loc));
  if (m.head.kind == ast::HeadKind::Linear)
    fmt::print(os, "  head linear classes={} {}\n", m.head.classes,
               at(m.head.loc));
  else
    fmt::print(os, "  head retrieval classes={} hidden={} activation={} {}\n",
               m.head.classes, m.head.hidden, activationName(m.head.activation),
               at(m.head.loc));
  fmt::print(os, "  loss {}{}{}{} {}\n", lossName(m.loss.kind),
             m.loss.kind == ast::LossKind::Huber
                 ? fmt::format(" delta={}", m.loss.huberDelta)
                 : "",
             m.loss.labelSmoothing != 0
                 ? fmt::format(" label_smoothing={}", m.loss.labelSmoothing)
                 : "",
             m.loss.classWeights.empty()
                 ? ""
                 : fmt::format(" class_weights={}",
                               fmt::join(m.loss.classWeights, ",")),
             at(m.loss.loc));
  if (m.train)
    printTrain(*m.train, os);
}

} // namespace lruc
