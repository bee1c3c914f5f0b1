//===- Progress.h - The training progress bar -------------------*- C++ -*-===//
//
// One line of progress on stderr: step/total, the smoothed loss and
// training accuracy, the last validation accuracy, the learning rate, steps per second and the time
// left. On a terminal the line is redrawn in place; otherwise (a log file,
// CI) a full line is printed every `lineEvery` steps, so logs stay short.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_PROGRESS_H
#define LRUC_HOST_PROGRESS_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace lruc::host {

/// "7s", "4:05", "1:02:03".
std::string formatDuration(double seconds);

/// An exponential moving average with bias correction (TensorBoard's
/// smoothing): early values are not pulled towards zero.
class Smoothed {
public:
  explicit Smoothed(double beta = 0.98) : beta_(beta) {}
  void add(double value);
  double value() const;
  bool empty() const { return count_ == 0; }

private:
  double beta_, sum_ = 0, weight_ = 0;
  int64_t count_ = 0;
};

class Progress {
public:
  /// `firstStep` is the step this run starts after (0, or the step resumed
  /// from): rates count only the steps run here.
  Progress(std::FILE *out, bool terminal, int64_t total, int64_t firstStep,
           int64_t lineEvery);

  /// Step `step` is done: its batch's loss and accuracy (NaN: a model
  /// without one, shown without), its rate and the
  /// seconds it took (training only, so steps/s does not count evaluation).
  void step(int64_t step, double loss, double accuracy, double lr,
            double seconds);
  /// The latest validation accuracy, shown from now on.
  void setAccuracy(double accuracy) { accuracy_ = accuracy; }
  /// Prints `line` on a line of its own (above the bar on a terminal).
  void print(const std::string &line);
  /// Ends the bar's line (on a terminal).
  void finish();

  double stepsPerSecond() const;
  double smoothedLoss() const { return loss_.value(); }
  double smoothedAccuracy() const { return trainAccuracy_.value(); }
  /// The text of the bar for the last step (without control characters).
  std::string text() const;

private:
  void clear();
  void draw();

  std::FILE *out_;
  bool terminal_;
  int64_t total_, first_, lineEvery_;
  int64_t current_ = 0;
  double lr_ = 0, trainSeconds_ = 0;
  Smoothed loss_, trainAccuracy_;
  std::optional<double> accuracy_;
  std::chrono::steady_clock::time_point start_, lastDraw_;
  bool drawn_ = false;
};

} // namespace lruc::host

#endif // LRUC_HOST_PROGRESS_H
