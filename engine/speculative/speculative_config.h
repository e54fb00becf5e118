#pragma once
// How one model speculates (per model entry `speculative` in the config): which
// drafter proposes tokens, how many per step, and when speculation is not worth it.
#include <cstdint>

namespace sluice::engine {

class Model;

enum class SpeculativeMethod { none, ngram, draft_model };

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::none;
  int32_t num_speculative_tokens = 4;  // k: tokens proposed per sequence and step
  // ngram (vLLM's prompt lookup): the longest suffix of n tokens, n from max down to
  // min, found earlier in the sequence proposes the tokens that followed it.
  int32_t prompt_lookup_min = 2;
  int32_t prompt_lookup_max = 4;
  // draft_model: the model that drafts greedily (model_drafter.h). Not owned; on the
  // target's backend, with the target's tokenizer (the caller checks), and it must
  // outlive the engine.
  Model* draft_model = nullptr;
  // No sequence drafts in a step whose decoding sequences exceed this: with many
  // rows a step is no longer bound by reading the weights once, so the extra rows
  // of drafts cost about what they save (measured: docs/speculative-decoding.md).
  int32_t disable_by_batch_size = 4;

  bool enabled() const { return method != SpeculativeMethod::none && num_speculative_tokens > 0; }
};

}  // namespace sluice::engine
