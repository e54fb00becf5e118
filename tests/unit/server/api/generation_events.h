#pragma once
// Test helpers for GenerationJob: hand-made engine events pushed into real
// RequestStreams, token pieces without a tokenizer ("<7>" for token 7), and the SSE
// text a job returns split back into its events.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "engine/request_stream.h"
#include "server/api/generation/generation_job.h"

namespace sluice::server::testing {

inline std::string piece_of(int32_t token) { return "<" + std::to_string(token) + ">"; }

inline std::shared_ptr<engine::RequestStream> make_stream(const std::string& id, int32_t num_choices) {
  return std::make_shared<engine::RequestStream>(id, num_choices, /*capacity=*/64);
}

// New text of choice `index`, one token per id; with `logprobs`, one entry per id
// (the chosen token and, when given, its alternatives).
inline engine::ChoiceDelta delta(int32_t index, std::string text, std::vector<int32_t> ids,
                                 std::vector<float> logprobs = {},
                                 std::vector<std::vector<engine::TokenLogprob>> top = {}) {
  engine::ChoiceDelta out{index, std::move(text), ids, {}, {}};
  for (size_t i = 0; i < logprobs.size(); ++i)
    out.logprobs.push_back({ids.at(i), logprobs[i], i < top.size() ? top[i] : std::vector<engine::TokenLogprob>{}});
  return out;
}

inline engine::ChoiceFinish finish(int32_t index, engine::FinishReason reason, int64_t num_completion_tokens,
                                   int64_t num_cached_tokens = 0, std::string error = {}) {
  engine::ChoiceFinish out;
  out.index = index;
  out.reason = reason;
  out.num_completion_tokens = num_completion_tokens;
  out.num_cached_tokens = num_cached_tokens;
  out.error = std::move(error);
  return out;
}

// Every event of `sse`: its JSON, or the string "[DONE]". Each must be one
// "data: ...\n\n" line.
inline std::vector<nlohmann::ordered_json> sse_events(const std::string& sse) {
  std::vector<nlohmann::ordered_json> out;
  size_t at = 0;
  while (at < sse.size()) {
    const size_t end = sse.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string event = sse.substr(at, end - at);
    REQUIRE(event.rfind("data: ", 0) == 0);
    REQUIRE(event.find('\n') == std::string::npos);
    const std::string data = event.substr(6);
    out.push_back(data == "[DONE]" ? nlohmann::ordered_json("[DONE]") : nlohmann::ordered_json::parse(data));
    at = end + 2;
  }
  return out;
}

// The streamed text chunks' (index, text) pairs, in order.
inline std::vector<std::pair<int, std::string>> streamed_texts(const std::vector<nlohmann::ordered_json>& events,
                                                               const char* field = "text") {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& event : events) {
    if (!event.is_object() || event["choices"].empty()) continue;
    const auto& choice = event["choices"][0];
    if (choice.contains(field)) out.emplace_back(choice["index"].get<int>(), choice[field].get<std::string>());
  }
  return out;
}

}  // namespace sluice::server::testing
