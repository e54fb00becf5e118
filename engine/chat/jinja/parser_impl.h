#pragma once
// Internal to parser.cpp and parser_expr.cpp: the parser's state and helpers.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja/ast.h"
#include "engine/chat/jinja/lexer.h"

namespace sluice::chat::detail {

inline constexpr int kMaxNesting = 200;  // expression and block nesting; far above any real template

using Type = Token::Type;

inline ExprPtr make_expr(Expr::Kind kind, SourcePos pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

// The recursive-descent parser over one token list; statements in parser.cpp,
// expressions in parser_expr.cpp. Lives for one parse() call, on one thread.
class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body parse_template() {
    std::string end;
    Body body = parse_until({}, end);
    return body;
  }

 private:
  // --- token helpers ---------------------------------------------------------
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  bool is_op(std::string_view op) const { return cur().type == Type::Operator && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().type == Type::Name && cur().text == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    ++i_;
    return true;
  }

  [[noreturn]] void fail(const std::string& reason) const { throw TemplateSyntaxError(cur().pos, reason); }

  std::string describe(const Token& t) const {
    switch (t.type) {
      case Type::End: return "end of template";
      case Type::BlockEnd: return "end of statement block";
      case Type::VarEnd: return "end of print statement";
      case Type::Text: return "template text";
      default: return "'" + t.text + "'";
    }
  }

  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != Type::Name) fail("expected a name, got " + describe(cur()));
    return t_[i_++].text;
  }
  void expect(Type type, const char* what) {
    if (cur().type != type) fail(std::string("expected ") + what + ", got " + describe(cur()));
    ++i_;
  }
  void expect_block_end() { expect(Type::BlockEnd, "end of statement block"); }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };
  // --- statements (parser.cpp) ---
  // Parses until a `{% name` whose name is in `ends` (left after the name, in `end`),
  // or the end of the template when `ends` is empty.
  Body parse_until(std::initializer_list<std::string_view> ends, std::string& end);
  StmtPtr parse_statement();

  // --- expressions (parser_expr.cpp) ---
  // An expression, or several separated by commas (a tuple, as in `set a, b = 1, 2`).
  ExprPtr parse_tuple(bool with_conditional);
  bool can_start_expression() const;
  ExprPtr parse_expression(bool with_conditional);
  ExprPtr binary(const char* op, ExprPtr lhs, ExprPtr rhs, SourcePos pos);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_parenthesized();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  // Positional arguments and `name=value` keyword arguments between parentheses.
  void parse_args(Expr& into);
  ExprPtr parse_call(ExprPtr callee);
  ExprPtr parse_filter_expr(ExprPtr node);

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace sluice::chat::detail
