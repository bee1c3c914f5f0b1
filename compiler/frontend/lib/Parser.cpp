//===- Parser.cpp - Boost.Spirit X3 grammar for .lru files ----------------===//
//
// X3 parses one statement head, its operands and `let` definitions; a small
// hand-written loop around it handles statement separators, `{ }` bodies and
// error recovery, which X3 has no direct support for. Newlines end
// statements, so the skipper skips blanks and comments only. Parentheses may
// span lines: a copy of the text with those newlines (and all comments) turned
// into spaces is what X3 sees. Switching skippers inside the recursive grammar
// instead (x3::skip) makes X3's rule instantiation recurse without end.
//
//===----------------------------------------------------------------------===//

#include "Syntax.h"

#include <boost/fusion/include/at_c.hpp>
#include <boost/spirit/home/x3.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace lruc::syntax {
namespace {

namespace x3 = boost::spirit::x3;
using boost::fusion::at_c;
using Iterator = const char *;

/// Limits that keep pathological input from exhausting the stack: the parser
/// recurses once per level of parentheses or braces.
constexpr unsigned kMaxNesting = 64;
constexpr size_t kMaxSourceBytes = 16u << 20;

/// Maps positions in the source to 1-based line and column.
class LineTable {
public:
  /// `original` has the line breaks; `parsed` is the text positions point
  /// into (the same length).
  LineTable(const std::string &original, Iterator parsed) : begin_(parsed) {
    starts_.push_back(0);
    for (size_t i = 0; i < original.size(); ++i)
      if (original[i] == '\n')
        starts_.push_back(i + 1);
  }
  ast::Loc loc(Iterator it) const {
    size_t offset = size_t(it - begin_);
    auto next = std::upper_bound(starts_.begin(), starts_.end(), offset);
    size_t line = size_t(next - starts_.begin());
    return {unsigned(line), unsigned(offset - starts_[line - 1] + 1)};
  }

private:
  Iterator begin_;
  std::vector<size_t> starts_;
};

struct lines_tag;

template <typename Context>
ast::Loc locOf(const Context &ctx, Iterator it) {
  return x3::get<lines_tag>(ctx).loc(it);
}

/// Consumes nothing; yields the position of the next token (after skipping),
/// so semantic actions can record where a construct starts.
struct PositionParser : x3::parser<PositionParser> {
  using attribute_type = Iterator;
  static bool const has_attribute = true;

  template <typename It, typename Context, typename RContext, typename Attr>
  bool parse(It &first, const It &last, const Context &ctx, RContext &,
             Attr &attr) const {
    x3::skip_over(first, last, ctx);
    attr = first;
    return true;
  }
};
const PositionParser position{};

/// Decimal numbers with an optional exponent; no `inf` or `nan` words, which
/// would otherwise shadow names.
struct StrictRealPolicies : x3::real_policies<double> {
  static bool const allow_leading_dot = false;
  template <typename It, typename Attr>
  static bool parse_nan(It &, const It &, Attr &) { return false; }
  template <typename It, typename Attr>
  static bool parse_inf(It &, const It &, Attr &) { return false; }
};
const x3::real_parser<double, StrictRealPolicies> real{};

const auto lineSkipper = x3::blank;

Expr makeNode(ExprKind kind, ast::Loc loc) {
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->loc = loc;
  return node;
}

// --- Semantic actions ----------------------------------------------------------

const auto copyValue = [](auto &ctx) { x3::_val(ctx) = x3::_attr(ctx); };

const auto makeNumber = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Expr node = makeNode(ExprKind::Number, locOf(ctx, at_c<0>(attr)));
  node->number = at_c<1>(attr);
  x3::_val(ctx) = node;
};

const auto makeString = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Expr node = makeNode(ExprKind::String, locOf(ctx, at_c<0>(attr)));
  node->text = at_c<1>(attr);
  x3::_val(ctx) = node;
};

const auto makeName = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Expr node = makeNode(ExprKind::Name, locOf(ctx, at_c<0>(attr)));
  node->text = at_c<1>(attr);
  if (auto &args = at_c<2>(attr)) {
    node->hasArgs = true;
    node->args = std::move(*args);
  }
  x3::_val(ctx) = node;
};

