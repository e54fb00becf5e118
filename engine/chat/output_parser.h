#pragma once
// The generated text of one chat choice split into what the API reports: reasoning
// (<think>...</think>), content, and tool calls, incrementally. The same machine
// serves streaming and whole responses: a whole response is every piece pushed, then
// finish(); so the events of any split of an output into pieces concatenate to the
// same message.
//
// Rules (docs/tools-and-reasoning.md states them for users):
// - Reasoning (ReasoningSyntax::think): text inside <think>...</think> at the start of
//   the output (leading whitespace allowed), or from the start when the prompt opened
//   it, up to "</think>" (or the end of the output). Whitespace right after <think>,
//   right before </think> and right after </think> is dropped. Markup inside
//   reasoning (a <tool_call> there) is reasoning text, never a call. Without a
//   "<think>" at the start, the whole output is the answer.
// - Tool calls (ToolCallSyntax): a call is committed once its markup and its name are
//   read ({"name": "NAME" followed by the arguments key, in that order); from then on
//   it is a call whatever follows: its arguments are the bytes of the arguments JSON
//   value as written (streamed as they arrive), up to the value's end or the end of
//   the output (a call cut by max_tokens keeps what it has). Markup whose beginning
//   turns out not to be a call (invalid JSON, no name first) is content, as written.
//   Whitespace between content and a call, and between calls, is dropped. An
//   arguments value written as a JSON string is its decoded text.
// - Text is held back only while it may still be the start of markup (a prefix of
//   "<tool_call>", of "</think>", or a call's opening JSON not yet decided), or is
//   whitespace that markup may follow.
// - max_calls: calls beyond it are dropped (markup and arguments); text after them is
//   still content.
// - The generic envelope (ToolCallSyntax::generic): the answer is one JSON object,
//   {"tool_calls": [CALL, ...]} with each CALL {"name": "NAME", "arguments": VALUE}, or
//   {"response": VALUE}. The calls commit and stream as above; a response that is a JSON
//   string streams as its decoded text (each escape once it is whole), any other
//   response value (or every one with raw_response) as its JSON text. An answer that
//   does not open the envelope, or whose first call does not open, is content as
//   written; envelope markup cut off by the end of the output is dropped; text after
//   the envelope's end is content (whitespace before it dropped).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/tool_syntax.h"

namespace sluice::chat {

struct OutputParserOptions {
  ToolCallSyntax tool_calls = ToolCallSyntax::none;  // none: every byte outside reasoning is content
  ReasoningSyntax reasoning = ReasoningSyntax::none;
  bool starts_in_reasoning = false;  // the prompt opened <think> (starts_in_reasoning())
  int32_t max_calls = -1;            // < 0: no limit (parallel_tool_calls false: 1)
  // generic: the "response" value is content as written (JSON text), as when it is held to
  // a response_format schema; otherwise a JSON string response is its decoded text.
  bool raw_response = false;
};

struct OutputEvent {
  enum class Kind {
    content,         // text: more of the answer
    reasoning,       // text: more of the reasoning
    call_begin,      // call_index, text: the function name (always before its arguments)
    call_arguments,  // call_index, text: more of its arguments
  };
  Kind kind = Kind::content;
  int32_t call_index = 0;
  std::string text;
};

struct ParsedCall {
  std::string name;
  std::string arguments;
};

// Everything parsed so far: the concatenation of the events.
struct ParsedOutput {
  std::string content;
  std::string reasoning;
  bool has_reasoning = false;  // a reasoning span was opened (it may be empty)
  std::vector<ParsedCall> calls;
};

class OutputParser {
 public:
  explicit OutputParser(OutputParserOptions options);

  // More generated text (any split, even inside a UTF-8 character or markup);
  // appends the events it settles to `out`.
  void push(std::string_view text, std::vector<OutputEvent>& out);
  // The end of the output: settles what was held back.
  void finish(std::vector<OutputEvent>& out);

  // Inside the reasoning span now (for counting reasoning tokens).
  bool in_reasoning() const;
  const ParsedOutput& output() const { return output_; }

 private:
  enum class Mode : uint8_t;  // where in the output we are (output_parser.cpp)
  enum class Lead : uint8_t;  // what opens the call markup being decided

  bool step(bool final, std::vector<OutputEvent>& out);
  bool step_think_start(bool final);
  bool step_reasoning(bool final, std::vector<OutputEvent>& out);
  bool step_answer_start();
  bool step_content(bool final, std::vector<OutputEvent>& out);
  bool step_opening(bool final, std::vector<OutputEvent>& out);
  bool step_value(bool final, std::vector<OutputEvent>& out);
  bool step_closing(bool final);
  bool step_envelope(bool final, std::vector<OutputEvent>& out);
  bool step_response_start();
  bool step_response_text(bool final, std::vector<OutputEvent>& out);
  bool step_envelope_close(bool final);
  void start_value(OutputEvent::Kind target);
  void emit(OutputEvent::Kind kind, std::string_view text, std::vector<OutputEvent>& out);
  void begin_call(std::string name, std::vector<OutputEvent>& out);

  OutputParserOptions options_;
  ParsedOutput output_;
  std::string held_;  // text not yet settled: the next step starts at its first byte
  Mode mode_;
  Lead lead_;
  bool drop_whitespace_ = false;  // whitespace at the front of held_ is dropped (after </think> or a call)
  int32_t call_index_ = -1;       // the current call's index; -1: dropped (beyond max_calls)
  // The arguments value being read: its kind ('{' object or array, '"' string, 's'
  // scalar, 0 not started), nesting depth and string state.
  char value_kind_ = 0;
  int32_t value_depth_ = 0;
  bool value_in_string_ = false;
  bool value_escape_ = false;
  std::string value_string_;  // a string value's raw body, decoded once it closes
  // Where the value goes: a call's arguments, or (generic, a response that is not a
  // decoded string) content.
  OutputEvent::Kind value_target_ = OutputEvent::Kind::call_arguments;
  bool response_broken_ = false;  // a broken \u escape: the rest of the response string is dropped
};

// The whole output at once (push + finish).
ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options);

}  // namespace sluice::chat
