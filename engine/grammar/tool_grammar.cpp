// The tool-call grammar: each function's parameters schema compiled on its own and
// grafted into one builder, the calls in the model family's markup around them, and
// the reasoning span before them as KMP automata over the closing word.
#include "engine/grammar/tool_grammar.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/json_schema.h"

namespace sluice::grammar {
namespace {

using Json = nlohmann::ordered_json;

// KMP transitions of `word`: next[q][b] is the length of the longest prefix of word
// that is a suffix of (the first q bytes of word) + b, for q < word.size().
std::vector<std::array<uint32_t, 256>> kmp_transitions(std::string_view word) {
  const size_t n = word.size();
  std::vector<std::array<uint32_t, 256>> next(n);
  uint32_t fallback = 0;  // the state of word[1..q) (the longest proper border of word[0..q))
  for (size_t q = 0; q < n; ++q) {
    next[q] = q == 0 ? std::array<uint32_t, 256>{} : next[fallback];
    next[q][static_cast<uint8_t>(word[q])] = static_cast<uint32_t>(q + 1);
    if (q > 0) fallback = next[fallback][static_cast<uint8_t>(word[q])];
  }
  return next;
}

// One rule per KMP state q < word.size(), alternatives grouped by target state.
// With `through`, the bytes that complete `word` end the rule instead (the text up
// to and including the first occurrence of word); without, the rule may end anywhere
// (the texts that never contain word).
uint32_t kmp_rules(GrammarBuilder& builder, std::string_view word, std::string_view name, bool through) {
  if (word.empty()) throw GrammarError("text_without: the word is empty");
  const auto next = kmp_transitions(word);
  const size_t n = word.size();
  std::vector<uint32_t> state_rule(n);
  for (size_t q = 0; q < n; ++q) state_rule[q] = builder.add_rule(std::string(name) + "-" + std::to_string(q));
  for (size_t q = 0; q < n; ++q) {
    std::vector<ByteSet> to(n + 1);  // target state -> the bytes that go there
    for (int b = 0; b < 256; ++b) to[next[q][static_cast<size_t>(b)]].set(static_cast<size_t>(b));
    std::vector<Alternative> alternatives;
    if (!through) alternatives.push_back({});
    for (size_t target = 0; target < n; ++target)
      if (to[target].any())
        alternatives.push_back({builder.bytes(to[target]), GrammarBuilder::ref(state_rule[target])});
    if (through) alternatives.push_back({builder.bytes(to[n])});
    builder.set_alternatives(state_rule[q], std::move(alternatives));
  }
  return state_rule[0];
}

// Reasoning text then its closing word, ending at the first occurrence of the word.
// For a word with no border ("</think>") this is text_without(word) + word; for one
// with a border it leaves out the texts in which the word ends earlier.
uint32_t text_through(GrammarBuilder& builder, std::string_view word, std::string_view name) {
  return kmp_rules(builder, word, name, true);
}

// The schema text that compiles to the function's arguments: "" and a schema without
// "type" mean an object; a schema allowing something else is refused (the arguments of
// a call are always an object). Inserting the key keeps every JSON pointer of the
// schema valid, so the compiler's error paths still point into the caller's text.
std::string object_schema(const std::string& parameters_json) {
  const size_t start = parameters_json.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return R"({"type":"object"})";
  const Json schema = Json::parse(parameters_json, nullptr, false);
  if (schema.is_discarded()) return parameters_json;  // the compiler reports the syntax error
  if (schema.is_boolean() && schema.get<bool>()) return R"({"type":"object"})";
  if (!schema.is_object()) return parameters_json;
  if (auto type = schema.find("type"); type != schema.end()) {
    const auto is_name = [](const Json& t) { return t.is_string(); };
    const bool names = is_name(*type) || (type->is_array() && std::all_of(type->begin(), type->end(), is_name));
    const bool only_object = *type == "object" || *type == Json::array({"object"});
    if (names && !only_object) throw GrammarError("the parameters of a function must be of type object", "/type");
    return parameters_json;
  }
  std::string out = parameters_json;
  out.insert(parameters_json[start] == '{' ? start + 1 : start, schema.empty() ? R"("type":"object")"
                                                                               : R"("type":"object",)");
  return out;
}

bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-')) return false;
  return true;
}

Alternative concat(Alternative a, const Alternative& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The answer after any reasoning: the calls (between calls_open and calls_close), or
// with response_open set, either those or the response.
uint32_t envelope(GrammarBuilder& b, uint32_t calls, const ToolGrammarOptions& options, const GrammarLimits& limits,
                  ToolGrammarResult& result) {
  if (options.calls_open.empty() && options.calls_close.empty() && options.response_open.empty()) return calls;
  Alternative wrapped = b.literal(options.calls_open);
  wrapped.push_back(GrammarBuilder::ref(calls));
  const uint32_t answer = b.add_rule("tool-envelope");
  b.add_alternative(answer, concat(std::move(wrapped), b.literal(options.calls_close)));
  if (options.response_open.empty()) return answer;
  JsonSchemaResult value;
  try {
    JsonSchemaOptions schema_options;
    schema_options.limits = limits;
    if (!options.response_spec) {
      value = compile_json_schema(R"({"type":"string"})", schema_options);
    } else if (options.response_spec->kind == GrammarSpec::Kind::json_schema) {
      schema_options.any_whitespace = options.response_spec->any_whitespace;
      schema_options.strict = options.response_spec->strict;
      value = compile_json_schema(options.response_spec->text, schema_options);
    } else if (options.response_spec->kind == GrammarSpec::Kind::json_object) {
      value.grammar = json_object_grammar(options.response_spec->any_whitespace);
    } else {
      throw GrammarError(std::string("a response of kind ") + std::string(kind_name(options.response_spec->kind)) +
                         " cannot go inside the tool envelope");
    }
  } catch (const GrammarError& e) {
    throw ResponseSchemaError(e);
  }
  for (const std::string& entry : value.unenforced) result.unenforced.push_back("response: " + entry);
  Alternative response = b.literal(options.response_open);
  response.push_back(GrammarBuilder::ref(graft(b, value.grammar, "response-")));
  b.add_alternative(answer, concat(std::move(response), b.literal(options.response_close)));
  if (b.num_elements() > limits.max_elements)
    throw GrammarError("the tool grammar has " + std::to_string(b.num_elements()) + " elements, over the limit of " +
                       std::to_string(limits.max_elements) + " (limit max_elements)");
  return answer;
}

}  // namespace

uint32_t graft(GrammarBuilder& builder, const Grammar& grammar, std::string_view prefix) {
  std::vector<uint32_t> rule_index(grammar.rules.size());
  for (size_t r = 0; r < grammar.rules.size(); ++r)
    rule_index[r] = builder.add_rule(std::string(prefix) + grammar.rules[r].name);
  std::vector<Element> set_element;
  set_element.reserve(grammar.byte_sets.size());
  for (const ByteSet& set : grammar.byte_sets) set_element.push_back(builder.bytes(set));
  for (size_t r = 0; r < grammar.rules.size(); ++r) {
    std::vector<Alternative> alternatives = grammar.rules[r].alternatives;
    for (Alternative& alternative : alternatives)
      for (Element& e : alternative)
        e = e.kind == Element::Kind::rule ? GrammarBuilder::ref(rule_index.at(e.index)) : set_element.at(e.index);
    builder.set_alternatives(rule_index[r], std::move(alternatives));
  }
  return rule_index.at(grammar.root);
}

uint32_t text_without(GrammarBuilder& builder, std::string_view word, std::string_view name) {
  return kmp_rules(builder, word, name, false);
}

ToolGrammarResult tool_call_grammar(const std::vector<ToolFunctionSchema>& functions,
                                    const ToolGrammarOptions& options, const GrammarLimits& limits) {
  if (functions.empty()) throw GrammarError("a tool grammar needs at least one function");
  if (!options.reasoning_open.empty() && options.reasoning_close.empty())
    throw GrammarError("a reasoning span needs a closing word");
  GrammarBuilder b;
  ToolGrammarResult result;
  const uint32_t call = b.add_rule("tool-call");
  for (size_t i = 0; i < functions.size(); ++i) {
    const ToolFunctionSchema& f = functions[i];
    if (!valid_name(f.name))
      throw GrammarError("function " + std::to_string(i) + ": the name '" + f.name +
                         "' is not of the letters, digits, '_', '.', ':' and '-'");
    JsonSchemaOptions schema_options;
    schema_options.strict = f.strict;
    schema_options.limits = limits;
    JsonSchemaResult arguments;
    try {
      arguments = compile_json_schema(object_schema(f.parameters_json), schema_options);
    } catch (const GrammarError& e) {
      throw ToolSchemaError(i, e);
    }
    for (const std::string& entry : arguments.unenforced) result.unenforced.push_back(f.name + ": " + entry);
    const uint32_t args = graft(b, arguments.grammar, "tool" + std::to_string(i) + "-");
    Alternative alternative = b.literal(options.before_name + f.name + options.between);
    alternative.push_back(GrammarBuilder::ref(args));
    b.add_alternative(call, concat(std::move(alternative), b.literal(options.after_arguments)));
    if (b.num_elements() > limits.max_elements)
      throw GrammarError("the tool grammar has " + std::to_string(b.num_elements()) + " elements, over the limit of " +
                         std::to_string(limits.max_elements) + " (limit max_elements)");
  }

  // One call, or calls separated by the separator (a right-recursive tail).
  uint32_t calls = call;
  if (options.parallel) {
    const uint32_t more = b.add_rule("tool-more-calls");
    Alternative next = b.literal(options.separator);
    next.push_back(GrammarBuilder::ref(call));
    next.push_back(GrammarBuilder::ref(more));
    b.set_alternatives(more, {std::move(next), {}});
    calls = b.sequence({GrammarBuilder::ref(call), GrammarBuilder::ref(more)}, "tool-calls");
  }

  ByteSet space;
  for (char c : std::string(" \t\n\r")) space.set(static_cast<uint8_t>(c));
  const Element ws = GrammarBuilder::ref(b.repeat(b.bytes(space), 0, -1, "tool-ws"));
  Alternative root;
  if (options.reasoning_open.empty()) {
    if (options.leading_whitespace) root.push_back(ws);
  } else {
    const Element rest = GrammarBuilder::ref(text_through(b, options.reasoning_close, "tool-reasoning"));
    if (options.starts_in_reasoning) {
      root = {rest, ws};
    } else {
      if (options.leading_whitespace) root.push_back(ws);
      Alternative span = b.literal(options.reasoning_open);
      span.push_back(rest);
      span.push_back(ws);
      const uint32_t reasoning = b.add_rule("tool-reasoning-span");
      b.set_alternatives(reasoning, {std::move(span), {}});
      root.push_back(GrammarBuilder::ref(reasoning));
    }
  }
  root.push_back(GrammarBuilder::ref(envelope(b, calls, options, limits, result)));
  const uint32_t start = b.sequence(std::move(root), "tool-root");
  result.grammar = std::move(b).build(start, limits.max_elements);
  return result;
}

}  // namespace sluice::grammar
