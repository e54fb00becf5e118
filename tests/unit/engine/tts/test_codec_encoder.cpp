// The codec encoder on random weights: config and load errors, the SEANet's
// chunking (any chunk size gives the same bits), input checks, the real shapes.
// Parity with the official encoder: test_codec_encoder_parity.cpp.
#include "engine/tts/codec/codec_encoder.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/loader/load_error.h"
#include "engine/synthetic/random_tensor_set.h"
#include "tests/unit/engine/tts/codec_encoder_test_util.h"
#include "tests/unit/engine/tts/codec_test_util.h"

namespace sluice::engine::tts::unit_engine_tts_test_codec_encoder {
namespace {

using backends::DType;

// speech_tokenizer/config.json with the published encoder values (those of
// Qwen/Qwen3-TTS-12Hz-0.6B-Base), after `edit`.
struct EncoderConfigFile {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("sluice-codec-encoder-config-" + std::to_string(std::random_device{}()));
  std::filesystem::path path = dir / "config.json";
  explicit EncoderConfigFile(const std::function<void(nlohmann::json&)>& edit = {}) {
    nlohmann::json config = nlohmann::json::parse(R"({"input_sample_rate": 24000, "encode_downsample_rate": 1920,
        "encoder_valid_num_quantizers": 16,
        "encoder_config": {"_frame_rate": 12.5, "audio_channels": 1, "codebook_dim": 256, "codebook_size": 2048,
          "compress": 2, "dilation_growth_rate": 2, "head_dim": 64, "hidden_act": "gelu", "hidden_size": 512,
          "intermediate_size": 2048, "kernel_size": 7, "last_kernel_size": 3, "layer_scale_initial_scale": 0.01,
          "max_position_embeddings": 8000, "norm_eps": 1e-5, "num_attention_heads": 8, "num_filters": 64,
          "num_hidden_layers": 8, "num_key_value_heads": 8, "num_quantizers": 32, "num_residual_layers": 1,
          "num_semantic_quantizers": 1, "pad_mode": "constant", "residual_kernel_size": 3, "rope_theta": 10000,
          "sampling_rate": 24000, "sliding_window": 250, "trim_right_ratio": 1.0, "upsample_groups": 512,
          "upsampling_ratios": [8, 6, 5, 4], "use_causal_conv": true, "use_conv_shortcut": false,
          "vector_quantization_hidden_dimension": 256}})");
    if (edit) edit(config);
    std::filesystem::create_directories(dir);
    std::ofstream(path) << config.dump();
  }
  ~EncoderConfigFile() { std::filesystem::remove_all(dir); }
};

std::vector<float> download(backends::Backend& backend, const backends::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.num_elements()));
  backend.download(t, std::as_writable_bytes(std::span<float>(out)));
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("codec encoder config: the published file reads as the 12 Hz preset") {
  EncoderConfigFile file;
  const CodecEncoderConfig got = read_codec_encoder_config(file.path);
  const CodecEncoderConfig want = codec_encoder_config_preset();
  CHECK(got.sample_rate == want.sample_rate);
  CHECK(got.num_filters == want.num_filters);
  CHECK(got.kernel_size == want.kernel_size);
  CHECK(got.residual_kernel_size == want.residual_kernel_size);
  CHECK(got.last_kernel_size == want.last_kernel_size);
  CHECK(got.compress == want.compress);
  CHECK(got.strides == std::vector<int64_t>{4, 5, 6, 8});
  CHECK(got.strides == want.strides);
  CHECK(got.hidden_size == want.hidden_size);
  CHECK(got.intermediate_size == want.intermediate_size);
  CHECK(got.num_layers == want.num_layers);
  CHECK(got.num_heads == want.num_heads);
  CHECK(got.num_kv_heads == want.num_kv_heads);
  CHECK(got.head_dim == want.head_dim);
  CHECK(got.norm_eps == want.norm_eps);
  CHECK(got.rope_theta == want.rope_theta);
  CHECK(got.downsample_stride == want.downsample_stride);
  CHECK(got.codebook_size == want.codebook_size);
  CHECK(got.codebook_dim == want.codebook_dim);
  CHECK(got.num_quantizers == want.num_quantizers);
  CHECK(got.num_semantic == want.num_semantic);
  CHECK(got.num_codes == want.num_codes);
  CHECK(got.samples_per_frame == want.samples_per_frame);
  CHECK(got.frames_for(24000 * 10) == 125);
  CHECK(got.frames_for(1921) == 2);
}

