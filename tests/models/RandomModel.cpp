//===- RandomModel.cpp - Random valid model files for differential tests --===//

#include "RandomModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace lruc::testing {

namespace {

/// splitmix64: the same numbers from a seed on every platform (the
/// standard library's distributions are not specified bit for bit).
class Draw {
public:
  explicit Draw(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// An integer in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    return lo + int64_t(next() % uint64_t(hi - lo + 1));
  }
  /// True with probability `p`.
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }
  /// One of `choices`.
  template <typename T> const T &pick(const std::vector<T> &choices) {
    return choices[size_t(between(0, int64_t(choices.size()) - 1))];
  }
  /// A value in [lo, hi] to two decimals.
  double decimal(double lo, double hi) {
    return double(between(std::llround(lo * 100), std::llround(hi * 100))) /
           100;
  }

private:
  uint64_t state_;
};

/// A ring's radii, r_min <= r_max and r_max > 0 (lruc refuses a ring of
/// radius 0).
std::pair<double, double> drawRing(Draw &draw) {
  double rMin = draw.decimal(0, 0.9);
  return {rMin, draw.decimal(std::max(rMin, 0.01), 0.99)};
}

/// A layer that keeps the width, or `linear` to another one (`width` follows).
std::string randomLayer(Draw &draw, int64_t &width, int64_t modelWidth,
                        int64_t maxState) {
  switch (draw.between(0, 10)) {
  case 0:
  case 1:
  case 2: {
    auto [rMin, rMax] = drawRing(draw);
    std::string args = fmt::format("state: {}", draw.between(1, maxState));
    if (draw.chance(0.6))
      args += fmt::format(", r_min: {}, r_max: {}", rMin, rMax);
    if (draw.chance(0.3))
      args += fmt::format(", max_phase: {}", draw.decimal(0.1, 6.28));
    if (draw.chance(0.35))
      args += ", bidirectional: true";
    if (draw.chance(0.25))
      args += ", gamma_norm: false";
    return fmt::format("lru({})", args);
  }
  case 3: {
    // Each draw in its own statement: the order in which a call's
    // arguments are evaluated is unspecified, and a seed must give the same
    // text with every compiler.
    auto [rMin, rMax] = drawRing(draw);
    std::string form = draw.pick<std::string>({"plain", "stable", "normalized"});
    int64_t state = draw.between(1, maxState);
    return fmt::format("glru(state: {}, form: {}, r_min: {}, r_max: {})",
                       state, form, rMin, rMax);
  }
  case 4: {
    // To another width, or back to the model's.
    width = draw.chance(0.5) && width != modelWidth ? modelWidth
                                                    : draw.between(1, 6);
    return draw.chance(0.3) ? fmt::format("linear(width: {}, bias: false)", width)
                            : fmt::format("linear({})", width);
  }
  case 5:
    return draw.chance(0.5) ? "glu" : "glu(variant: half)";
  case 6:
    return draw.chance(0.3) ? "gelu(approximate: true)" : "gelu";
  case 7:
    return draw.pick<std::string>({"relu", "tanh"});
  case 8: {
    std::string activation = draw.pick<std::string>({"gelu", "relu", "tanh"});
    int64_t hidden = draw.between(1, 6);
    return fmt::format("mlp(hidden: {}, activation: {})", hidden, activation);
  }
  default:
    return fmt::format("dropout({})", draw.decimal(0.05, 0.5));
  }
}

} // namespace

