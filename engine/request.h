#pragma once
// What a client asks the engine for (GenerationRequest) and what comes back on its
// RequestStream: deltas of text and tokens per choice, then one finish per choice.
// Plain data: proto/ fills the request from the OpenAI fields; the server turns the
// events into SSE chunks or one JSON body.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/pooling.h"
#include "engine/sampler.h"
#include "engine/scheduling/sequence.h"

namespace sluice::grammar {
class CompiledGrammar;
}

namespace sluice::engine {

inline constexpr size_t kMaxStopStrings = 4;  // OpenAI's limit
inline constexpr int32_t kMaxChoices = 16;      // n: choices per prompt
inline constexpr size_t kMaxLogitBias = 300;    // logit_bias entries (OpenAI's limit)
inline constexpr size_t kMaxStopTokenIds = 64;  // stop_token_ids (vLLM sets none; a bound)

// Where a lazy grammar starts: the first occurrence of one of `anywhere` in the
// output, or `at_start` as the output's first non-whitespace text. Nothing inside
// reasoning (quiet_open ... quiet_close; from the start when starts_quiet) starts it.
struct GrammarTrigger {
  std::vector<std::string> anywhere;
  std::string at_start;
  std::string quiet_open;
  std::string quiet_close;
  bool starts_quiet = false;
};

struct GenerationRequest {
  std::string request_id;              // unique among the requests in flight
  std::vector<int32_t> prompt_tokens;  // already tokenized (chat template applied)
  SamplingParams params;               // n, max_tokens, seed, logprobs, ignore_eos ...
  std::vector<std::string> stop;       // at most kMaxStopStrings; never shown in the text
  std::vector<int32_t> stop_token_ids; // vLLM: these tokens stop the choice (even with ignore_eos)
  bool include_stop_str_in_output = false;  // vLLM: keep the matched stop string / stop token text
  int32_t priority = 0;                // vLLM: lower is served first
  std::optional<Clock::time_point> deadline;        // finish by then, or "timeout"
  std::optional<Clock::time_point> queue_deadline;  // be admitted by then, or "timeout"
  bool skip_special_tokens = true;     // control tokens produce no text
  // Where the prompt came from, for the context-length error's `param`: "prompt"
  // (completions) or "messages" (chat).
  std::string prompt_param = "prompt";
  // Fair sharing of the queue (fair_order.h): the API request this prompt is a part
  // of (empty: request_id; the prompts of one API request take one turn) and the
  // client that sent it (an API key's hash; 0: unknown).
  std::string group_id;
  uint64_t client_id = 0;
  size_t stream_capacity = 0;          // deltas its stream buffers; 0: EngineConfig::stream_capacity
  // Structured output: every choice's tokens are masked to what this grammar allows
  // (one matcher per choice). Null: unconstrained.
  std::shared_ptr<grammar::CompiledGrammar> grammar;
  // A lazy grammar (tool_choice auto): free text until the output starts a call, then
  // the grammar from the trigger's first byte on. Absent: the grammar applies from
  // the first token.
  std::optional<GrammarTrigger> grammar_trigger;
  // An embedding request (/v1/embeddings): the prompt is computed and pooled, nothing
  // is sampled (params are ignored but for n, which must be 1). Its one ChoiceFinish
  // ("stop") carries the L2-normalized vector; its KV is freed at once, never cached.
  std::optional<Pooling> embed;
  // Speculative decoding when the model has it on; false: this request never drafts
  // (its output is the same either way; only its speed differs).
  bool speculative = true;
};

// The chosen token's log-probability and, when asked, the top alternatives (raw model
// distribution, best first).
struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
};

// New output of one choice. `text` is complete UTF-8 only; text that could be the
// start of a stop string is held back until it is known not to be one, so a delta
// may carry tokens and no text. The stop string itself never appears.
struct ChoiceDelta {
  int32_t index = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<TokenLogprobs> logprobs;  // one per token when params.logprobs is set
  // Choice 0 with params.prompt_logprobs: the next prompt tokens scored, in order,
  // from prompt token 1 (token 0 has nothing before it); each is sent once.
  std::vector<TokenLogprobs> prompt_logprobs;
};

// The end of one choice; the last event of that choice.
struct ChoiceFinish {
  int32_t index = 0;
  FinishReason reason = FinishReason::stop;
  int64_t num_prompt_tokens = 0;
  int64_t num_completion_tokens = 0;
  int64_t num_cached_tokens = 0;  // prompt tokens served from the prefix cache
  std::string matched_stop;       // the stop string that ended it ("" for EOS or other reasons)
  std::string error;              // why, for "error" and for engine-initiated "abort"s
  // "timeout" from the queue deadline: never admitted because the queue was busy
  // (worth a retry), not because the request's own deadline was too short.
  bool queue_timeout = false;
  // An embedding request's pooled, L2-normalized final hidden state (empty otherwise).
  std::vector<float> embedding;

  // "stop" | "length" | "abort" | "timeout" | "error"
  std::string_view finish_reason() const { return to_string(reason); }
};

// New audio of a speech request (engine/tts/serving/speech_engine.h): mono float PCM in
// [-1, 1] at the model's output rate, the next num_frames codec frames. Text
// requests never carry one; a speech request's finish is a ChoiceFinish whose
// num_prompt_tokens are the input text tokens and num_completion_tokens the frames.
struct AudioDelta {
  int32_t index = 0;
  std::vector<float> pcm;
  int64_t num_frames = 0;
};

using RequestEvent = std::variant<ChoiceDelta, ChoiceFinish, AudioDelta>;

}  // namespace sluice::engine
