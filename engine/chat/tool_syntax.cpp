#include "engine/chat/tool_syntax.h"

#include <cctype>

namespace sluice::chat {
namespace {

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Whether the template uses the `tools` variable in code: an identifier `tools` inside
// a {{ }} or {% %} block, outside its string literals. Prose such as "<tools></tools>"
// in a string, or `builtin_tools` / `tools_in_user_message`, does not count: only a
// template that reads the variable can render the tools it is given.
bool mentions_tools_variable(std::string_view source) {
  size_t pos = 0;
  while (pos + 1 < source.size()) {
    const size_t open = source.find('{', pos);
    if (open == std::string_view::npos || open + 1 >= source.size()) return false;
    const char kind = source[open + 1];
    if (kind == '#') {  // a comment: skipped whole
      const size_t close = source.find("#}", open + 2);
      if (close == std::string_view::npos) return false;
      pos = close + 2;
      continue;
    }
    if (kind != '{' && kind != '%') {
      pos = open + 1;
      continue;
    }
    const char closer = kind == '{' ? '}' : '%';
    size_t i = open + 2;
    while (i < source.size()) {
      const char c = source[i];
      if (c == '"' || c == '\'') {  // a string literal: skipped (backslash escapes)
        for (++i; i < source.size() && source[i] != c; ++i) {
          if (source[i] == '\\') ++i;
        }
        ++i;
        continue;
      }
      if (c == closer && i + 1 < source.size() && source[i + 1] == '}') break;
      if (is_identifier_char(c)) {
        const size_t start = i;
        while (i < source.size() && is_identifier_char(source[i])) ++i;
        if (source.substr(start, i - start) == "tools") return true;
        continue;
      }
      ++i;
    }
    pos = i + 2;
  }
  return false;
}

}  // namespace

std::optional<ToolCallSyntax> tool_call_syntax_named(std::string_view name) {
  if (name == "hermes") return ToolCallSyntax::hermes;
  if (name == "llama3_json") return ToolCallSyntax::llama3_json;
  if (name == "generic") return ToolCallSyntax::generic;
  if (name == "none") return ToolCallSyntax::none;
  return std::nullopt;
}

std::optional<ReasoningSyntax> reasoning_syntax_named(std::string_view name) {
  // The reasoning-parser names of vLLM that mean plain <think>...</think>.
  if (name == "qwen3" || name == "deepseek_r1" || name == "think") return ReasoningSyntax::think;
  if (name == "none") return ReasoningSyntax::none;
  return std::nullopt;
}

std::string_view tool_call_syntax_name(ToolCallSyntax syntax) {
  switch (syntax) {
    case ToolCallSyntax::hermes: return "hermes";
    case ToolCallSyntax::llama3_json: return "llama3_json";
    case ToolCallSyntax::generic: return "generic";
    case ToolCallSyntax::none: break;
  }
  return "none";
}

std::string_view reasoning_syntax_name(ReasoningSyntax syntax) {
  return syntax == ReasoningSyntax::think ? "think" : "none";
}

TemplateTraits template_traits(std::string_view template_source) {
  TemplateTraits traits;
  traits.renders_tools = mentions_tools_variable(template_source);
  // Hermes first: a template that teaches <tool_call> wrappers may also mention
  // "parameters" (in its schema prose), never the other way round.
  if (contains(template_source, "<tool_call>")) {
    traits.tool_calls = ToolCallSyntax::hermes;
  } else if (contains(template_source, "<|python_tag|>") || contains(template_source, "\"parameters\"")) {
    traits.tool_calls = ToolCallSyntax::llama3_json;
  }
  if (contains(template_source, kThinkOpen)) traits.reasoning = ReasoningSyntax::think;
  return traits;
}

bool starts_in_reasoning(std::string_view rendered_prompt) {
  const size_t open = rendered_prompt.rfind(kThinkOpen);
  if (open == std::string_view::npos) return false;
  const size_t close = rendered_prompt.rfind(kThinkClose);
  return close == std::string_view::npos || close < open;
}

ToolCallShape tool_call_shape(ToolCallSyntax syntax) {
  switch (syntax) {
    case ToolCallSyntax::hermes:
      return {"<tool_call>\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>", "\n", "<tool_call>"};
    case ToolCallSyntax::llama3_json:
      // Llama writes a call as the whole answer, so there is no trigger: a constrained
      // call starts at the start of the output.
      return {"{\"name\": \"", "\", \"parameters\": ", "}", "; ", ""};
    case ToolCallSyntax::generic:
      return {"{\"name\": \"", "\", \"arguments\": ", "}", ", ", "",
              "{\"tool_calls\": [", "]}", "{\"response\": ", "}"};
    case ToolCallSyntax::none: break;
  }
  return {};
}

}  // namespace sluice::chat
