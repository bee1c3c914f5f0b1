//===- Sema.cpp - Statement tree to the checked ast::Model ----------------===//
//
// Gives meaning to the generic statements of Syntax.h: evaluates constants
// and expressions, binds named and positional arguments, fills in defaults,
// and checks every value and every relation between sections. Each error is
// reported where the offending value was written, and checking continues so
// one run shows every problem.
//
//===----------------------------------------------------------------------===//

#include "Syntax.h"
#include "lruc/frontend/Frontend.h"
#include "lruc/frontend/Tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace lruc {
namespace {

using syntax::Arg;
using syntax::Expr;
using syntax::ExprKind;
using syntax::Stmt;

constexpr double kPi = 3.14159265358979323846;
/// Sizes above these are surely mistakes and would overflow later products.
constexpr int64_t kMaxWidth = 1 << 16;
constexpr int64_t kMaxLength = 1 << 24;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxRepeat = 1000;
constexpr int64_t kMaxCount = int64_t(1) << 40;
constexpr int64_t kMaxSeed = int64_t(1) << 53;

std::string formatChoices(const std::vector<std::string_view> &choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i)
      out += i + 1 == choices.size() ? " or " : ", ";
    out += fmt::format("'{}'", choices[i]);
  }
  return out;
}

/// One statement per section or setting: remembers where each was first seen.
class SeenOnce {
public:
  /// False (after reporting) if `name` was already seen.
  bool first(DiagnosticEngine &diags, std::string_view name, ast::Loc loc) {
    auto [it, inserted] = seen_.try_emplace(std::string(name), loc);
    if (inserted)
      return true;
    diags.error(loc, fmt::format("'{}' is given twice", name));
    diags.note(it->second, "first given here");
    return false;
  }

private:
  std::map<std::string, ast::Loc, std::less<>> seen_;
};

class Sema {
public:
  Sema(const SourceFile &source, const FrontendOptions &options,
       DiagnosticEngine &diags)
      : source_(source), overrides_(options.overrides),
        ignoreTrain_(options.ignoreTrain), diags_(diags) {}

  std::optional<ast::Model> run(const std::vector<Stmt> &statements);

private:
  struct Constant {
    /// None for a constant whose value was an error (reported there): its
    /// uses are errors already said, not "unknown constant" again.
    std::optional<double> value;
    ast::Loc loc;
  };
  struct Param {
    std::string_view name;
    bool required;
  };
  /// Arguments by parameter name.
  using Bound = std::map<std::string_view, Expr>;

  // --- Values ------------------------------------------------------------------
  std::optional<double> eval(const Expr &e);
  std::optional<double> real(const Expr &e, std::string_view what, double min,
                             double max, bool minOpen = false,
                             bool maxOpen = false);
  std::optional<int64_t> integer(const Expr &e, std::string_view what,
                                 int64_t min, int64_t max);
  std::optional<bool> boolean(const Expr &e, std::string_view what);
  std::optional<std::string> choice(const Expr &e, std::string_view what,
                                    const std::vector<std::string_view> &choices,
                                    bool argsAllowed = false);
  std::optional<std::string> string(const Expr &e, std::string_view what);

  // --- Statement shapes --------------------------------------------------------
  std::optional<Bound> bind(const Expr &call, std::string_view what,
                            const std::vector<Param> &params);
  /// `head value`: no arguments on the head, exactly one operand, no body.
  const Expr *single(const Stmt &s, std::string_view example);
  /// `head(args)`: no operands, no body.
  bool callOnly(const Stmt &s);
  bool noBody(const Stmt &s);
  void unknown(const Expr &word, std::string_view what,
               const std::vector<std::string_view> &choices);

  // Typed accessors for bound arguments; absent arguments keep `out`.
  bool realArg(const Bound &b, std::string_view name, double &out, double min,
               double max, bool minOpen = false, bool maxOpen = false);
  bool intArg(const Bound &b, std::string_view name, int64_t &out, int64_t min,
              int64_t max);
  bool boolArg(const Bound &b, std::string_view name, bool &out);
  /// A list `[a, b, ...]` of numbers in [min, max], at least one.
  bool realListArg(const Bound &b, std::string_view name,
                   std::vector<double> &out, double min, double max);
  /// The arguments every diagonal recurrence takes: state size and the ring
  /// (r_min <= r_max, r_min in [0, 1), r_max in (0, 1], max_phase in
  /// (0, 2pi]).
  bool ringArgs(const Bound &b, ast::Loc loc, int64_t &state, double &rMin,
                double &rMax, double &maxPhase);
  bool activationArg(const Bound &b, std::string_view name,
                     ast::ActivationKind &out);
  ast::Loc argLoc(const Bound &b, std::string_view name, ast::Loc fallback) {
    auto it = b.find(name);
    return it == b.end() ? fallback : it->second->loc;
  }

  // --- Sections ------------------------------------------------------------------
  void let(const Stmt &s);
  void model(const Stmt &s);
  void input(const Stmt &s, ast::Model &m);
  void encoder(const Stmt &s, ast::Model &m);
  void block(const Stmt &s, ast::Model &m);
  std::optional<ast::Layer> layer(const Stmt &s);
  void pool(const Stmt &s, ast::Model &m);
  void head(const Stmt &s, ast::Model &m);
  void loss(const Stmt &s, ast::Model &m);
  void train(const Stmt &s);
  void checkModel(const ast::Model &m);
  void checkTrain(const ast::Model &m, const ast::Train &t);
  void checkClassification(const ast::Model &m, const ast::Train &t,
                           std::string_view task);

  const SourceFile &source_;
  const ConstantOverrides &overrides_;
  bool ignoreTrain_;
  DiagnosticEngine &diags_;
  std::map<std::string, Constant, std::less<>> constants_;
  std::optional<ast::Model> model_;
  std::optional<ast::Train> train_;
  ast::Loc modelLoc_, trainLoc_;
  /// Locations of statements that later checks point back to.
  ast::Loc inputLoc_, headLoc_, lossLoc_, poolLoc_;
  bool modelSeen_ = false, trainSeen_ = false;
};

