// Expression evaluation of the Evaluator: Python's operators with Jinja's Undefined.
#include <cmath>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/evaluator.h"
#include "engine/chat/jinja/format.h"
#include "engine/chat/jinja/template_error.h"
#include "engine/chat/jinja/text.h"

namespace sluice::chat {
namespace {

std::string operand_error(const char* op, const Value& a, const Value& b) {
  return std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'";
}

template <typename Op>
int64_t checked(Op op, int64_t x, int64_t y) {
  int64_t r = 0;
  if (op(x, y, &r)) throw BuiltinError("integer overflow");
  return r;
}
bool add(int64_t x, int64_t y, int64_t* r) { return __builtin_add_overflow(x, y, r); }
bool sub(int64_t x, int64_t y, int64_t* r) { return __builtin_sub_overflow(x, y, r); }
bool mul(int64_t x, int64_t y, int64_t* r) { return __builtin_mul_overflow(x, y, r); }

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > kMaxStringBytes) throw BuiltinError("string too long");
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      if (a.as_list().size() + b.as_list().size() > kMaxListItems) throw BuiltinError("list too long");
      ValueList out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(out));
    }
  }
  if (op == "*" && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) {
    const Value& seq = (a.is_string() || a.is_list()) ? a : b;
    const Value& count = (a.is_string() || a.is_list()) ? b : a;
    if (!count.is_int() && !count.is_bool()) throw BuiltinError(operand_error("*", a, b));
    const int64_t n = std::max<int64_t>(0, count.as_int());
    if (seq.is_string()) {
      if (seq.as_string().size() * static_cast<size_t>(n) > kMaxStringBytes) throw BuiltinError("string too long");
      std::string out;
      for (int64_t i = 0; i < n; ++i) out += seq.as_string();
      return Value(std::move(out));
    }
    if (seq.as_list().size() * static_cast<size_t>(n) > kMaxListItems) throw BuiltinError("list too long");
    ValueList out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
    return Value(std::move(out));
  }
  if (!a.is_number() || !b.is_number()) throw BuiltinError(operand_error(op.c_str(), a, b));
  const bool ints = !a.is_float() && !b.is_float();
  const int64_t x = a.as_int(), y = b.as_int();
  const double dx = a.as_double(), dy = b.as_double();
  if (op == "+") return ints ? Value(checked(add, x, y)) : Value(dx + dy);
  if (op == "-") return ints ? Value(checked(sub, x, y)) : Value(dx - dy);
  if (op == "*") return ints ? Value(checked(mul, x, y)) : Value(dx * dy);
  if (op == "/") {
    if (dy == 0) throw BuiltinError("division by zero");
    return Value(dx / dy);
  }
  if (op == "//" || op == "%") {
    if (ints ? y == 0 : dy == 0) throw BuiltinError(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (ints) {
      if (x == INT64_MIN && y == -1) throw BuiltinError("integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        q -= 1;
        m += y;
      }
      return op == "//" ? Value(q) : Value(m);
    }
    const double m = std::fmod(dx, dy);
    const double mod = (m != 0 && ((m < 0) != (dy < 0))) ? m + dy : m;
    return op == "//" ? Value(std::floor(dx / dy)) : Value(mod);
  }
  if (op == "**") {
    if (ints && y >= 0) {
      int64_t result = 1;
      for (int64_t i = 0; i < y; ++i) result = checked(mul, result, x);
      return Value(result);
    }
    return Value(std::pow(dx, dy));
  }
  throw BuiltinError("unknown operator " + op);
}

// "'dict object'", as Jinja names an object in its messages. (Built by appending:
// g++ 12 warns falsely about `"'" + std::string` here.)
std::string object_name(const Value& v) {
  std::string s = "'";
  s += v.type_name();
  s += " object'";
  return s;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string()) throw BuiltinError("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.as_list()) {
        if (v.equals(item)) return true;
      }
      return false;
    case Value::Kind::Dict:
      return container.as_dict().find(item) != nullptr;
    case Value::Kind::Undefined:
      return false;
    default:
      throw BuiltinError("argument of type '" + container.type_name() + "' is not iterable");
  }
}

// Python's slice.indices(): the positions a[start:stop:step] selects.
std::vector<size_t> slice_positions(int64_t len, const Value& start, const Value& stop, const Value& step) {
  auto bound = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) throw BuiltinError("slice indices must be integers or None");
    return v.as_int();
  };
  const int64_t st = bound(step).value_or(1);
  if (st == 0) throw BuiltinError("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v < 0 ? *v + len : *v;
    if (st > 0) return std::clamp<int64_t>(i, 0, len);
    return std::clamp<int64_t>(i, -1, len - 1);
  };
  const int64_t lo = clamp(bound(start), st > 0 ? 0 : len - 1);
  const int64_t hi = clamp(bound(stop), st > 0 ? len : -1);
  std::vector<size_t> out;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

void Evaluator::fail(SourcePos pos, const std::string& reason) const { throw TemplateRenderError(pos, reason); }

