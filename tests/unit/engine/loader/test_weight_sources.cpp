#include "engine/loader/weight_source.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/loader/load_error.h"
#include "engine/loader/rope_freqs.h"
#include "engine/loader/safetensors_names.h"
#include "engine/loader/weight_table.h"
#include "tests/unit/engine/loader/gguf_builder.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::loader::unit_engine_loader_test_weight_sources {
namespace {

using backends::DType;
using engine::ModelHparams;
using testing::Bytes;
using testing::GgufBuilder;
using testing::TempFile;

const std::filesystem::path kModels = std::filesystem::path(SLUICE_FIXTURES_DIR) / "models";

std::vector<float> floats(const WeightView& view) {
  REQUIRE(view.dtype == DType::F32);
  std::vector<float> out(view.data.size() / 4);
  std::memcpy(out.data(), view.data.data(), view.data.size());
  return out;
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const LoadError& e) {
    return e.what();
  }
  return "";
}

// What both sources of one fixture model must agree on (rope.neox aside).
void check_same_hparams(const ModelHparams& a, const ModelHparams& b) {
  CHECK(a.architecture == b.architecture);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.context_length == b.context_length);
  CHECK(a.embedding_length == b.embedding_length);
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.num_heads == b.num_heads);
  CHECK(a.num_kv_heads == b.num_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.ffn_length == b.ffn_length);
  CHECK(a.norm_eps == doctest::Approx(b.norm_eps));
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.qk_norm == b.qk_norm);
  CHECK(a.post_norms == b.post_norms);
  CHECK(a.gelu == b.gelu);
  CHECK(a.embedding_scale == doctest::Approx(b.embedding_scale));
  CHECK(a.attention_scale == doctest::Approx(b.attention_scale));
  CHECK(a.rope.num_rotated == b.rope.num_rotated);
  CHECK(a.rope.theta == doctest::Approx(b.rope.theta));
  CHECK(a.rope.freq_scale == doctest::Approx(b.rope.freq_scale));
  CHECK(a.rope_local.theta == doctest::Approx(b.rope_local.theta));
  CHECK(a.rope_local.freq_scale == doctest::Approx(b.rope_local.freq_scale));
  CHECK(a.sliding_window == b.sliding_window);
  CHECK(a.sliding_window_pattern == b.sliding_window_pattern);
  // Llama 3 parameters may be split differently; the frequencies they give may not.
  const std::vector<double> fa = detail::llama3_factors(a.rope);
  const std::vector<double> fb = detail::llama3_factors(b.rope);
  REQUIRE(fa.size() == fb.size());
  for (size_t i = 0; i < fa.size(); ++i) CHECK(fa[i] == doctest::Approx(fb[i]).epsilon(1e-4));
}

// Every tensor both sources have matches in shape; 1-D tensors match in value.
void check_same_tensors(const WeightSource& gguf, const WeightSource& st, const ModelHparams& hp) {
  std::vector<std::string> names = {"token_embd.weight", "output_norm.weight"};
  if (!hp.tied_embeddings) names.push_back("output.weight");
  for (int64_t layer = 0; layer < hp.num_layers; ++layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                          "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight", "attn_norm.weight",
                          "ffn_norm.weight"})
      names.push_back(blk + n);
    if (hp.qk_norm) {
      names.push_back(blk + "attn_q_norm.weight");
      names.push_back(blk + "attn_k_norm.weight");
    }
    if (hp.post_norms) {
      names.push_back(blk + "post_attention_norm.weight");
      names.push_back(blk + "post_ffw_norm.weight");
    }
  }
  for (const std::string& name : names) {
    CAPTURE(name);
    const std::optional<WeightView> a = gguf.find(name);
    const std::optional<WeightView> b = st.find(name);
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(a->shape == b->shape);
    if (a->shape.size() == 1) CHECK(floats(*a) == floats(*b));
  }
  CHECK_FALSE(st.find("output.weight").has_value() != !hp.tied_embeddings);
  CHECK_FALSE(gguf.find("output.weight").has_value() != !hp.tied_embeddings);
}

