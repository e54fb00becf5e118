// The expression half of the chat-template parser, in Jinja's precedence order.
#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/parser_impl.h"

namespace sluice::chat::detail {

// An expression, or several separated by commas (a tuple, as in `set a, b = 1, 2`).
ExprPtr Parser::parse_tuple(bool with_conditional) {
  const SourcePos pos = cur().pos;
  ExprPtr first = parse_expression(with_conditional);
  if (!is_op(",")) return first;
  auto tuple = make_expr(Expr::Kind::Tuple, pos);
  tuple->args.push_back(std::move(first));
  while (skip_op(",")) {
    if (!can_start_expression()) break;
    tuple->args.push_back(parse_expression(with_conditional));
  }
  return tuple;
}

bool Parser::can_start_expression() const {
  const Token& t = cur();
  if (t.type == Type::Name || t.type == Type::String || t.type == Type::Int || t.type == Type::Float) return true;
  return t.type == Type::Operator && (t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" ||
                                      t.text == "+");
}

ExprPtr Parser::parse_expression(bool with_conditional) {
  DepthGuard guard(*this);
  ExprPtr expr = parse_or();
  while (with_conditional && is_name("if")) {
    auto cond = make_expr(Expr::Kind::Conditional, cur().pos);
    ++i_;
    cond->args.push_back(std::move(expr));
    cond->args.push_back(parse_or());
    cond->args.push_back(skip_name("else") ? parse_expression(true) : nullptr);
    expr = std::move(cond);
  }
  return expr;
}

ExprPtr Parser::binary(const char* op, ExprPtr lhs, ExprPtr rhs, SourcePos pos) {
  auto e = make_expr(Expr::Kind::Binary, pos);
  e->name = op;
  e->args.push_back(std::move(lhs));
  e->args.push_back(std::move(rhs));
  return e;
}

ExprPtr Parser::parse_or() {
  ExprPtr lhs = parse_and();
  while (is_name("or")) {
    const SourcePos pos = t_[i_++].pos;
    lhs = binary("or", std::move(lhs), parse_and(), pos);
  }
  return lhs;
}

ExprPtr Parser::parse_and() {
  ExprPtr lhs = parse_not();
  while (is_name("and")) {
    const SourcePos pos = t_[i_++].pos;
    lhs = binary("and", std::move(lhs), parse_not(), pos);
  }
  return lhs;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(*this);
    auto e = make_expr(Expr::Kind::Unary, t_[i_++].pos);
    e->name = "not";
    e->args.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const SourcePos pos = cur().pos;
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().type == Type::Operator &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
         cur().text == ">" || cur().text == ">=")) {
      op = t_[i_++].text;
    } else if (is_name("in")) {
      ++i_;
      op = "in";
    } else if (is_name("not") && peek().type == Type::Name && peek().text == "in") {
      i_ += 2;
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make_expr(Expr::Kind::Compare, pos);
      cmp->args.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr lhs = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = t_[i_++];
    lhs = binary(t.text == "+" ? "+" : "-", std::move(lhs), parse_concat(), t.pos);
  }
  return lhs;
}

ExprPtr Parser::parse_concat() {
  ExprPtr lhs = parse_math2();
  while (is_op("~")) {
    const SourcePos pos = t_[i_++].pos;
    lhs = binary("~", std::move(lhs), parse_math2(), pos);
  }
  return lhs;
}

ExprPtr Parser::parse_math2() {
  ExprPtr lhs = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = t_[i_++];
    const char* op = t.text == "*" ? "*" : t.text == "/" ? "/" : t.text == "//" ? "//" : "%";
    lhs = binary(op, std::move(lhs), parse_pow(), t.pos);
  }
  return lhs;
}

ExprPtr Parser::parse_pow() {
  ExprPtr lhs = parse_unary(true);
  while (is_op("**")) {
    const SourcePos pos = t_[i_++].pos;
    lhs = binary("**", std::move(lhs), parse_unary(true), pos);
  }
  return lhs;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard guard(*this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make_expr(Expr::Kind::Unary, cur().pos);
    node->name = t_[i_++].text;
    node->args.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filter_expr(std::move(node)) : std::move(node);
}

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  auto literal = [&](Value v) {
    auto e = make_expr(Expr::Kind::Literal, t.pos);
    e->value = std::move(v);
    ++i_;
    return e;
  };
  switch (t.type) {
    case Type::Name:
      if (t.text == "true" || t.text == "True") return literal(Value(true));
      if (t.text == "false" || t.text == "False") return literal(Value(false));
      if (t.text == "none" || t.text == "None") return literal(Value::none());
      {
        auto e = make_expr(Expr::Kind::Name, t.pos);
        e->name = t.text;
        ++i_;
        return e;
      }
    case Type::String: {
      auto e = make_expr(Expr::Kind::Literal, t.pos);
      std::string s;
      while (cur().type == Type::String) s += t_[i_++].text;
      e->value = Value(std::move(s));
      return e;
    }
    case Type::Int: return literal(Value(t.int_value));
    case Type::Float: return literal(Value(t.float_value));
    case Type::Operator:
      if (t.text == "(") return parse_parenthesized();
      if (t.text == "[") return parse_list();
      if (t.text == "{") return parse_dict();
      break;
    default: break;
  }
  fail("unexpected " + describe(t));
}

