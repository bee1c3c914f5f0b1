//===- Diagnostics.cpp - file:line:col errors with a caret ---------------===//

#include "lruc/frontend/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>

namespace lruc {

std::string_view SourceFile::lineText(unsigned line) const {
  if (line == 0)
    return {};
  size_t start = 0;
  for (unsigned l = 1; l < line; ++l) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos)
      return {};
    start = nl + 1;
  }
  size_t end = text.find_first_of("\r\n", start);
  if (end == std::string::npos)
    end = text.size();
  return std::string_view(text).substr(start, end - start);
}

DiagnosticEngine::DiagnosticEngine(const SourceFile &source, std::ostream &os,
                                   unsigned maxErrors)
    : source_(source), os_(os), maxErrors_(std::max(1u, maxErrors)) {}

void DiagnosticEngine::error(ast::Loc loc, std::string message) {
  report(Severity::Error, loc, std::move(message));
}
void DiagnosticEngine::warning(ast::Loc loc, std::string message) {
  report(Severity::Warning, loc, std::move(message));
}
void DiagnosticEngine::note(ast::Loc loc, std::string message) {
  report(Severity::Note, loc, std::move(message));
}

void DiagnosticEngine::report(Severity severity, ast::Loc loc,
                              std::string message) {
  if (capNoted_)
    return; // past the cap: callers are stopping; drop what still arrives
  if (severity == Severity::Error)
    ++errors_;
  const char *kind = severity == Severity::Error     ? "error"
                     : severity == Severity::Warning ? "warning"
                                                     : "note";
  if (loc.line == 0) {
    os_ << fmt::format("{}: {}: {}\n", source_.path, kind, message);
  } else {
    os_ << fmt::format("{}:{}:{}: {}: {}\n", source_.path, loc.line, loc.col,
                       kind, message);
    std::string_view line = source_.lineText(loc.line);
    // The caret line copies tabs so the caret lines up in any tab width.
    std::string caret;
    for (unsigned i = 0; i + 1 < loc.col && i < line.size(); ++i)
      caret += line[i] == '\t' ? '\t' : ' ';
    os_ << fmt::format("  {}\n  {}^\n", line, caret);
  }
  all_.push_back({severity, loc, std::move(message)});
  if (tooManyErrors() && !capNoted_) {
    capNoted_ = true;
    os_ << fmt::format("{}: note: too many errors ({}), stopping here\n",
                       source_.path, maxErrors_);
  }
}

/// Edit distance counting insertions, deletions, substitutions and swaps of
/// neighbours (optimal string alignment): "modle" is one edit from "model".
static size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string nearestWord(std::string_view word,
                        const std::vector<std::string_view> &candidates) {
  // Allow one edit per three characters (at least one), as clang does for
  // typo correction; anything further is not a plausible misspelling.
  size_t limit = std::max<size_t>(1, word.size() / 3);
  // Words far longer than every candidate cannot be misspellings of one.
  if (word.size() > 64)
    return {};
  std::string_view best;
  size_t bestDistance = limit + 1;
  for (std::string_view candidate : candidates) {
    size_t d = editDistance(word, candidate);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return std::string(best);
}

} // namespace lruc