std::string randomModelSource(uint64_t seed, int64_t minLength) {
  Draw draw(seed);
  // Now and then a long sequence and many states: on the GPU, scans over
  // several tiles of steps and more than one block of channels; on the
  // CPU, sums in more than one chunk of rows and scans split by channels.
  bool large = draw.chance(0.08);
  int64_t length = large               ? draw.between(200, 300)
                   : draw.chance(0.15) ? draw.between(1, 2)
                                       : draw.between(3, 9);
  length = std::max(length, minLength);
  int64_t width = draw.between(1, 6);
  int64_t maxState = large ? 40 : 5;
  // Now and then a width of whole warps, which the CUDA kernels run by
  // columns: drawn apart from the rest, so that the other seeds keep their
  // models; not with a long sequence (the finite differences of such a
  // model on the interpreter take half a minute).
  Draw wide(seed ^ 0x5DEECE66Dull);
  if (wide.chance(0.12) && !large)
    width = wide.pick<int64_t>({32, 64});
  enum class Input { Tokens, Features, Pairs };
  Input input = draw.chance(0.15)  ? Input::Pairs
                : draw.chance(0.5) ? Input::Tokens
                                   : Input::Features;

  std::string text = fmt::format("# random model, seed {}\nmodel random_{} {{\n",
                                 seed, seed);
  int64_t vocab = draw.between(2, 20);
  switch (input) {
  case Input::Tokens:
    text += fmt::format("  input tokens(vocab: {}, length: {})\n", vocab, length);
    break;
  case Input::Pairs:
    text += fmt::format("  input token_pairs(vocab: {}, length: {})\n", vocab,
                        length);
    break;
  case Input::Features:
    text += fmt::format("  input features(channels: {}, length: {})\n",
                        draw.between(1, 3), length);
    break;
  }
  text += fmt::format("  encoder {}({})\n",
                      input == Input::Features ? "linear" : "embedding", width);

  for (int64_t b = 0, blocks = draw.between(1, 3); b < blocks; ++b) {
    std::string repeat = draw.chance(0.25) ? " x2" : "";
    text += fmt::format("  block{} {{\n", repeat);
    // No LayerNorm of one feature: its output is its bias alone (0 at
    // init), which sets a ReLU after it on its kink, where finite
    // differences say nothing.
    std::vector<std::string> norms = {"batch", "none"};
    if (width > 1)
      norms.push_back("layer");
    if (!draw.chance(0.1))
      text += fmt::format("    norm {}\n", draw.pick(norms));
    int64_t current = width;
    for (int64_t l = 0, layers = draw.between(1, 4); l < layers; ++l)
      text += "    " + randomLayer(draw, current, width, maxState) + "\n";
    if (current != width)
      text += fmt::format("    linear({})\n", width);
    text += "  }\n";
  }

  // Two towers must be pooled and end in the retrieval head.
  bool pooled = input == Input::Pairs || !draw.chance(0.3);
  text += fmt::format("  pool {}\n",
                      !pooled ? "none" : draw.chance(0.6) ? "mean" : "last");
  bool classify = draw.chance(0.6);
  int64_t classes = classify ? draw.between(2, 4) : draw.between(1, 3);
  if (input == Input::Pairs) {
    std::string activation = draw.pick<std::string>({"gelu", "relu", "tanh"});
    int64_t hidden = draw.between(1, 6);
    text += fmt::format(
        "  head retrieval(classes: {}, hidden: {}, activation: {})\n", classes,
        hidden, activation);
  } else
    text += fmt::format("  head linear({})\n", classes);

  if (classify) {
    std::vector<std::string> args;
    if (draw.chance(0.3)) {
      // Weights of at least 0, not all 0.
      std::string weights;
      for (int64_t k = 0; k < classes; ++k)
        weights += fmt::format("{}{}", k ? ", " : "",
                               k == 0 ? draw.decimal(0.1, 3) : draw.decimal(0, 3));
      args.push_back(fmt::format("class_weights: [{}]", weights));
    }
    if (draw.chance(0.3))
      args.push_back(fmt::format("label_smoothing: {}", draw.decimal(0.01, 0.5)));
    text += "  loss cross_entropy";
    if (!args.empty())
      text += fmt::format("({})", fmt::join(args, ", "));
    text += "\n";
  } else {
    switch (draw.between(0, 2)) {
    case 0:
      text += "  loss mse\n";
      break;
    case 1:
      text += "  loss l1\n";
      break;
    default:
      text += fmt::format("  loss huber(delta: {})\n", draw.decimal(0.05, 2));
    }
  }
  text += "}\n";

  // Most models train with settings of their own: AdamW's, the recurrent
  // parameters' factor (at most 1: the tests bound a first step by lr),
  // clipping small enough to act on these models' gradients.
  if (draw.chance(0.7)) {
    text += "train {\n  steps 10\n";
    double weightDecay = draw.chance(0.3) ? 0.0 : draw.decimal(0.01, 0.3);
    std::string eps = draw.pick<std::string>({"1e-8", "1e-6", "1e-4"});
    std::string beta2 = draw.pick<std::string>({"0.9", "0.99", "0.999", "0.9999"});
    double beta1 = draw.decimal(0.5, 0.95);
    text += fmt::format(
        "  adamw(lr: 0.001, beta1: {}, beta2: {}, eps: {}, weight_decay: {})\n",
        beta1, beta2, eps, weightDecay);
    if (draw.chance(0.5))
      text += fmt::format("  recurrent_lr_factor {}\n", draw.decimal(0.1, 1));
    if (draw.chance(0.5))
      text += fmt::format("  clip {}\n", draw.decimal(0.01, 2));
    text += "}\n";
  }
  return text;
}

std::vector<ModelCase> randomModelCases(unsigned count, uint64_t first,
                                        int64_t minLength) {
  std::vector<ModelCase> cases;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    ModelCase c;
    c.name = fmt::format("random_{}", seed);
    c.path = c.name + ".lru";
    c.source = randomModelSource(seed, minLength);
    c.train = true;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<ModelCase> searchedRandomModelCases(unsigned count,
                                                int64_t minLength) {
  uint64_t first = 1;
  if (const char *n = std::getenv("LRUC_RANDOM_MODELS"))
    count = unsigned(std::strtoul(n, nullptr, 10));
  if (const char *s = std::getenv("LRUC_RANDOM_MODEL_SEED"))
    first = std::strtoull(s, nullptr, 10);
  return randomModelCases(count, first, minLength);
}

} // namespace lruc::testing