// --- Values ----------------------------------------------------------------------

std::optional<double> Sema::eval(const Expr &e) {
  switch (e->kind) {
  case ExprKind::Number:
    if (!std::isfinite(e->number)) { // 1e400: past the largest double
      diags_.error(e->loc, "the number is too large");
      return std::nullopt;
    }
    return e->number;
  case ExprKind::String:
    diags_.error(e->loc, "expected a number, found a string");
    return std::nullopt;
  case ExprKind::List:
    diags_.error(e->loc, "expected a number, found a list");
    return std::nullopt;
  case ExprKind::Name: {
    if (e->hasArgs) {
      diags_.error(e->loc, fmt::format("expected a number, found '{}(...)'",
                                       e->text));
      return std::nullopt;
    }
    if (e->text == "pi")
      return kPi;
    if (auto it = constants_.find(e->text); it != constants_.end())
      return it->second.value;
    std::vector<std::string_view> names = {"pi"};
    for (auto &[name, constant] : constants_)
      names.push_back(name);
    std::string near = nearestWord(e->text, names);
    diags_.error(e->loc,
                 near.empty()
                     ? fmt::format("unknown constant '{}'", e->text)
                     : fmt::format("unknown constant '{}'; did you mean '{}'?",
                                   e->text, near));
    return std::nullopt;
  }
  case ExprKind::Negate: {
    auto v = eval(e->lhs);
    if (!v)
      return std::nullopt;
    return -*v;
  }
  case ExprKind::Binary: {
    auto lhs = eval(e->lhs);
    auto rhs = eval(e->rhs);
    if (!lhs || !rhs)
      return std::nullopt;
    double v = 0;
    switch (e->op) {
    case '+': v = *lhs + *rhs; break;
    case '-': v = *lhs - *rhs; break;
    case '*': v = *lhs * *rhs; break;
    default:
      if (*rhs == 0) {
        diags_.error(e->loc, "division by zero");
        return std::nullopt;
      }
      v = *lhs / *rhs;
    }
    if (!std::isfinite(v)) {
      diags_.error(e->loc, "the value is too large");
      return std::nullopt;
    }
    return v;
  }
  }
  return std::nullopt;
}

