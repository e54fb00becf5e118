#pragma once
// `sluice bench --model M --speculative ngram` (or `draft_model` with --draft-model):
// speculative decoding against none, through the engine (bench_engine.h), on one
// model, in the order off, on, on, off: a repetitive task (repeat or edit a text given in
// the prompt: what prompt lookup finds drafts in) and plain chat, at each --streams
// count. Prompts are chat messages rendered with the model's template; greedy, EOS
// ignored, so both runs of a pair generate the same tokens. Prints output tokens/s
// off and on, their ratio, the acceptance rate (accepted / drafted tokens) and the
// tokens one verifying step emitted per sequence (1 + accepted / drafts).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/speculative/speculative_config.h"

namespace sluice::backends {
class Backend;
}
namespace sluice::engine {
class Model;
}
namespace sluice::tokenizer {
class Tokenizer;
}

namespace sluice::server {

struct SpeculationBench {
  engine::SpeculativeMethod method = engine::SpeculativeMethod::ngram;
  int num_speculative_tokens = 4;
  std::string draft_model_path;  // method draft_model
  std::vector<int> streams;
  int generate_tokens = 128;
};

// Loads the draft model (on `backend`, tokenizer checked) when the method needs one.
// Throws std::runtime_error when a run fails or the draft model is refused.
nlohmann::ordered_json run_speculation_bench(engine::Model& model, const tokenizer::Tokenizer& tokenizer,
                                             backends::Backend& backend, const SpeculationBench& bench);

}  // namespace sluice::server
