//===- Metrics.h - Training metrics as JSON lines ---------------*- C++ -*-===//
//
// OUT/metrics.jsonl holds one JSON object a line (docs/trainer.md):
//
//   {"step": 10, "epoch": 0, "lr": 4.0e-4, "loss": 1.93, "accuracy": 0.31,
//    "time": 3.2}
//   {"step": 250, "epoch": 0, "split": "val", "loss": 0.61,
//    "accuracy": 0.781, "examples": 6000, "time": 80.5}
//
// A train line per step (the batch's loss and accuracy in train mode,
// before the step's update); an eval line (with "split") per evaluation,
// with "mae" (the mean absolute error) for regression. "time"
// is wall-clock seconds since the run began, resumed runs included. Each
// line is flushed when written, so a killed run loses at most its last line.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_HOST_METRICS_H
#define LRUC_HOST_METRICS_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace lruc::host {

class MetricsLog {
public:
  /// Starts `path` afresh (resumeStep < 0), or, when resuming from step
  /// `resumeStep`, keeps only its lines up to that step (a run killed after
  /// its last checkpoint logged steps that the resumed run does again).
  /// Throws HostError naming the file.
  MetricsLog(const std::filesystem::path &path, int64_t resumeStep);
  ~MetricsLog();
  MetricsLog(const MetricsLog &) = delete;
  MetricsLog &operator=(const MetricsLog &) = delete;

  void train(int64_t step, int64_t epoch, double lr, double loss,
             double accuracy, double time);
  /// A regression's record also has "mae", its mean absolute error (when
  /// `absoluteError` is a number).
  void eval(int64_t step, int64_t epoch, const std::string &split, double loss,
            double accuracy, int64_t examples, double time,
            double absoluteError = std::nan(""));

private:
  void write(const std::string &line);
  std::filesystem::path path_;
  std::FILE *file_ = nullptr;
};

/// One line of a metrics file, as lru-plot reads it.
struct MetricsEntry {
  int64_t step = 0;
  std::string split; ///< empty for a train line
  double loss = 0, accuracy = -1, time = -1;
  double absoluteError = std::nan(""); ///< "mae": a regression's evaluations
};

/// Reads a metrics.jsonl; skips nothing silently: a malformed line is a
/// HostError "PATH:LINE: ...", and so is a file of no records.
std::vector<MetricsEntry> readMetrics(const std::filesystem::path &path);

} // namespace lruc::host

#endif // LRUC_HOST_METRICS_H
