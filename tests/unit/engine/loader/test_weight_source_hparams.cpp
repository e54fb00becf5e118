// Hyperparameters from hand-made GGUF files and config.json variants: defaults,
// older config layouts, and errors that name the file and the key.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/loader/load_error.h"
#include "engine/loader/weight_source.h"
#include "tests/unit/engine/loader/gguf_builder.h"

namespace sluice::loader::unit_engine_loader_test_weight_source_hparams {
namespace {

using backends::DType;
using testing::ByteWriter;
using testing::Bytes;
using testing::GgufBuilder;
using testing::TempFile;

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const LoadError& e) {
    return e.what();
  }
  return "";
}

// A minimal valid GGUF of `arch` with a 3-token vocabulary and no tensors; the keys
// ending in one of `skip` are left out so that a test can set them otherwise.
GgufBuilder gguf_base(const std::string& arch, std::initializer_list<std::string_view> skip = {}) {
  const auto wanted = [&](std::string_view suffix) {
    for (std::string_view s : skip)
      if (s == suffix) return false;
    return true;
  };
  GgufBuilder b;
  b.string("general.architecture", arch);
  const std::pair<const char*, uint32_t> counts[] = {
      {"context_length", 128}, {"embedding_length", 64}, {"block_count", 2}, {"feed_forward_length", 96},
      {"attention.head_count", 4}, {"attention.head_count_kv", 2}};
  for (const auto& [suffix, value] : counts)
    if (wanted(suffix)) b.u32(arch + "." + suffix, value);
  if (wanted("attention.layer_norm_rms_epsilon")) b.f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  b.string_array("tokenizer.ggml.tokens", {"a", "b", "c"});
  return b;
}

std::string gguf_error(const GgufBuilder& builder) {
  TempFile file(builder.build());
  return error_of([&] { open_gguf_weights(file.path()); });
}

TEST_CASE("GGUF hparams: defaults and per-arch flags") {
  TempFile file(gguf_base("llama").build());
  auto source = open_gguf_weights(file.path());
  const engine::ModelHparams& hp = source->hparams();
  CHECK(hp.vocab_size == 3);
  CHECK(hp.head_dim == 16);
  CHECK(hp.rope.num_rotated == 16);
  CHECK(hp.rope.theta == doctest::Approx(10000.0));
  CHECK_FALSE(hp.rope.neox);
  CHECK(hp.tied_embeddings);

  TempFile gemma(gguf_base("gemma3").u32("gemma3.attention.key_length", 32).u32("gemma3.attention.sliding_window", 512)
                     .f32("gemma3.rope.freq_base", 1e6f).build());
  auto g = open_gguf_weights(gemma.path());
  CHECK(g->hparams().head_dim == 32);
  CHECK(g->hparams().sliding_window == 512);
  CHECK(g->hparams().sliding_window_pattern == 6);  // llama.cpp's assumption for Gemma 3
  CHECK(g->hparams().rope_local.theta == doctest::Approx(10000.0));
  CHECK(g->hparams().rope.theta == doctest::Approx(1e6));
  CHECK(g->hparams().attention_scale == 0.0f);  // 1/sqrt(head_dim)
  CHECK(g->hparams().embedding_scale == doctest::Approx(8.0));
  CHECK(g->hparams().rope.neox);

  // 27B: llama.cpp scales by 1/sqrt(d_model / heads).
  TempFile big(gguf_base("gemma3", {"block_count"}).u32("gemma3.block_count", 62).build());
  CHECK(open_gguf_weights(big.path())->hparams().attention_scale == doctest::Approx(1.0 / std::sqrt(16.0)));

  TempFile linear(gguf_base("qwen3", {"attention.head_count_kv"}).string("qwen3.rope.scaling.type", "linear").f32("qwen3.rope.scaling.factor", 4.0f)
                      .array("qwen3.attention.head_count_kv", GgufType::UInt32, std::vector<uint32_t>{2, 2}).build());
  auto q = open_gguf_weights(linear.path());
  CHECK(q->hparams().rope.freq_scale == doctest::Approx(0.25));
  CHECK(q->hparams().num_kv_heads == 2);
  CHECK(q->hparams().qk_norm);
}

TEST_CASE("GGUF: 1-D F16 and BF16 tensors become F32; matrices stay as stored") {
  ByteWriter f16;
  for (uint16_t bits : {0x3C00, 0xC000, 0x0001, 0x7BFF}) f16.put(bits);  // 1, -2, 2^-24, 65504
  ByteWriter bf16;
  for (uint16_t bits : {0x3F80, 0xC040}) bf16.put(bits);  // 1, -3
  GgufBuilder b = gguf_base("llama");
  b.tensor("a.weight", {4}, DType::F16, f16.bytes())
      .tensor("b.weight", {2}, DType::BF16, bf16.bytes())
      .tensor("m.weight", {32, 2}, DType::F16);
  TempFile file(b.build());
  auto source = open_gguf_weights(file.path());
  const WeightView a = source->require("a.weight", {});
  REQUIRE(a.dtype == DType::F32);
  std::vector<float> values(4);
  std::memcpy(values.data(), a.data.data(), 16);
  CHECK(values[0] == 1.0f);
  CHECK(values[1] == -2.0f);
  CHECK(values[2] == std::ldexp(1.0f, -24));
  CHECK(values[3] == 65504.0f);
  const WeightView bv = source->require("b.weight", {});
  std::memcpy(values.data(), bv.data.data(), 8);
  CHECK(values[1] == -3.0f);
  const WeightView m = source->require("m.weight", {});
  CHECK(m.dtype == DType::F16);
  CHECK(m.shape == std::vector<int64_t>{2, 32});  // GGML [32, 2] is 2 rows of 32
}

