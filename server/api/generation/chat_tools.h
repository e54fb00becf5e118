#pragma once
// What a chat request's tools, tool_choice and the model's reasoning make of its
// generation: whether the template gets the tools, how the output is read (the
// ChatFormat's parser), and whether a tool-call grammar constrains it (tool_choice
// required or a named function: from the first token; auto: lazily, from the start
// of a call on). docs/tools-and-reasoning.md is the contract.
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"
#include "engine/chat/tool_syntax.h"
#include "engine/grammar/tool_grammar.h"
#include "engine/request.h"
#include "proto/chat.h"
#include "proto/errors.h"
#include "server/api/generation/chat_format.h"

namespace sluice::server {

struct ChatToolPlan {
  bool render_tools = false;  // the template gets `tools`
  ChatOutputOptions output;   // how the output is read
  // A tool-call grammar over these functions (indices into request.tools); none
  // when the vector is empty.
  std::vector<size_t> constrained_functions;
  grammar::ToolGrammarOptions grammar;
  bool lazy = false;  // tool_choice auto: the grammar starts with a call
  // ToolCallSyntax::generic (a template that does not render tools): the messages are
  // rewritten for the template (chat_generic_tools.h), with the tools' instructions
  // unless tool_choice is none.
  bool generic = false;
  bool generic_instructions = false;
};

// A 400 (with `param`) for tools this model cannot take: a template that does not
// render them (and tool_call_parser none, or a named one: generic is the fallback), no
// parser for its calls, or a forced call together with response_format.
std::variant<ChatToolPlan, proto::ApiError> plan_chat_tools(const proto::ChatRequest& request,
                                                            const std::string& model_name,
                                                            const chat::TemplateTraits& syntax,
                                                            const config::Config& config);

// Once the prompt is rendered: whether the output starts inside reasoning.
void start_from_prompt(ChatToolPlan& plan, std::string_view rendered_prompt);

// tool_choice auto: where the lazy grammar starts.
engine::GrammarTrigger grammar_trigger(const ChatToolPlan& plan, const chat::TemplateTraits& syntax);

}  // namespace sluice::server
