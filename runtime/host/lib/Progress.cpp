//===- Progress.cpp - The training progress bar ---------------------------===//

#include "lruc/host/Progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace lruc::host {

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  auto s = int64_t(std::llround(seconds));
  if (s < 60)
    return fmt::format("{}s", s);
  if (s < 3600)
    return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

void Smoothed::add(double value) {
  sum_ = beta_ * sum_ + (1 - beta_) * value;
  weight_ = beta_ * weight_ + (1 - beta_);
  ++count_;
}

double Smoothed::value() const { return weight_ > 0 ? sum_ / weight_ : 0.0; }

Progress::Progress(std::FILE *out, bool terminal, int64_t total,
                   int64_t firstStep, int64_t lineEvery)
    : out_(out), terminal_(terminal), total_(total), first_(firstStep),
      lineEvery_(std::max<int64_t>(lineEvery, 1)), current_(firstStep),
      start_(std::chrono::steady_clock::now()) {}

double Progress::stepsPerSecond() const {
  int64_t done = current_ - first_;
  return trainSeconds_ > 0 ? double(done) / trainSeconds_ : 0.0;
}

std::string Progress::text() const {
  std::string line = fmt::format("step {}/{}", current_, total_);
  if (terminal_) {
    constexpr int kWidth = 20;
    int filled = total_ > 0 ? int(kWidth * current_ / total_) : 0;
    line += fmt::format(" [{}{}]", std::string(filled, '#'),
                        std::string(kWidth - filled, '.'));
  }
  line += fmt::format(" {:3}%", total_ > 0 ? 100 * current_ / total_ : 0);
  if (!loss_.empty())
    line += fmt::format(" loss {:.4f}", loss_.value());
  if (!trainAccuracy_.empty()) // classifiers
    line += fmt::format(" acc {:.2f}%", 100 * trainAccuracy_.value());
  if (accuracy_)
    line += fmt::format(" val {:.2f}%", 100 * *accuracy_);
  line += fmt::format(" lr {:.2e}", lr_);
  double rate = stepsPerSecond();
  if (rate > 0) {
    line += fmt::format(" {:.2f} steps/s", rate);
    // Time left at the wall-clock rate so far, evaluations included.
    double wall = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start_)
                      .count();
    double wallRate = double(current_ - first_) / std::max(wall, 1e-9);
    line += " ETA " + formatDuration(double(total_ - current_) / wallRate);
  }
  return line;
}

void Progress::clear() {
  if (terminal_ && drawn_) {
    std::fputs("\r\033[K", out_);
    drawn_ = false;
  }
}

void Progress::draw() {
  std::string line = text();
  if (terminal_) {
    std::fprintf(out_, "\r\033[K%s", line.c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void Progress::step(int64_t step, double loss, double accuracy, double lr,
                    double seconds) {
  current_ = step;
  lr_ = lr;
  trainSeconds_ += seconds;
  if (std::isfinite(loss)) {
    loss_.add(loss);
    if (!std::isnan(accuracy)) // NaN: a model without one (loss mse)
      trainAccuracy_.add(accuracy);
  }
  auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    // A terminal redraw costs little, but ten a second is plenty.
    if (step == total_ || !drawn_ ||
        now - lastDraw_ >= std::chrono::milliseconds(100)) {
      draw();
      lastDraw_ = now;
    }
  } else if (step % lineEvery_ == 0 || step == total_) {
    draw();
  }
}

void Progress::print(const std::string &line) {
  bool redraw = drawn_;
  clear();
  std::fprintf(out_, "%s\n", line.c_str());
  if (redraw)
    draw();
  std::fflush(out_);
}

void Progress::finish() {
  if (terminal_ && drawn_) {
    std::fputs("\n", out_);
    drawn_ = false;
    std::fflush(out_);
  }
}

} // namespace lruc::host
