#pragma once
// Test helpers for the Engine: a fixture model (on the CPU backend unless given one) with its GGUF
// tokenizer, and a consumer that drains a RequestStream into per-choice results.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "engine/engine.h"
#include "engine/loader/gguf_file.h"
#include "engine/loader/weight_source.h"
#include "engine/models/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::testing {

struct LoadedFixture {
  std::unique_ptr<backends::Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// The fixture model on `backend` (the CUDA tests pass theirs).
inline LoadedFixture load_engine_fixture_on(std::unique_ptr<backends::Backend> backend, const std::string& name,
                                            const std::string& variant) {
  const std::string path = std::string(SLUICE_FIXTURES_DIR) + "/models/" + name + "/" + name + "-" + variant + ".gguf";
  LoadedFixture f;
  f.backend = std::move(backend);
  f.model = Model::load(loader::open_weights(path), *f.backend);
  f.tokenizer = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(path)));
  return f;
}

inline LoadedFixture load_engine_fixture(const std::string& name = "llama", const std::string& variant = "f32",
                                         int num_threads = 2) {
  return load_engine_fixture_on(backends::make_cpu_backend(num_threads), name, variant);
}

inline EngineConfig small_config() {
  EngineConfig config;
  config.model_name = "fixture";
  config.kv_cache_bytes = 4ull << 20;
  config.kv_dtype = backends::DType::F32;
  config.max_num_seqs = 32;
  config.max_num_batched_tokens = 256;
  return config;
}

struct ChoiceResult {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;
  int32_t num_deltas = 0;
  bool all_deltas_valid_utf8 = true;
  bool finished = false;
  ChoiceFinish finish;
};

// Reads every event until each choice has finished (or the timeout passes).
inline std::vector<ChoiceResult> collect(RequestStream& stream,
                                         std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::vector<ChoiceResult> choices(static_cast<size_t>(stream.num_choices()));
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!stream.is_done() && std::chrono::steady_clock::now() < until) {
    stream.wait(std::chrono::milliseconds(50));
    std::vector<RequestEvent> events;
    stream.poll(events);
    for (auto& event : events) {
      if (auto* d = std::get_if<ChoiceDelta>(&event)) {
        auto& c = choices.at(static_cast<size_t>(d->index));
        c.text += d->text;
        c.all_deltas_valid_utf8 = c.all_deltas_valid_utf8 && tokenizer::utf8::is_valid(d->text);
        c.tokens.insert(c.tokens.end(), d->token_ids.begin(), d->token_ids.end());
        c.logprobs.insert(c.logprobs.end(), d->logprobs.begin(), d->logprobs.end());
        ++c.num_deltas;
      } else {
        auto& f = std::get<ChoiceFinish>(event);
        auto& c = choices.at(static_cast<size_t>(f.index));
        c.finished = true;
        c.finish = f;
      }
    }
  }
  return choices;
}

inline GenerationRequest greedy_request(std::string id, std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.request_id = std::move(id);
  r.prompt_tokens = std::move(prompt);
  r.params.temperature = 0.0f;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

// Deterministic pseudo-random prompt of `len` ids in [3, vocab).
inline std::vector<int32_t> make_prompt(uint32_t seed, size_t len, int32_t vocab = 300) {
  std::vector<int32_t> ids;
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < len; ++i) {
    x = x * 1664525u + 1013904223u;
    ids.push_back(3 + static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab - 3)));
  }
  return ids;
}

// Polls until the engine thread has reaped everything (blocks freed).
inline bool wait_idle(Engine& engine, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    const EngineStats s = engine.stats();
    if (s.num_running == 0 && s.num_waiting == 0 && s.num_active_requests == 0 && s.num_pending == 0 &&
        s.kv_cache_usage == 0.0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

}  // namespace sluice::engine::testing