TEST_CASE("codec encoder config: errors name the file and the key") {
  auto error = [](const std::function<void(nlohmann::json&)>& edit) -> std::string {
    EncoderConfigFile file(edit);
    try {
      read_codec_encoder_config(file.path);
    } catch (const loader::LoadError& e) {
      const std::string message = e.what();
      CHECK(message.find(file.path.string()) == 0);
      return message.substr(message.find(": ") + 2);
    }
    return "";
  };
  CHECK(error([](nlohmann::json& c) { c.erase("encoder_config"); }) == "key 'encoder_config' is missing");
  CHECK(error([](nlohmann::json& c) { c["encode_downsample_rate"] = 960; }) ==
        "key 'encode_downsample_rate' is 960 but the encoder's strides multiply to 1920");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"]["use_causal_conv"] = false; }) ==
        "key 'encoder_config.use_causal_conv' is false; the encoder runs causal convolutions only");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"]["pad_mode"] = "reflect"; }) ==
        "key 'encoder_config.pad_mode' is 'reflect'; the SEANet convolutions pad with zeros");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"]["hidden_act"] = "silu"; }) ==
        "key 'encoder_config.hidden_act' is 'silu'; the transformer's MLP is fc1, exact GELU, fc2");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"]["use_conv_shortcut"] = true; }) ==
        "key 'encoder_config.use_conv_shortcut' is true; the residual units' shortcut is the identity");
  CHECK(error([](nlohmann::json& c) { c["encoder_valid_num_quantizers"] = 33; }) ==
        "key 'encoder_valid_num_quantizers' must lie in (num_semantic_quantizers, num_quantizers]");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"]["num_key_value_heads"] = 3; }) ==
        "key 'encoder_config.num_key_value_heads' must divide num_attention_heads");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"]["sampling_rate"] = 16000; }) ==
        "key 'encoder_config.sampling_rate' differs from input_sample_rate");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"]["vector_quantization_hidden_dimension"] = 128; }) ==
        "key 'encoder_config.vector_quantization_hidden_dimension' must equal codebook_dim");
  CHECK(error([](nlohmann::json& c) { c["encoder_config"].erase("num_filters"); }) ==
        "key 'encoder_config.num_filters' is missing");
}

