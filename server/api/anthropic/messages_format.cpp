#include "server/api/anthropic/messages_format.h"

#include <utility>

#include "proto/anthropic_messages.h"
#include "proto/sse.h"
#include "server/api/generation/generation_job.h"

namespace sluice::server {
namespace {

using OJson = nlohmann::ordered_json;
using chat::OutputEvent;

// "event: NAME\ndata: {json}\n\n": the SDK dispatches on the event's name.
std::string named_event(const char* name, const OJson& data) {
  return std::string("event: ") + name + "\ndata: " + proto::dump_json(data) + "\n\n";
}

OJson block_delta(int32_t index, OJson delta) {
  return {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}};
}

// A call's arguments as the tool_use input: the object the model wrote (the grammar
// makes it one when the call was constrained); anything else is kept as text.
OJson input_object(const std::string& arguments) {
  OJson input = OJson::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (input.is_object()) return input;
  if (arguments.empty()) return OJson::object();
  return {{"arguments", arguments}};
}

}  // namespace

std::string new_message_id() { return "msg_" + proto::new_completion_id().substr(5); }
std::string new_tool_use_id() { return "toolu_" + proto::new_tool_call_id().substr(5); }

MessagesFormat::MessagesFormat(ChatOutputOptions options)
    : options_(std::move(options)), parser_(options_.parser) {}

MessagesFormat::StopReason MessagesFormat::stop_reason(const GenerationJob& job) const {
  const ChoiceTally& tally = job.choices().at(0);
  const std::string& reason = tally.finish_reason.value_or("stop");
  if (reason == "length" || reason == "timeout") return {"max_tokens", std::nullopt};
  if (options_.parse && !parser_.output().calls.empty()) return {"tool_use", std::nullopt};
  if (!tally.matched_stop.empty()) return {"stop_sequence", tally.matched_stop};
  return {"end_turn", std::nullopt};
}

std::string MessagesFormat::open_stream(GenerationJob& job) {
  const proto::Usage usage = job.usage();
  const OJson message = {{"id", job.settings().header.id},
                         {"type", "message"},
                         {"role", "assistant"},
                         {"model", job.settings().header.model},
                         {"content", OJson::array()},
                         {"stop_reason", nullptr},
                         {"stop_sequence", nullptr},
                         {"usage", {{"input_tokens", usage.prompt_tokens}, {"output_tokens", 0}}}};
  return named_event("message_start", {{"type", "message_start"}, {"message", message}}) +
         named_event("ping", {{"type", "ping"}});
}

void MessagesFormat::text_folded(GenerationJob& /*job*/, int32_t /*index*/, const std::string& text,
                                 int64_t /*num_tokens*/) {
  if (options_.parse) {
    parser_.push(text, pending_);
  } else if (!text.empty()) {
    pending_.push_back({OutputEvent::Kind::content, 0, text});
  }
}

std::string MessagesFormat::close_block() {
  if (open_ == Block::none) return {};
  open_ = Block::none;
  return named_event("content_block_stop", {{"type", "content_block_stop"}, {"index", block_index_}});
}

std::string MessagesFormat::open_block(Block kind, OJson block) {
  std::string out = close_block();
  open_ = kind;
  ++block_index_;
  return out + named_event("content_block_start", {{"type", "content_block_start"},
                                                   {"index", block_index_},
                                                   {"content_block", std::move(block)}});
}