std::optional<double> Sema::real(const Expr &e, std::string_view what,
                                 double min, double max, bool minOpen,
                                 bool maxOpen) {
  auto v = eval(e);
  if (!v)
    return std::nullopt;
  bool below = minOpen ? !(*v > min) : !(*v >= min);
  bool above = maxOpen ? !(*v < max) : !(*v <= max);
  if (below || above) {
    std::string range;
    if (max == HUGE_VAL)
      range = fmt::format("{} {}", minOpen ? "greater than" : "at least", min);
    else
      range = fmt::format("in {}{}, {}{}", minOpen ? '(' : '[', min, max,
                          maxOpen ? ')' : ']');
    diags_.error(e->loc,
                 fmt::format("{} must be {}, got {}", what, range, *v));
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> Sema::integer(const Expr &e, std::string_view what,
                                     int64_t min, int64_t max) {
  auto v = eval(e);
  if (!v)
    return std::nullopt;
  if (std::floor(*v) != *v) {
    diags_.error(e->loc, fmt::format("{} must be a whole number, got {}",
                                     what, *v));
    return std::nullopt;
  }
  if (*v < double(min) || *v > double(max)) {
    diags_.error(e->loc, fmt::format("{} must be at {} {}, got {}", what,
                                     *v < double(min) ? "least" : "most",
                                     *v < double(min) ? min : max, *v));
    return std::nullopt;
  }
  return int64_t(*v);
}

std::optional<bool> Sema::boolean(const Expr &e, std::string_view what) {
  if (e->kind == ExprKind::Name && !e->hasArgs &&
      (e->text == "true" || e->text == "false"))
    return e->text == "true";
  diags_.error(e->loc, fmt::format("{} must be true or false", what));
  return std::nullopt;
}

void Sema::unknown(const Expr &word, std::string_view what,
                   const std::vector<std::string_view> &choices) {
  std::string near = nearestWord(word->text, choices);
  if (!near.empty())
    diags_.error(word->loc, fmt::format("unknown {} '{}'; did you mean '{}'?",
                                        what, word->text, near));
  else
    diags_.error(word->loc, fmt::format("unknown {} '{}'; expected {}", what,
                                        word->text, formatChoices(choices)));
}

std::optional<std::string>
Sema::choice(const Expr &e, std::string_view what,
             const std::vector<std::string_view> &choices, bool argsAllowed) {
  if (e->kind != ExprKind::Name) {
    diags_.error(e->loc, fmt::format("expected {} {}", what,
                                     formatChoices(choices)));
    return std::nullopt;
  }
  if (std::find(choices.begin(), choices.end(), e->text) == choices.end()) {
    unknown(e, what, choices);
    return std::nullopt;
  }
  if (e->hasArgs && !argsAllowed) {
    diags_.error(e->loc, fmt::format("{} '{}' takes no arguments", what,
                                     e->text));
    return std::nullopt;
  }
  return e->text;
}

std::optional<std::string> Sema::string(const Expr &e, std::string_view what) {
  if (e->kind == ExprKind::String)
    return e->text;
  diags_.error(e->loc, fmt::format("{} must be a string in double quotes",
                                   what));
  return std::nullopt;
}

// --- Statement shapes --------------------------------------------------------------

std::optional<Sema::Bound> Sema::bind(const Expr &call, std::string_view what,
                                      const std::vector<Param> &params) {
  Bound bound;
  bool ok = true;
  size_t positional = 0;
  bool sawNamed = false;
  for (const Arg &arg : call->args) {
    std::string_view name;
    if (arg.name.empty()) {
      if (sawNamed) {
        diags_.error(arg.value->loc,
                     "a positional argument cannot follow named ones");
        ok = false;
        continue;
      }
      if (positional >= params.size()) {
        diags_.error(arg.value->loc,
                     fmt::format("{} takes at most {} argument{}", what,
                                 params.size(), params.size() == 1 ? "" : "s"));
        ok = false;
        continue;
      }
      name = params[positional++].name;
    } else {
      sawNamed = true;
      auto it = std::find_if(params.begin(), params.end(),
                             [&](const Param &p) { return p.name == arg.name; });
      if (it == params.end()) {
        std::vector<std::string_view> names;
        for (const Param &p : params)
          names.push_back(p.name);
        std::string near = nearestWord(arg.name, names);
        std::string message =
            params.empty()
                ? fmt::format("{} takes no arguments", what)
            : !near.empty()
                ? fmt::format("{} has no argument '{}'; did you mean '{}'?",
                              what, arg.name, near)
                : fmt::format("{} has no argument '{}'; its arguments are {}",
                              what, arg.name, formatChoices(names));
        diags_.error(arg.nameLoc, message);
        ok = false;
        continue;
      }
      name = it->name;
    }
    if (!bound.emplace(name, arg.value).second) {
      diags_.error(arg.name.empty() ? arg.value->loc : arg.nameLoc,
                   fmt::format("argument '{}' is given twice", name));
      ok = false;
    }
  }
  for (const Param &p : params)
    if (p.required && !bound.count(p.name) && ok) {
      diags_.error(call->loc, fmt::format("{} needs the argument '{}'", what,
                                          p.name));
      ok = false;
    }
  if (!ok)
    return std::nullopt;
  return bound;
}

bool Sema::noBody(const Stmt &s) {
  if (!s.hasBody)
    return true;
  diags_.error(s.head->loc,
               fmt::format("'{}' does not take a '{{ }}' body", s.head->text));
  return false;
}

const Expr *Sema::single(const Stmt &s, std::string_view example) {
  const Expr &head = s.head;
  if (head->hasArgs) {
    diags_.error(head->loc, fmt::format("'{}' takes a value, not arguments; "
                                        "write e.g. '{}'",
                                        head->text, example));
    return nullptr;
  }
  if (!noBody(s))
    return nullptr;
  if (s.operands.empty()) {
    diags_.error(head->loc, fmt::format("'{}' needs a value, e.g. '{}'",
                                        head->text, example));
    return nullptr;
  }
  if (s.operands.size() > 1) {
    diags_.error(s.operands[1]->loc,
                 fmt::format("'{}' takes one value; statements end at a "
                             "newline or ';'",
                             head->text));
    return nullptr;
  }
  return &s.operands[0];
}

bool Sema::callOnly(const Stmt &s) {
  if (!noBody(s))
    return false;
  if (!s.operands.empty()) {
    diags_.error(s.operands[0]->loc,
                 fmt::format("unexpected value after '{}'; arguments go in "
                             "parentheses and statements end at a newline or "
                             "';'",
                             s.head->text));
    return false;
  }
  return true;
}

bool Sema::realArg(const Bound &b, std::string_view name, double &out,
                   double min, double max, bool minOpen, bool maxOpen) {
  auto it = b.find(name);
  if (it == b.end())
    return true;
  auto v = real(it->second, name, min, max, minOpen, maxOpen);
  if (v)
    out = *v;
  return v.has_value();
}

bool Sema::realListArg(const Bound &b, std::string_view name,
                       std::vector<double> &out, double min, double max) {
  auto it = b.find(name);
  if (it == b.end())
    return true;
  const Expr &list = it->second;
  if (list->kind != ExprKind::List) {
    diags_.error(list->loc, fmt::format("{} must be a list of numbers in "
                                        "brackets, e.g. [1, 2.5]",
                                        name));
    return false;
  }
  if (list->elements.empty()) {
    diags_.error(list->loc, fmt::format("{} must not be empty", name));
    return false;
  }
  std::vector<double> values;
  bool ok = true;
  for (const Expr &element : list->elements) {
    auto v = real(element, name, min, max);
    ok &= v.has_value();
    values.push_back(v.value_or(0));
  }
  if (ok)
    out = std::move(values);
  return ok;
}

bool Sema::intArg(const Bound &b, std::string_view name, int64_t &out,
                  int64_t min, int64_t max) {
  auto it = b.find(name);
  if (it == b.end())
    return true;
  auto v = integer(it->second, name, min, max);
  if (v)
    out = *v;
  return v.has_value();
}

bool Sema::ringArgs(const Bound &b, ast::Loc loc, int64_t &state,
                    double &rMin, double &rMax, double &maxPhase) {
  bool ok = intArg(b, "state", state, 1, kMaxWidth);
  // A ring of radius 0 puts nu_log at +inf (its gradient is NaN from the
  // first step); one of radius 1 alone gives gamma = 0 (B's input never
  // reaches the state). So r_min < 1 and r_max > 0.
  ok &= realArg(b, "r_min", rMin, 0, 1, /*minOpen=*/false, /*maxOpen=*/true);
  ok &= realArg(b, "r_max", rMax, 0, 1, /*minOpen=*/true);
  ok &= realArg(b, "max_phase", maxPhase, 0, 2 * kPi, true);
  if (ok && rMin > rMax) {
    diags_.error(argLoc(b, "r_min", loc),
                 fmt::format("r_min ({}) is larger than r_max ({})", rMin,
                             rMax));
    ok = false;
  }
  return ok;
}

bool Sema::boolArg(const Bound &b, std::string_view name, bool &out) {
  auto it = b.find(name);
  if (it == b.end())
    return true;
  auto v = boolean(it->second, name);
  if (v)
    out = *v;
  return v.has_value();
}

static const std::vector<std::string_view> kActivations = {"gelu", "relu",
                                                           "tanh"};

static ast::ActivationKind activationKind(std::string_view name) {
  if (name == "relu")
    return ast::ActivationKind::ReLU;
  if (name == "tanh")
    return ast::ActivationKind::Tanh;
  return ast::ActivationKind::GELU;
}

bool Sema::activationArg(const Bound &b, std::string_view name,
                         ast::ActivationKind &out) {
  auto it = b.find(name);
  if (it == b.end())
    return true;
  auto v = choice(it->second, "activation", kActivations);
  if (v)
    out = activationKind(*v);
  return v.has_value();
}

// --- Top level ------------------------------------------------------------------

void Sema::let(const Stmt &s) {
  const std::string &name = s.head->text;
  if (name == "pi" || name == "true" || name == "false") {
    diags_.error(s.head->loc, fmt::format("'{}' is built in and cannot be "
                                          "redefined",
                                          name));
    return;
  }
  if (auto it = constants_.find(name); it != constants_.end()) {
    diags_.error(s.head->loc, fmt::format("constant '{}' is already defined",
                                          name));
    diags_.note(it->second.loc, "defined here");
    return;
  }
  if (!noBody(s))
    return;
  std::optional<double> value;
  if (auto it = overrides_.find(name); it != overrides_.end())
    value = it->second; // -D NAME=VALUE wins over the file
  else
    value = eval(s.operands.front());
  constants_.emplace(name, Constant{value, s.head->loc});
}

void Sema::input(const Stmt &s, ast::Model &m) {
  const Expr *value = single(s, "input tokens(vocab: 256, length: 1024)");
  if (!value)
    return;
  auto kind = choice(*value, "input kind", {"tokens", "features", "token_pairs"},
                     true);
  if (!kind)
    return;
  const Expr &call = *value;
  m.input.loc = call->loc;
  if (*kind == "features") {
    m.input.kind = ast::InputKind::Features;
    auto b = bind(call, "features", {{"channels", true}, {"length", true}});
    if (b) {
      intArg(*b, "channels", m.input.channels, 1, kMaxWidth);
      intArg(*b, "length", m.input.length, 1, kMaxLength);
    }
    return;
  }
  m.input.kind = *kind == "tokens" ? ast::InputKind::Tokens
                                   : ast::InputKind::TokenPairs;
  auto b = bind(call, *kind, {{"vocab", true}, {"length", true}});
  if (b) {
    intArg(*b, "vocab", m.input.vocab, 1, kMaxVocab);
    intArg(*b, "length", m.input.length, 1, kMaxLength);
  }
}

void Sema::encoder(const Stmt &s, ast::Model &m) {
  const Expr *value = single(s, "encoder embedding(128)");
  if (!value)
    return;
  auto kind = choice(*value, "encoder", {"embedding", "linear"}, true);
  if (!kind)
    return;
  m.encoder.kind = *kind == "embedding" ? ast::EncoderKind::Embedding
                                        : ast::EncoderKind::Linear;
  m.encoder.loc = (*value)->loc;
  if (auto b = bind(*value, *kind, {{"width", true}}))
    intArg(*b, "width", m.encoder.width, 1, kMaxWidth);
}

static const std::vector<std::string_view> kLayers = {
    "lru", "glru", "linear", "glu", "gelu", "relu", "tanh", "mlp", "dropout"};

std::optional<ast::Layer> Sema::layer(const Stmt &s) {
  const Expr &call = s.head;
  const std::string &kind = call->text;
  if (std::find(kLayers.begin(), kLayers.end(), kind) == kLayers.end()) {
    std::vector<std::string_view> words = kLayers;
    words.push_back("norm");
    unknown(call, "layer", words);
    return std::nullopt;
  }
  if (!callOnly(s))
    return std::nullopt;
  ast::Layer layer;
  layer.loc = call->loc;
  bool ok = true;

  if (kind == "lru") {
    auto b = bind(call, "lru",
                  {{"state", true}, {"r_min", false}, {"r_max", false},
                   {"max_phase", false}, {"bidirectional", false},
                   {"gamma_norm", false}});
    if (!b)
      return std::nullopt;
    ast::LRULayer l;
    ok &= ringArgs(*b, call->loc, l.state, l.rMin, l.rMax, l.maxPhase);
    ok &= boolArg(*b, "bidirectional", l.bidirectional);
    ok &= boolArg(*b, "gamma_norm", l.gammaNorm);
    layer.kind = l;
  } else if (kind == "glru") {
    auto b = bind(call, "glru",
                  {{"state", true}, {"form", false}, {"r_min", false},
                   {"r_max", false}, {"max_phase", false}});
    if (!b)
      return std::nullopt;
    ast::GLRULayer l;
    ok &= ringArgs(*b, call->loc, l.state, l.rMin, l.rMax, l.maxPhase);
    if (auto it = b->find("form"); it != b->end()) {
      auto form = choice(it->second, "glru form",
                         {"plain", "stable", "normalized"});
      if (form)
        l.form = *form == "plain"    ? ast::GLRUForm::Plain
                 : *form == "stable" ? ast::GLRUForm::Stable
                                     : ast::GLRUForm::Normalized;
      ok &= form.has_value();
    }
    layer.kind = l;
  } else if (kind == "linear") {
    auto b = bind(call, "linear", {{"width", true}, {"bias", false}});
    if (!b)
      return std::nullopt;
    ast::LinearLayer l;
    ok &= intArg(*b, "width", l.width, 1, kMaxWidth);
    ok &= boolArg(*b, "bias", l.bias);
    layer.kind = l;
  } else if (kind == "glu") {
    auto b = bind(call, "glu", {{"variant", false}});
    if (!b)
      return std::nullopt;
    ast::GLULayer l;
    if (auto it = b->find("variant"); it != b->end()) {
      auto variant = choice(it->second, "glu variant", {"full", "half"});
      if (variant)
        l.variant = *variant == "full" ? ast::GLUVariant::Full
                                       : ast::GLUVariant::Half;
      ok &= variant.has_value();
    }
    layer.kind = l;
  } else if (kind == "gelu") {
    auto b = bind(call, "gelu", {{"approximate", false}});
    if (!b)
      return std::nullopt;
    ast::ActivationLayer l;
    ok &= boolArg(*b, "approximate", l.approximate);
    layer.kind = l;
  } else if (kind == "relu" || kind == "tanh") {
    if (!bind(call, kind, {}))
      return std::nullopt;
    ast::ActivationLayer l;
    l.kind = activationKind(kind);
    layer.kind = l;
  } else if (kind == "mlp") {
    auto b = bind(call, "mlp", {{"hidden", true}, {"activation", false}});
    if (!b)
      return std::nullopt;
    ast::MLPLayer l;
    ok &= intArg(*b, "hidden", l.hidden, 1, kMaxWidth);
    ok &= activationArg(*b, "activation", l.activation);
    layer.kind = l;
  } else { // dropout
    auto b = bind(call, "dropout", {{"rate", true}});
    if (!b)
      return std::nullopt;
    ast::DropoutLayer l;
    ok &= realArg(*b, "rate", l.rate, 0, 1, false, true);
    layer.kind = l;
  }
  if (!ok)
    return std::nullopt;
  return layer;
}

void Sema::block(const Stmt &s, ast::Model &m) {
  ast::Block b;
  b.loc = s.head->loc;
  if (s.head->hasArgs) {
    diags_.error(s.head->loc, "write 'block x6 { ... }' to repeat a block");
    return;
  }
  if (s.operands.size() > 1) {
    diags_.error(s.operands[1]->loc, "unexpected value after the repeat count");
    return;
  }
  if (!s.operands.empty()) {
    const Expr &count = s.operands[0];
    bool digits = count->kind == ExprKind::Name && !count->hasArgs &&
                  count->text.size() > 1 && count->text[0] == 'x' &&
                  count->text.find_first_not_of("0123456789", 1) ==
                      std::string::npos;
    if (digits) {
      const std::string number = count->text.substr(1);
      if (number.size() > 4 || std::stoll(number) < 1 ||
          std::stoll(number) > kMaxRepeat) {
        diags_.error(count->loc, fmt::format("the repeat count must be in "
                                             "[1, {}]",
                                             kMaxRepeat));
        return;
      }
      b.repeat = std::stoll(number);
    } else if (count->kind == ExprKind::Name && count->text == "x" &&
               count->hasArgs && count->args.size() == 1 &&
               count->args[0].name.empty()) {
      auto r = integer(count->args[0].value, "the repeat count", 1, kMaxRepeat);
      if (!r)
        return;
      b.repeat = *r;
    } else {
      diags_.error(count->loc, "expected a repeat count such as 'x6' or "
                               "'x(DEPTH)'");
      return;
    }
  }
  if (!s.hasBody) {
    diags_.error(s.head->loc, "a block needs a '{ ... }' body of layers");
    return;
  }

  bool normSeen = false;
  for (const Stmt &inner : s.body) {
    if (inner.isLet) {
      diags_.error(inner.head->loc, "constants are defined at the top level");
      continue;
    }
    if (inner.head->text == "norm") {
      if (normSeen) {
        diags_.error(inner.head->loc, "a block has at most one 'norm'");
        continue;
      }
      normSeen = true;
      if (!b.layers.empty()) {
        diags_.error(inner.head->loc,
                     "'norm' must come before the block's layers (it "
                     "normalises the block input)");
        continue;
      }
      const Expr *value = single(inner, "norm batch");
      if (!value)
        continue;
      auto kind = choice(*value, "norm", {"batch", "layer", "none"});
      if (!kind)
        continue;
      b.norm = *kind == "batch"   ? ast::NormKind::Batch
               : *kind == "layer" ? ast::NormKind::Layer
                                  : ast::NormKind::None;
      b.normLoc = (*value)->loc;
      continue;
    }
    if (auto l = layer(inner))
      b.layers.push_back(std::move(*l));
  }
  if (s.body.empty()) {
    diags_.error(s.head->loc, "a block needs at least one layer");
    return;
  }
  m.blocks.push_back(std::move(b));
}

void Sema::pool(const Stmt &s, ast::Model &m) {
  const Expr *value = single(s, "pool mean");
  if (!value)
    return;
  auto kind = choice(*value, "pooling", {"mean", "last", "none"});
  if (!kind)
    return;
  m.pool.kind = *kind == "mean"   ? ast::PoolKind::Mean
                : *kind == "last" ? ast::PoolKind::Last
                                  : ast::PoolKind::None;
  m.pool.loc = (*value)->loc;
}

void Sema::head(const Stmt &s, ast::Model &m) {
  const Expr *value = single(s, "head linear(10)");
  if (!value)
    return;
  auto kind = choice(*value, "head", {"linear", "retrieval"}, true);
  if (!kind)
    return;
  m.head.loc = (*value)->loc;
  if (*kind == "linear") {
    m.head.kind = ast::HeadKind::Linear;
    if (auto b = bind(*value, "linear", {{"classes", true}}))
      intArg(*b, "classes", m.head.classes, 1, kMaxVocab);
    return;
  }
  m.head.kind = ast::HeadKind::Retrieval;
  auto b = bind(*value, "retrieval",
                {{"classes", true}, {"hidden", true}, {"activation", false}});
  if (!b)
    return;
  intArg(*b, "classes", m.head.classes, 1, kMaxVocab);
  intArg(*b, "hidden", m.head.hidden, 1, kMaxWidth);
  activationArg(*b, "activation", m.head.activation);
}

void Sema::loss(const Stmt &s, ast::Model &m) {
  const Expr *value = single(s, "loss cross_entropy");
  if (!value)
    return;
  auto kind =
      choice(*value, "loss", {"cross_entropy", "mse", "l1", "huber"}, true);
  if (!kind)
    return;
  m.loss.kind = *kind == "mse"     ? ast::LossKind::MeanSquaredError
                : *kind == "l1"    ? ast::LossKind::MeanAbsoluteError
                : *kind == "huber" ? ast::LossKind::Huber
                                   : ast::LossKind::CrossEntropy;
  m.loss.loc = (*value)->loc;
  if (m.loss.kind == ast::LossKind::Huber) {
    if (auto b = bind(*value, "huber", {{"delta", false}}))
      realArg(*b, "delta", m.loss.huberDelta, 0, 1e6, /*minOpen=*/true);
    return;
  }
  if (m.loss.kind != ast::LossKind::CrossEntropy) {
    if ((*value)->hasArgs)
      bind(*value, *kind, {});
    return;
  }
  auto b = bind(*value, "cross_entropy",
                {{"label_smoothing", false}, {"class_weights", false}});
  if (!b)
    return;
  realArg(*b, "label_smoothing", m.loss.labelSmoothing, 0, 1, false, true);
  if (realListArg(*b, "class_weights", m.loss.classWeights, 0, 1e6))
    m.loss.classWeightsLoc = argLoc(*b, "class_weights", m.loss.loc);
}

void Sema::model(const Stmt &s) {
  if (modelSeen_) {
    diags_.error(s.head->loc, "a file describes one model");
    diags_.note(modelLoc_, "the model is defined here");
    return;
  }
  modelSeen_ = true;
  modelLoc_ = s.head->loc;
  if (s.head->hasArgs || s.operands.size() != 1 ||
      s.operands[0]->kind != ExprKind::Name || s.operands[0]->hasArgs) {
    diags_.error(s.head->loc, "expected 'model NAME { ... }'");
    return;
  }
  if (!s.hasBody) {
    diags_.error(s.operands[0]->loc, "the model needs a '{ ... }' body");
    return;
  }
  ast::Model m;
  m.name = s.operands[0]->text;
  m.file = source_.path;
  m.loc = s.head->loc;
  m.pool.loc = m.loc;
  SeenOnce seen;
  const unsigned errorsBefore = diags_.errorCount();
  bool hasInput = false, hasEncoder = false, hasHead = false, hasLoss = false;
  static const std::vector<std::string_view> sections = {
      "input", "encoder", "block", "pool", "head", "loss"};
  for (const Stmt &inner : s.body) {
    if (diags_.tooManyErrors())
      return;
    const Expr &word = inner.head;
    if (inner.isLet) {
      diags_.error(word->loc, "constants are defined at the top level");
      continue;
    }
    const std::string &name = word->text;
    if (name == "block") {
      block(inner, m);
      continue;
    }
    if (std::find(sections.begin(), sections.end(), name) == sections.end()) {
      if (std::find(kLayers.begin(), kLayers.end(), name) != kLayers.end() ||
          name == "norm")
        diags_.error(word->loc, fmt::format("'{}' belongs inside a "
                                            "'block {{ ... }}'",
                                            name));
      else
        unknown(word, "model statement", sections);
      continue;
    }
    if (!seen.first(diags_, name, word->loc))
      continue;
    if (name == "input") {
      hasInput = true;
      inputLoc_ = word->loc;
      input(inner, m);
    } else if (name == "encoder") {
      hasEncoder = true;
      encoder(inner, m);
    } else if (name == "pool") {
      poolLoc_ = word->loc;
      pool(inner, m);
    } else if (name == "head") {
      hasHead = true;
      headLoc_ = word->loc;
      head(inner, m);
    } else {
      hasLoss = true;
      lossLoc_ = word->loc;
      loss(inner, m);
    }
  }
  auto missing = [&](bool has, std::string_view what, std::string_view example) {
    if (!has)
      diags_.error(m.loc, fmt::format("model '{}' has no {}; add e.g. '{}'",
                                      m.name, what, example));
    return has;
  };
  // A misspelt section was reported already; "missing" would repeat it.
  if (diags_.errorCount() != errorsBefore) {
    model_ = std::move(m);
    return;
  }
  bool complete = missing(hasInput, "input", "input tokens(vocab: 256, length: 1024)");
  complete &= missing(hasEncoder, "encoder", "encoder embedding(128)");
  complete &= missing(hasHead, "head", "head linear(10)");
  complete &= missing(hasLoss, "loss", "loss cross_entropy");
  if (m.blocks.empty() && complete)
    diags_.warning(m.loc, "the model has no blocks; it is a linear model");
  if (complete)
    checkModel(m);
  model_ = std::move(m);
}

/// Checks between sections of a model whose sections each parsed.
void Sema::checkModel(const ast::Model &m) {
  if (diags_.hasErrors())
    return; // sizes may be missing; each section has reported its problem
  const bool tokens = m.input.kind != ast::InputKind::Features;
  if (m.encoder.kind == ast::EncoderKind::Embedding && !tokens) {
    diags_.error(m.encoder.loc, "an embedding encoder needs token input; use "
                                "'encoder linear(...)' for features");
    diags_.note(m.input.loc, "the input is declared here");
  }
  if (m.encoder.kind == ast::EncoderKind::Linear && tokens) {
    diags_.error(m.encoder.loc, "a linear encoder needs feature input; use "
                                "'encoder embedding(...)' for tokens");
    diags_.note(m.input.loc, "the input is declared here");
  }
  // Blocks are residual: every block must end at the width it started with.
  const int64_t width = m.encoder.width;
  for (const ast::Block &b : m.blocks) {
    int64_t w = width;
    ast::Loc changed = b.loc;
    for (const ast::Layer &l : b.layers)
      if (auto *lin = std::get_if<ast::LinearLayer>(&l.kind)) {
        w = lin->width;
        changed = l.loc;
      }
    if (w != width) {
      diags_.error(b.loc, fmt::format("the block ends with width {} but starts "
                                      "with width {}; the residual x + f(x) "
                                      "needs them equal",
                                      w, width));
      diags_.note(changed, fmt::format("the width becomes {} here", w));
    }
  }
  const bool pairs = m.input.kind == ast::InputKind::TokenPairs;
  if (pairs && m.head.kind != ast::HeadKind::Retrieval) {
    diags_.error(m.head.loc, "a token_pairs model needs a retrieval head to "
                             "combine its two towers");
    diags_.note(m.input.loc, "the input is declared here");
  }
  if (!pairs && m.head.kind == ast::HeadKind::Retrieval) {
    diags_.error(m.head.loc, "a retrieval head needs 'input token_pairs(...)'");
    diags_.note(m.input.loc, "the input is declared here");
  }
  if (pairs && m.pool.kind == ast::PoolKind::None)
    diags_.error(m.pool.loc, "a two-tower model must pool each tower; use "
                             "'pool mean' or 'pool last'");
  if (m.loss.kind == ast::LossKind::CrossEntropy && m.head.classes < 2)
    diags_.error(m.head.loc, fmt::format("cross_entropy needs at least 2 "
                                         "classes, the head has {}",
                                         m.head.classes));
  const auto &weights = m.loss.classWeights;
  if (!weights.empty() && int64_t(weights.size()) != m.head.classes) {
    diags_.error(m.loss.classWeightsLoc,
                 fmt::format("class_weights has {} value{}, one a class: the "
                             "head has {} classes",
                             weights.size(), weights.size() == 1 ? "" : "s",
                             m.head.classes));
    diags_.note(m.head.loc, "the head is declared here");
  } else if (!weights.empty() && std::all_of(weights.begin(), weights.end(),
                                             [](double w) { return w == 0; })) {
    diags_.error(m.loss.classWeightsLoc,
                 "class_weights are all 0: no example would count");
  }
}

// --- Training -------------------------------------------------------------------

void Sema::train(const Stmt &s) {
  if (trainSeen_) {
    diags_.error(s.head->loc, "a file has at most one 'train' section");
    diags_.note(trainLoc_, "the first is here");
    return;
  }
  trainSeen_ = true;
  trainLoc_ = s.head->loc;
  if (s.head->hasArgs || !s.operands.empty() || !s.hasBody) {
    diags_.error(s.head->loc, "expected 'train { ... }'");
    return;
  }
  ast::Train t;
  t.loc = s.head->loc;
  t.schedule.loc = t.loc;
  SeenOnce seen;
  const unsigned errorsBefore = diags_.errorCount();
  bool dropoutSeedSet = false;
  ast::Loc stepsLoc, epochsLoc;
  static const std::vector<std::string_view> settings = {
      "batch", "accumulate",          "steps",      "epochs",
      "adamw", "recurrent_lr_factor", "schedule",   "clip",
      "seed",  "dropout_seed",        "eval_every", "data"};
  for (const Stmt &inner : s.body) {
    if (diags_.tooManyErrors())
      return;
    const Expr &word = inner.head;
    const std::string &name = word->text;
    if (inner.isLet) {
      diags_.error(word->loc, "constants are defined at the top level");
      continue;
    }
    if (std::find(settings.begin(), settings.end(), name) == settings.end()) {
      unknown(word, "train setting", settings);
      continue;
    }
    if (!seen.first(diags_, name, word->loc))
      continue;

    if (name == "adamw") {
      if (!callOnly(inner))
        continue;
      auto b = bind(word, "adamw",
                    {{"lr", false}, {"beta1", false}, {"beta2", false},
                     {"eps", false}, {"weight_decay", false}});
      if (!b)
        continue;
      realArg(*b, "lr", t.lr, 0, 10, true);
      realArg(*b, "beta1", t.beta1, 0, 1, false, true);
      realArg(*b, "beta2", t.beta2, 0, 1, false, true);
      realArg(*b, "eps", t.eps, 0, 1, true);
      realArg(*b, "weight_decay", t.weightDecay, 0, HUGE_VAL);
      continue;
    }

    const Expr *value = single(inner, name == "schedule" ? "schedule constant"
                                      : name == "data"   ? "data listops"
                                                         : fmt::format("{} 1", name));
    if (!value)
      continue;
    if (name == "batch") {
      if (auto v = integer(*value, "batch", 1, kMaxLength))
        t.batch = *v;
    } else if (name == "accumulate") {
      t.accumulateLoc = word->loc;
      if (auto v = integer(*value, "accumulate", 1, kMaxLength))
        t.accumulate = *v;
    } else if (name == "steps") {
      stepsLoc = word->loc;
      t.steps = integer(*value, "steps", 1, kMaxCount);
    } else if (name == "epochs") {
      epochsLoc = word->loc;
      t.epochs = integer(*value, "epochs", 1, kMaxCount);
    } else if (name == "recurrent_lr_factor") {
      if (auto v = real(*value, "recurrent_lr_factor", 0, HUGE_VAL, true))
        t.recurrentLrFactor = *v;
    } else if (name == "clip") {
      t.clip = real(*value, "clip", 0, HUGE_VAL, true);
    } else if (name == "seed") {
      if (auto v = integer(*value, "seed", 0, kMaxSeed))
        t.seed = uint64_t(*v);
    } else if (name == "dropout_seed") {
      dropoutSeedSet = true;
      if (auto v = integer(*value, "dropout_seed", 0, kMaxSeed))
        t.dropoutSeed = uint64_t(*v);
    } else if (name == "eval_every") {
      if (auto v = integer(*value, "eval_every", 0, kMaxCount))
        t.evalEvery = *v;
    } else if (name == "schedule") {
      auto kind = choice(*value, "schedule", {"constant", "warmup_cosine"},
                         true);
      if (!kind)
        continue;
      t.schedule.loc = (*value)->loc;
      if (*kind == "constant") {
        t.schedule.kind = ast::ScheduleKind::Constant;
        bind(*value, "constant", {});
        continue;
      }
      t.schedule.kind = ast::ScheduleKind::WarmupCosine;
      if (auto b = bind(*value, "warmup_cosine",
                        {{"warmup", false}, {"floor", false}})) {
        realArg(*b, "warmup", t.schedule.warmup, 0, 1, false, true);
        realArg(*b, "floor", t.schedule.floor, 0, HUGE_VAL);
      }
    } else { // data
      std::vector<std::string_view> names;
      for (const TaskInfo &task : allTasks())
        names.push_back(task.name);
      auto task = choice(*value, "task", names, true);
      if (!task)
        continue;
      ast::DataSource data;
      data.task = *task;
      data.loc = (*value)->loc;
      if (auto b = bind(*value, *task, {{"path", false}}))
        if (auto it = b->find("path"); it != b->end())
          if (auto path = string(it->second, "the data path"))
            data.path = *path;
      t.data = data;
    }
  }
  if (stepsLoc.line && epochsLoc.line) {
    diags_.error(epochsLoc, "train gives both 'steps' and 'epochs'; keep one");
    diags_.note(stepsLoc, "'steps' is given here");
  } else if (!stepsLoc.line && !epochsLoc.line &&
             diags_.errorCount() == errorsBefore) {
    diags_.error(t.loc, "train needs a length: add 'steps N' or 'epochs N'");
  }
  if (t.batch % t.accumulate != 0)
    diags_.error(t.accumulateLoc,
                 fmt::format("accumulate {} does not split a batch of {} "
                             "into equal micro-batches",
                             t.accumulate, t.batch));
  if (!dropoutSeedSet)
    t.dropoutSeed = t.seed;
  if (t.schedule.kind == ast::ScheduleKind::WarmupCosine &&
      t.schedule.floor > t.lr)
    diags_.error(t.schedule.loc,
                 fmt::format("the schedule floor ({}) is above the learning "
                             "rate ({})",
                             t.schedule.floor, t.lr));
  train_ = std::move(t);
}

/// Checks that the training set-up fits the model it trains.
void Sema::checkTrain(const ast::Model &m, const ast::Train &t) {
  if (t.steps && t.evalEvery > *t.steps)
    diags_.warning(t.loc, fmt::format("eval_every ({}) is larger than steps "
                                      "({}); evaluation runs only at the end",
                                      t.evalEvery, *t.steps));
  if (!t.data)
    return;
  const TaskInfo *task = findTask(t.data->task);
  if (!task)
    return;
  auto mismatch = [&](const std::string &message) {
    diags_.error(t.data->loc, message);
    diags_.note(m.input.loc, "the model input is declared here");
  };
  if (task->fromFiles) // lru-train checks the model against the files
    return;
  auto kindName = [](ast::InputKind k) {
    return k == ast::InputKind::Tokens       ? "tokens"
           : k == ast::InputKind::Features   ? "features"
                                             : "token_pairs";
  };
  if (m.input.kind != task->input) {
    mismatch(fmt::format("task '{}' provides {} but the model reads {}",
                         task->name, kindName(task->input),
                         kindName(m.input.kind)));
    return;
  }
  if (task->input == ast::InputKind::Features) {
    if (m.input.channels != task->channels)
      mismatch(fmt::format("task '{}' has {} channel{} per step but the model "
                           "reads {}",
                           task->name, task->channels,
                           task->channels == 1 ? "" : "s", m.input.channels));
  } else if (m.input.vocab < task->vocab) {
    mismatch(fmt::format("task '{}' uses {} token values but the model's "
                         "vocabulary has {}",
                         task->name, task->vocab, m.input.vocab));
  }
  if (task->exactLength && m.input.length != task->length)
    mismatch(fmt::format("task '{}' has sequences of exactly {} steps but the "
                         "model reads {}",
                         task->name, task->length, m.input.length));
  if (!task->exactLength && m.input.length < task->length)
    mismatch(fmt::format("task '{}' has sequences of up to {} steps but the "
                         "model reads at most {}",
                         task->name, task->length, m.input.length));
  if (m.head.classes != task->classes) {
    diags_.error(t.data->loc, fmt::format("task '{}' has {} classes but the "
                                          "head predicts {}",
                                          task->name, task->classes,
                                          m.head.classes));
    diags_.note(m.head.loc, "the head is declared here");
  }
  checkClassification(m, t, task->name);
}

/// Every task is classification with one label per sequence.
void Sema::checkClassification(const ast::Model &m, const ast::Train &t,
                               std::string_view task) {
  if (m.loss.kind != ast::LossKind::CrossEntropy) {
    diags_.error(t.data->loc, fmt::format("task '{}' is a classification task; "
                                          "use 'loss cross_entropy'",
                                          task));
    diags_.note(m.loss.loc, "the loss is declared here");
  }
  if (m.pool.kind == ast::PoolKind::None) {
    diags_.error(t.data->loc, fmt::format("task '{}' has one label per "
                                          "sequence; pool the sequence with "
                                          "'pool mean' or 'pool last'",
                                          task));
    diags_.note(m.pool.loc, "the pooling is declared here");
  }
}

std::optional<ast::Model> Sema::run(const std::vector<Stmt> &statements) {
  for (const auto &[name, value] : overrides_) {
    bool defined = false;
    for (const Stmt &s : statements)
      defined |= s.isLet && s.head->text == name;
    if (!defined) {
      std::vector<std::string_view> names;
      for (const Stmt &s : statements)
        if (s.isLet)
          names.push_back(s.head->text);
      std::string near = nearestWord(name, names);
      diags_.error({}, near.empty()
                           ? fmt::format("-D {}: the file defines no constant "
                                         "'{}'",
                                         name, name)
                           : fmt::format("-D {}: the file defines no constant "
                                         "'{}'; did you mean '{}'?",
                                         name, name, near));
    }
  }

  static const std::vector<std::string_view> topLevel = {"let", "model",
                                                         "train"};
  for (const Stmt &s : statements) {
    if (diags_.tooManyErrors())
      break;
    if (s.isLet) {
      let(s);
    } else if (s.head->text == "model") {
      model(s);
    } else if (s.head->text == "train") {
      if (!ignoreTrain_)
        train(s);
    } else {
      unknown(s.head, "top-level statement", topLevel);
    }
  }
  if (!modelSeen_ && !diags_.hasErrors())
    diags_.error({1, 1}, "the file defines no model; expected "
                         "'model NAME { ... }'");
  if (model_ && train_ && !diags_.hasErrors()) {
    model_->train = std::move(train_);
    checkTrain(*model_, *model_->train);
  }
  if (diags_.hasErrors())
    return std::nullopt;
  return std::move(model_);
}

} // namespace

std::optional<ast::Model> parseModel(const SourceFile &source,
                                     const FrontendOptions &options,
                                     DiagnosticEngine &diags) {
  std::vector<syntax::Stmt> statements = syntax::parseStatements(source, diags);
  if (diags.tooManyErrors())
    return std::nullopt;
  return Sema(source, options, diags).run(statements);
}

} // namespace lruc
