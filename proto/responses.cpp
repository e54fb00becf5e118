#include "proto/responses.h"

#include <chrono>
#include <cmath>
#include <random>

namespace sluice::proto {
namespace {

using OJson = nlohmann::ordered_json;

constexpr double kMinLogprob = -9999.0;  // stands in for -inf, as in vLLM

double finite_logprob(float lp) { return std::isfinite(lp) ? static_cast<double>(lp) : kMinLogprob; }

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

OJson bytes_array(std::string_view s) {
  OJson out = OJson::array();
  for (char c : s) out.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return out;
}

std::string random_hex32() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  uint64_t bits = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i % 16 == 0) bits = rng();
    out[i] = kHex[bits & 0xF];
    bits >>= 4;
  }
  return out;
}

OJson header_fields(const ResponseHeader& header, const char* object) {
  return {{"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

OJson finish_or_null(const std::optional<std::string>& reason) { return reason ? OJson(*reason) : OJson(nullptr); }

OJson completion_choice(const CompletionChoice& c) {
  return {{"index", c.index},
          {"text", c.text},
          {"logprobs", c.logprobs ? completion_logprobs(*c.logprobs, c.text_offset) : OJson(nullptr)},
          {"finish_reason", finish_or_null(c.finish_reason)}};
}

OJson chat_chunk(const ResponseHeader& header, int32_t index, OJson delta, OJson logprobs,
                 OJson finish_reason, bool include_usage) {
  OJson chunk = header_fields(header, "chat.completion.chunk");
  OJson choice = {{"index", index},
                  {"delta", std::move(delta)},
                  {"logprobs", std::move(logprobs)},
                  {"finish_reason", std::move(finish_reason)}};
  chunk["choices"] = OJson::array({std::move(choice)});
  if (include_usage) chunk["usage"] = nullptr;
  return chunk;
}

}  // namespace

std::string new_completion_id() { return "cmpl-" + random_hex32(); }
std::string new_chat_completion_id() { return "chatcmpl-" + random_hex32(); }
std::string new_tool_call_id() { return "call_" + random_hex32().substr(0, 24); }

int64_t unix_now() {
  using namespace std::chrono;
  return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

std::string token_text(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "bytes:";
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xF];
  }
  return out;
}

int64_t num_chars(std::string_view bytes) {
  int64_t n = 0;
  for (char c : bytes) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

OJson usage_object(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

namespace {

OJson usage_with_details(const Usage& usage) {
  OJson out = usage_object(usage);
  if (usage.reasoning_tokens) out["completion_tokens_details"] = {{"reasoning_tokens", *usage.reasoning_tokens}};
  return out;
}

OJson chat_message(const ChatChoice& c) {
  OJson message = {{"role", "assistant"}, {"content", c.content_null ? OJson(nullptr) : OJson(c.content)}};
  if (c.reasoning) {
    message["reasoning_content"] = *c.reasoning;
    message["reasoning"] = *c.reasoning;
  }
  if (!c.tool_calls.empty()) {
    OJson calls = OJson::array();
    for (const ToolCallOut& call : c.tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

}  // namespace

OJson completion_logprobs(const std::vector<TokenLogprob>& entries, int64_t text_offset) {
  OJson tokens = OJson::array(), token_logprobs = OJson::array(), top = OJson::array(),
        offsets = OJson::array();
  for (const auto& e : entries) {
    tokens.push_back(token_text(e.token));
    token_logprobs.push_back(e.logprob ? OJson(finite_logprob(*e.logprob)) : OJson(nullptr));
    if (!e.logprob && e.top_logprobs.empty()) {
      top.push_back(nullptr);
    } else {
      OJson alternatives = OJson::object();
      for (const auto& t : e.top_logprobs) alternatives[token_text(t.token)] = finite_logprob(t.logprob);
      // OpenAI: the chosen token is always among its alternatives (up to logprobs + 1
      // entries), so "logprobs": 0 still shows it.
      if (e.logprob && !alternatives.contains(token_text(e.token)))
        alternatives[token_text(e.token)] = finite_logprob(*e.logprob);
      top.push_back(std::move(alternatives));
    }
    offsets.push_back(text_offset);
    text_offset += num_chars(e.token);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

OJson chat_logprobs(const std::vector<TokenLogprob>& entries) {
  OJson content = OJson::array();
  for (const auto& e : entries) {
    OJson top = OJson::array();
    for (const auto& t : e.top_logprobs) {
      top.push_back({{"token", token_text(t.token)},
                     {"logprob", finite_logprob(t.logprob)},
                     {"bytes", bytes_array(t.token)}});
    }
    content.push_back({{"token", token_text(e.token)},
                       {"logprob", finite_logprob(e.logprob.value_or(-INFINITY))},
                       {"bytes", bytes_array(e.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

OJson completion_object(const ResponseHeader& header, const std::vector<CompletionChoice>& choices,
                        const Usage& usage) {
  OJson out = header_fields(header, "text_completion");
  OJson list = OJson::array();
  for (const auto& c : choices) list.push_back(completion_choice(c));
  out["choices"] = std::move(list);
  out["usage"] = usage_object(usage);
  return out;
}

OJson completion_chunk(const ResponseHeader& header, const CompletionChoice& choice, bool include_usage) {
  OJson out = header_fields(header, "text_completion");
  out["choices"] = OJson::array({completion_choice(choice)});
  if (include_usage) out["usage"] = nullptr;
  return out;
}

OJson completion_usage_chunk(const ResponseHeader& header, const Usage& usage) {
  OJson out = header_fields(header, "text_completion");
  out["choices"] = OJson::array();
  out["usage"] = usage_object(usage);
  return out;
}

OJson chat_completion_object(const ResponseHeader& header, const std::vector<ChatChoice>& choices,
                             const Usage& usage) {
  OJson out = header_fields(header, "chat.completion");
  OJson list = OJson::array();
  for (const auto& c : choices) {
    list.push_back({{"index", c.index},
                    {"message", chat_message(c)},
                    {"logprobs", c.logprobs ? chat_logprobs(*c.logprobs) : OJson(nullptr)},
                    {"finish_reason", finish_or_null(c.finish_reason)}});
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_with_details(usage);
  return out;
}

OJson chat_role_chunk(const ResponseHeader& header, int32_t index, bool include_usage) {
  return chat_chunk(header, index, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr, include_usage);
}

OJson chat_content_chunk(const ResponseHeader& header, int32_t index, const std::string& content,
                         const std::vector<TokenLogprob>* logprobs, bool include_usage) {
  return chat_chunk(header, index, {{"content", content}}, logprobs ? chat_logprobs(*logprobs) : OJson(nullptr),
                    nullptr, include_usage);
}

OJson chat_delta_chunk(const ResponseHeader& header, int32_t index, OJson delta,
                       const std::vector<TokenLogprob>* logprobs, bool include_usage) {
  return chat_chunk(header, index, std::move(delta), logprobs ? chat_logprobs(*logprobs) : OJson(nullptr), nullptr,
                    include_usage);
}

OJson reasoning_delta(const std::string& text) { return {{"reasoning_content", text}, {"reasoning", text}}; }

OJson tool_call_begin_delta(int32_t call_index, const std::string& id, const std::string& name) {
  OJson call = {{"index", call_index},
                {"id", id},
                {"type", "function"},
                {"function", {{"name", name}, {"arguments", ""}}}};
  return {{"tool_calls", OJson::array({std::move(call)})}};
}

OJson tool_call_arguments_delta(int32_t call_index, const std::string& arguments) {
  OJson call = {{"index", call_index}, {"function", {{"arguments", arguments}}}};
  return {{"tool_calls", OJson::array({std::move(call)})}};
}

OJson chat_finish_chunk(const ResponseHeader& header, int32_t index, const std::string& finish_reason,
                        bool include_usage) {
  return chat_chunk(header, index, OJson::object(), nullptr, finish_reason, include_usage);
}

OJson chat_usage_chunk(const ResponseHeader& header, const Usage& usage) {
  OJson out = header_fields(header, "chat.completion.chunk");
  out["choices"] = OJson::array();
  out["usage"] = usage_with_details(usage);
  return out;
}

}  // namespace sluice::proto