TEST_CASE("GGUF hparams: errors name the file and the key") {
  std::string error = gguf_error(gguf_base("llama", {"attention.head_count_kv"}).u32("llama.attention.head_count_kv", 3));
  CHECK(error.find("model.gguf") != std::string::npos);
  CHECK(error.find("'llama.attention.head_count_kv' is 3, which does not divide") != std::string::npos);

  GgufBuilder no_heads;
  no_heads.string("general.architecture", "qwen3").u32("qwen3.context_length", 8);
  CHECK(gguf_error(no_heads).find("missing required key 'qwen3.embedding_length'") != std::string::npos);

  CHECK(gguf_error(gguf_base("llama", {"embedding_length"}).u32("llama.embedding_length", 0)).find("'llama.embedding_length' is 0") !=
        std::string::npos);
  CHECK(gguf_error(gguf_base("llama", {"attention.layer_norm_rms_epsilon"}).f32("llama.attention.layer_norm_rms_epsilon", -1.0f))
            .find("'llama.attention.layer_norm_rms_epsilon'") != std::string::npos);
  CHECK(gguf_error(gguf_base("llama").u32("llama.rope.dimension_count", 17)).find("'llama.rope.dimension_count'") !=
        std::string::npos);
  CHECK(gguf_error(gguf_base("llama").string("llama.rope.scaling.type", "yarn")).find("'yarn' is not supported") !=
        std::string::npos);
  CHECK(gguf_error(gguf_base("llama", {"feed_forward_length"}).array("llama.feed_forward_length", GgufType::UInt32, std::vector<uint32_t>{96, 128}))
            .find("per-layer values differ") != std::string::npos);
  CHECK(gguf_error(gguf_base("llama", {"attention.head_count"}).string("llama.attention.head_count", "four"))
            .find("llama.attention.head_count") != std::string::npos);
  CHECK(gguf_error(gguf_base("gpt2")).find("architecture 'gpt2' is not supported") != std::string::npos);
  CHECK(gguf_error(gguf_base("gemma3").u32("gemma3.attention.sliding_window", 8)
                       .array("gemma3.attention.sliding_window_pattern", GgufType::Bool, std::vector<uint8_t>{1, 0, 1}))
            .find("one bool per layer") != std::string::npos);
  CHECK(gguf_error(gguf_base("gemma3").u32("gemma3.attention.sliding_window", 8)
                       .array("gemma3.attention.sliding_window_pattern", GgufType::Bool, std::vector<uint8_t>{0, 1}))
            .find("sliding_window_pattern") != std::string::npos);
  // rope_freqs.weight of the wrong length.
  GgufBuilder bad_freqs = gguf_base("llama");
  bad_freqs.tensor("rope_freqs.weight", {3}, DType::F32);
  CHECK(gguf_error(bad_freqs).find("tensor 'rope_freqs.weight' has 3 elements, expected 8") != std::string::npos);

  GgufBuilder no_vocab;
  no_vocab.string("general.architecture", "llama").u32("llama.context_length", 8).u32("llama.embedding_length", 8)
      .u32("llama.block_count", 1).u32("llama.feed_forward_length", 8).u32("llama.attention.head_count", 2)
      .f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  CHECK(gguf_error(no_vocab).find("tokenizer.ggml.tokens") != std::string::npos);
}

// A model folder: config.json plus a model.safetensors holding `tensors` (all F32 [2]).
class HfDir {
 public:
  explicit HfDir(const std::string& config, const std::vector<std::string>& tensors = {"model.embed_tokens.weight"})
      : file_(Bytes{}, "config.json") {
    std::ofstream(file_.path()) << config;
    std::string header = "{";
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (i) header += ",";
      header += "\"" + tensors[i] + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" + std::to_string(8 * i) +
                "," + std::to_string(8 * i + 8) + "]}";
    }
    header += "}";
    Bytes bytes(8 + header.size() + 8 * tensors.size());
    const uint64_t len = header.size();
    std::memcpy(bytes.data(), &len, 8);
    std::memcpy(bytes.data() + 8, header.data(), header.size());
    std::ofstream out(file_.dir() / "model.safetensors", std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const std::filesystem::path& dir() const { return file_.dir(); }
  std::string error() const {
    return error_of([&] { open_safetensors_weights(dir()); });
  }

 private:
  TempFile file_;
};

const char* kLlamaCore = R"("vocab_size": 32, "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 96)";

