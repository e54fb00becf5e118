// The output parser is a loop of steps over held_, the text not yet settled. Each step
// looks at held_ from its first byte and either settles a prefix of it (emitting
// events, dropping markup) and moves on, or waits for more text. A decision is only
// ever made on text that later pushes cannot change, and an undecided step re-reads
// held_ from the start when more arrives, so every split of an output into pushes
// settles the same events in the same order (only their cut points differ).
#include "engine/chat/output_parser.h"

#include <cctype>
#include <cstdint>
#include <utility>

#include "engine/chat/call_markup.h"
#include "engine/tokenizer/utf8.h"

namespace sluice::chat {

enum class OutputParser::Mode : uint8_t {
  think_start,     // deciding whether the output opens <think>
  reasoning_lead,  // right after <think>: dropping whitespace
  reasoning,       // inside <think>, up to </think>
  answer_start,    // the start of the answer (llama3 calls may only start here)
  content,         // answer text, watching for the syntax's trigger
  opening,         // held_ starts with call markup not yet decided (lead_ says which)
  value,           // a committed call's arguments value (or a generic response as JSON text)
  closing,         // the markup after the arguments value
  envelope,        // generic: deciding whether the answer opens the envelope
  response_start,  // generic: before the "response" value
  response_text,   // generic: inside the "response" string
  envelope_close,  // generic: the envelope's closing "}"
};

enum class OutputParser::Lead : uint8_t {
  trigger,    // the syntax's trigger ("<tool_call>", "<|python_tag|>")
  start,      // llama3 at the answer start: an optional "<|python_tag|>"
  separator,  // llama3 after a call: ";"
  item_next,  // generic after a call: "," and the next call, or "]" (the list's end)
};

namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

using namespace markup;  // NOLINT: this file is the readers' one user

}  // namespace

OutputParser::OutputParser(OutputParserOptions options) : options_(options) {
  mode_ = Mode::answer_start;
  lead_ = Lead::trigger;
  if (options_.reasoning == ReasoningSyntax::think) {
    if (options_.starts_in_reasoning) {
      output_.has_reasoning = true;
      mode_ = Mode::reasoning_lead;
    } else {
      mode_ = Mode::think_start;
    }
  }
}

void OutputParser::push(std::string_view text, std::vector<OutputEvent>& out) {
  held_.append(text);
  while (step(false, out)) {
  }
}

void OutputParser::finish(std::vector<OutputEvent>& out) {
  while (step(true, out)) {
  }
}

bool OutputParser::in_reasoning() const {
  return mode_ == Mode::reasoning_lead || mode_ == Mode::reasoning;
}

// One step; true when it settled something and the next step may go on.
bool OutputParser::step(bool final, std::vector<OutputEvent>& out) {
  switch (mode_) {
    case Mode::think_start: return step_think_start(final);
    case Mode::reasoning_lead:
    case Mode::reasoning: return step_reasoning(final, out);
    case Mode::answer_start: return step_answer_start();
    case Mode::content: return step_content(final, out);
    case Mode::opening: return step_opening(final, out);
    case Mode::value: return step_value(final, out);
    case Mode::closing: return step_closing(final);
    case Mode::envelope: return step_envelope(final, out);
    case Mode::response_start: return step_response_start();
    case Mode::response_text: return step_response_text(final, out);
    case Mode::envelope_close: return step_envelope_close(final);
  }
  return false;
}

void OutputParser::emit(OutputEvent::Kind kind, std::string_view text, std::vector<OutputEvent>& out) {
  if (text.empty()) return;
  switch (kind) {
    case OutputEvent::Kind::content: output_.content.append(text); break;
    case OutputEvent::Kind::reasoning: output_.reasoning.append(text); break;
    case OutputEvent::Kind::call_arguments:
      if (call_index_ < 0) return;  // a call beyond max_calls
      output_.calls[static_cast<size_t>(call_index_)].arguments.append(text);
      break;
    case OutputEvent::Kind::call_begin: return;  // begin_call's alone
  }
  out.push_back({kind, kind == OutputEvent::Kind::call_arguments ? call_index_ : 0, std::string(text)});
}

