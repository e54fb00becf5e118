// Model::load refuses files that do not fit their architecture, naming the file and
// the tensor; KvCache sizes its blocks.
#include <doctest/doctest.h>

#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "engine/loader/load_error.h"
#include "tests/unit/engine/models/model_fixture.h"

namespace sluice::engine::testing::unit_engine_models_test_model_load {
namespace {

// A real fixture's weights with some tensors hidden, reshaped or retyped, and
// hyperparameters edited: the mismatched files of the tests.
class EditedSource : public loader::WeightSource {
 public:
  explicit EditedSource(std::shared_ptr<const loader::WeightSource> inner)
      : hparams_(inner->hparams()), inner_(std::move(inner)) {}

  const std::filesystem::path& path() const override { return inner_->path(); }
  const ModelHparams& hparams() const override { return hparams_; }
  std::optional<loader::WeightView> find(std::string_view name) const override {
    if (hidden.count(std::string(name))) return std::nullopt;
    auto view = inner_->find(name);
    if (view && name == reshaped) view->shape = new_shape;
    if (view && name == retyped) view->dtype = backends::DType::F16;
    return view;
  }

  std::set<std::string> hidden;
  std::string reshaped;
  std::vector<int64_t> new_shape;
  std::string retyped;
  ModelHparams hparams_;

 private:
  std::shared_ptr<const loader::WeightSource> inner_;
};

std::string load_error(const std::shared_ptr<EditedSource>& source) {
  auto backend = backends::make_cpu_backend(1);
  try {
    Model::load(source, *backend);
  } catch (const loader::LoadError& e) {
    return e.what();
  }
  return "";
}

std::shared_ptr<EditedSource> edited(const std::string& fixture, const std::string& format = "f32") {
  return std::make_shared<EditedSource>(open_fixture_weights(load_fixture(fixture), format));
}

TEST_CASE("a missing tensor fails at load, naming the file and the tensor") {
  auto source = edited("llama");
  source->hidden = {"blk.1.ffn_up.weight"};
  const std::string error = load_error(source);
  CHECK(error.find("blk.1.ffn_up.weight") != std::string::npos);
  CHECK(error.find("llama-f32.gguf") != std::string::npos);

  auto qwen = edited("qwen3", "safetensors");
  qwen->hidden = {"blk.0.attn_k_norm.weight"};
  CHECK(load_error(qwen).find("blk.0.attn_k_norm.weight") != std::string::npos);

  auto gemma = edited("gemma3");
  gemma->hidden = {"blk.2.post_ffw_norm.weight"};
  CHECK(load_error(gemma).find("blk.2.post_ffw_norm.weight") != std::string::npos);

  auto untied = edited("llama3");
  untied->hidden = {"output.weight"};
  CHECK(load_error(untied).find("output.weight") != std::string::npos);
}

TEST_CASE("a tensor of the wrong shape or dtype fails at load, naming it") {
  auto source = edited("qwen3", "q8_0");
  source->reshaped = "blk.1.attn_k.weight";
  source->new_shape = {32, 64};  // qwen3 fixture: kv = 2 heads x 32 = 64 rows
  const std::string error = load_error(source);
  CHECK(error.find("blk.1.attn_k.weight") != std::string::npos);
  CHECK(error.find("qwen3-q8_0.gguf") != std::string::npos);

  auto norm = edited("gemma3");
  norm->retyped = "blk.0.attn_q_norm.weight";
  const std::string norm_error = load_error(norm);
  CHECK(norm_error.find("blk.0.attn_q_norm.weight") != std::string::npos);
  CHECK(norm_error.find("F32") != std::string::npos);

  // Hyperparameters that disagree with the tensors: the first tensor they size fails.
  auto ffn = edited("llama");
  ffn->hparams_.ffn_length = 96;
  CHECK(load_error(ffn).find("blk.0.ffn_gate.weight") != std::string::npos);
}

TEST_CASE("hyperparameters that do not fit the architecture fail at load") {
  auto unknown = edited("llama");
  unknown->hparams_.architecture = "mamba";
  CHECK(load_error(unknown).find("unsupported architecture 'mamba'") != std::string::npos);

  auto qwen = edited("qwen3");
  qwen->hparams_.qk_norm = false;
  CHECK(load_error(qwen).find("qk_norm") != std::string::npos);

  auto heads = edited("llama");
  heads->hparams_.num_kv_heads = 3;
  CHECK(load_error(heads).find("num_kv_heads") != std::string::npos);
}

TEST_CASE("KV cache blocks hold every layer's K and V") {
  ModelHparams h;
  h.num_layers = 30;
  h.num_kv_heads = 3;
  h.head_dim = 64;
  // SmolLM2-135M: 2 (K, V) x 30 layers x 16 tokens x 3 heads x 64 x 2 bytes.
  CHECK(KvCache::bytes_per_block(h, 16, backends::DType::F16) == 368640);
  CHECK(KvCache::bytes_per_block(h, 16, backends::DType::F32) == 737280);

  auto backend = backends::make_cpu_backend(1);
  KvCache cache(*backend, h, KvCacheConfig{.num_blocks = 5, .block_size = 16, .dtype = backends::DType::F16});
  CHECK(cache.bytes_per_block() == 368640);
  CHECK(cache.num_layers() == 30);
  CHECK(cache.num_slots() == 80);
  const auto& k = cache.layer(29).k;
  CHECK(k.ndim == 4);
  CHECK(k.dim(0) == 5);
  CHECK(k.dim(1) == 16);
  CHECK(k.dim(2) == 3);
  CHECK(k.dim(3) == 64);
  CHECK(k.num_bytes() == 5 * 16 * 3 * 64 * 2);
  CHECK_THROWS_AS(KvCache(*backend, h, KvCacheConfig{.num_blocks = 1, .block_size = 16, .dtype = backends::DType::Q8_0}),
                  std::invalid_argument);
}

}  // namespace
}  // namespace sluice::engine::testing
