#pragma once
// Response bodies of /v1/completions and /v1/chat/completions, whole and streamed,
// in OpenAI's field order. The inputs are plain structs the server fills from engine
// events; nothing here knows the engine. Token pieces arrive as raw bytes and leave
// as valid UTF-8 (see token_text); -inf log-probabilities leave as -9999.0, as vLLM
// sends them, because JSON has no infinity.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::proto {

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  // Chat with a reasoning model: completion tokens spent thinking
  // (completion_tokens_details.reasoning_tokens); empty: the field is left out.
  std::optional<int32_t> reasoning_tokens;
};

struct TopLogprob {
  std::string token;  // raw bytes of the piece
  float logprob = 0.0f;
};

struct TokenLogprob {
  std::string token;                     // raw bytes of the piece (may be part of a character)
  std::optional<float> logprob;          // empty: null (the first echoed prompt token)
  std::vector<TopLogprob> top_logprobs;  // best first; empty with no logprob: null
};

// The fields every object and chunk of one response repeats.
struct ResponseHeader {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

struct CompletionChoice {
  int32_t index = 0;
  std::string text;
  std::optional<std::vector<TokenLogprob>> logprobs;  // empty: "logprobs": null
  // Characters of this choice's text sent before `text` (streaming), so that
  // logprobs.text_offset counts from the start of the whole text.
  int64_t text_offset = 0;
  std::optional<std::string> finish_reason;  // "stop" | "length" | ...; empty: null
};

// A call the model made, as the response reports it.
struct ToolCallOut {
  std::string id;  // "call_" + 24 hex digits
  std::string name;
  std::string arguments;  // JSON text as the model wrote it
};

struct ChatChoice {
  int32_t index = 0;
  std::string content;
  std::optional<std::vector<TokenLogprob>> logprobs;  // empty: "logprobs": null
  std::optional<std::string> finish_reason;
  bool content_null = false;             // "content": null (a reply that is only tool calls)
  std::optional<std::string> reasoning;  // reasoning models: reasoning_content and reasoning
  std::vector<ToolCallOut> tool_calls;   // left out when empty
};

std::string new_completion_id();       // "cmpl-" + 32 hex digits
std::string new_chat_completion_id();  // "chatcmpl-" + 32 hex digits
std::string new_tool_call_id();        // "call_" + 24 hex digits
int64_t unix_now();

// A token piece as JSON text: itself when valid UTF-8, else vLLM's "bytes:\xe2\x80"
// spelling (backslash escapes of every byte).
std::string token_text(std::string_view bytes);
// Characters (UTF-8 lead bytes) in a piece: how far it moves text_offset.
int64_t num_chars(std::string_view bytes);

nlohmann::ordered_json usage_object(const Usage& usage);

// {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
nlohmann::ordered_json completion_logprobs(const std::vector<TokenLogprob>& entries, int64_t text_offset);
// {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}
nlohmann::ordered_json chat_logprobs(const std::vector<TokenLogprob>& entries);

// /v1/completions
nlohmann::ordered_json completion_object(const ResponseHeader& header,
                                         const std::vector<CompletionChoice>& choices,
                                         const Usage& usage);
// One streamed choice; with include_usage every chunk carries "usage": null.
nlohmann::ordered_json completion_chunk(const ResponseHeader& header, const CompletionChoice& choice,
                                        bool include_usage);
// The last chunk when include_usage: no choices, the usage.
nlohmann::ordered_json completion_usage_chunk(const ResponseHeader& header, const Usage& usage);

// /v1/chat/completions
nlohmann::ordered_json chat_completion_object(const ResponseHeader& header,
                                              const std::vector<ChatChoice>& choices,
                                              const Usage& usage);
// Stream order per choice: role chunk, content chunks, finish chunk; then the usage
// chunk when include_usage.
nlohmann::ordered_json chat_role_chunk(const ResponseHeader& header, int32_t index, bool include_usage);
nlohmann::ordered_json chat_content_chunk(const ResponseHeader& header, int32_t index,
                                          const std::string& content,
                                          const std::vector<TokenLogprob>* logprobs,
                                          bool include_usage);
// A chunk with any delta object (reasoning, tool-call pieces; see the *_delta below).
nlohmann::ordered_json chat_delta_chunk(const ResponseHeader& header, int32_t index, nlohmann::ordered_json delta,
                                        const std::vector<TokenLogprob>* logprobs, bool include_usage);
// {"reasoning_content": text, "reasoning": text} (vLLM's old and current names).
nlohmann::ordered_json reasoning_delta(const std::string& text);
// A call's first delta: index, id, type, the name and "arguments": "".
nlohmann::ordered_json tool_call_begin_delta(int32_t call_index, const std::string& id, const std::string& name);
// More of a call's arguments.
nlohmann::ordered_json tool_call_arguments_delta(int32_t call_index, const std::string& arguments);
nlohmann::ordered_json chat_finish_chunk(const ResponseHeader& header, int32_t index,
                                         const std::string& finish_reason, bool include_usage);
nlohmann::ordered_json chat_usage_chunk(const ResponseHeader& header, const Usage& usage);

}  // namespace sluice::proto
