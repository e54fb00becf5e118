#include "engine/chat/chat_template.h"

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/lexer.h"
#include "engine/chat/jinja/parser.h"

namespace sluice::chat {
namespace {

bool is_reasoning_field(const std::string& name) {
  return name == "reasoning_content" || name == "thinking" || name == "reasoning";
}

// A message as the template sees it. Like transformers, reasoning given under any of
// its names is also offered as `thinking` (first) and `reasoning_content` (last).
Value message_value(const ChatMessage& m) {
  const Value* reasoning = nullptr;
  for (const char* name : {"reasoning_content", "thinking", "reasoning"}) {
    for (const auto& [key, value] : m.fields) {
      if (reasoning == nullptr && key == name && !value.is_none() && !value.is_undefined()) reasoning = &value;
    }
  }
  ValueDict dict;
  if (reasoning != nullptr) dict.set("thinking", *reasoning);
  dict.set("role", Value(m.role));
  dict.set("content", Value(m.content));
  for (const auto& [key, value] : m.fields) {
    if (reasoning != nullptr && is_reasoning_field(key) && key != "reasoning" && value.is_none()) continue;
    dict.set(Value(key), value);
  }
  if (reasoning != nullptr) dict.set("reasoning_content", *reasoning);
  return Value(std::move(dict));
}

}  // namespace

ChatTemplate ChatTemplate::compile(std::string source) {
  auto body = std::make_shared<const Body>(parse(tokenize(source)));
  return ChatTemplate(std::move(source), std::move(body));
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                 const RenderOptions& options) const {
  ValueDict globals = global_functions();
  ValueList message_values;
  message_values.reserve(messages.size());
  for (const ChatMessage& m : messages) message_values.push_back(message_value(m));
  globals.set("messages", Value(std::move(message_values)));
  globals.set("tools", options.tools ? *options.tools : Value::none());
  globals.set("documents", Value::none());
  globals.set("add_generation_prompt", Value(add_generation_prompt));
  if (options.bos_token) globals.set("bos_token", Value(*options.bos_token));
  if (options.eos_token) globals.set("eos_token", Value(*options.eos_token));
  for (const auto& [name, value] : options.variables) globals.set(Value(name), value);
  return Evaluator(globals, options.limits).render(*body_);
}

void ChatTemplate::validate(const RenderOptions& options) const {
  std::vector<ChatMessage> sample = {
      {"system", "You are a helpful assistant.", {}},
      {"user", "Hello!", {}},
      {"assistant", "Hi! How can I help?", {}},
      {"user", "What is 2 + 2?", {}},
  };
  try {
    render(sample, true, options);
  } catch (const TemplateRaisedError&) {
    // Some templates (Gemma 2, older Mistral) refuse a system message on purpose.
    sample.erase(sample.begin());
    render(sample, true, options);
  }
}

}  // namespace sluice::chat
