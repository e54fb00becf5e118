#pragma once
// `sluice bench --model`'s serving phase: S streams submitted at once to a real
// Engine (scheduler, paged KV pool, sampler, detokenizer: the path a server request
// takes, without HTTP), each a distinct prompt generating a fixed number of tokens
// greedily with EOS ignored. Measures what continuous batching delivers: aggregate
// generated tokens/s from the first submission to the last token, and time to
// first token.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/speculative/speculative_config.h"

namespace sluice::engine {
class Model;
}
namespace sluice::grammar {
class CompiledGrammar;
}
namespace sluice::tokenizer {
class Tokenizer;
}

namespace sluice::server {

struct EngineLoadResult {
  int streams = 0;
  double seconds = 0.0;          // first submission to the last finish
  int64_t generated_tokens = 0;  // all streams
  double ttft_mean_seconds = 0.0;
  double ttft_max_seconds = 0.0;
  uint64_t steps = 0;            // engine steps taken
  uint64_t preemptions = 0;
  double decode_seconds = 0.0;   // all streams: first token to finish
  int64_t decode_tokens = 0;     // all streams: tokens after the first
  uint64_t num_drafts = 0;           // speculation: sequences whose drafts were verified, per step
  uint64_t num_draft_tokens = 0;     // ... tokens drafted
  uint64_t num_accepted_tokens = 0;  // ... of those accepted
  double tokens_per_second() const { return seconds > 0 ? static_cast<double>(generated_tokens) / seconds : 0.0; }
  // One stream's decoding rate, after its first token (the mean over streams).
  double decode_tokens_per_second() const {
    return decode_seconds > 0 ? static_cast<double>(decode_tokens) / decode_seconds : 0.0;
  }
};

struct EngineLoad {
  int streams = 1;
  int prompt_tokens = 128;  // of each synthetic prompt
  int generate_tokens = 128;
  // Set: every stream's output is constrained by it (structured outputs).
  std::shared_ptr<grammar::CompiledGrammar> grammar;
  // Non-empty: stream s sends prompts[s % size] instead of a synthetic prompt.
  std::vector<std::vector<int32_t>> prompts;
  engine::SpeculativeConfig speculative;  // off unless its method says otherwise
  bool ignore_eos = true;  // false: a stream may also end on EOS (a `stop` finish)
};

// Throws std::runtime_error when a stream ends other than by its token limit (or,
// with a grammar or without ignore_eos, by a stop).
EngineLoadResult run_engine_load(engine::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineLoad& load);

}  // namespace sluice::server