void OutputParser::begin_call(std::string name, std::vector<OutputEvent>& out) {
  const auto count = static_cast<int32_t>(output_.calls.size());
  call_index_ = options_.max_calls < 0 || count < options_.max_calls ? count : -1;
  if (call_index_ >= 0) {
    output_.calls.push_back({name, {}});
    out.push_back({OutputEvent::Kind::call_begin, call_index_, std::move(name)});
  }
}

bool OutputParser::step_think_start(bool final) {
  const size_t start = skip_space(held_, 0);
  const std::string_view rest = std::string_view(held_).substr(start);
  if (rest.substr(0, kThinkOpen.size()) == kThinkOpen) {
    held_.erase(0, start + kThinkOpen.size());
    output_.has_reasoning = true;
    mode_ = Mode::reasoning_lead;
    return true;
  }
  if (!final && kThinkOpen.substr(0, rest.size()) == rest) return false;  // may still open it
  mode_ = Mode::answer_start;  // no <think>: the held text is the answer's start
  return true;
}

bool OutputParser::step_reasoning(bool final, std::vector<OutputEvent>& out) {
  if (mode_ == Mode::reasoning_lead) {
    held_.erase(0, skip_space(held_, 0));
    if (held_.empty()) return false;
    mode_ = Mode::reasoning;
  }
  const size_t close = held_.find(kThinkClose);
  if (close != std::string::npos) {
    emit(OutputEvent::Kind::reasoning, trim_trailing_space(std::string_view(held_).substr(0, close)), out);
    held_.erase(0, close + kThinkClose.size());
    drop_whitespace_ = true;
    mode_ = Mode::answer_start;
    return true;
  }
  // Cut off inside reasoning: its trailing whitespace goes as it would before </think>.
  const size_t settled = final ? held_.size() : held_tail_start(held_, kThinkClose);
  emit(OutputEvent::Kind::reasoning, trim_trailing_space(std::string_view(held_).substr(0, settled)), out);
  held_.erase(0, settled);
  if (final) held_.clear();
  return false;
}

bool OutputParser::step_answer_start() {
  if (drop_whitespace_) {
    held_.erase(0, skip_space(held_, 0));
    if (held_.empty()) return false;
    drop_whitespace_ = false;
  }
  if (options_.tool_calls == ToolCallSyntax::llama3_json) {
    mode_ = Mode::opening;
    lead_ = Lead::start;
  } else if (options_.tool_calls == ToolCallSyntax::generic) {
    mode_ = Mode::envelope;
  } else {
    mode_ = Mode::content;
  }
  return true;
}

bool OutputParser::step_content(bool final, std::vector<OutputEvent>& out) {
  if (drop_whitespace_) {
    held_.erase(0, skip_space(held_, 0));
    if (held_.empty()) return false;
    drop_whitespace_ = false;
  }
  std::string_view trigger;
  if (options_.tool_calls == ToolCallSyntax::hermes) trigger = kHermesOpen;
  if (options_.tool_calls == ToolCallSyntax::llama3_json) trigger = kPythonTag;
  const size_t at = trigger.empty() ? std::string::npos : held_.find(trigger);
  if (trigger.empty() || (at == std::string::npos && final)) {  // nothing can start here any more
    emit(OutputEvent::Kind::content, held_, out);
    held_.clear();
    return false;
  }
  if (at != std::string::npos) {
    // The whitespace before the trigger stays held: the opening drops it with a call.
    const size_t markup = space_run_start(held_, at);
    emit(OutputEvent::Kind::content, std::string_view(held_).substr(0, markup), out);
    held_.erase(0, markup);
    mode_ = Mode::opening;
    lead_ = Lead::trigger;
    return true;
  }
  const size_t settled = held_tail_start(held_, trigger);
  emit(OutputEvent::Kind::content, std::string_view(held_).substr(0, settled), out);
  held_.erase(0, settled);
  return false;
}

