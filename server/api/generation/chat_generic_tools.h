#pragma once
// The generic tool format (chat::ToolCallSyntax::generic) on the prompt side: for a
// chat template that knows nothing of tools (SmolLM2's and Gemma 3's as shipped), the
// messages are rewritten before rendering so that the model sees the tools and the
// conversation's calls as plain text:
// - a system text lists the tools (one JSON line each: name, description, parameters)
//   and asks for one JSON object, {"tool_calls": [...]} or {"response": "..."} (only
//   the calls under tool_choice required or a named function); it is appended to the
//   first system message, or is a new first one (or, for a template that refuses a
//   system message, goes before the first user message's text);
// - an assistant message's tool calls become its content, the envelope the model
//   would have written: {"tool_calls": [{"name": "f", "arguments": {...}}]};
// - tool results become user text, "Tool f (call call_1) returned:\n<content>", the
//   results of one turn (and a user message right after them) in one user message,
//   so that templates that insist on alternating roles accept them.
// The output side is the grammar (tool_grammar.h, the envelope) and the output
// parser (output_parser.h). docs/tools-and-reasoning.md, "Tools on templates without them",
// is the contract.
#include <string>
#include <vector>

#include "proto/chat.h"
#include "proto/chat_render.h"

namespace sluice::server {

// The system text: the tools, then what to answer with.
std::string generic_tools_instructions(const proto::ChatRequest& request, const proto::OrderedTools& ordered);

enum class GenericPlacement {
  system,      // the instructions in the first system message (or a new one)
  first_user,  // before the first user message's text (templates without a system role)
};

// The request's messages rewritten as above; `instructions` false (tool_choice none):
// only the calls and results are rewritten.
std::vector<proto::ChatMessage> generic_tool_messages(const proto::ChatRequest& request,
                                                      const proto::OrderedTools& ordered, bool instructions,
                                                      GenericPlacement placement = GenericPlacement::system);

}  // namespace sluice::server
