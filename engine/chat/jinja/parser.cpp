#include "engine/chat/jinja/parser.h"

#include "engine/chat/jinja/parser_impl.h"

namespace sluice::chat {
namespace detail {

// Parses until a `{% name` whose name is in `ends` (left after the name, in `end`),
// or the end of the template when `ends` is empty.
Body Parser::parse_until(std::initializer_list<std::string_view> ends, std::string& end) {
  DepthGuard guard(*this);
  Body body;
  while (true) {
    const Token& t = cur();
    if (t.type == Type::End) {
      if (ends.size() == 0) return body;
      fail("unexpected end of template, expected '" + std::string(*(ends.end() - 1)) + "'");
    }
    if (t.type == Type::Text) {
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::Text;
      s->pos = t.pos;
      s->text = t.text;
      body.push_back(std::move(s));
      ++i_;
    } else if (t.type == Type::VarBegin) {
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::Output;
      s->pos = t.pos;
      ++i_;
      s->expr = parse_tuple(true);
      expect(Type::VarEnd, "end of print statement");
      body.push_back(std::move(s));
    } else if (t.type == Type::BlockBegin) {
      ++i_;
      if (cur().type == Type::Name) {
        for (std::string_view e : ends) {
          if (cur().text == e) {
            end = cur().text;
            ++i_;
            return body;
          }
        }
      }
      body.push_back(parse_statement());
    } else {
      fail("unexpected " + describe(t));
    }
  }
}

StmtPtr Parser::parse_statement() {
  if (cur().type != Type::Name) fail("expected a statement name, got " + describe(cur()));
  auto s = std::make_unique<Stmt>();
  s->pos = cur().pos;
  const std::string keyword = t_[i_++].text;
  std::string end;
  if (keyword == "if") {
    s->kind = Stmt::Kind::If;
    ExprPtr cond = parse_tuple(true);
    while (true) {
      expect_block_end();
      Body body = parse_until({"elif", "else", "endif"}, end);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_tuple(true);
        continue;
      }
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_until({"endif"}, end);
      }
      break;
    }
  } else if (keyword == "for") {
    s->kind = Stmt::Kind::For;
    const bool paren = skip_op("(");
    do {
      s->targets.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    if (!skip_name("in")) fail("expected 'in', got " + describe(cur()));
    s->expr = parse_tuple(false);
    if (skip_name("if")) s->filter = parse_expression(true);
    if (is_name("recursive")) fail("recursive for loops are not supported");
    expect_block_end();
    s->body = parse_until({"else", "endfor"}, end);
    if (end == "else") {
      expect_block_end();
      s->else_body = parse_until({"endfor"}, end);
    }
  } else if (keyword == "set") {
    s->targets.push_back(expect_name());
    if (skip_op(".")) {
      s->attr = expect_name();
    } else {
      while (skip_op(",")) s->targets.push_back(expect_name());
    }
    if (skip_op("=")) {
      s->kind = Stmt::Kind::Set;
      s->expr = parse_tuple(true);
    } else {
      if (s->targets.size() != 1 || !s->attr.empty()) fail("a block set assigns one plain name");
      if (is_op("|")) fail("filters on block set are not supported");
      s->kind = Stmt::Kind::SetBlock;
      expect_block_end();
      s->body = parse_until({"endset"}, end);
    }
  } else if (keyword == "macro") {
    s->kind = Stmt::Kind::Macro;
    s->text = expect_name();
    expect_op("(");
    while (!skip_op(")")) {
      std::string param = expect_name();
      ExprPtr default_value;
      if (skip_op("=")) default_value = parse_expression(true);
      s->params.emplace_back(std::move(param), std::move(default_value));
      if (!is_op(")")) expect_op(",");
    }
    expect_block_end();
    s->body = parse_until({"endmacro"}, end);
  } else if (keyword == "break" || keyword == "continue") {
    s->kind = keyword == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
  } else if (keyword == "generation") {
    s->kind = Stmt::Kind::Scope;
    expect_block_end();
    s->body = parse_until({"endgeneration"}, end);
  } else if (keyword == "call" || keyword == "filter" || keyword == "include" || keyword == "import" ||
             keyword == "from" || keyword == "extends" || keyword == "block" || keyword == "with" ||
             keyword == "do" || keyword == "autoescape") {
    throw TemplateSyntaxError(s->pos, "the '" + keyword + "' tag is not supported");
  } else {
    throw TemplateSyntaxError(s->pos, "unknown tag '" + keyword + "'");
  }
  expect_block_end();
  return s;
}

}  // namespace detail

Body parse(const std::vector<Token>& tokens) { return detail::Parser(tokens).parse_template(); }

}  // namespace sluice::chat
