#pragma once
// The syntax tree of a compiled chat template. Built once by the parser, then only read
// (by any number of renders at once).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja/template_error.h"
#include "engine/chat/jinja/value.h"

namespace sluice::chat {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;
using KeywordArgs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Kind {
    Literal,      // value
    Name,         // name
    List,         // args: items
    Tuple,        // args: items
    Dict,         // args: key, value, key, value, ...
    GetAttr,      // args[0].name
    GetItem,      // args[0][args[1]]
    Slice,        // args[0][args[1]:args[2]:args[3]], each bound may be null
    Call,         // args[0](args[1:], kwargs)
    Filter,       // args[0] | name(args[1:], kwargs)
    Test,         // args[0] is [not] name(args[1:], kwargs)
    Unary,        // name ("not", "-", "+") args[0]
    Binary,       // args[0] name args[1]: and or + - * / // % ** ~
    Compare,      // args[0] ops[0] args[1] ops[1] args[2] ... (== != < <= > >= in notin)
    Conditional,  // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  SourcePos pos;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  KeywordArgs kwargs;
  std::vector<std::string> ops;
  bool negated = false;  // Test: `is not`
};

struct Stmt {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // branches (cond, body); else_body
    For,       // for targets in expr [if filter]: body [else else_body]
    Set,       // set targets = expr; or set targets[0].attr = expr
    SetBlock,  // set targets[0] %} body {% endset
    Macro,     // macro name(params) body
    Break,
    Continue,
    Scope,     // a body rendered in place ({% generation %})
  };
  Kind kind;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::string attr;                                    // Set on a namespace attribute
  std::vector<std::pair<std::string, ExprPtr>> params; // Macro: name, default (may be null)
};

}  // namespace sluice::chat