TEST_CASE("weight sources: llama fixture (tied), GGUF and safetensors agree") {
  const auto gguf = open_weights(kModels / "llama" / "llama-f32.gguf");
  const auto st = open_weights(kModels / "llama");
  const ModelHparams& hp = gguf->hparams();
  check_same_hparams(hp, st->hparams());
  CHECK(hp.architecture == "llama");
  CHECK(hp.vocab_size == 300);
  CHECK(hp.embedding_length == 64);
  CHECK(hp.num_layers == 2);
  CHECK(hp.num_heads == 4);
  CHECK(hp.num_kv_heads == 2);
  CHECK(hp.head_dim == 16);
  CHECK(hp.ffn_length == 128);
  CHECK(hp.context_length == 256);
  CHECK(hp.norm_eps == doctest::Approx(1e-5));
  CHECK(hp.tied_embeddings);
  CHECK_FALSE(hp.qk_norm);
  CHECK_FALSE(hp.gelu);
  CHECK(hp.rope.llama3_factor == 0.0f);
  CHECK(hp.sliding_window == 0);
  // GGUF llama q/k are permuted for GGML's normal RoPE; safetensors keep NeoX halves.
  CHECK_FALSE(hp.rope.neox);
  CHECK(st->hparams().rope.neox);
  check_same_tensors(*gguf, *st, hp);

  // Row 1 of a GGUF head is row head_dim/2 of the HF head (pairs interleaved).
  const std::vector<float> q_gguf = floats(gguf->require("blk.0.attn_q.weight", {}));
  const std::vector<float> q_hf = floats(st->require("blk.0.attn_q.weight", {}));
  const int64_t cols = hp.embedding_length;
  CHECK(std::memcmp(&q_gguf[1 * cols], &q_hf[8 * cols], cols * sizeof(float)) == 0);
  CHECK(std::memcmp(&q_gguf[2 * cols], &q_hf[1 * cols], cols * sizeof(float)) == 0);
  CHECK(q_gguf != q_hf);
  CHECK(floats(gguf->require("blk.0.attn_v.weight", {})) == floats(st->require("blk.0.attn_v.weight", {})));
}

TEST_CASE("weight sources: llama3 fixture, scaling from config and from rope_freqs.weight") {
  const auto gguf = open_weights(kModels / "llama3" / "llama3-f32.gguf");
  const auto st = open_weights(kModels / "llama3" / "config.json");
  check_same_hparams(gguf->hparams(), st->hparams());
  const ModelHparams& hp = st->hparams();
  CHECK_FALSE(hp.tied_embeddings);
  CHECK(hp.rope.llama3_factor == doctest::Approx(8.0));
  CHECK(hp.rope.llama3_low_freq_factor == doctest::Approx(1.0));
  CHECK(hp.rope.llama3_high_freq_factor == doctest::Approx(4.0));
  CHECK(hp.rope.llama3_original_context == 64);
  // The fit from the GGUF divisors lands on the same numbers here.
  CHECK(gguf->hparams().rope.llama3_factor == doctest::Approx(8.0));
  CHECK(gguf->hparams().rope.llama3_original_context == 64);
  CHECK(gguf->hparams().rope.llama3_high_freq_factor == doctest::Approx(4.0).epsilon(1e-3));
  check_same_tensors(*gguf, *st, hp);
}

TEST_CASE("weight sources: qwen3 fixture (sharded safetensors)") {
  const auto gguf = open_weights(kModels / "qwen3" / "qwen3-f32.gguf");
  const auto st = open_weights(kModels / "qwen3");
  check_same_hparams(gguf->hparams(), st->hparams());
  const ModelHparams& hp = gguf->hparams();
  CHECK(hp.architecture == "qwen3");
  CHECK(hp.head_dim == 32);
  CHECK(hp.qk_norm);
  CHECK(hp.rope.neox);
  CHECK(hp.rope.theta == doctest::Approx(1e6));
  CHECK_FALSE(hp.tied_embeddings);
  check_same_tensors(*gguf, *st, hp);
  CHECK(floats(gguf->require("blk.1.attn_q.weight", {})) == floats(st->require("blk.1.attn_q.weight", {})));
  const int64_t q_shape[] = {4 * 32, 64};
  CHECK(st->require("blk.1.attn_q.weight", q_shape).dtype == DType::F32);
}