bool OutputParser::step_opening(bool final, std::vector<OutputEvent>& out) {
  std::string_view lead;
  if (lead_ == Lead::trigger) lead = options_.tool_calls == ToolCallSyntax::hermes ? kHermesOpen : kPythonTag;
  if (lead_ == Lead::start) lead = kPythonTag;
  if (lead_ == Lead::separator) lead = ";";
  if (lead_ == Lead::item_next) {
    const size_t pos = skip_space(held_, 0);
    if (pos == held_.size()) {
      if (final) held_.clear();
      return false;
    }
    if (held_[pos] == ']') {  // the list's end
      held_.erase(0, pos + 1);
      mode_ = Mode::envelope_close;
      return true;
    }
    lead = ",";
  }
  Opening opening = read_opening(held_, lead, lead_ == Lead::start);
  using Result = MarkupReader::Result;
  if (opening.result == Result::more && !final) return false;
  if (opening.result == Result::more && lead_ == Lead::item_next) {  // the envelope cut off by the output's end
    held_.clear();
    return false;
  }
  if (opening.result == Result::matched) {
    held_.erase(0, opening.end);
    begin_call(std::move(opening.name), out);
    start_value(OutputEvent::Kind::call_arguments);
    return true;
  }
  // Not a call. After a call, before a ";" (or ",") that never came: the whitespace
  // sits between a call and content, so it is dropped and the rest read as content.
  mode_ = Mode::content;
  if ((lead_ == Lead::separator || lead_ == Lead::item_next) && opening.lead_end == 0) {
    drop_whitespace_ = true;
    return true;
  }
  // Otherwise the markup is content as written, up to the byte that did not fit;
  // reading goes on from there (from the whitespace before it, which a call that
  // starts there would drop) as plain content.
  const size_t end = space_run_start(held_, opening.result == Result::more ? held_.size() : opening.end);
  emit(OutputEvent::Kind::content, std::string_view(held_).substr(0, end), out);
  held_.erase(0, end);
  return true;
}

void OutputParser::start_value(OutputEvent::Kind target) {
  value_target_ = target;
  value_kind_ = 0;
  value_depth_ = 0;
  value_in_string_ = false;
  value_escape_ = false;
  value_string_.clear();
  mode_ = Mode::value;
}

bool OutputParser::step_value(bool final, std::vector<OutputEvent>& out) {
  const bool to_content = value_target_ == OutputEvent::Kind::content;
  size_t pos = 0;
  if (value_kind_ == 0) {  // the value's first byte decides how its end is found
    pos = skip_space(held_, 0);
    if (pos == held_.size()) {
      held_.clear();
      return false;
    }
    const char first = held_[pos];
    if (first == '{' || first == '[') {
      value_kind_ = '{';
    } else if (first == '"' && to_content) {
      value_kind_ = 'r';  // a string kept as written, quotes and all
    } else if (first == '"') {
      value_kind_ = '"';
      value_in_string_ = true;
      ++pos;  // the quotes are not part of the decoded text
    } else if (is_scalar_char(first)) {
      value_kind_ = 's';
    } else {  // no value at all: the call has empty arguments
      held_.erase(0, pos);
      mode_ = to_content ? Mode::envelope_close : Mode::closing;
      return true;
    }
    held_.erase(0, pos);
    pos = 0;
  }
  bool ended = false;
  for (; pos < held_.size() && !ended; ++pos) {
    const char c = held_[pos];
    if (value_kind_ == 's') {
      if (!is_scalar_char(c)) {
        ended = true;
        break;
      }
    } else if (value_in_string_) {
      if (value_escape_) {
        value_escape_ = false;
      } else if (c == '\\') {
        value_escape_ = true;
      } else if (c == '"') {
        value_in_string_ = false;
        ended = value_kind_ == '"' || value_kind_ == 'r';
      }
    } else if (c == '"') {
      value_in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++value_depth_;
    } else if (c == '}' || c == ']') {
      ended = --value_depth_ == 0;
    }
  }
  if (value_kind_ == '"') {
    // A string value is emitted decoded, so it waits for its closing quote (or the
    // end of the output) to decode escapes whole.
    value_string_.append(held_, 0, ended ? pos - 1 : pos);
    if (ended || final) emit(OutputEvent::Kind::call_arguments, decode_json_string(value_string_), out);
  } else {
    emit(value_target_, std::string_view(held_).substr(0, pos), out);
  }
  held_.erase(0, pos);
  if (!ended) return false;
  mode_ = to_content ? Mode::envelope_close : Mode::closing;
  return true;
}

