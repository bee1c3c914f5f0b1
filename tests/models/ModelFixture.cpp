//===- ModelFixture.cpp - Whole models on the reference interpreter -------===//

#include "ModelFixture.h"

#include "lruc/AutodiffPasses.h"
#include "lruc/MLIRGen.h"
#include "lruc/Transforms/Passes.h"
#include "lruc/frontend/Frontend.h"

#include "lru/LRUDialect.h"
#include "lru/LRUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace lruc::testing {

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The shape of `type` with the dynamic (batch) dim set to `batch`.
std::vector<int64_t> concreteShape(mlir::Type type, int64_t batch) {
  std::vector<int64_t> shape;
  for (int64_t d : mlir::cast<mlir::RankedTensorType>(type).getShape())
    shape.push_back(mlir::ShapedType::isDynamic(d) ? batch : d);
  return shape;
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The number of rows of the table that argument `arg` indexes (the
/// vocabulary), from the lru.gather that uses it.
int64_t vocabularyOf(mlir::Value arg) {
  for (mlir::Operation *user : arg.getUsers())
    if (auto gather = mlir::dyn_cast<lru::GatherOp>(user))
      return mlir::cast<mlir::RankedTensorType>(gather.getTable().getType())
          .getDimSize(0);
  return 2;
}

} // namespace

std::string inputTag(mlir::func::FuncOp func, unsigned i) {
  if (auto tag = func.getArgAttrOfType<mlir::StringAttr>(i, "lru.input"))
    return tag.str();
  return "";
}

mlir::OwningOpRef<mlir::ModuleOp> compileModel(mlir::MLIRContext &context,
                                               const ModelCase &c,
                                               std::string &errors,
                                               bool withTrain) {
  context.loadDialect<lru::LRUDialect, mlir::func::FuncDialect,
                      mlir::arith::ArithDialect>();
  SourceFile source{c.path,
                    c.source.empty()
                        ? readFile(std::string(LRUC_SOURCE_DIR "/") + c.path)
                        : c.source};
  std::ostringstream frontendErrors;
  DiagnosticEngine diags(source, frontendErrors);
  std::optional<ast::Model> model =
      parseModel(source, {c.overrides, /*ignoreTrain=*/!(withTrain || c.train)},
                 diags);
  if (!model) {
    errors = frontendErrors.str();
    return nullptr;
  }

  llvm::raw_string_ostream os(errors);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlirGen(context, *model);
  if (!module)
    return nullptr;
  mlir::PassManager pm(&context);
  pm.addPass(createDeriveStepPass());
  pm.addPass(createDecomposePass());
  pm.addPass(createDeriveBackward());
  pm.addPass(createDeriveTrainStep());
  pm.addPass(createDeriveAccumulation());
  if (mlir::failed(pm.run(*module)))
    return nullptr;
  return module;
}

std::vector<Tensor> makeBatch(mlir::func::FuncOp func, int64_t batch,
                              unsigned seed) {
  // Sequence length: dim 1 of the first argument (tokens or features).
  int64_t steps = concreteShape(func.getArgument(0).getType(), batch)[1];
  int64_t classes = 2;
  if (func.getNumResults() > 1)
    classes = mlir::cast<mlir::RankedTensorType>(func.getResultTypes()[1])
                  .getShape()
                  .back();

  std::vector<Tensor> args;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    mlir::Value arg = func.getArgument(i);
    std::string tag = inputTag(func, i);
    Tensor t;
    t.shape = concreteShape(arg.getType(), batch);
    int64_t n = numElements(t.shape);
    if (tag.rfind("tokens", 0) == 0) {
      t.kind = Tensor::Kind::Int;
      int64_t vocab = vocabularyOf(arg);
      for (int64_t k = 0; k < n; ++k)
        t.ints.push_back((k * 7 + k / 3 + seed * 5 + i) % vocab);
    } else if (tag.rfind("lengths", 0) == 0) {
      // The first sequence full, the others padded to a shorter real end.
      t.kind = Tensor::Kind::Int;
      for (int64_t b = 0; b < n; ++b)
        t.ints.push_back(
            b == 0 || steps < 2 ? steps : 1 + (b * 3 + seed + i) % (steps - 1));
    } else if (tag == "labels") {
      t.kind = Tensor::Kind::Int;
      for (int64_t k = 0; k < n; ++k)
        t.ints.push_back((k * 5 + seed * 3 + k / 2) % classes);
      // A class a step: every fourth step not scored (-1, -100).
      for (int64_t k = 1; t.shape.size() == 2 && k < n; k += 4)
        t.ints[size_t(k)] = k % 8 == 1 ? -1 : -100;
    } else if (tag == "dropout_key") {
      t.kind = Tensor::Kind::Int;
      t.ints = {1234 + int64_t(seed), 7};
    } else { // features, targets
      t.kind = Tensor::Kind::Real;
      for (int64_t k = 0; k < n; ++k)
        t.re.push_back(0.9 * std::sin(1.3 * double(k) + 0.7 * seed + i));
      // Targets: every fifth value not scored (NaN).
      for (int64_t k = 3; tag == "targets" && k < n; k += 5)
        t.re[size_t(k)] = std::nan("");
    }
    args.push_back(std::move(t));
  }
  return args;
}