ExprPtr Parser::parse_parenthesized() {
  const SourcePos pos = cur().pos;
  expect_op("(");
  if (skip_op(")")) return make_expr(Expr::Kind::Tuple, pos);
  ExprPtr first = parse_expression(true);
  if (skip_op(")")) return first;
  auto tuple = make_expr(Expr::Kind::Tuple, pos);
  tuple->args.push_back(std::move(first));
  while (skip_op(",")) {
    if (is_op(")")) break;
    tuple->args.push_back(parse_expression(true));
  }
  expect_op(")");
  return tuple;
}

ExprPtr Parser::parse_list() {
  auto list = make_expr(Expr::Kind::List, cur().pos);
  expect_op("[");
  while (!skip_op("]")) {
    list->args.push_back(parse_expression(true));
    if (!is_op("]")) expect_op(",");
  }
  return list;
}

ExprPtr Parser::parse_dict() {
  auto dict = make_expr(Expr::Kind::Dict, cur().pos);
  expect_op("{");
  while (!skip_op("}")) {
    dict->args.push_back(parse_expression(true));
    expect_op(":");
    dict->args.push_back(parse_expression(true));
    if (!is_op("}")) expect_op(",");
  }
  return dict;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    const SourcePos pos = cur().pos;
    if (skip_op(".")) {
      if (cur().type == Type::Int) {
        auto e = make_expr(Expr::Kind::GetItem, pos);
        e->args.push_back(std::move(node));
        auto index = make_expr(Expr::Kind::Literal, cur().pos);
        index->value = Value(t_[i_++].int_value);
        e->args.push_back(std::move(index));
        node = std::move(e);
      } else {
        auto e = make_expr(Expr::Kind::GetAttr, pos);
        e->args.push_back(std::move(node));
        e->name = expect_name();
        node = std::move(e);
      }
    } else if (is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const SourcePos pos = cur().pos;
  expect_op("[");
  ExprPtr bounds[3];
  bool is_slice = false;
  for (int part = 0; part < 3; ++part) {
    if (!is_op(":") && !is_op("]")) bounds[part] = parse_expression(true);
    if (part < 2 && skip_op(":")) {
      is_slice = true;
      continue;
    }
    break;
  }
  expect_op("]");
  auto e = make_expr(is_slice ? Expr::Kind::Slice : Expr::Kind::GetItem, pos);
  e->args.push_back(std::move(node));
  if (!is_slice) {
    if (!bounds[0]) throw TemplateSyntaxError(pos, "expected a subscript");
    e->args.push_back(std::move(bounds[0]));
  } else {
    for (auto& b : bounds) e->args.push_back(std::move(b));
  }
  return e;
}

// Positional arguments and `name=value` keyword arguments between parentheses.
void Parser::parse_args(Expr& into) {
  expect_op("(");
  while (!skip_op(")")) {
    if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
    if (cur().type == Type::Name && peek().type == Type::Operator && peek().text == "=") {
      std::string name = t_[i_].text;
      i_ += 2;
      into.kwargs.emplace_back(std::move(name), parse_expression(true));
    } else {
      if (!into.kwargs.empty()) fail("positional argument after keyword argument");
      into.args.push_back(parse_expression(true));
    }
    if (!is_op(")")) expect_op(",");
  }
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  auto e = make_expr(Expr::Kind::Call, cur().pos);
  e->args.push_back(std::move(callee));
  parse_args(*e);
  return e;
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      ++i_;
      auto e = make_expr(Expr::Kind::Filter, cur().pos);
      e->name = expect_name();
      while (skip_op(".")) e->name += "." + expect_name();
      if (find_filter(e->name) == nullptr) throw TemplateSyntaxError(e->pos, "no filter named '" + e->name + "'");
      e->args.push_back(std::move(node));
      if (is_op("(")) parse_args(*e);
      node = std::move(e);
    } else if (is_name("is")) {
      ++i_;
      auto e = make_expr(Expr::Kind::Test, cur().pos);
      e->negated = skip_name("not");
      e->name = expect_name();
      if (find_test(e->name) == nullptr) throw TemplateSyntaxError(e->pos, "no test named '" + e->name + "'");
      e->args.push_back(std::move(node));
      if (is_op("(")) {
        parse_args(*e);
      } else if ((cur().type == Type::Name || cur().type == Type::String || cur().type == Type::Int ||
                  cur().type == Type::Float || is_op("[") || is_op("{")) &&
                 !is_name("else") && !is_name("or") && !is_name("and")) {
        e->args.push_back(parse_postfix(parse_primary()));
      }
      node = std::move(e);
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

}  // namespace sluice::chat::detail