// After the value: `ws } ws </tool_call>` (hermes), or `ws }` then a ";" (llama3) or
// a "," or "]" (generic). Each piece is optional, so a model that skips one still gets
// its call; the first byte that fits no piece starts content again.
bool OutputParser::step_closing(bool final) {
  const bool hermes = options_.tool_calls == ToolCallSyntax::hermes;
  MarkupReader reader{held_};
  for (const std::string_view piece : {std::string_view("}"), hermes ? kHermesClose : std::string_view()}) {
    if (piece.empty()) break;
    reader.space();
    const size_t piece_start = reader.pos;
    const auto result = reader.literal(piece);
    if (result == MarkupReader::Result::more) {
      if (!final) return false;
      reader.pos = held_.size();  // cut off inside closing markup: all of it is dropped
      break;
    }
    if (result == MarkupReader::Result::failed) reader.pos = piece_start;
  }
  held_.erase(0, reader.pos);
  if (hermes) {
    mode_ = Mode::content;
    drop_whitespace_ = true;
  } else {
    mode_ = Mode::opening;
    lead_ = options_.tool_calls == ToolCallSyntax::generic ? Lead::item_next : Lead::separator;
  }
  return true;
}

bool OutputParser::step_envelope(bool final, std::vector<OutputEvent>& out) {
  Envelope envelope = read_envelope(held_);
  using Result = MarkupReader::Result;
  if (envelope.result == Result::more && !final) return false;
  if (envelope.result == Result::more && skip_space(held_, 0) < held_.size()) {
    held_.clear();  // the envelope's opening cut off by the output's end: markup, dropped
    return false;
  }
  if (envelope.result != Result::matched) {  // not the envelope: all of it is content as written
    mode_ = Mode::content;
    return true;
  }
  held_.erase(0, envelope.end);
  if (envelope.calls) {
    begin_call(std::move(envelope.name), out);
    start_value(OutputEvent::Kind::call_arguments);
  } else {
    mode_ = Mode::response_start;
  }
  return true;
}

bool OutputParser::step_response_start() {
  const size_t pos = skip_space(held_, 0);
  if (pos == held_.size()) {
    held_.clear();
    return false;
  }
  if (held_[pos] == '"' && !options_.raw_response) {
    held_.erase(0, pos + 1);
    response_broken_ = false;
    mode_ = Mode::response_text;
    return true;
  }
  held_.erase(0, pos);
  start_value(OutputEvent::Kind::content);
  return true;
}

// The response string streams decoded: each whole unit (a byte, an escape, a
// surrogate pair) as it arrives, an escape cut off between pushes held until it is
// whole. Decoding unit by unit is decoding the whole string, so every split of the
// output gives the same text.
bool OutputParser::step_response_text(bool final, std::vector<OutputEvent>& out) {
  size_t pos = 0;
  bool ended = false;
  while (pos < held_.size()) {
    if (held_[pos] == '"') {
      ended = true;
      break;
    }
    if (response_broken_) {  // dropped up to the closing quote, escapes skipped whole
      if (held_[pos] == '\\' && pos + 1 >= held_.size()) break;
      pos += held_[pos] == '\\' ? 2 : 1;
      continue;
    }
    const int32_t length = json_string_unit(held_, pos);
    if (length == 0) break;
    if (length < 0) {
      emit(OutputEvent::Kind::content, decode_json_string(std::string_view(held_).substr(0, pos)), out);
      held_.erase(0, pos);
      pos = 0;
      response_broken_ = true;
      continue;
    }
    pos += static_cast<size_t>(length);
  }
  const size_t body_end = ended || !final ? pos : held_.size();  // the end of the output: what is left, as it is
  if (!response_broken_)
    emit(OutputEvent::Kind::content, decode_json_string(std::string_view(held_).substr(0, body_end)), out);
  held_.erase(0, ended ? body_end + 1 : body_end);
  if (!ended) return false;
  mode_ = Mode::envelope_close;
  return true;
}

// The envelope's "}" (optional, as a call's closing markup is); then content, the
// whitespace before it dropped.
bool OutputParser::step_envelope_close(bool final) {
  MarkupReader reader{held_};
  reader.space();
  const size_t piece_start = reader.pos;
  const auto result = reader.literal("}");
  if (result == MarkupReader::Result::more) {
    if (!final) return false;
    reader.pos = held_.size();
  }
  if (result == MarkupReader::Result::failed) reader.pos = piece_start;
  held_.erase(0, reader.pos);
  mode_ = Mode::content;
  drop_whitespace_ = true;
  return true;
}

ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options) {
  OutputParser parser(options);
  std::vector<OutputEvent> events;
  parser.push(text, events);
  parser.finish(events);
  return parser.output();
}

}  // namespace sluice::chat
