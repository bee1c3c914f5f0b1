//===- Syntax.h - The untyped statement tree of a .lru file ----*- C++ -*-===//
//
// The parser knows only the generic shape of the language:
//
//   statement := 'let' NAME '=' expr
//              | NAME ['(' args ')'] expr* ['{' statement* '}']
//
// Which heads exist, what their arguments mean and which values are legal is
// the business of Sema, which turns this tree into the checked ast::Model.
// Keeping the grammar generic lets every "unknown word" error come from one
// place with one kind of suggestion.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_FRONTEND_SYNTAX_H
#define LRUC_FRONTEND_SYNTAX_H

#include "lruc/frontend/AST.h"
#include "lruc/frontend/Diagnostics.h"

#include <memory>
#include <string>
#include <vector>

namespace lruc::syntax {

struct ExprNode;
using Expr = std::shared_ptr<ExprNode>;

/// `name: value` or a positional `value` inside parentheses.
struct Arg {
  std::string name; ///< empty for a positional argument
  ast::Loc nameLoc;
  Expr value;
};

enum class ExprKind {
  Number, ///< 512, 1e-3
  String, ///< "data/listops"
  Name,   ///< H, batch, linear(10): a word, with arguments if it has parens
  Negate, ///< -x
  Binary, ///< lhs op rhs with op one of + - * /
  List,   ///< [1, 2.5, H / 4]: an argument's list of values (`elements`)
};

struct ExprNode {
  ExprKind kind = ExprKind::Number;
  ast::Loc loc;
  double number = 0;  ///< Number
  std::string text;   ///< Name, String
  bool hasArgs = false; ///< Name: written with parentheses
  std::vector<Arg> args;
  char op = 0;        ///< Binary
  Expr lhs, rhs;      ///< Binary (lhs also the operand of Negate)
  std::vector<Expr> elements; ///< List
};

struct Stmt {
  bool isLet = false;
  /// The head word with its arguments (a Name node); for `let`, the constant.
  Expr head;
  std::vector<Expr> operands; ///< for `let`, exactly the value
  bool hasBody = false;
  std::vector<Stmt> body;
};

/// Parses `source` into statements, reporting syntax errors to `diags` and
/// recovering at the next statement. Statements that failed to parse are
/// left out; the result is whatever parsed.
std::vector<Stmt> parseStatements(const SourceFile &source,
                                  DiagnosticEngine &diags);

} // namespace lruc::syntax

#endif // LRUC_FRONTEND_SYNTAX_H