TEST_CASE("config.json: the transformers 4 layout (rope_theta, rope_scaling)") {
  HfDir dir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + R"(,
      "rope_theta": 500000.0, "max_position_embeddings": 131072, "tie_word_embeddings": true,
      "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})");
  auto source = open_weights(dir.dir());
  const engine::ModelHparams& hp = source->hparams();
  CHECK(hp.num_kv_heads == 4);
  CHECK(hp.head_dim == 16);
  CHECK(hp.norm_eps == doctest::Approx(1e-6));
  CHECK(hp.rope.theta == doctest::Approx(500000.0));
  CHECK(hp.rope.llama3_factor == doctest::Approx(32.0));
  CHECK(hp.rope.llama3_original_context == 8192);
  CHECK(hp.rope.neox);
  CHECK(hp.tied_embeddings);
  CHECK(source->find("token_embd.weight").has_value());
}

TEST_CASE("config.json: Gemma 3 multimodal layout with text_config") {
  HfDir dir(R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
      "vocab_size": 32, "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4,
      "num_key_value_heads": 1, "head_dim": 32, "intermediate_size": 96, "sliding_window": 16,
      "sliding_window_pattern": 3, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "query_pre_attn_scalar": 32}})",
            {"language_model.model.embed_tokens.weight", "language_model.model.layers.0.input_layernorm.weight",
             "vision_tower.vision_model.post_layernorm.weight"});
  auto source = open_weights(dir.dir() / "config.json");
  const engine::ModelHparams& hp = source->hparams();
  CHECK(hp.architecture == "gemma3");
  CHECK(hp.sliding_window == 16);
  CHECK(hp.sliding_window_pattern == 3);
  CHECK(hp.rope.freq_scale == doctest::Approx(0.125));
  CHECK(hp.rope_local.freq_scale == doctest::Approx(1.0));
  CHECK(hp.rope_local.theta == doctest::Approx(10000.0));
  CHECK(hp.attention_scale == doctest::Approx(1.0 / std::sqrt(32.0)));
  CHECK(hp.tied_embeddings);
  const WeightView norm = source->require("blk.0.attn_norm.weight", {});
  REQUIRE(norm.dtype == DType::F32);
  float first = 0.0f;
  std::memcpy(&first, norm.data.data(), 4);
  CHECK(first == 1.0f);  // stored 0, Gemma's 1 + w
  CHECK_FALSE(source->find("vision_tower.vision_model.post_layernorm.weight").has_value());
}

TEST_CASE("config.json: errors name config.json and the key") {
  CHECK(HfDir(R"({"model_type": "mistral"})").error().find("key 'model_type' is 'mistral'") != std::string::npos);
  const std::string missing = HfDir(R"({"model_type": "qwen3", "hidden_size": 64})").error();
  CHECK(missing.find("config.json") != std::string::npos);
  CHECK(missing.find("key 'vocab_size' is missing") != std::string::npos);
  CHECK(HfDir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + ", \"num_key_value_heads\": 3}")
            .error()
            .find("'num_key_value_heads' is 3, which does not divide") != std::string::npos);
  CHECK(HfDir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + ", \"hidden_size\": \"64\"}")
            .error()
            .find("'hidden_size' is not an integer") != std::string::npos);
  CHECK(HfDir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + R"(, "rope_scaling": {"rope_type": "yarn"}})")
            .error()
            .find("'rope_scaling.rope_type' is 'yarn'") != std::string::npos);
  CHECK(HfDir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + ", \"hidden_act\": \"relu\"}")
            .error()
            .find("'hidden_act' is 'relu'") != std::string::npos);
  CHECK(HfDir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + ", \"tie_word_embeddings\": false}")
            .error()
            .find("no lm_head.weight") != std::string::npos);
  CHECK(HfDir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + "}",
              {"model.embed_tokens.weight", "model.language_model.embed_tokens.weight"})
            .error()
            .find("which another tensor already has") != std::string::npos);
  CHECK(HfDir("{\"model_type\": ").error().find("not valid JSON") != std::string::npos);
  CHECK(HfDir(R"({"model_type": "gemma3_text", "vocab_size": 32, "hidden_size": 64, "num_hidden_layers": 3,
      "num_attention_heads": 4, "intermediate_size": 96, "sliding_window": 4,
      "layer_types": ["sliding_attention", "full_attention", "full_attention"]})")
            .error()
            .find("'layer_types'") != std::string::npos);
}

TEST_CASE("open_weights: picks the format from the path") {
  HfDir dir(std::string("{\"model_type\": \"llama\", ") + kLlamaCore + "}", {"model.embed_tokens.weight", "lm_head.weight"});
  CHECK(open_weights(dir.dir())->hparams().architecture == "llama");
  CHECK(open_weights(dir.dir() / "model.safetensors")->path() == dir.dir());
  CHECK(error_of([&] { open_weights(dir.dir() / "missing.gguf"); }).find("missing.gguf") != std::string::npos);
}

}  // namespace
}  // namespace sluice::loader