const auto makeList = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Expr node = makeNode(ExprKind::List, locOf(ctx, at_c<0>(attr)));
  if (auto &elements = at_c<1>(attr))
    node->elements = std::move(*elements);
  x3::_val(ctx) = node;
};

const auto makeNegate = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Expr node = makeNode(ExprKind::Negate, locOf(ctx, at_c<0>(attr)));
  node->lhs = at_c<1>(attr);
  x3::_val(ctx) = node;
};

/// Folds `lhs op rhs` into the rule's value, left-associatively.
const auto foldBinary = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Expr node = makeNode(ExprKind::Binary, locOf(ctx, at_c<0>(attr)));
  node->op = at_c<1>(attr);
  node->lhs = x3::_val(ctx);
  node->rhs = at_c<2>(attr);
  x3::_val(ctx) = node;
};

const auto makeNamedArg = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Arg arg;
  arg.nameLoc = locOf(ctx, at_c<0>(attr));
  arg.name = std::move(at_c<1>(attr));
  arg.value = at_c<2>(attr);
  x3::_val(ctx) = std::move(arg);
};

const auto makePositionalArg = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Arg arg;
  arg.nameLoc = locOf(ctx, at_c<0>(attr));
  arg.value = at_c<1>(attr);
  x3::_val(ctx) = std::move(arg);
};

const auto makeLet = [](auto &ctx) {
  auto &attr = x3::_attr(ctx);
  Stmt stmt;
  stmt.isLet = true;
  stmt.head = makeNode(ExprKind::Name, locOf(ctx, at_c<0>(attr)));
  stmt.head->text = at_c<1>(attr);
  stmt.operands.push_back(at_c<2>(attr));
  x3::_val(ctx) = std::move(stmt);
};

// --- Grammar --------------------------------------------------------------------

x3::rule<class identifier_rule, std::string> const identifier = "a name";
x3::rule<class string_rule, std::string> const quoted = "a string";
x3::rule<class expression_rule, Expr> const expression = "an expression";
x3::rule<class term_rule, Expr> const term = "an expression";
x3::rule<class factor_rule, Expr> const factor = "an expression";
x3::rule<class primary_rule, Expr> const primary = "an expression";
x3::rule<class elements_rule, std::vector<Expr>> const elements =
    "a list of values";
x3::rule<class call_rule, Expr> const call = "a name";
x3::rule<class arguments_rule, std::vector<Arg>> const arguments = "arguments";
x3::rule<class argument_rule, Arg> const argument = "an argument";
x3::rule<class let_rule, Stmt> const letStatement = "a constant definition";

const auto word = [](const char *w) {
  return x3::lexeme[x3::lit(w) >> !(x3::alnum | '_')];
};

const auto identifier_def =
    x3::lexeme[(x3::alpha | x3::char_('_')) >> *(x3::alnum | x3::char_('_'))];
const auto quoted_def =
    x3::lexeme['"' > *(x3::char_ - '"' - x3::eol) > '"'];

const auto number = x3::lexeme[real >> !(x3::alnum | '_' | '.')];
/// A decimal number too large for a double (1e400), which `real` refuses:
/// read as infinity, for the checks to report at the literal (instead of
/// "expected an expression" there).
const auto hugeNumber =
    x3::lexeme[x3::omit[+x3::digit >> -('.' >> *x3::digit) >>
                        -(x3::char_("eE") >> -x3::char_("+-") >> +x3::digit)] >>
               x3::attr(std::numeric_limits<double>::infinity()) >>
               !(x3::alnum | '_' | '.')];

const auto elements_def = expression % ',';
const auto primary_def =
    (position >> number)[makeNumber] | (position >> hugeNumber)[makeNumber] |
    (position >> quoted)[makeString] | call[copyValue] |
    ('(' > expression > ')')[copyValue] |
    ((position >> '[') > -elements > -x3::lit(',') > ']')[makeList];
const auto factor_def =
    ((position >> '-') > primary)[makeNegate] | primary[copyValue];
