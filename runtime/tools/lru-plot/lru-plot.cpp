//===- lru-plot.cpp - Loss and accuracy curves of runs as an SVG ----------===//
//
//   lru-plot OUT.svg RUN1/metrics.jsonl [RUN2/metrics.jsonl ...]
//
// Two panels side by side: the loss against the step (training loss as a
// solid line, averaged over buckets when a run has many steps; validation
// loss dashed) and the accuracy (validation as a line with dots, training
// batches' accuracy dotted and bucket-averaged, test as a diamond; for
// regression runs alone, the mean absolute error instead). One colour per
// run, named in the legend by its folder. Plain
// SVG text, no dependency; any browser or image viewer shows it.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"

#include "lruc/host/Metrics.h"
#include "lruc/host/Safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace fs = std::filesystem;
using namespace lruc::host;
using lruc::tools::UsageError;

namespace {

constexpr const char *kTool = "lru-plot";
// Tableau's 10 colours: distinct for the usual handful of runs.
constexpr const char *kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                    "#bcbd22", "#17becf"};
// At most this many points per training curve; more do not show.
constexpr size_t kMaxPoints = 400;

struct Point {
  double x, y;
};

struct Run {
  std::string name;
  // The second panel's: accuracy, or a regression's mean absolute error.
  std::vector<Point> trainLoss, trainAccuracy, valLoss, valAccuracy,
      testAccuracy, valError, testError;
};

std::string escapeXml(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// Means over consecutive buckets of points, so that at most `maxPoints`
/// remain (and noise of single steps is averaged away).
std::vector<Point> bucketMeans(const std::vector<Point> &points,
                               size_t maxPoints) {
  if (points.size() <= maxPoints)
    return points;
  std::vector<Point> out;
  size_t per = (points.size() + maxPoints - 1) / maxPoints;
  for (size_t i = 0; i < points.size(); i += per) {
    double sx = 0, sy = 0;
    size_t n = 0;
    for (size_t k = i; k < std::min(points.size(), i + per); ++k)
      if (std::isfinite(points[k].y)) {
        sx += points[k].x;
        sy += points[k].y;
        ++n;
      }
    if (n)
      out.push_back({sx / double(n), sy / double(n)});
  }
  return out;
}

/// Ticks at 1, 2 or 5 × 10^k covering [lo, hi].
std::vector<double> niceTicks(double lo, double hi, int target = 6) {
  double span = hi - lo;
  if (!(span > 0))
    return {lo};
  double raw = span / target;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9;
       t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string tickLabel(double v) {
  if (v != 0 && (std::abs(v) >= 1e5 || std::abs(v) < 1e-3))
    return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", v);
}

struct Panel {
  double left, top, width, height;
  double xMin, xMax, yMin, yMax;
  double px(double x) const {
    return left + (xMax > xMin ? (x - xMin) / (xMax - xMin) : 0.5) * width;
  }
  double py(double y) const {
    return top + height -
           (yMax > yMin ? (y - yMin) / (yMax - yMin) : 0.5) * height;
  }
};

void range(const std::vector<Point> &points, double &lo, double &hi,
           bool useX) {
  for (const Point &p : points) {
    double v = useX ? p.x : p.y;
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
}

std::string polyline(const Panel &panel, const std::vector<Point> &points,
                     const char *colour, const char *dash) {
  // A non-finite value breaks the line (a diverged run).
  std::string svg, current;
  auto flush = [&] {
    if (!current.empty())
      svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" "
                         "stroke-width=\"1.5\"{} points=\"{}\"/>\n",
                         colour, dash, current);
    current.clear();
  };
  for (const Point &p : points) {
    if (!std::isfinite(p.y)) {
      flush();
      continue;
    }
    current += fmt::format("{:.1f},{:.1f} ", panel.px(p.x),
                           panel.py(std::clamp(p.y, panel.yMin, panel.yMax)));
  }
  flush();
  return svg;
}

std::string axes(const Panel &p, const std::string &title,
                 const std::string &yLabel) {
  std::string svg = fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "fill=\"white\" stroke=\"#333\"/>\n",
      p.left, p.top, p.width, p.height);
  for (double t : niceTicks(p.xMin, p.xMax)) {
    double x = p.px(t);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
                       "y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" "
                       "text-anchor=\"middle\">{4}</text>\n",
                       x, p.top, p.top + p.height, p.top + p.height + 16,
                       tickLabel(t));
  }
  for (double t : niceTicks(p.yMin, p.yMax)) {
    double y = p.py(t);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" "
                       "y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n"
                       "<text x=\"{3:.1f}\" y=\"{4:.1f}\" "
                       "text-anchor=\"end\">{5}</text>\n",
                       p.left, y, p.left + p.width, p.left - 6, y + 4,
                       tickLabel(t));
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
      "font-weight=\"bold\">{}</text>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">step</text>\n"
      "<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>\n",
      p.left + p.width / 2, p.top - 10, escapeXml(title), p.left + p.width / 2,
      p.top + p.height + 36, p.left - 48, p.top + p.height / 2,
      escapeXml(yLabel));
  return svg;
}

