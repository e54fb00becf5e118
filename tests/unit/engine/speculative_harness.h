#pragma once
// What the speculative-decoding engine tests share: prompts that repeat themselves,
// running a set of requests on a fresh engine, and comparing two runs' outputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/engine/engine_harness.h"

namespace sluice::engine::testing {

// A prompt that repeats itself, so that prompt lookup finds matches from the start.
inline std::vector<int32_t> repetitive_prompt(uint32_t seed) {
  std::vector<int32_t> piece = make_prompt(seed, 7);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 4; ++i) prompt.insert(prompt.end(), piece.begin(), piece.end());
  return prompt;
}

struct Run {
  std::vector<ChoiceResult> choices;  // of every request, in order
  EngineStats stats;
};

// All requests at once (they share steps), on a fresh engine; waits until it is idle.
inline Run run_all(LoadedFixture& f, const EngineConfig& config, const std::vector<GenerationRequest>& requests) {
  Engine engine(*f.model, *f.tokenizer, config);
  engine.start();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const GenerationRequest& request : requests) {
    SubmitResult submitted = engine.submit(request);
    REQUIRE(submitted.ok());
    streams.push_back(submitted.stream);
  }
  Run run;
  for (auto& stream : streams) {
    for (ChoiceResult& choice : collect(*stream)) {
      REQUIRE(choice.finished);
      run.choices.push_back(std::move(choice));
    }
  }
  CHECK(wait_idle(engine));  // every KV block is back, drafts' too
  run.stats = engine.stats();
  return run;
}

// Logprobs bit for bit unless a tolerance is given (CUDA: cuBLAS sums a row in an
// order that depends on the step's row count); returns the largest difference.
inline double check_same_output(const Run& plain, const Run& speculative, double logprob_tolerance = 0.0) {
  double worst = 0.0;
  REQUIRE(plain.choices.size() == speculative.choices.size());
  for (size_t i = 0; i < plain.choices.size(); ++i) {
    CAPTURE(i);
    const ChoiceResult& a = plain.choices[i];
    const ChoiceResult& b = speculative.choices[i];
    CHECK(a.tokens == b.tokens);
    CHECK(a.text == b.text);
    CHECK(a.finish.finish_reason() == b.finish.finish_reason());
    CHECK(a.finish.num_completion_tokens == b.finish.num_completion_tokens);
    CHECK(a.finish.matched_stop == b.finish.matched_stop);
    REQUIRE(a.logprobs.size() == b.logprobs.size());
    for (size_t t = 0; t < a.logprobs.size(); ++t) {
      const double difference = std::abs(double(a.logprobs[t].logprob) - b.logprobs[t].logprob);
      worst = std::max(worst, difference);
      if (logprob_tolerance == 0.0)
        CHECK(a.logprobs[t].logprob == b.logprobs[t].logprob);  // bit for bit: the same logits
      else
        CHECK(difference <= logprob_tolerance);
      CHECK(a.logprobs[t].top.size() == b.logprobs[t].top.size());
    }
  }
  return worst;
}

inline std::vector<GenerationRequest> greedy_set(int32_t max_tokens) {
  std::vector<GenerationRequest> requests;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    GenerationRequest r = greedy_request("g" + std::to_string(seed),
                                         seed % 2 ? repetitive_prompt(seed) : make_prompt(seed, 20), max_tokens);
    r.params.logprobs = 2;
    requests.push_back(std::move(r));
  }
  return requests;
}

// The draft-model drafter (model_drafter.h) with the llama fixture in `variant`.
inline std::string fixture_path(const std::string& variant) {
  return std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-" + variant + ".gguf";
}

// The llama fixture in `variant`, on the target's backend (as the server loads it).
inline std::unique_ptr<Model> load_draft(LoadedFixture& target, const std::string& variant) {
  return Model::load(loader::open_weights(fixture_path(variant)), *target.backend);
}

inline EngineConfig draft_config(Model& draft, int32_t k = 4, int32_t disable_by_batch_size = 1000) {
  EngineConfig config = small_config();
  config.speculative.method = SpeculativeMethod::draft_model;
  config.speculative.draft_model = &draft;
  config.speculative.num_speculative_tokens = k;
  config.speculative.disable_by_batch_size = disable_by_batch_size;
  return config;
}

}  // namespace sluice::engine::testing
