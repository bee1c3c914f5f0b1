//===- Diagnostics.h - file:line:col errors with a caret -------*- C++ -*-===//
#ifndef LRUC_FRONTEND_DIAGNOSTICS_H
#define LRUC_FRONTEND_DIAGNOSTICS_H

#include "lruc/frontend/AST.h"

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace lruc {

/// A model file held in memory.
struct SourceFile {
  std::string path;
  std::string text;

  /// The text of 1-based line `line`, without its line terminator.
  std::string_view lineText(unsigned line) const;
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  ast::Loc loc;
  std::string message;
};

/// Collects diagnostics and prints each as
///   file:line:col: error: message
///     <source line>
///          ^
/// Stops collecting errors after `maxErrors` (one final note says so).
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceFile &source, std::ostream &os,
                            unsigned maxErrors = 20);

  void error(ast::Loc loc, std::string message);
  void warning(ast::Loc loc, std::string message);
  void note(ast::Loc loc, std::string message);

  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ != 0; }
  /// True once the cap is reached: callers may stop early.
  bool tooManyErrors() const { return errors_ >= maxErrors_; }
  const std::vector<Diagnostic> &diagnostics() const { return all_; }

private:
  void report(Severity severity, ast::Loc loc, std::string message);

  const SourceFile &source_;
  std::ostream &os_;
  unsigned maxErrors_;
  unsigned errors_ = 0;
  bool capNoted_ = false;
  std::vector<Diagnostic> all_;
};

/// The candidate nearest to `word` by edit distance, or "" if none is close
/// enough to be a plausible misspelling.
std::string nearestWord(std::string_view word,
                        const std::vector<std::string_view> &candidates);

} // namespace lruc

#endif // LRUC_FRONTEND_DIAGNOSTICS_H
