#pragma once
// Test helpers for the model parity fixtures (tests/fixtures/models/NAME/, made by
// make_model_fixtures.py): reading reference.json and its logits, and running token
// sequences through a Model with a small paged KV cache, on the CPU backend or on
// any Backend the caller passes (the CUDA parity tests).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"

namespace sluice::engine::testing {

struct ReferenceSequence {
  std::vector<int32_t> tokens;
  std::map<std::string, std::vector<float>> logits;  // variant ("f32", "q8_0", "q4_0") -> [len, vocab]
};

struct ModelFixture {
  std::string name;
  std::filesystem::path dir;                          // also the safetensors folder
  std::map<std::string, std::filesystem::path> gguf;  // variant -> file
  int64_t vocab_size = 0;
  std::vector<ReferenceSequence> sequences;
};

inline const std::vector<std::string> kFixtureNames = {"llama", "llama3", "qwen3", "gemma3"};

ModelFixture load_fixture(const std::string& name);

// The weights of a fixture: variant "safetensors", or a GGUF variant ("f32", ...).
std::shared_ptr<const loader::WeightSource> open_fixture_weights(const ModelFixture& fixture,
                                                                 const std::string& format);

// Max over rows of max|a - b| / max|b| (each row is one position's logits [vocab]).
double max_relative_error(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab);
// Per row, max|a - b| (for bounds that compose by the triangle inequality).
std::vector<double> row_abs_errors(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab);
std::vector<double> row_abs_max(const std::vector<float>& a, int64_t vocab);

// A model with a KV cache of small blocks, handing each sequence its blocks in
// reverse order so attention really walks a paged table.
class ModelRunner {
 public:
  static constexpr int64_t kBlockSize = 4;
  static constexpr int64_t kNumBlocks = 64;

  // On a CPU backend of its own with `num_threads` compute threads.
  ModelRunner(std::shared_ptr<const loader::WeightSource> weights, int num_threads = 2,
              backends::DType kv_dtype = backends::DType::F32);
  // On `backend` (the CPU's or a GPU's), which must outlive the runner;
  // quantize_to as Model::load's.
  ModelRunner(std::shared_ptr<const loader::WeightSource> weights, backends::Backend& backend,
              backends::DType kv_dtype = backends::DType::F32,
              std::optional<backends::DType> quantize_to = std::nullopt);

  Model& model() { return *model_; }
  backends::Backend& backend() { return *backend_; }

  // Logits of every position [len, vocab] of one sequence fed in steps of `chunk`
  // tokens (chunk >= len: one step), starting from an empty cache region `region`
  // (sequences in different regions do not share blocks).
  std::vector<float> run(const std::vector<int32_t>& tokens, size_t chunk, int region = 0);

  // One step that feeds several sequences: sequence i gets tokens[i] (its next
  // tokens), continuing after cached[i] tokens already in region i. Returns the
  // logits of every row [sum of lengths, vocab]; `logit_rows` reorders/picks rows
  // when not empty.
  std::vector<float> step(const std::vector<std::vector<int32_t>>& tokens, const std::vector<int32_t>& cached,
                          const std::vector<int>& regions, std::vector<int32_t> logit_rows = {});

  std::vector<int32_t> block_table(int region, int64_t num_tokens) const;

 private:
  void load(std::shared_ptr<const loader::WeightSource> weights, backends::DType kv_dtype,
            std::optional<backends::DType> quantize_to);

  std::unique_ptr<backends::Backend> owned_backend_;  // the CPU runner's; declared first, destroyed last
  backends::Backend* backend_ = nullptr;
  std::unique_ptr<Model> model_;
  std::unique_ptr<KvCache> cache_;
};

}  // namespace sluice::engine::testing
