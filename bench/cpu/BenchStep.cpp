//===- BenchStep.cpp - Step mode per token, libraries side by side --------===//
//
//   lruc-bench-step [--batch N] [--tokens T] [--rounds R] A.so [B.so ...]
//
// Times step mode (one token of N streams a call) of one or more model
// libraries, without Python: R rounds, each running T tokens of every
// library in turn, so that all of them see the same minutes of a machine
// whose speed drifts (on the 2-core virtual machines here a token took
// twice as long in some minutes). Prints each library's median and best
// time per token over the rounds and its ratio to the first library's
// median, between two measurements of a cache line's round trip between
// two threads (what every hand-off to the thread pool costs at least).
// Compare libraries only within one run. The libraries share the caches:
// for a model whose weights nearly fill the last-level cache (sCIFAR's
// 31.5 MB, 32 MiB L3 here) time each library alone, alternating runs
// (sCIFAR at one stream: 259 and 300 us alone, 504 and 454 side by side).
//
//===----------------------------------------------------------------------===//

#include "../common/BenchSupport.h"
#include "lruc_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using lruc::bench::RandomInputs;
using lruc::bench::roundTrip;
using lruc::bench::seconds;

int usage() {
  std::fprintf(stderr, "usage: lruc-bench-step [--batch N] [--tokens T] "
                       "[--rounds R] model.so [model.so ...]\n");
  return 2;
}

/// One library in step mode: its parameters (seed 1), its carry and one
/// token of random inputs for each of `batch` streams.
class Stepper {
public:
  Stepper(std::string path, int64_t batch)
      : path_(std::move(path)), batch_(batch) {}

  /// Loads the library; false, having printed why, when it cannot step.
  bool load() {
    std::string error;
    model_ = lruc::bench::openModelLibrary(path_, error).model;
    if (!model_)
      return fail(error);
    if (!model_->step)
      return fail(std::string("no step mode: ") + model_->step_unavailable);
    params_.resize(model_->param_floats);
    state_.resize(model_->state_floats);
    carry_.resize(size_t(batch_) * model_->carry_floats);
    if (model_->init(1, params_.data(), state_.data(), error_, sizeof error_) ||
        model_->step_reset(batch_, carry_.data(), error_, sizeof error_))
      return fail(error_);
    inputs_ = std::make_unique<RandomInputs>(
        model_->step_inputs, model_->num_step_inputs, batch_, 1);
    for (int i = 0; i < model_->num_step_outputs; ++i) {
      int64_t count = 1;
      for (int d = 0; d < model_->step_outputs[i].rank; ++d)
        count *= model_->step_outputs[i].shape[d] < 0
                     ? batch_
                     : model_->step_outputs[i].shape[d];
      outputs_.emplace_back(count);
    }
    for (std::vector<float> &output : outputs_)
      outputPointers_.push_back(output.data());
    return true;
  }

  /// Seconds per token over `tokens` calls; negative after a failed step.
  double time(int tokens) {
    double start = seconds();
    for (int t = 0; t < tokens; ++t)
      if (model_->step(batch_, params_.data(), state_.data(), carry_.data(),
                       inputs_->pointers.data(), outputPointers_.data(),
                       error_, sizeof error_)) {
        fail(error_);
        return -1;
      }
    return (seconds() - start) / tokens;
  }

  const std::string &path() const { return path_; }

private:
  bool fail(const std::string &why) {
    std::fprintf(stderr, "lruc-bench-step: %s: %s\n", path_.c_str(),
                 why.c_str());
    return false;
  }

  std::string path_;
  int64_t batch_;
  const lruc_model *model_ = nullptr;
  std::vector<float> params_, state_, carry_;
  std::unique_ptr<RandomInputs> inputs_;
  std::vector<std::vector<float>> outputs_;
  std::vector<float *> outputPointers_;
  char error_[512] = "";
};

} // namespace

int main(int argc, char **argv) {
  long long batch = 1, tokens = 2000, rounds = 7;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    long long *option = arg == "--batch"    ? &batch
                        : arg == "--tokens" ? &tokens
                        : arg == "--rounds" ? &rounds
                                            : nullptr;
    if (option) {
      char *end = nullptr;
      if (i + 1 >= argc || (*option = std::strtoll(argv[++i], &end, 10)) <= 0 ||
          *end != 0)
        return usage();
    } else if (!arg.empty() && arg[0] == '-') {
      return usage();
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty() || tokens > (1 << 30) || rounds > 1000)
    return usage();
  std::vector<Stepper> libraries;
  for (const std::string &path : paths) {
    libraries.emplace_back(path, batch);
    if (!libraries.back().load())
      return 1;
  }
  std::printf("round trip before: %.0f ns\n", roundTrip(3) * 1e9);
  // A warm-up round (first calls, caches, the pools' threads), then rounds.
  std::vector<std::vector<double>> times(libraries.size());
  for (int r = 0; r <= rounds; ++r)
    for (size_t l = 0; l < libraries.size(); ++l) {
      double time =
          libraries[l].time(int(r == 0 ? std::min(tokens, 200LL) : tokens));
      if (time < 0)
        return 1;
      if (r > 0)
        times[l].push_back(time);
    }
  std::printf("round trip after:  %.0f ns\n", roundTrip(3) * 1e9);
  std::printf("step mode, batch %lld, %d rounds of %d tokens\n",
              batch, int(rounds), int(tokens));
  std::printf("%12s %12s %8s  %s\n", "median (us)", "best (us)", "ratio",
              "library");
  double first = 0;
  for (size_t l = 0; l < libraries.size(); ++l) {
    std::vector<double> &t = times[l];
    std::sort(t.begin(), t.end());
    double median = t[t.size() / 2];
    if (l == 0)
      first = median;
    std::printf("%12.2f %12.2f %7.2fx  %s\n", median * 1e6, t.front() * 1e6,
                first / median, libraries[l].path().c_str());
  }
  return 0;
}
