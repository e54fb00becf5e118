#pragma once
// GenerationJob: one generation response assembled from the events of its engine
// requests (one RequestStream per prompt, n choices each), without a socket. It
// folds every ChoiceDelta and ChoiceFinish into per-choice tallies and the usage,
// and its ResponseFormat (response_format.h) turns the fold into the API's bytes:
// SSE events while streaming, or one JSON body at the end. The route submits the
// requests, adds their streams as parts, writes what the job returns and watches
// the connection; everything between the engine's events and the wire is here.
//
// Used by one thread at a time (the connection's strand); the streams' producer is
// the engine thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "engine/request_stream.h"
#include "proto/errors.h"
#include "proto/responses.h"
#include "server/api/generation/response_format.h"

namespace sluice::server {

// What the client asked of the whole response, beyond its choices.
struct JobSettings {
  proto::ResponseHeader header{};
  bool want_logprobs = false;     // logprobs asked for (best_of alone asks the engine for them: not shown)
  bool include_usage = false;     // stream_options.include_usage: "usage": null per chunk, a usage chunk last
  bool continuous_usage = false;  // vLLM stream_options.continuous_usage_stats: the usage so far per chunk
  // max_tokens 0 with echo: the engine generates one token only to finish the
  // request; it is neither shown nor counted, and every choice ends with "length".
  bool score_only = false;
};

// One engine request: one prompt and its choices.
struct JobPart {
  std::shared_ptr<engine::RequestStream> stream;
  int32_t first_index = 0;  // response choice index of its choice 0
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;  // the most any of its choices reported
};

// What one response choice has gathered so far.
struct ChoiceTally {
  std::string text;
  std::vector<proto::TokenLogprob> logprobs;  // not streaming: every generated token's, when asked for
  int64_t num_chars_sent = 0;  // streaming: characters already sent, echo included (text_offset)
  int64_t num_tokens = 0;
  double cumulative_logprob = 0.0;  // best_of: the rank of the choice
  std::optional<std::string> finish_reason;
  std::string matched_stop;  // the stop string that ended it ("" for EOS or other reasons)
  std::string error;
  bool queue_timeout = false;  // timed out before admission: the queue was busy
};

// A token's bytes, for logprob entries (Tokenizer::token_to_piece).
using TokenPiece = std::function<std::string(int32_t token)>;

class GenerationJob {
 public:
  GenerationJob(JobSettings settings, std::unique_ptr<ResponseFormat> format, TokenPiece piece);

  // The next engine request's stream; its choices take the next response indices.
  void add_part(std::shared_ptr<engine::RequestStream> stream, int64_t num_prompt_tokens);

  // --- the route's side ---
  // Streaming: what opens the stream, before any event.
  std::string open_stream() { return format_->open_stream(*this); }
  // Pops every waiting event of every part and folds it in; returns the SSE text
  // they make when streaming ("" otherwise).
  std::string fold_waiting(bool streaming);
  // Every choice finished and every event was folded.
  bool is_done() const;
  // Streaming, after every choice finished: the usage chunk (when asked) and [DONE].
  std::string close_stream() { return format_->close_stream(*this); }
  // A choice ended with "error": the response fails (500 or a last error event).
  bool has_failed() const;
  // What the client is told about it: only the request id (the reason is logged).
  proto::ApiError failure_error(const std::string& request_id) const;
  std::string error_event(const proto::ApiError& error) { return format_->error_event(error); }
  // Not streaming: the deadline ended every choice before its first token, so there
  // is nothing to answer with; and whether one of them never got out of the queue.
  bool is_timed_out_empty() const;
  bool is_queue_timeout() const;
  // Not streaming, done, neither failed nor timed out empty: the JSON body.
  std::string whole_body() { return format_->whole_body(*this); }

  // One event of part `part`; returns the SSE text it makes when streaming.
  std::string fold(size_t part, engine::RequestEvent& event, bool streaming);

  // --- the format's side ---
  const JobSettings& settings() const { return settings_; }
  std::vector<JobPart>& parts() { return parts_; }
  const std::vector<JobPart>& parts() const { return parts_; }
  std::vector<ChoiceTally>& choices() { return choices_; }
  const std::vector<ChoiceTally>& choices() const { return choices_; }
  int32_t num_choices_per_part() const;
  proto::Usage usage() const;
  // One streamed chunk as an SSE event; with continuous usage it carries the usage so far.
  std::string chunk_event(nlohmann::ordered_json chunk) const;
  // The "usage" of a chunk written as text: the usage so far (continuous), "null"
  // (include_usage), or none.
  std::optional<std::string> chunk_usage_text() const;
  std::vector<proto::TokenLogprob> to_wire(const std::vector<engine::TokenLogprobs>& entries) const;

 private:
  std::string fold_delta(size_t part, engine::ChoiceDelta& delta, bool streaming);
  std::string fold_finish(size_t part, const engine::ChoiceFinish& finish, bool streaming);

  JobSettings settings_;
  std::unique_ptr<ResponseFormat> format_;
  TokenPiece piece_;
  std::vector<JobPart> parts_;
  std::vector<ChoiceTally> choices_;
};

}  // namespace sluice::server