TEST_CASE("codec encoder: load errors name the file and the tensor") {
  const CodecEncoderConfig config = test::small_encoder_config();
  auto random = loader::make_random_tensor_set("codec-encoder", DType::F32, 7);
  auto backend = backends::make_cpu_backend(1);
  const std::filesystem::path file = "speech_tokenizer/model.safetensors";
  auto error_of = [&](const std::string& missing, const std::string& reshaped) -> std::string {
    test::TamperedTensorSet set(*random, missing, reshaped, file);
    try {
      CodecEncoder::load(set, config, *backend);
    } catch (const loader::LoadError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of("encoder.encoder.layers.4.block.1.conv.weight", "") ==
        "speech_tokenizer/model.safetensors: tensor 'encoder.encoder.layers.4.block.1.conv.weight' is missing");
  CHECK(error_of("encoder.encoder.layers.8.conv.bias", "") ==
        "speech_tokenizer/model.safetensors: tensor 'encoder.encoder.layers.8.conv.bias' is missing");
  CHECK(error_of("", "encoder.encoder.layers.6.conv.weight") ==
        "speech_tokenizer/model.safetensors: tensor 'encoder.encoder.layers.6.conv.weight' has shape "
        "[1, 16, 8, 8] where [16, 8, 8] is expected");
  CHECK(error_of("encoder.encoder_transformer.layers.1.post_attention_layernorm.bias", "") ==
        "speech_tokenizer/model.safetensors: tensor "
        "'encoder.encoder_transformer.layers.1.post_attention_layernorm.bias' is missing");
  CHECK(error_of("encoder.encoder_transformer.layers.0.mlp_layer_scale.scale", "") ==
        "speech_tokenizer/model.safetensors: tensor 'encoder.encoder_transformer.layers.0.mlp_layer_scale.scale' "
        "is missing");
  CHECK(error_of("", "encoder.downsample.conv.weight") ==
        "speech_tokenizer/model.safetensors: tensor 'encoder.downsample.conv.weight' has shape "
        "[1, 16, 16, 4] where [16, 16, 4] is expected");
  CHECK(error_of("encoder.quantizer.acoustic_residual_vector_quantizer.layers.2.codebook.embed_sum", "") ==
        "speech_tokenizer/model.safetensors: tensor "
        "'encoder.quantizer.acoustic_residual_vector_quantizer.layers.2.codebook.embed_sum' is missing");
  CHECK(error_of("encoder.quantizer.semantic_residual_vector_quantizer.input_proj.weight", "") ==
        "speech_tokenizer/model.safetensors: tensor "
        "'encoder.quantizer.semantic_residual_vector_quantizer.input_proj.weight' is missing");
  // Codebooks past num_codes are never read.
  CHECK(error_of("encoder.quantizer.acoustic_residual_vector_quantizer.layers.3.codebook.embed_sum", "").empty());
}

TEST_CASE("codec encoder: any SEANet chunk size gives the same bits, codes ceil(n / samples_per_frame) frames") {
  const CodecEncoderConfig config = test::small_encoder_config();
  auto set = loader::make_random_tensor_set("codec-encoder", DType::F32, 8);
  auto backend = backends::make_cpu_backend(2);
  // 1000 samples: 84 SEANet frames (the last one padded), 42 code frames.
  const std::vector<float> clip = test::test_signal(1000, 3);
  std::vector<std::vector<int32_t>> codes;
  std::vector<std::map<std::string, std::vector<float>, std::less<>>> stages;
  for (int64_t chunk : {1000000, 12, 36, 100}) {
    CAPTURE(chunk);
    CodecEncoder encoder = CodecEncoder::load(*set, config, *backend, chunk);
    CHECK(encoder.chunk_samples() % 12 == 0);
    auto& seen = stages.emplace_back();
    encoder.set_stage_hook([&](std::string_view name, const backends::Tensor& t) { seen[std::string(name)] = download(*backend, t); });
    codes.push_back(encoder.encode(clip));
    REQUIRE(codes.back().size() == 42u * 4u);
    CHECK(seen.at("seanet").size() == 84u * 16u);
    CHECK(seen.at("downsample").size() == 42u * 16u);
    CHECK(seen.at("semantic_proj").size() == 42u * 8u);
  }
  for (size_t i = 1; i < codes.size(); ++i) {
    CHECK(codes[i] == codes[0]);
    for (const auto& [name, values] : stages[0]) {
      CAPTURE(name);
      CHECK(same_bits(stages[i].at(name), values));
    }
  }
  for (int32_t code : codes[0]) CHECK((code >= 0 && code < config.codebook_size));
  // The codes depend on the audio: a louder clip picks other rows somewhere.
  std::vector<float> louder = clip;
  for (float& v : louder) v *= 3.0f;
  CodecEncoder encoder = CodecEncoder::load(*set, config, *backend);
  CHECK(encoder.encode(louder) != codes[0]);
}

TEST_CASE("codec encoder: a clip's codes do not depend on what follows it (causal)") {
  const CodecEncoderConfig config = test::small_encoder_config();
  auto set = loader::make_random_tensor_set("codec-encoder", DType::F32, 9);
  auto backend = backends::make_cpu_backend(2);
  CodecEncoder encoder = CodecEncoder::load(*set, config, *backend, 48);
  const std::vector<float> clip = test::test_signal(960, 5);
  const std::vector<float> head(clip.begin(), clip.begin() + 480);
  const std::vector<int32_t> whole = encoder.encode(clip), first = encoder.encode(head);
  REQUIRE(first.size() == 20u * 4u);
  CHECK(std::vector<int32_t>(whole.begin(), whole.begin() + 80) == first);
}

TEST_CASE("codec encoder: no samples or a sample that is not finite is rejected") {
  const CodecEncoderConfig config = test::small_encoder_config();
  auto set = loader::make_random_tensor_set("codec-encoder", DType::F32, 8);
  auto backend = backends::make_cpu_backend(1);
  CodecEncoder encoder = CodecEncoder::load(*set, config, *backend);
  CHECK_THROWS_WITH_AS(encoder.encode({}), "codec encoder: no samples to encode", std::invalid_argument);
  std::vector<float> clip = test::test_signal(100, 1);
  clip[37] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(encoder.encode(clip), "codec encoder: sample 37 is not finite", std::invalid_argument);
  clip[37] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(encoder.encode(clip), std::invalid_argument);
  CHECK_THROWS_AS(CodecEncoder::load(*set, config, *backend, 0), std::invalid_argument);
}

TEST_CASE("codec encoder: random weights at the real 12 Hz config encode 0.5 s to 7 frames of codes") {
  const CodecEncoderConfig config = codec_encoder_config_preset();
  auto set = loader::make_random_tensor_set("codec-12hz", DType::F32, 12);
  auto backend = backends::make_cpu_backend(2);
  CodecEncoder encoder = CodecEncoder::load(*set, config, *backend);
  const std::vector<int32_t> codes = encoder.encode(test::test_signal(12000, 2));
  REQUIRE(codes.size() == 7u * 16u);
  for (int32_t code : codes) CHECK((code >= 0 && code < 2048));
}

}  // namespace sluice::engine::tts