std::string MessagesFormat::drain() {
  std::string out;
  for (size_t i = 0; i < pending_.size();) {
    // One delta per run of events of one kind (and one call).
    OutputEvent run = std::move(pending_[i]);
    size_t j = i + 1;
    if (run.kind != OutputEvent::Kind::call_begin) {
      for (; j < pending_.size() && pending_[j].kind == run.kind && pending_[j].call_index == run.call_index; ++j)
        run.text += pending_[j].text;
    }
    i = j;
    switch (run.kind) {
      case OutputEvent::Kind::content:
        if (run.text.empty()) break;
        if (open_ != Block::text) out += open_block(Block::text, {{"type", "text"}, {"text", ""}});
        out += named_event("content_block_delta", block_delta(block_index_, {{"type", "text_delta"}, {"text", run.text}}));
        break;
      case OutputEvent::Kind::reasoning:
        if (!options_.include_reasoning || run.text.empty()) break;
        if (open_ != Block::thinking)
          out += open_block(Block::thinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
        out += named_event("content_block_delta",
                           block_delta(block_index_, {{"type", "thinking_delta"}, {"thinking", run.text}}));
        break;
      case OutputEvent::Kind::call_begin:
        out += open_block(Block::tool_use, {{"type", "tool_use"},
                                            {"id", new_tool_use_id()},
                                            {"name", run.text},
                                            {"input", OJson::object()}});
        break;
      case OutputEvent::Kind::call_arguments:
        if (open_ != Block::tool_use) break;  // a dropped call's (beyond max_calls)
        out += named_event("content_block_delta",
                           block_delta(block_index_, {{"type", "input_json_delta"}, {"partial_json", run.text}}));
        break;
    }
  }
  pending_.clear();
  return out;
}

std::string MessagesFormat::delta_event(GenerationJob& /*job*/, int32_t /*index*/, const std::string& /*text*/,
                                        std::vector<proto::TokenLogprob> /*logprobs*/) {
  return drain();
}

std::string MessagesFormat::finish_event(GenerationJob& job, int32_t /*index*/) {
  if (!finished_ && options_.parse) parser_.finish(pending_);
  finished_ = true;
  std::string out = drain() + close_block();
  const StopReason stop = stop_reason(job);
  const OJson delta = {{"stop_reason", stop.reason},
                       {"stop_sequence", stop.sequence ? OJson(*stop.sequence) : OJson(nullptr)}};
  return out + named_event("message_delta", {{"type", "message_delta"},
                                             {"delta", delta},
                                             {"usage", {{"output_tokens", job.usage().completion_tokens}}}});
}

std::string MessagesFormat::close_stream(GenerationJob& /*job*/) {
  return named_event("message_stop", {{"type", "message_stop"}});
}

std::string MessagesFormat::error_event(const proto::ApiError& error) {
  return "event: error\ndata: " + proto::anthropic_error_body(error) + "\n\n";
}

std::string MessagesFormat::whole_body(GenerationJob& job) {
  if (!finished_ && options_.parse) parser_.finish(pending_);
  finished_ = true;
  pending_.clear();
  OJson content = OJson::array();
  const ChoiceTally& tally = job.choices().at(0);
  if (!options_.parse) {
    if (!tally.text.empty()) content.push_back({{"type", "text"}, {"text", tally.text}});
  } else {
    const chat::ParsedOutput& parsed = parser_.output();
    if (parsed.has_reasoning && options_.include_reasoning && !parsed.reasoning.empty())
      content.push_back({{"type", "thinking"}, {"thinking", parsed.reasoning}, {"signature", ""}});
    if (!parsed.content.empty()) content.push_back({{"type", "text"}, {"text", parsed.content}});
    for (const chat::ParsedCall& call : parsed.calls) {
      content.push_back(
          {{"type", "tool_use"}, {"id", new_tool_use_id()}, {"name", call.name}, {"input", input_object(call.arguments)}});
    }
  }
  const StopReason stop = stop_reason(job);
  const proto::Usage usage = job.usage();
  const OJson body = {{"id", job.settings().header.id},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"model", job.settings().header.model},
                      {"content", std::move(content)},
                      {"stop_reason", stop.reason},
                      {"stop_sequence", stop.sequence ? OJson(*stop.sequence) : OJson(nullptr)},
                      {"usage", {{"input_tokens", usage.prompt_tokens}, {"output_tokens", usage.completion_tokens}}}};
  return proto::dump_json(body);
}

}  // namespace sluice::server