const auto term_def =
    factor[copyValue] >> *(((position >> x3::char_("*/")) > factor)[foldBinary]);
const auto expression_def =
    term[copyValue] >> *(((position >> x3::char_("+-")) > term)[foldBinary]);

const auto argument_def =
    ((position >> identifier >> ':') > expression)[makeNamedArg] |
    (position >> expression)[makePositionalArg];
// The '(' must touch the name: `steps (N)` is `steps` with the operand (N).
const auto arguments_def =
    x3::no_skip['('] > -(argument % ',') > -x3::lit(',') > ')';
const auto call_def = (position >> identifier >> -arguments)[makeName];

const auto letStatement_def =
    (word("let") > position > identifier > '=' > expression)[makeLet];

BOOST_SPIRIT_DEFINE(identifier, quoted, expression, term, factor, primary,
                    elements, call, arguments, argument, letStatement)

// --- The statement loop -------------------------------------------------------------

class StatementParser {
public:
  StatementParser(const SourceFile &source, DiagnosticEngine &diags)
      : text_(joinParenthesizedLines(source.text)), begin_(text_.data()),
        end_(begin_ + text_.size()),
        lines_(source.text, begin_),
        diags_(diags) {}

  std::vector<Stmt> run();

private:
  /// Parses statements until the end of input (`open` null) or the `}` that
  /// closes the body opened at `open`.
  void statements(std::vector<Stmt> &out, Iterator open);
  bool statement(Stmt &stmt);

  template <typename Parser, typename Attr>
  bool parse(const Parser &parser, Attr &attr) {
    return x3::phrase_parse(it_, end_, x3::with<lines_tag>(lines_)[parser],
                            lineSkipper, attr);
  }
  void skipBlanks() { x3::phrase_parse(it_, end_, x3::eps, lineSkipper); }
  /// Skips to the end of the statement that failed: the end of its line, or
  /// past a `{ ... }` body it opened.
  void recover();
  /// The deepest nesting of parentheses and braces, with where it happens.
  bool checkNesting();

  std::string describe(Iterator at) const;
  ast::Loc loc(Iterator at) const { return lines_.loc(at); }

  static std::string joinParenthesizedLines(std::string text);

  std::string text_;
  Iterator begin_, end_, it_ = nullptr;
  LineTable lines_;
  DiagnosticEngine &diags_;
};

std::string StatementParser::describe(Iterator at) const {
  if (at == end_)
    return "the end of the file";
  if (*at == '\n' || *at == '\r')
    return "the end of the line";
  if (std::isalpha(static_cast<unsigned char>(*at)) || *at == '_') {
    Iterator stop = at;
    while (stop != end_ && stop - at < 32 &&
           (std::isalnum(static_cast<unsigned char>(*stop)) || *stop == '_'))
      ++stop;
    return fmt::format("'{}'", std::string_view(at, size_t(stop - at)));
  }
  if (std::isprint(static_cast<unsigned char>(*at)))
    return fmt::format("'{}'", *at);
  return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(*at));
}

/// Blanks out comments, and the line breaks inside parentheses, keeping every
/// other byte where it was so positions still match the original text. A
/// brace inside parentheses means a ')' is missing: joining stops there.
std::string StatementParser::joinParenthesizedLines(std::string text) {
  unsigned depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char &c = text[i];
    if (c == '"') {
      while (i + 1 < text.size() && text[i + 1] != '"' && text[i + 1] != '\n')
        ++i;
      if (i + 1 < text.size() && text[i + 1] == '"')
        ++i;
      else
        depth = 0; // an unterminated string: the line is broken anyway
    } else if (c == '#') {
      for (; i < text.size() && text[i] != '\n' && text[i] != '\r'; ++i)
        text[i] = ' ';
      --i;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      depth -= depth != 0;
    } else if (c == '{' || c == '}') {
      depth = 0;
    } else if ((c == '\n' || c == '\r') && depth) {
      c = ' ';
    }
  }
  return text;
}