/// A metric as plotted: the runs log float values, so one past float's
/// range is a diverged one (a break in the line, as a non-finite value),
/// which also keeps each panel's span finite.
double plotted(double value) {
  return std::abs(value) <= std::numeric_limits<float>::max() ? value : NAN;
}

std::string runName(const fs::path &metrics) {
  fs::path dir = metrics.parent_path();
  std::string name = dir.filename().string();
  return name.empty() || name == "." ? metrics.string() : name;
}

int plotMain(int argc, char **argv) {
  lruc::tools::CommandLine cl(kTool, "OUT.svg RUN/metrics.jsonl [...]");
  std::vector<std::string> positional = cl.parse(argc, argv);
  if (positional.size() < 2)
    throw UsageError("expected the output file and at least one metrics.jsonl");
  const fs::path output = positional[0];
  if (output.extension() != ".svg")
    throw UsageError(fmt::format(
        "{}: the output must be an .svg file (lru-plot writes SVG)",
        output.string()));

  std::vector<Run> runs;
  for (size_t i = 1; i < positional.size(); ++i) {
    Run run;
    run.name = runName(positional[i]);
    for (MetricsEntry e : readMetrics(positional[i])) {
      for (double *value : {&e.loss, &e.accuracy, &e.absoluteError})
        *value = plotted(*value);
      double x = double(e.step);
      if (e.split.empty()) {
        run.trainLoss.push_back({x, e.loss});
        if (e.accuracy >= 0) // files from before train lines had it
          run.trainAccuracy.push_back({x, 100 * e.accuracy});
      } else if (e.split == "val") {
        run.valLoss.push_back({x, e.loss});
        if (e.accuracy >= 0) // null for a model without one (regression)
          run.valAccuracy.push_back({x, 100 * e.accuracy});
        if (!std::isnan(e.absoluteError))
          run.valError.push_back({x, e.absoluteError});
      } else if (e.split == "test") {
        if (e.accuracy >= 0)
          run.testAccuracy.push_back({x, 100 * e.accuracy});
        if (!std::isnan(e.absoluteError))
          run.testError.push_back({x, e.absoluteError});
      }
    }
    run.trainLoss = bucketMeans(run.trainLoss, kMaxPoints);
    run.trainAccuracy = bucketMeans(run.trainAccuracy, kMaxPoints);
    runs.push_back(std::move(run));
  }
  // Regression runs alone (no accuracy anywhere, a mean absolute error
  // somewhere): the second panel shows that error instead.
  const bool regression =
      std::none_of(runs.begin(), runs.end(),
                   [](const Run &r) {
                     return !r.trainAccuracy.empty() ||
                            !r.valAccuracy.empty() || !r.testAccuracy.empty();
                   }) &&
      std::any_of(runs.begin(), runs.end(),
                  [](const Run &r) { return !r.valError.empty(); });
  if (regression)
    for (Run &r : runs) {
      r.valAccuracy = std::move(r.valError);
      r.testAccuracy = std::move(r.testError);
    }

  constexpr double kPanelWidth = 420, kPanelHeight = 300;
  constexpr double kMarginLeft = 70, kGap = 90, kTop = 40;
  const double legendTop = kTop + kPanelHeight + 60;
  const double height = legendTop + 22 * double(runs.size() + 1) + 10;
  const double width = kMarginLeft + 2 * kPanelWidth + kGap + 20;

  double xMin = std::numeric_limits<double>::infinity(), xMax = -xMin;
  double lossMin = xMin, lossMax = -xMin, accMin = xMin, accMax = -xMin;
  for (const Run &r : runs) {
    for (auto *points : {&r.trainLoss, &r.trainAccuracy, &r.valLoss,
                         &r.valAccuracy, &r.testAccuracy})
      range(*points, xMin, xMax, true);
    range(r.trainLoss, lossMin, lossMax, false);
    range(r.valLoss, lossMin, lossMax, false);
    range(r.trainAccuracy, accMin, accMax, false);
    range(r.valAccuracy, accMin, accMax, false);
    range(r.testAccuracy, accMin, accMax, false);
  }
  auto settle = [](double &lo, double &hi, double fallbackLo,
                   double fallbackHi) {
    if (!std::isfinite(lo)) {
      lo = fallbackLo;
      hi = fallbackHi;
    }
    if (hi <= lo) {
      lo -= 0.5;
      hi += 0.5;
    }
    std::vector<double> ticks = niceTicks(lo, hi);
    double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
    lo = std::floor(lo / step) * step;
    hi = std::ceil(hi / step) * step;
  };
  settle(xMin, xMax, 0, 1);
  xMin = std::min(xMin, 0.0);
  settle(lossMin, lossMax, 0, 1);
  lossMin = std::min(lossMin, 0.0);
  settle(accMin, accMax, 0, 100);
  if (regression)
    accMin = std::min(accMin, 0.0);
  else
    accMax = std::min(accMax, 100.0);

  Panel loss{kMarginLeft, kTop, kPanelWidth, kPanelHeight,
             xMin, xMax, lossMin, lossMax};
  Panel acc{kMarginLeft + kPanelWidth + kGap, kTop, kPanelWidth, kPanelHeight,
            xMin, xMax, accMin, accMax};

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" "
      "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  svg += axes(loss, "loss", regression ? "loss" : "cross-entropy");
  if (regression)
    svg += axes(acc, "mean absolute error", "MAE");
  else
    svg += axes(acc, "accuracy", "accuracy (%)");
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run &r = runs[i];
    const char *colour = kColours[i % std::size(kColours)];
    svg += polyline(loss, r.trainLoss, colour, "");
    svg += polyline(loss, r.valLoss, colour, " stroke-dasharray=\"6,4\"");
    svg += polyline(acc, r.trainAccuracy, colour,
                    " stroke-dasharray=\"2,3\"");
    svg += polyline(acc, r.valAccuracy, colour, "");
    for (const Point &p : r.valAccuracy)
      if (std::isfinite(p.y))
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" "
                           "fill=\"{}\"/>\n",
                           acc.px(p.x), acc.py(p.y), colour);
    for (const Point &p : r.testAccuracy)
      if (std::isfinite(p.y)) {
        double x = acc.px(p.x), y = acc.py(p.y);
        svg += fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} "
                           "{:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"{}\" "
                           "stroke=\"black\"/>\n",
                           x, y - 6, x + 6, y, x, y + 6, x - 6, y, colour);
      }
    if (r.trainLoss.empty() && r.valAccuracy.empty())
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}: no metrics "
                         "yet</text>\n",
                         loss.left + 10, loss.top + 20 + 16 * double(i),
                         escapeXml(r.name));
  }

  // Legend: one row per run, then what the line styles mean.
  double y = legendTop;
  for (size_t i = 0; i < runs.size(); ++i, y += 22) {
    const char *colour = kColours[i % std::size(kColours)];
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" "
                       "y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>\n"
                       "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
                       kMarginLeft, y, kMarginLeft + 30, colour,
                       kMarginLeft + 38, y + 4, escapeXml(runs[i].name));
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333\">{}</text>\n</svg>\n",
      kMarginLeft, y + 4,
      regression ? "solid: training loss, validation MAE; dashed: validation "
                   "loss; diamond: test MAE (best validation checkpoint)"
                 : "solid: training loss, validation accuracy; dashed: "
                   "validation loss; dotted: training accuracy; diamond: test "
                   "accuracy (best validation checkpoint)");
  writeFileAtomically(output, svg);
  std::printf("%s: wrote %s (%zu run%s)\n", kTool, output.string().c_str(),
              runs.size(), runs.size() == 1 ? "" : "s");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return lruc::tools::runTool(kTool, plotMain, argc, argv);
}
