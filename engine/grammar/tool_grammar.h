#pragma once
// The grammar of tool calls (tool_choice required, a named function, or a started
// call under auto): one or more calls in a model family's markup (the shape as
// plain strings: chat/tool_syntax.h fills them), each call one of the functions with
// its arguments matching that function's `parameters` JSON Schema (compact JSON,
// json_schema.h). Optionally a reasoning span may come first.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/grammar/limits.h"

namespace sluice::grammar {

struct ToolFunctionSchema {
  std::string name;
  std::string parameters_json;  // a JSON Schema object as text; "" or "{}": any JSON object
  bool strict = false;          // refuse keywords the grammar cannot enforce (else unenforced)
};

struct ToolGrammarOptions {
  // A call: before_name NAME between ARGUMENTS after_arguments (NAME as written, no escaping
  // needed: names are [A-Za-z0-9_.:-]). Calls are separated by `separator`.
  std::string before_name;
  std::string between;
  std::string after_arguments;
  std::string separator;
  bool parallel = true;  // false: exactly one call; true: one or more
  // Reasoning that may come first: open, any text without `close`, close, then
  // optional whitespace (Qwen3 thinks before it calls). Empty open: none.
  std::string reasoning_open;
  std::string reasoning_close;
  bool starts_in_reasoning = false;  // the prompt opened the span: the output starts inside it
  // Whitespace (space, \t, \n, \r) allowed before the first call.
  bool leading_whitespace = true;
  // The generic envelope (chat/tool_syntax.h, ToolCallSyntax::generic): the calls go
  // between calls_open and calls_close; with response_open set, the output may instead
  // be response_open VALUE response_close, VALUE a JSON string, or with response_spec
  // a value of that constraint (json_schema or json_object kinds only).
  std::string calls_open;
  std::string calls_close;
  std::string response_open;
  std::string response_close;
  std::optional<GrammarSpec> response_spec;
};

// The response_spec that the compiler refuses (its JSON Schema, or a kind that is not JSON).
class ResponseSchemaError : public GrammarError {
 public:
  explicit ResponseSchemaError(const GrammarError& error) : GrammarError(error.what()) {}
};

// A function whose schema the compiler refuses.
class ToolSchemaError : public GrammarError {
 public:
  ToolSchemaError(size_t function_index, const GrammarError& error)
      : GrammarError(error.what()), function_index_(function_index), schema_where_(error.where()) {}
  size_t function_index() const { return function_index_; }
  const std::string& schema_where() const { return schema_where_; }  // JSON pointer into its parameters

 private:
  size_t function_index_;
  std::string schema_where_;
};

struct ToolGrammarResult {
  Grammar grammar;
  // "get_weather: /properties/x/format: ..." (non-strict functions); "response: ..." for response_spec
  std::vector<std::string> unenforced;
};

// Throws ToolSchemaError for a refused schema, ResponseSchemaError for a refused
// response_spec, GrammarError for no functions or a limit.
ToolGrammarResult tool_call_grammar(const std::vector<ToolFunctionSchema>& functions,
                                    const ToolGrammarOptions& options, const GrammarLimits& limits = {});

// Helpers the tool grammar is built from, for other front ends too:
class GrammarBuilder;
// Copies every rule of `grammar` into `builder` (names prefixed with `prefix`);
// returns the index of its root there.
uint32_t graft(GrammarBuilder& builder, const Grammar& grammar, std::string_view prefix);
// A rule matching any byte string that does not contain `word` (non-empty).
uint32_t text_without(GrammarBuilder& builder, std::string_view word, std::string_view name);

}  // namespace sluice::grammar