bool StatementParser::checkNesting() {
  unsigned depth = 0;
  for (Iterator it = begin_; it != end_; ++it) {
    switch (*it) {
    case '#':
      while (it + 1 != end_ && it[1] != '\n')
        ++it;
      break;
    case '"':
      while (it + 1 != end_ && it[1] != '"' && it[1] != '\n')
        ++it;
      if (it + 1 != end_ && it[1] == '"')
        ++it;
      break;
    case '(':
    case '[':
    case '{':
      if (++depth > kMaxNesting) {
        diags_.error(loc(it), fmt::format("nesting deeper than {} levels",
                                          kMaxNesting));
        return false;
      }
      break;
    case ')':
    case ']':
    case '}':
      if (depth)
        --depth;
      break;
    default:
      break;
    }
  }
  return true;
}

void StatementParser::recover() {
  unsigned braces = 0;
  while (it_ != end_) {
    char c = *it_;
    if (c == '{') {
      ++braces;
    } else if (c == '}') {
      if (braces == 0)
        return; // closes the enclosing body: leave it for the caller
      if (--braces == 0) {
        ++it_;
        return;
      }
    } else if ((c == '\n' || c == ';') && braces == 0) {
      return;
    }
    ++it_;
  }
}

bool StatementParser::statement(Stmt &stmt) {
  Iterator start = it_;
  if (parse(word("let"), x3::unused)) {
    it_ = start;
    return parse(letStatement, stmt);
  }
  Expr head;
  if (!parse(call, head)) {
    diags_.error(loc(it_), fmt::format("expected a statement, found {}",
                                       describe(it_)));
    return false;
  }
  stmt.head = std::move(head);
  // Operands run to the end of the statement; `*expression` stops at the first
  // thing that cannot start one ('{', ';', a newline, ...).
  parse(*expression, stmt.operands);
  return true;
}

void StatementParser::statements(std::vector<Stmt> &out, Iterator open) {
  while (!diags_.tooManyErrors()) {
    x3::phrase_parse(it_, end_, *(x3::eol | ';'), lineSkipper);
    if (it_ == end_) {
      if (open)
        diags_.error(loc(open), "this '{' is never closed");
      return;
    }
    if (*it_ == '}') {
      if (open) {
        ++it_;
        return;
      }
      diags_.error(loc(it_), "'}' without a matching '{'");
      ++it_;
      continue;
    }

    Stmt stmt;
    bool ok = false;
    try {
      ok = statement(stmt);
      if (ok) {
        skipBlanks();
        if (it_ != end_ && *it_ == '{') {
          Iterator brace = it_++;
          stmt.hasBody = true;
          statements(stmt.body, brace);
          skipBlanks();
        }
        if (it_ != end_ && *it_ != '\n' && *it_ != '\r' && *it_ != ';' &&
            *it_ != '}') {
          diags_.error(loc(it_),
                       fmt::format("expected the end of the statement (a "
                                   "newline or ';'), found {}",
                                   describe(it_)));
          ok = false;
        }
      }
    } catch (const x3::expectation_failure<Iterator> &failure) {
      it_ = failure.where();
      skipBlanks();
      diags_.error(loc(it_), fmt::format("expected {}, found {}",
                                         failure.which(), describe(it_)));
      ok = false;
    }
    if (ok)
      out.push_back(std::move(stmt));
    else
      recover();
  }
}

std::vector<Stmt> StatementParser::run() {
  std::vector<Stmt> result;
  if (size_t(end_ - begin_) > kMaxSourceBytes) {
    diags_.error({}, fmt::format("the file is larger than {} MiB",
                                 kMaxSourceBytes >> 20));
    return result;
  }
  if (std::find(begin_, end_, '\0') != end_) {
    diags_.error(loc(std::find(begin_, end_, '\0')),
                 "the file contains a NUL byte; is it a text file?");
    return result;
  }
  if (!checkNesting())
    return result;
  it_ = begin_;
  statements(result, nullptr);
  return result;
}

} // namespace

std::vector<Stmt> parseStatements(const SourceFile &source,
                                  DiagnosticEngine &diags) {
  return StatementParser(source, diags).run();
}

} // namespace lruc::syntax