static const std::map<std::string, double> kSmall = {
    {"L", 6}, {"H", 4}, {"N", 3}, {"DEPTH", 1}};

static std::map<std::string, double>
small(std::map<std::string, double> extra) {
  std::map<std::string, double> all = kSmall;
  for (auto &[name, value] : extra)
    all[name] = value;
  return all;
}

std::vector<ModelCase> smallModelCases() {
  return {
      // Token inputs, BatchNorm in train mode; dropout on where noted.
      {"listops", "models/listops.lru", small({{"DROPOUT", 0.3}})},
      {"text", "models/text.lru", small({})},
      {"retrieval_two_towers", "models/retrieval.lru", small({})},
      // Pixel inputs; two blocks stacked.
      {"scifar_two_blocks_dropout", "models/scifar.lru",
       small({{"DEPTH", 2}, {"DROPOUT", 0.25}})},
      // Bidirectional scans with padding.
      {"pathfinder_bidirectional", "models/pathfinder.lru", small({})},
      // N = 20: more than one 16-channel scan part per sequence when the
      // CPU library runs with more threads than sequences.
      {"pathx_bidirectional", "models/pathx.lru", small({{"N", 20}})},
      {"tiny", "examples/tiny.lru", {}},
      {"fashion_mnist", "examples/fashion_mnist.lru", small({})},
      // The generalised LRU in its plain, stable and normalized forms.
      {"generalized",
       "examples/generalized.lru",
       {{"L", 6}, {"H", 4}, {"N", 3}}},
      {"retrieval_small", "examples/retrieval_small.lru", small({})},
      // Tokens through bidirectional scans.
      {"listops_small", "examples/listops_small.lru", small({})},
      // Per-step MSE, no dropout, gamma off.
      {"tagging", "examples/tagging.lru", small({})},
      // A class a step, some steps not scored (negative labels), label
      // smoothing.
      {"token_tagging", "examples/token_tagging.lru",
       small({{"SMOOTHING", 0.1}})},
      {"sweep", "examples/sweep.lru", {{"L", 6}, {"H", 4}, {"DEPTH", 1}}},
      // Class weights (one 0), per step with steps not scored and pooled.
      {"weighted_tags", "tests/models/Inputs/weighted_tags.lru", {}},
      {"weighted_classes", "tests/models/Inputs/weighted_classes.lru", {}},
      // Pooled regression, some targets NaN (not scored); the Huber loss
      // per step and the mean absolute error pooled.
      {"missing_targets", "tests/models/Inputs/missing_targets.lru", {}},
      {"huber_tags", "tests/models/Inputs/huber_tags.lru", {}},
      {"l1_pooled", "tests/models/Inputs/l1_pooled.lru", {}},
      // Long sequences and more than 32 channels: on the GPU, block sums
      // over more than one warp's worth of steps, and scans over several
      // tiles of steps and more than one block of channels.
      {"text_long", "models/text.lru", small({{"L", 300}, {"N", 35}})},
  };
}

void PrintTo(const ModelCase &c, std::ostream *os) { *os << c.name; }

} // namespace lruc::testing
