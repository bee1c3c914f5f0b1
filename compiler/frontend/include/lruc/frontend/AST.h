//===- AST.h - The checked model of a .lru file ----------------*- C++ -*-===//
//
// The typed AST that the front end hands to MLIRGen. Every value is already
// evaluated (constants substituted, expressions folded) and checked; every
// node carries the source position it came from so later stages can point
// back into the model file. This header knows nothing of MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_FRONTEND_AST_H
#define LRUC_FRONTEND_AST_H

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lruc::ast {

/// A 1-based line and column in the model file.
struct Loc {
  unsigned line = 0;
  unsigned col = 0;
};

// --- Input -------------------------------------------------------------------

enum class InputKind {
  Tokens,     ///< integer tokens in [0, vocab), one sequence per example
  Features,   ///< real vectors of `channels` features per step
  TokenPairs, ///< two token sequences per example (two-tower retrieval)
};

struct Input {
  InputKind kind = InputKind::Tokens;
  int64_t vocab = 0;    ///< Tokens, TokenPairs
  int64_t channels = 0; ///< Features
  int64_t length = 0;   ///< maximum sequence length (padded length)
  Loc loc;
};

// --- Encoder -----------------------------------------------------------------

enum class EncoderKind { Embedding, Linear };

struct Encoder {
  EncoderKind kind = EncoderKind::Embedding;
  int64_t width = 0; ///< the model width H
  Loc loc;
};

// --- Layers inside a residual block -------------------------------------------

/// The LRU of Orvieto et al. 2023.
struct LRULayer {
  int64_t state = 0; ///< N, complex states
  double rMin = 0.0;
  double rMax = 1.0;
  double maxPhase = 6.283185307179586;
  bool bidirectional = false;
  bool gammaNorm = true; ///< multiply B u by exp(gamma_log)
};

/// The generalised LRU with an input-dependent decay:
///   h_t = exp(a_t + i*exp(theta_log)) * h_{t-1} + (B u_t),
/// a_t = U u_t - exp(nu_log) (plain) or -softplus(exp(nu_log) - U u_t)
/// (stable); the normalised form divides h_t by the same recurrence driven by
/// ones. See docs/language.md.
enum class GLRUForm { Plain, Stable, Normalized };

struct GLRULayer {
  int64_t state = 0;
  GLRUForm form = GLRUForm::Plain;
  double rMin = 0.0;
  double rMax = 1.0;
  double maxPhase = 6.283185307179586;
};

struct LinearLayer {
  int64_t width = 0; ///< output features
  bool bias = true;
};

enum class GLUVariant {
  Full, ///< (W1 x + b1) * sigmoid(W2 x + b2)
  Half, ///< x * sigmoid(W x + b)
};

struct GLULayer {
  GLUVariant variant = GLUVariant::Full;
};

enum class ActivationKind { GELU, ReLU, Tanh };

struct ActivationLayer {
  ActivationKind kind = ActivationKind::GELU;
  bool approximate = false; ///< GELU only: tanh approximation instead of erf
};

/// Linear(H -> hidden), activation, Linear(hidden -> H).
struct MLPLayer {
  int64_t hidden = 0;
  ActivationKind activation = ActivationKind::GELU;
};

struct DropoutLayer {
  double rate = 0.0; ///< in [0, 1)
};

using LayerKind = std::variant<LRULayer, GLRULayer, LinearLayer, GLULayer,
                               ActivationLayer, MLPLayer, DropoutLayer>;

struct Layer {
  LayerKind kind;
  Loc loc;
};

// --- Blocks ------------------------------------------------------------------

enum class NormKind { None, Batch, Layer };

/// `block xR { ... }`: R residual blocks x + f(x) with the same layers.
struct Block {
  int64_t repeat = 1;
  NormKind norm = NormKind::None; ///< pre-norm applied to the block input
  Loc normLoc;
  std::vector<Layer> layers;
  Loc loc;
};

// --- Pooling, head, loss -----------------------------------------------------

enum class PoolKind {
  Mean, ///< mean over real (unpadded) steps
  Last, ///< the last real step
  None, ///< one output per step
};

struct Pool {
  PoolKind kind = PoolKind::Mean;
  Loc loc;
};

enum class HeadKind {
  Linear,    ///< linear(classes)
  Retrieval, ///< [a, b, a*b, a-b] -> Linear(hidden) -> activation -> Linear(classes)
};

struct Head {
  HeadKind kind = HeadKind::Linear;
  int64_t classes = 0;
  int64_t hidden = 0; ///< Retrieval only
  ActivationKind activation = ActivationKind::GELU; ///< Retrieval only
  Loc loc;
};

/// Cross entropy against labels; the others are regression losses against
/// real targets (a NaN target is a value not scored).
enum class LossKind {
  CrossEntropy,
  MeanSquaredError,
  MeanAbsoluteError,
  Huber
};

struct Loss {
  LossKind kind = LossKind::CrossEntropy;
  /// Huber: squared below `huberDelta`, linear above (PyTorch's HuberLoss).
  double huberDelta = 1;
  /// Cross entropy against (1 - s) onehot(label) + s / classes, in [0, 1).
  double labelSmoothing = 0;
  /// A weight a class (empty: all 1): the loss is sum w[label] loss / sum
  /// w[label], as PyTorch's CrossEntropyLoss(weight=...).
  std::vector<double> classWeights;
  Loc classWeightsLoc;
  Loc loc;
};

// --- Training set-up ---------------------------------------------------------

enum class ScheduleKind {
  Constant,     ///< lr throughout
  WarmupCosine, ///< linear warmup from `floor`, then cosine decay to `floor`
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::WarmupCosine;
  double warmup = 0.1; ///< fraction of the total steps
  double floor = 1e-7;
  Loc loc;
};

/// Where the training data comes from. `task` is one of the names in
/// Tasks.h (listops, text, retrieval, cifar, pathfinder, pathx,
/// fashion_mnist); `path` is empty for the default location.
struct DataSource {
  std::string task;
  std::string path;
  Loc loc;
};

struct Train {
  int64_t batch = 32;
  /// Micro-batches a step: the batch in this many calls, their gradients
  /// summed before one update (lru-train --accumulate).
  int64_t accumulate = 1;
  Loc accumulateLoc;
  std::optional<int64_t> steps;  ///< exactly one of steps/epochs is set
  std::optional<int64_t> epochs;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.05;
  double recurrentLrFactor = 1.0; ///< nu, theta, gamma, B: lr * factor, no decay
  Schedule schedule;
  std::optional<double> clip; ///< global gradient-norm clipping
  uint64_t seed = 0;          ///< parameter init and data order
  uint64_t dropoutSeed = 0;   ///< defaults to `seed`
  int64_t evalEvery = 0;      ///< 0: once per epoch
  std::optional<DataSource> data;
  Loc loc;
};

// --- The model ---------------------------------------------------------------

struct Model {
  std::string name;
  std::string file; ///< the path the model was read from, for locations
  Input input;
  Encoder encoder;
  std::vector<Block> blocks;
  Pool pool;
  Head head;
  Loss loss;
  std::optional<Train> train;
  Loc loc;
};

} // namespace lruc::ast

#endif // LRUC_FRONTEND_AST_H
