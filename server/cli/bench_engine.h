#pragma once
// `sluice bench --model`'s serving phase: S streams submitted at once to a real
// Engine (scheduler, paged KV pool, sampler, detokenizer: the path a server request
// takes, without HTTP), each a distinct prompt generating a fixed number of tokens
// greedily with EOS ignored. Measures what continuous batching delivers: aggregate
// generated tokens/s from the first submission to the last token, and time to
// first token.
#include <cstdint>
#include <memory>

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
  double tokens_per_second() const { return seconds > 0 ? static_cast<double>(generated_tokens) / seconds : 0.0; }
};

// Throws std::runtime_error when a stream ends other than by its token limit (or,
// with a grammar, by the grammar's end). With `grammar`, every stream's output is
// constrained by it (structured outputs).
EngineLoadResult run_engine_load(engine::Model& model, const tokenizer::Tokenizer& tokenizer, int streams,
                                 int prompt_tokens, int generate_tokens,
                                 std::shared_ptr<grammar::CompiledGrammar> grammar = nullptr);

}  // namespace sluice::server