TEST_CASE("weight sources: gemma3 fixture") {
  const auto gguf = open_weights(kModels / "gemma3" / "gemma3-f32.gguf");
  const auto st = open_weights(kModels / "gemma3");
  check_same_hparams(gguf->hparams(), st->hparams());
  const ModelHparams& hp = st->hparams();
  CHECK(hp.architecture == "gemma3");
  CHECK(hp.qk_norm);
  CHECK(hp.post_norms);
  CHECK(hp.gelu);
  CHECK(hp.tied_embeddings);
  CHECK(hp.embedding_scale == doctest::Approx(8.0));
  CHECK(hp.attention_scale == doctest::Approx(1.0 / std::sqrt(24.0)));
  CHECK(hp.rope.theta == doctest::Approx(1e6));
  CHECK(hp.rope.freq_scale == doctest::Approx(0.5));
  CHECK(hp.rope_local.theta == doctest::Approx(1e4));
  CHECK(hp.rope_local.freq_scale == doctest::Approx(1.0));
  CHECK(hp.rope.neox);
  CHECK(hp.sliding_window == 8);
  CHECK(hp.sliding_window_pattern == 3);
  CHECK(hp.is_sliding_layer(0));
  CHECK(hp.is_sliding_layer(1));
  CHECK_FALSE(hp.is_sliding_layer(2));
  // Norms carry the +1 in both (check_same_tensors compares values): around 1, not 0.
  for (const char* name : {"blk.0.attn_norm.weight", "blk.2.attn_q_norm.weight", "output_norm.weight",
                           "blk.1.post_ffw_norm.weight"}) {
    const std::vector<float> w = floats(st->require(name, {}));
    double mean = 0;
    for (float v : w) mean += v;
    CHECK(mean / static_cast<double>(w.size()) == doctest::Approx(1.0).epsilon(0.1));
  }
  check_same_tensors(*gguf, *st, hp);
}

TEST_CASE("weight sources: quantized fixtures keep their blocks, 1-D stays F32") {
  for (const char* model : {"llama", "llama3", "qwen3", "gemma3"}) {
    for (const auto& [variant, dtype] : {std::pair{"q8_0", DType::Q8_0}, std::pair{"q4_0", DType::Q4_0}}) {
      CAPTURE(model);
      CAPTURE(variant);
      const auto source = open_gguf_weights(kModels / model / (std::string(model) + "-" + variant + ".gguf"));
      const ModelHparams& hp = source->hparams();
      const int64_t shape[] = {hp.ffn_length, hp.embedding_length};
      const WeightView up = source->require("blk.0.ffn_up.weight", shape);
      CHECK(up.dtype == dtype);
      CHECK(up.data.size() == *backends::dtype_bytes(dtype, static_cast<uint64_t>(hp.ffn_length * hp.embedding_length)));
      const int64_t embd_shape[] = {hp.vocab_size, hp.embedding_length};
      CHECK(source->require("token_embd.weight", embd_shape).dtype == DType::Q8_0);
      CHECK(source->require("blk.0.attn_norm.weight", {}).dtype == DType::F32);
    }
  }
}

TEST_CASE("weight sources: require() names the file, the tensor and both shapes") {
  const auto source = open_weights(kModels / "llama" / "llama-f32.gguf");
  const std::string missing = error_of([&] { source->require("blk.9.attn_q.weight", {}); });
  CHECK(missing.find("llama-f32.gguf") != std::string::npos);
  CHECK(missing.find("missing tensor 'blk.9.attn_q.weight'") != std::string::npos);
  const int64_t wrong[] = {64, 65};
  const std::string shape = error_of([&] { source->require("blk.0.attn_q.weight", wrong); });
  CHECK(shape.find("llama-f32.gguf") != std::string::npos);
  CHECK(shape.find("tensor 'blk.0.attn_q.weight': expected shape [64, 65], found [64, 64]") != std::string::npos);
  const int64_t rank[] = {64};
  CHECK(error_of([&] { source->require("blk.0.attn_q.weight", rank); }).find("found [64, 64]") != std::string::npos);
  const int64_t right[] = {64, 64};
  CHECK(source->require("blk.0.attn_q.weight", right).shape == std::vector<int64_t>{64, 64});
}

