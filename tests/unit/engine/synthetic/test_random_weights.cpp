// make_random_weights: synthetic models that Model::load takes and that run to
// finite logits in every dtype, with the tensor set of the real models' shapes.
#include "engine/synthetic/random_weights.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/load_error.h"
#include "engine/models/batch_builder.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"

namespace sluice::loader::unit_engine_synthetic_test_random_weights {
namespace {

using backends::DType;

constexpr DType kDtypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0,
                             DType::Q4_0, DType::Q4_K, DType::Q6_K};

uint64_t num_elements(const RandomModelSpec& spec) {
  uint64_t n = 0;
  for (const RandomTensor& t : random_model_tensors(spec)) {
    uint64_t elements = 1;
    for (int64_t dim : t.shape) elements *= static_cast<uint64_t>(dim);
    n += elements;
  }
  return n;
}

// The logits of `count` prompt tokens in one step, then of one decode step.
std::vector<float> prefill_then_decode(engine::Model& model, int32_t count) {
  engine::KvCache cache(model.backend(), model.hparams(), {.num_blocks = 4, .block_size = 16, .dtype = DType::F16});
  const auto vocab = static_cast<size_t>(model.hparams().vocab_size);
  const std::vector<int32_t> block_table = {2, 0, 3, 1};
  engine::BatchBuilder builder(16);
  std::vector<float> all;
  for (auto [begin, n] : {std::pair<int32_t, int32_t>{0, count}, {count, 1}}) {
    std::vector<int32_t> tokens;
    for (int32_t p = begin; p < begin + n; ++p) tokens.push_back((p * 37 + 11) % static_cast<int32_t>(vocab));
    builder.clear();
    builder.add_last_logit_row(builder.add_sequence(tokens, begin, block_table));
    std::vector<float> logits(vocab);
    model.forward(builder.batch(), cache, logits);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST_CASE("the presets have the tensors of the real models") {
  // Llama 3.1 8B and Qwen3 8B, counted from their safetensors.
  CHECK(num_elements(random_model_preset("llama3-8b")) == 8030261248ull);
  CHECK(num_elements(random_model_preset("qwen3-8b")) == 8190735360ull);
  const RandomModelSpec qwen = random_model_preset("qwen3-8b");
  const auto tensors = random_model_tensors(qwen);
  CHECK(std::count_if(tensors.begin(), tensors.end(),
                      [](const RandomTensor& t) { return t.name.ends_with("attn_q_norm.weight"); }) == 36);
  CHECK(random_model_preset("llama3-8b").hparams.rope.llama3_factor == 8.0f);
  CHECK_THROWS_AS(random_model_preset("llama3-70b"), std::invalid_argument);
}

TEST_CASE("rows that are not whole blocks, and bad hparams, are refused") {
  RandomModelSpec spec = random_model_preset("tiny");
  spec.hparams.embedding_length = 96;  // not a multiple of Q4_K's 256
  spec.matrix_dtype = DType::Q4_K;
  CHECK_THROWS_AS(random_model_tensors(spec), LoadError);
  spec = random_model_preset("tiny");
  spec.hparams.num_layers = 0;
  CHECK_THROWS_AS(make_random_weights(spec, 1), LoadError);
  spec = random_model_preset("tiny");
  spec.matrix_dtype = DType::Q5_1;
  CHECK_THROWS_AS(make_random_weights(spec, 1), LoadError);
}

TEST_CASE("the same seed gives the same bytes, another seed others") {
  const RandomModelSpec spec = random_model_preset("tiny");
  const auto a = make_random_weights(spec, 7), b = make_random_weights(spec, 7), c = make_random_weights(spec, 8);
  const auto bytes = [](const WeightSource& s) {
    const auto data = s.find("blk.1.ffn_down.weight")->data;
    return std::vector<std::byte>(data.begin(), data.end());
  };
  CHECK(bytes(*a) == bytes(*b));
  CHECK(bytes(*a) != bytes(*c));
  CHECK(a->path() == "random:tiny");
}

TEST_CASE("every dtype loads and runs to finite logits on the CPU backend") {
  auto backend = backends::make_cpu_backend(2);
  for (std::string arch : {"llama", "qwen3"}) {
    for (DType dtype : kDtypes) {
      CAPTURE(arch);
      CAPTURE(backends::dtype_name(dtype));
      RandomModelSpec spec = random_model_preset("tiny");
      spec.matrix_dtype = dtype;
      if (arch == "qwen3") {
        spec.hparams.architecture = "qwen3";
        spec.hparams.qk_norm = true;
        spec.hparams.rope.neox = spec.hparams.rope_local.neox = true;
      }
      std::shared_ptr<const WeightSource> source = make_random_weights(spec, 1);
      CHECK(source->find("blk.0.attn_q.weight")->dtype == dtype);
      CHECK(source->find("blk.0.attn_norm.weight")->dtype == DType::F32);
      auto model = engine::Model::load(source, *backend);
      const std::vector<float> logits = prefill_then_decode(*model, 20);
      CHECK(std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }));
      const auto [lo, hi] = std::minmax_element(logits.begin(), logits.end());
      CHECK(*hi - *lo > 1e-3f);  // the weights are not degenerate
    }
  }
}

}  // namespace
}  // namespace sluice::loader
