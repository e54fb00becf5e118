#include "engine/chat/jinja/evaluator.h"

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/format.h"
#include "engine/chat/jinja/template_error.h"

namespace sluice::chat {

Evaluator::Evaluator(const ValueDict& globals, const RenderLimits& limits) : limits_(limits) {
  frames_.emplace_back();
  for (const auto& [key, value] : globals.entries()) frames_[0].vars[key.as_string()] = value;
  frames_.emplace_back();  // the template's own top-level assignments
}

std::string Evaluator::render(const Body& body) {
  std::string out;
  out_ = &out;
  const Flow flow = exec_body(body);
  if (flow != Flow::Normal) fail(SourcePos{}, "'break' or 'continue' outside a loop");
  return out;
}

void Evaluator::tick(SourcePos pos) {
  if (++steps_ > limits_.max_steps) {
    fail(pos, "template exceeded its limit of " + std::to_string(limits_.max_steps) + " steps");
  }
}

void Evaluator::write(const std::string& text, SourcePos pos) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    fail(pos, "template output exceeded " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out_->append(text);
}

Value Evaluator::lookup(const std::string& name) const {
  for (size_t i = frames_.size(); i-- > 0;) {
    const auto it = frames_[i].vars.find(name);
    if (it != frames_[i].vars.end()) return it->second;
    if (frames_[i].is_macro) {
      for (size_t j = 2; j-- > 0;) {
        const auto top = frames_[j].vars.find(name);
        if (top != frames_[j].vars.end()) return top->second;
      }
      break;
    }
  }
  return Value::undefined("'" + name + "' is undefined");
}

void Evaluator::assign(const std::string& name, Value value) { frames_.back().vars[name] = std::move(value); }

void Evaluator::unpack(const std::vector<std::string>& targets, const Value& value, SourcePos pos) {
  if (targets.size() == 1) {
    assign(targets[0], value);
    return;
  }
  ValueList items;
  try {
    items = iterate(value);
  } catch (const BuiltinError& e) {
    fail(pos, "cannot unpack: " + std::string(e.what()));
  }
  if (items.size() != targets.size()) {
    fail(pos, std::string(items.size() > targets.size() ? "too many" : "not enough") +
                  " values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                  std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], items[i]);
}

Evaluator::Flow Evaluator::exec_body(const Body& body) {
  for (const StmtPtr& s : body) {
    const Flow flow = exec(*s);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec(const Stmt& s) {
  tick(s.pos);
  switch (s.kind) {
    case Stmt::Kind::Text:
      write(s.text, s.pos);
      return Flow::Normal;
    case Stmt::Kind::Output:
      write(to_str(eval(*s.expr)), s.pos);
      return Flow::Normal;
    case Stmt::Kind::If:
      for (const auto& [cond, body] : s.branches) {
        if (eval(*cond).truthy()) return exec_body(body);
      }
      return exec_body(s.else_body);
    case Stmt::Kind::For:
      exec_for(s);
      return Flow::Normal;
    case Stmt::Kind::Set:
      exec_set(s);
      return Flow::Normal;
    case Stmt::Kind::SetBlock:
      assign(s.targets[0], Value(capture(s.body)));
      return Flow::Normal;
    case Stmt::Kind::Macro:
      assign(s.text, make_macro(s));
      return Flow::Normal;
    case Stmt::Kind::Break:
      return Flow::Break;
    case Stmt::Kind::Continue:
      return Flow::Continue;
    case Stmt::Kind::Scope:
      return exec_body(s.body);
  }
  return Flow::Normal;
}

void Evaluator::exec_set(const Stmt& s) {
  Value value = eval(*s.expr);
  if (s.attr.empty()) {
    unpack(s.targets, value, s.pos);
    return;
  }
  const Value target = lookup(s.targets[0]);
  if (!target.is_namespace()) fail(s.pos, "cannot assign attribute on non-namespace object");
  if (!s.attr.empty() && s.attr[0] == '_') fail(s.pos, "cannot assign an underscore-prefixed attribute");
  target.namespace_attrs().set(Value(s.attr), std::move(value));
}

void Evaluator::exec_for(const Stmt& s) {
  ValueList items;
  try {
    items = iterate(eval(*s.expr));
  } catch (const BuiltinError& e) {
    fail(s.expr->pos, e.what());
  }
  frames_.emplace_back();
  if (s.filter) {
    ValueList kept;
    for (Value& item : items) {
      tick(s.pos);
      unpack(s.targets, item, s.pos);
      if (eval(*s.filter).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const auto num_items = static_cast<int64_t>(items.size());
  auto cycle_index = std::make_shared<int64_t>(0);
  const Value cycle = Value::function("loop.cycle", [cycle_index](const CallArgs& args) -> Value {
    if (args.positional.empty()) throw BuiltinError("no items for cycling given");
    return args.positional[static_cast<size_t>(*cycle_index) % args.positional.size()];
  });
  for (int64_t i = 0; i < num_items; ++i) {
    tick(s.pos);
    *cycle_index = i;
    ValueDict loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(num_items - i));
    loop.set("revindex0", Value(num_items - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == num_items - 1));
    loop.set("length", Value(num_items));
    loop.set("depth", Value(1));
    loop.set("depth0", Value(0));
    loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
    loop.set("nextitem", i + 1 < num_items ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
    loop.set("cycle", cycle);
    assign("loop", Value(std::move(loop)));
    unpack(s.targets, items[static_cast<size_t>(i)], s.pos);
    if (exec_body(s.body) == Flow::Break) break;
  }
  frames_.pop_back();
  if (num_items == 0) exec_body(s.else_body);
}

std::string Evaluator::capture(const Body& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  if (buffer.size() > limits_.max_output_bytes) fail(SourcePos{}, "captured block too large");
  return buffer;
}

Value Evaluator::make_macro(const Stmt& s) {
  const Stmt* macro = &s;
  return Value::function(s.text, [this, macro](const CallArgs& args) { return call_macro(*macro, args); });
}

Value Evaluator::call_macro(const Stmt& s, const CallArgs& args) {
  tick(s.pos);
  if (call_depth_ >= limits_.max_call_depth) {
    fail(s.pos, "macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
  }
  if (args.positional.size() > s.params.size()) {
    throw BuiltinError("macro '" + s.text + "' takes not more than " + std::to_string(s.params.size()) +
                       " argument(s)");
  }
  for (const auto& [name, value] : args.keyword) {
    bool known = false;
    for (const auto& param : s.params) known = known || param.first == name;
    if (!known) throw BuiltinError("macro '" + s.text + "' takes no keyword argument '" + name + "'");
  }
  Frame frame;
  frame.is_macro = true;
  frames_.push_back(std::move(frame));
  ++call_depth_;
  struct Restore {
    Evaluator& ev;
    ~Restore() {
      ev.frames_.pop_back();
      --ev.call_depth_;
    }
  } restore{*this};
  for (size_t i = 0; i < s.params.size(); ++i) {
    const auto& [name, default_expr] = s.params[i];
    if (const Value* v = args.keyword_arg(name)) {
      assign(name, *v);
    } else if (i < args.positional.size()) {
      assign(name, args.positional[i]);
    } else if (default_expr) {
      assign(name, eval(*default_expr));
    } else {
      assign(name, Value::undefined("parameter '" + name + "' was not provided"));
    }
  }
  return Value(capture(s.body));
}

}  // namespace sluice::chat
