#pragma once
// A model's chat template (`tokenizer.chat_template`), compiled once at model load and
// rendered for each chat request into the prompt text.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja/ast.h"
#include "engine/chat/jinja/evaluator.h"
#include "engine/chat/jinja/template_error.h"
#include "engine/chat/jinja/value.h"

namespace sluice::chat {

struct ChatMessage {
  std::string role;
  std::string content;
  // More fields the template reads, in order after role and content: tool_calls,
  // tool_call_id, name, reasoning_content, ... A field named "content" replaces the
  // string above (a null content, or a list of content parts).
  std::vector<std::pair<std::string, Value>> fields;
};

struct RenderOptions {
  // Absent tokens are undefined in the template, as when a tokenizer has none.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // The request's tool schemas (a list of dicts); templates see `none` without them.
  std::optional<Value> tools;
  // Further variables: enable_thinking, date_string, ...
  std::vector<std::pair<std::string, Value>> variables;
  RenderLimits limits;
};

// A compiled template: the source and its syntax tree. Immutable after compile(), so
// any number of threads may render it at once; copies share the tree.
class ChatTemplate {
 public:
  // Throws TemplateSyntaxError ("line L, column C: reason") for a source this
  // interpreter cannot parse, including unknown filters, tests and tags.
  static ChatTemplate compile(std::string source);

  // Renders the prompt as Hugging Face's apply_chat_template(..., tokenize=False) does:
  // the template sees messages, add_generation_prompt, tools, documents, the special
  // tokens and options.variables. Throws TemplateRaisedError when the template rejects
  // the conversation (its raise_exception message), TemplateRenderError otherwise.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const RenderOptions& options = {}) const;

  // Renders a small sample conversation (system, user, assistant, user, with the
  // generation prompt; without the system message if the template refuses one), so a
  // template this interpreter cannot run fails at model load instead of at the first
  // request. Throws what render() throws.
  void validate(const RenderOptions& options = {}) const;

  const std::string& source() const { return source_; }

 private:
  ChatTemplate(std::string source, std::shared_ptr<const Body> body)
      : source_(std::move(source)), body_(std::move(body)) {}

  std::string source_;
  std::shared_ptr<const Body> body_;
};

}  // namespace sluice::chat
