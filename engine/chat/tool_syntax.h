#pragma once
// How a model family writes tool calls and reasoning in its output text: the names
// the config uses (vLLM's --tool-call-parser / --reasoning-parser spirit), and the
// exact markup a constrained call is generated with. Shared by the output parser
// (output_parser.h), the tool-call grammar (engine/grammar/tool_grammar.h, which
// takes the shape as plain strings) and model loading (which picks a syntax from
// the chat template).
#include <optional>
#include <string>
#include <string_view>

namespace sluice::chat {

enum class ToolCallSyntax {
  none,
  // Hermes / Qwen2.5 / Qwen3 / SmolLM2 fine-tunes:
  //   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
  // one wrapper per call, anywhere in the output; text before and after is content.
  hermes,
  // Llama 3.x custom tools: {"name": "f", "parameters": {...}} as the whole output
  // (leading whitespace allowed), optionally after <|python_tag|>; several calls
  // separated by ";". "arguments" is accepted for "parameters".
  llama3_json,
  // sluice's own format for templates that know nothing of tools (the server writes the
  // tools into a system message): the whole output is one JSON object,
  //   {"tool_calls": [{"name": "f", "arguments": {...}}, ...]}  or  {"response": "text"}
  // enforced by a grammar from the first token.
  generic,
};

enum class ReasoningSyntax {
  none,
  // <think>...</think> before the answer (Qwen3, DeepSeek R1, QwQ). The output may
  // open <think> itself, or the prompt may have opened it (the template's
  // generation prompt ends inside it); see starts_in_reasoning().
  think,
};

// Config spellings: "hermes", "llama3_json", "generic", "none" / "qwen3", "deepseek_r1", "think", "none".
std::optional<ToolCallSyntax> tool_call_syntax_named(std::string_view name);
std::optional<ReasoningSyntax> reasoning_syntax_named(std::string_view name);
std::string_view tool_call_syntax_name(ToolCallSyntax syntax);
std::string_view reasoning_syntax_name(ReasoningSyntax syntax);

// What a chat template says about the model: the tool-call syntax its tool prompt
// teaches (hermes when it writes "<tool_call>", llama3_json when it writes
// "<|python_tag|>" or asks for {"name": ..., "parameters": ...}), whether it renders
// the `tools` variable at all, and whether it thinks (<think> in the template).
struct TemplateTraits {
  bool renders_tools = false;
  ToolCallSyntax tool_calls = ToolCallSyntax::none;
  ReasoningSyntax reasoning = ReasoningSyntax::none;
};
TemplateTraits template_traits(std::string_view template_source);

// Reasoning tags.
inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

// Whether generation continues inside an opened <think>: the rendered prompt's last
// "<think>" comes after its last "</think>" (DeepSeek R1 templates, or a prompt
// that ends with "<think>\n").
bool starts_in_reasoning(std::string_view rendered_prompt);

// A constrained call as the grammar writes it: before_name NAME between
// ARGUMENTS after_arguments, calls separated by `separator`.
struct ToolCallShape {
  std::string before_name;
  std::string between;
  std::string after_arguments;
  std::string separator;
  // The text whose appearance in free output starts a call (tool_choice auto: the
  // grammar applies from there on); empty: only at the start of the output.
  std::string trigger;
  // generic: the envelope. The calls go between calls_open and calls_close; a text
  // answer is response_open, a JSON string, response_close. Empty for the others.
  std::string calls_open;
  std::string calls_close;
  std::string response_open;
  std::string response_close;
};
ToolCallShape tool_call_shape(ToolCallSyntax syntax);

}  // namespace sluice::chat
