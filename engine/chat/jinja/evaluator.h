#pragma once
// Renders a parsed chat template: runs its statements and evaluates its expressions.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/chat/jinja/ast.h"
#include "engine/chat/jinja/value.h"

namespace sluice::chat {

// Bounds on one render, so that a hostile template cannot hang or exhaust the server.
struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;
  uint64_t max_steps = 5'000'000;  // statements run + loop iterations + calls
  int max_call_depth = 64;         // nested macro calls
};

// One render of one template. Owns its variable scopes and output; not shared between
// threads (each render makes its own). Throws TemplateRenderError, TemplateRaisedError.
class Evaluator {
 public:
  Evaluator(const ValueDict& globals, const RenderLimits& limits);

  std::string render(const Body& body);

 private:
  enum class Flow { Normal, Break, Continue };
  struct Frame {
    std::unordered_map<std::string, Value> vars;
    bool is_macro = false;  // lookups stop here, then continue at the template's top level
  };

  // --- statements (evaluator.cpp) ---
  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  void exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  std::string capture(const Body& body);
  Value make_macro(const Stmt& s);
  Value call_macro(const Stmt& s, const CallArgs& args);
  void write(const std::string& text, SourcePos pos);
  void tick(SourcePos pos);

  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value value);
  void unpack(const std::vector<std::string>& targets, const Value& value, SourcePos pos);

  // --- expressions (evaluator_expr.cpp) ---
  Value eval(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_compare(const Expr& e);
  Value eval_call(const Expr& e);
  CallArgs eval_args(const Expr& e, size_t first);
  Value get_attr(const Value& object, const std::string& name, SourcePos pos);
  Value get_item(const Value& object, const Value& key, SourcePos pos);
  Value get_slice(const Expr& e);
  [[noreturn]] void fail(SourcePos pos, const std::string& reason) const;
  // Throws the error an Undefined carries, for an operation that needs a real value.
  void require_defined(const Value& v, SourcePos pos) const;

  const RenderLimits limits_;
  std::vector<Frame> frames_;
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace sluice::chat