void Evaluator::require_defined(const Value& v, SourcePos pos) const {
  if (v.is_undefined()) fail(pos, v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

Value Evaluator::eval(const Expr& e) {
  try {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.value;
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::List:
      case Expr::Kind::Tuple: {
        ValueList items;
        for (const ExprPtr& item : e.args) items.push_back(eval(*item));
        return e.kind == Expr::Kind::Tuple ? Value::tuple(std::move(items)) : Value(std::move(items));
      }
      case Expr::Kind::Dict: {
        ValueDict dict;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) dict.set(eval(*e.args[i]), eval(*e.args[i + 1]));
        return Value(std::move(dict));
      }
      case Expr::Kind::GetAttr: return get_attr(eval(*e.args[0]), e.name, e.pos);
      case Expr::Kind::GetItem: return get_item(eval(*e.args[0]), eval(*e.args[1]), e.pos);
      case Expr::Kind::Slice: return get_slice(e);
      case Expr::Kind::Call: return eval_call(e);
      case Expr::Kind::Filter: {
        const Value subject = eval(*e.args[0]);
        return find_filter(e.name)(subject, eval_args(e, 1));
      }
      case Expr::Kind::Test: {
        const Value subject = eval(*e.args[0]);
        return Value(find_test(e.name)(subject, eval_args(e, 1)) != e.negated);
      }
      case Expr::Kind::Unary: {
        const Value v = eval(*e.args[0]);
        if (e.name == "not") return Value(!v.truthy());
        require_defined(v, e.pos);
        if (!v.is_number()) throw BuiltinError("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
      }
      case Expr::Kind::Binary: return eval_binary(e);
      case Expr::Kind::Compare: return eval_compare(e);
      case Expr::Kind::Conditional:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined("the conditional expression had no else branch");
    }
  } catch (const BuiltinError& err) {
    fail(e.pos, err.what());
  }
  return Value();
}

Value Evaluator::eval_binary(const Expr& e) {
  if (e.name == "and" || e.name == "or") {
    Value lhs = eval(*e.args[0]);
    if (lhs.truthy() == (e.name == "or")) return lhs;
    return eval(*e.args[1]);
  }
  const Value lhs = eval(*e.args[0]);
  const Value rhs = eval(*e.args[1]);
  if (e.name == "~") {
    std::string s = to_str(lhs);
    const std::string r = to_str(rhs);
    if (s.size() + r.size() > kMaxStringBytes) throw BuiltinError("string too long");
    return Value(s + r);
  }
  require_defined(lhs, e.args[0]->pos);
  require_defined(rhs, e.args[1]->pos);
  return arithmetic(e.name, lhs, rhs);
}

Value Evaluator::eval_compare(const Expr& e) {
  Value lhs = eval(*e.args[0]);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value rhs = eval(*e.args[i + 1]);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") {
      ok = lhs.equals(rhs);
    } else if (op == "!=") {
      ok = !lhs.equals(rhs);
    } else if (op == "in" || op == "notin") {
      require_defined(lhs, e.args[i]->pos);
      ok = contains(rhs, lhs) == (op == "in");
    } else {
      require_defined(lhs, e.args[i]->pos);
      require_defined(rhs, e.args[i + 1]->pos);
      const int c = compare_values(lhs, rhs);
      ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!ok) return Value(false);
    lhs = std::move(rhs);
  }
  return Value(true);
}

CallArgs Evaluator::eval_args(const Expr& e, size_t first) {
  CallArgs args;
  for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i]));
  for (const auto& [name, expr] : e.kwargs) args.keyword.emplace_back(name, eval(*expr));
  return args;
}

Value Evaluator::eval_call(const Expr& e) {
  const Value callee = eval(*e.args[0]);
  require_defined(callee, e.args[0]->pos);
  if (!callee.is_callable()) fail(e.pos, "'" + callee.type_name() + "' object is not callable");
  const CallArgs args = eval_args(e, 1);
  tick(e.pos);
  return callee.call(args);
}

Value Evaluator::get_attr(const Value& object, const std::string& name, SourcePos pos) {
  require_defined(object, pos);
  if (!name.empty() && name[0] == '_') return Value::undefined("access to attribute '" + name + "' is unsafe");
  Value method = find_method(object, name);
  if (!method.is_undefined()) return method;
  if (object.is_dict() || object.is_namespace()) {
    if (const Value* v = object.as_dict().find(name)) return *v;
  }
  return Value::undefined(object_name(object) + " has no attribute '" + name + "'");
}

Value Evaluator::get_item(const Value& object, const Value& key, SourcePos pos) {
  require_defined(object, pos);
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().find(key)) return *v;
  } else if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    const bool is_list = object.is_list();
    std::vector<std::string_view> chars;
    if (!is_list) chars = text::chars(object.as_string());
    const auto len = static_cast<int64_t>(is_list ? object.as_list().size() : chars.size());
    const int64_t i = key.as_int() < 0 ? key.as_int() + len : key.as_int();
    if (i >= 0 && i < len) {
      return is_list ? object.as_list()[static_cast<size_t>(i)] : Value(std::string(chars[static_cast<size_t>(i)]));
    }
    return Value::undefined(object_name(object) + " has no element " + std::to_string(key.as_int()));
  }
  if (key.is_string()) {
    return get_attr(object, key.as_string(), pos);  // Jinja's item lookup falls back to attributes
  }
  return Value::undefined(object_name(object) + " has no element " + to_repr(key));
}

Value Evaluator::get_slice(const Expr& e) {
  const Value object = eval(*e.args[0]);
  require_defined(object, e.pos);
  Value bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (e.args[static_cast<size_t>(i) + 1]) bounds[i] = eval(*e.args[static_cast<size_t>(i) + 1]);
  }
  if (object.is_list()) {
    const ValueList& list = object.as_list();
    ValueList out;
    for (size_t i : slice_positions(static_cast<int64_t>(list.size()), bounds[0], bounds[1], bounds[2])) {
      out.push_back(list[i]);
    }
    return Value(std::move(out));
  }
  if (object.is_string()) {
    const std::vector<std::string_view> chars = text::chars(object.as_string());
    std::string out;
    for (size_t i : slice_positions(static_cast<int64_t>(chars.size()), bounds[0], bounds[1], bounds[2])) {
      out += chars[i];
    }
    return Value(std::move(out));
  }
  fail(e.pos, "'" + object.type_name() + "' object is not subscriptable");
}

}  // namespace sluice::chat