TEST_CASE("weight sources: Hugging Face → GGUF names") {
  using detail::gguf_tensor_name;
  CHECK(gguf_tensor_name("model.embed_tokens.weight", false) == "token_embd.weight");
  CHECK(gguf_tensor_name("model.norm.weight", false) == "output_norm.weight");
  CHECK(gguf_tensor_name("lm_head.weight", false) == "output.weight");
  CHECK(gguf_tensor_name("model.layers.12.self_attn.q_proj.weight", false) == "blk.12.attn_q.weight");
  CHECK(gguf_tensor_name("model.layers.0.self_attn.k_proj.weight", false) == "blk.0.attn_k.weight");
  CHECK(gguf_tensor_name("model.layers.0.self_attn.v_proj.bias", false) == "blk.0.attn_v.bias");
  CHECK(gguf_tensor_name("model.layers.0.self_attn.o_proj.weight", false) == "blk.0.attn_output.weight");
  CHECK(gguf_tensor_name("model.layers.0.self_attn.q_norm.weight", false) == "blk.0.attn_q_norm.weight");
  CHECK(gguf_tensor_name("model.layers.0.self_attn.k_norm.weight", true) == "blk.0.attn_k_norm.weight");
  CHECK(gguf_tensor_name("model.layers.3.mlp.gate_proj.weight", false) == "blk.3.ffn_gate.weight");
  CHECK(gguf_tensor_name("model.layers.3.mlp.up_proj.weight", false) == "blk.3.ffn_up.weight");
  CHECK(gguf_tensor_name("model.layers.3.mlp.down_proj.weight", false) == "blk.3.ffn_down.weight");
  CHECK(gguf_tensor_name("model.layers.3.input_layernorm.weight", false) == "blk.3.attn_norm.weight");
  CHECK(gguf_tensor_name("model.layers.3.post_attention_layernorm.weight", false) == "blk.3.ffn_norm.weight");
  // Gemma 3's four norms per layer.
  CHECK(gguf_tensor_name("model.layers.3.post_attention_layernorm.weight", true) ==
        "blk.3.post_attention_norm.weight");
  CHECK(gguf_tensor_name("model.layers.3.pre_feedforward_layernorm.weight", true) == "blk.3.ffn_norm.weight");
  CHECK(gguf_tensor_name("model.layers.3.post_feedforward_layernorm.weight", true) == "blk.3.post_ffw_norm.weight");
  CHECK(gguf_tensor_name("model.layers.3.pre_feedforward_layernorm.weight", false).empty());
  // Gemma3ForConditionalGeneration prefixes, old and new.
  CHECK(gguf_tensor_name("language_model.model.layers.1.mlp.up_proj.weight", true) == "blk.1.ffn_up.weight");
  CHECK(gguf_tensor_name("model.language_model.embed_tokens.weight", true) == "token_embd.weight");
  CHECK(gguf_tensor_name("language_model.lm_head.weight", true) == "output.weight");
  // No GGUF counterpart.
  CHECK(gguf_tensor_name("model.vision_tower.vision_model.embeddings.patch_embedding.weight", true).empty());
  CHECK(gguf_tensor_name("model.layers.0.self_attn.rotary_emb.inv_freq", false).empty());
  CHECK(gguf_tensor_name("model.layers.x.mlp.up_proj.weight", false).empty());
  CHECK(gguf_tensor_name("model.layers.1", false).empty());
  CHECK(gguf_tensor_name("lm_head", false).empty());
}

TEST_CASE("weight sources: Llama 3 scaling survives rope_freqs.weight") {
  for (const auto& [dims, theta, factor, low, high, context] :
       {std::tuple{128, 500000.0f, 8.0f, 1.0f, 4.0f, 8192}, std::tuple{64, 500000.0f, 32.0f, 1.0f, 4.0f, 8192},
        std::tuple{16, 10000.0f, 8.0f, 1.0f, 4.0f, 64}, std::tuple{16, 10000.0f, 4.0f, 2.0f, 3.0f, 100}}) {
    backends::RopeParams rope;
    rope.num_rotated = dims;
    rope.theta = theta;
    rope.llama3_factor = factor;
    rope.llama3_low_freq_factor = low;
    rope.llama3_high_freq_factor = high;
    rope.llama3_original_context = context;
    const std::vector<double> want = detail::llama3_factors(rope);
    std::vector<float> stored(want.begin(), want.end());
    backends::RopeParams fitted;
    fitted.num_rotated = dims;
    fitted.theta = theta;
    REQUIRE_FALSE(detail::set_llama3_from_factors(fitted, stored).has_value());
    const std::vector<double> got = detail::llama3_factors(fitted);
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-4));
  }
  backends::RopeParams rope;
  rope.num_rotated = 8;
  CHECK_FALSE(detail::set_llama3_from_factors(rope, std::vector<float>(4, 1.0f)).has_value());
  CHECK(rope.llama3_factor == 0.0f);
  CHECK(detail::set_llama3_from_factors(rope, std::vector<float>(3, 1.0f)).has_value());
  CHECK(detail::set_llama3_from_factors(rope, std::vector<float>{1.0f, 0.5f, 1.0f, 1.0f}).has_value());
  // Not monotonic: no line fits.
  CHECK(detail::set_llama3_from_factors(rope, std::vector<float>{8.0f, 1.0f, 8.0f, 1.0f}).has_value());
}

TEST_CASE("weight sources: sliding patterns from per-layer flags") {
  using detail::sliding_pattern_of;
  CHECK(sliding_pattern_of({true, true, false, true, true, false}) == 3);
  CHECK(sliding_pattern_of({true, true, true, true, true, false, true}) == 6);
  CHECK(sliding_pattern_of({true, true}) == 3);  // all slide
  CHECK(sliding_pattern_of({false, false}) == 0);
  CHECK_FALSE(sliding_pattern_of({true, false, true, true}).has_value());
  CHECK_FALSE(sliding_pattern_of({false, true}).has_value());
}

}  // namespace
}  // namespace sluice::loader
