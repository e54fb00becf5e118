#include "server/api/responses/responses_format.h"

#include <random>
#include <utility>

#include "proto/sse.h"
#include "server/api/generation/generation_job.h"

namespace sluice::server {
namespace {

using OJson = nlohmann::ordered_json;
using chat::OutputEvent;

std::string random_hex(size_t digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  while (out.size() < digits) {
    uint64_t bits = rng();
    for (int i = 0; i < 16 && out.size() < digits; ++i, bits >>= 4) out += kHex[bits & 0xf];
  }
  return out;
}

// The order of the response object's fields after "output", as OpenAI writes them.
constexpr const char* kEchoAfterModel[] = {"parallel_tool_calls", "previous_response_id", "reasoning", "store",
                                           "temperature",         "text",                 "tool_choice", "tools",
                                           "top_p",               "truncation"};

OJson output_text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", OJson::array()}, {"logprobs", OJson::array()}};
}

OJson reasoning_text_part(const std::string& text) { return {{"type", "reasoning_text"}, {"text", text}}; }

}  // namespace

std::string new_response_id() { return "resp_" + random_hex(32); }

ResponsesFormat::ResponsesFormat(ChatOutputOptions output, nlohmann::ordered_json echo, bool streaming)
    : options_(std::move(output)), echo_(std::move(echo)), streaming_(streaming), parser_(options_.parser) {}

std::string ResponsesFormat::event(const char* type, nlohmann::ordered_json data) {
  OJson out = {{"type", type}, {"sequence_number", sequence_++}};
  for (const auto& [key, value] : data.items()) out[key] = value;
  if (!streaming_) return {};
  return std::string("event: ") + type + "\n" + proto::sse_event(out);
}

OJson ResponsesFormat::item_json(const Item& item) const {
  switch (item.kind) {
    case Item::Kind::reasoning: {
      OJson content = OJson::array();
      if (item.status != "in_progress") content.push_back(reasoning_text_part(item.text));
      return {{"id", item.id}, {"type", "reasoning"}, {"summary", OJson::array()}, {"content", std::move(content)},
              {"status", item.status}};
    }
    case Item::Kind::message: {
      OJson content = OJson::array();
      if (item.status != "in_progress") content.push_back(output_text_part(item.text));
      return {{"id", item.id}, {"type", "message"}, {"status", item.status}, {"role", "assistant"},
              {"content", std::move(content)}};
    }
    case Item::Kind::function_call:
      return {{"id", item.id},         {"type", "function_call"}, {"status", item.status},
              {"arguments", item.text}, {"call_id", item.call_id}, {"name", item.name}};
  }
  return {};
}

std::string ResponsesFormat::open_item(Item item) {
  items_.push_back(std::move(item));
  item_open_ = true;
  const auto index = static_cast<int64_t>(items_.size() - 1);
  const Item& added = items_.back();
  std::string out = event("response.output_item.added", {{"output_index", index}, {"item", item_json(added)}});
  if (added.kind == Item::Kind::message) {
    out += event("response.content_part.added", {{"item_id", added.id}, {"output_index", index},
                                                 {"content_index", 0}, {"part", output_text_part("")}});
  } else if (added.kind == Item::Kind::reasoning) {
    out += event("response.content_part.added", {{"item_id", added.id}, {"output_index", index},
                                                 {"content_index", 0}, {"part", reasoning_text_part("")}});
  }
  return out;
}

std::string ResponsesFormat::close_open_item(const std::string& status) {
  if (!item_open_) return {};
  item_open_ = false;
  Item& item = items_.back();
  item.status = status;
  const auto index = static_cast<int64_t>(items_.size() - 1);
  std::string out;
  switch (item.kind) {
    case Item::Kind::message:
      out += event("response.output_text.done", {{"item_id", item.id}, {"output_index", index}, {"content_index", 0},
                                                 {"text", item.text}, {"logprobs", OJson::array()}});
      out += event("response.content_part.done", {{"item_id", item.id}, {"output_index", index},
                                                  {"content_index", 0}, {"part", output_text_part(item.text)}});
      break;
    case Item::Kind::reasoning:
      out += event("response.reasoning_text.done",
                   {{"item_id", item.id}, {"output_index", index}, {"content_index", 0}, {"text", item.text}});
      out += event("response.content_part.done", {{"item_id", item.id}, {"output_index", index},
                                                  {"content_index", 0}, {"part", reasoning_text_part(item.text)}});
      break;
    case Item::Kind::function_call:
      item.status = "completed";  // a call cut short still carries what it has
      out += event("response.function_call_arguments.done",
                   {{"item_id", item.id}, {"output_index", index}, {"name", item.name}, {"arguments", item.text}});
      break;
  }
  return out + event("response.output_item.done", {{"output_index", index}, {"item", item_json(item)}});
}

std::string ResponsesFormat::apply(const OutputEvent& ev) {
  std::string out;
  auto open_kind = [&]() -> const Item::Kind* { return item_open_ ? &items_.back().kind : nullptr; };
  auto text_item = [&](Item::Kind kind, const char* prefix) {
    if (open_kind() && *open_kind() == kind) return;
    out += close_open_item("completed");
    Item item;
    item.kind = kind;
    item.id = prefix + random_hex(32);
    out += open_item(std::move(item));
  };
  switch (ev.kind) {
    case OutputEvent::Kind::content:
      if (ev.text.empty()) break;
      text_item(Item::Kind::message, "msg_");
      items_.back().text += ev.text;
      out += event("response.output_text.delta",
                   {{"item_id", items_.back().id}, {"output_index", static_cast<int64_t>(items_.size() - 1)},
                    {"content_index", 0}, {"delta", ev.text}, {"logprobs", OJson::array()}});
      break;
    case OutputEvent::Kind::reasoning:
      if (ev.text.empty() || !options_.include_reasoning) break;
      text_item(Item::Kind::reasoning, "rs_");
      items_.back().text += ev.text;
      out += event("response.reasoning_text.delta",
                   {{"item_id", items_.back().id}, {"output_index", static_cast<int64_t>(items_.size() - 1)},
                    {"content_index", 0}, {"delta", ev.text}});
      break;
    case OutputEvent::Kind::call_begin: {
      out += close_open_item("completed");
      Item call;
      call.kind = Item::Kind::function_call;
      call.id = "fc_" + random_hex(32);
      call.name = ev.text;
      call.call_id = proto::new_tool_call_id();
      out += open_item(std::move(call));
      break;
    }
    case OutputEvent::Kind::call_arguments:
      if (ev.text.empty() || !open_kind() || *open_kind() != Item::Kind::function_call) break;
      items_.back().text += ev.text;
      out += event("response.function_call_arguments.delta",
                   {{"item_id", items_.back().id}, {"output_index", static_cast<int64_t>(items_.size() - 1)},
                    {"delta", ev.text}});
      break;
  }
  return out;
}

std::string ResponsesFormat::open_stream(GenerationJob& job) {
  OJson response = response_json(job, "in_progress");
  std::string out = event("response.created", {{"response", response}});
  return out + event("response.in_progress", {{"response", std::move(response)}});
}

void ResponsesFormat::text_folded(GenerationJob& /*job*/, int32_t /*index*/, const std::string& text,
                                  int64_t num_tokens) {
  // A delta's tokens count as reasoning when it began inside the reasoning span (as chat counts them).
  if (parser_.in_reasoning()) reasoning_tokens_ += num_tokens;
  std::vector<OutputEvent> events;
  parser_.push(text, events);
  for (const OutputEvent& ev : events) pending_ += apply(ev);
}

std::string ResponsesFormat::delta_event(GenerationJob& /*job*/, int32_t /*index*/, const std::string& /*text*/,
                                         std::vector<proto::TokenLogprob> /*logprobs*/) {
  return std::exchange(pending_, {});
}

std::string ResponsesFormat::settle(GenerationJob& job) {
  if (settled_) return {};
  settled_ = true;
  std::vector<OutputEvent> events;
  parser_.finish(events);
  std::string out = std::exchange(pending_, {});
  for (const OutputEvent& ev : events) out += apply(ev);
  const std::optional<std::string>& reason = job.choices().empty() ? std::nullopt : job.choices()[0].finish_reason;
  const bool cut = reason == "length" || reason == "timeout";
  out += close_open_item(cut ? "incomplete" : "completed");
  final_ = response_json(job, cut ? "incomplete" : "completed");
  if (cut) final_["incomplete_details"] = {{"reason", *reason == "length" ? "max_output_tokens" : "timeout"}};
  return out;
}

std::string ResponsesFormat::finish_event(GenerationJob& job, int32_t /*index*/) { return settle(job); }

std::string ResponsesFormat::close_stream(GenerationJob& job) {
  std::string out = settle(job);
  finished_ = true;
  const char* type = final_["status"] == "completed" ? "response.completed" : "response.incomplete";
  return out + event(type, {{"response", final_}});
}

std::string ResponsesFormat::error_event(const proto::ApiError& error) {
  OJson data = {{"code", error.code.empty() ? OJson(error.type) : OJson(error.code)},
                {"message", error.message},
                {"param", error.param.empty() ? OJson(nullptr) : OJson(error.param)}};
  return event("error", std::move(data));
}

std::string ResponsesFormat::whole_body(GenerationJob& job) {
  settle(job);
  finished_ = true;
  return proto::dump_json(final_);
}

OJson ResponsesFormat::response_json(const GenerationJob& job, const std::string& status) const {
  const proto::ResponseHeader& header = job.settings().header;
  OJson response = {{"id", header.id},
                    {"object", "response"},
                    {"created_at", header.created},
                    {"status", status},
                    {"background", false},
                    {"error", nullptr},
                    {"incomplete_details", nullptr},
                    {"instructions", echo_.value("instructions", OJson())},
                    {"max_output_tokens", echo_.value("max_output_tokens", OJson())},
                    {"max_tool_calls", nullptr},
                    {"model", header.model}};
  OJson output = OJson::array();
  if (status != "in_progress") {
    for (const Item& item : items_) output.push_back(item_json(item));
  }
  response["output"] = std::move(output);
  for (const char* key : kEchoAfterModel) response[key] = echo_.value(key, OJson());
  if (status == "in_progress") {
    response["usage"] = nullptr;
  } else {
    const proto::Usage usage = job.usage();
    response["usage"] = {{"input_tokens", usage.prompt_tokens},
                         {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
                         {"output_tokens", usage.completion_tokens},
                         {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens_}}},
                         {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
  }
  response["user"] = echo_.value("user", OJson());
  response["metadata"] = echo_.value("metadata", OJson::object());
  return response;
}

OJson ResponsesFormat::output_messages() const {
  OJson message = {{"role", "assistant"}, {"content", nullptr}};
  std::string content;
  OJson calls = OJson::array();
  for (const Item& item : items_) {
    if (item.kind == Item::Kind::message) content += item.text;
    if (item.kind == Item::Kind::function_call) {
      calls.push_back({{"id", item.call_id},
                       {"type", "function"},
                       {"function", {{"name", item.name}, {"arguments", item.text}}}});
    }
  }
  if (!content.empty() || calls.empty()) message["content"] = content;
  if (!calls.empty()) message["tool_calls"] = std::move(calls);
  return OJson::array({std::move(message)});
}

}  // namespace sluice::server
