#include "engine/tts/codec/codec_config.h"

#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/loader/load_error.h"

namespace sluice::engine::tts::unit_engine_tts_test_codec_config {
namespace {

// speech_tokenizer/config.json with the published values, after `edit`.
struct ConfigFile {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("sluice-codec-config-" + std::to_string(std::random_device{}()));
  std::filesystem::path path = dir / "config.json";
  explicit ConfigFile(const std::function<void(nlohmann::json&)>& edit = {}) {
    nlohmann::json config = nlohmann::json::parse(R"({"output_sample_rate": 24000, "decode_upsample_rate": 1920,
        "decoder_config": {"attention_bias": false, "latent_dim": 1024, "codebook_dim": 512,
          "codebook_size": 2048, "decoder_dim": 1536, "hidden_act": "silu", "hidden_size": 512,
          "intermediate_size": 1024, "head_dim": 64, "num_attention_heads": 16, "num_hidden_layers": 8,
          "num_key_value_heads": 16, "num_quantizers": 16, "rms_norm_eps": 1e-5, "rope_theta": 10000,
          "sliding_window": 72, "upsample_rates": [8, 5, 4, 3], "upsampling_ratios": [2, 2]}})");
    if (edit) edit(config);
    std::filesystem::create_directories(dir);
    std::ofstream(path) << config.dump();
  }
  ~ConfigFile() { std::filesystem::remove_all(dir); }
};

std::string error_of(const ConfigFile& file) {
  try {
    read_codec_config(file.path);
  } catch (const loader::LoadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("codec config: the published file reads as the 12 Hz preset") {
  ConfigFile file;
  const CodecConfig got = read_codec_config(file.path);
  const CodecConfig want = codec_config_preset();
  CHECK(got.num_quantizers == want.num_quantizers);
  CHECK(got.codebook_size == want.codebook_size);
  CHECK(got.codebook_dim == want.codebook_dim);
  CHECK(got.latent_dim == want.latent_dim);
  CHECK(got.decoder_dim == want.decoder_dim);
  CHECK(got.hidden_size == want.hidden_size);
  CHECK(got.intermediate_size == want.intermediate_size);
  CHECK(got.num_layers == want.num_layers);
  CHECK(got.num_heads == want.num_heads);
  CHECK(got.num_kv_heads == want.num_kv_heads);
  CHECK(got.head_dim == want.head_dim);
  CHECK(got.rms_norm_eps == want.rms_norm_eps);
  CHECK(got.rope_theta == want.rope_theta);
  CHECK(got.sliding_window == want.sliding_window);
  CHECK(got.upsample_rates == want.upsample_rates);
  CHECK(got.upsampling_ratios == want.upsampling_ratios);
  CHECK(got.output_sample_rate == want.output_sample_rate);
  CHECK(got.samples_per_frame == want.samples_per_frame);
}

TEST_CASE("codec config: errors name the file and the key") {
  auto error = [](const std::function<void(nlohmann::json&)>& edit) { return error_of(ConfigFile(edit)); };
  auto in_file = [](const std::string& message) { return message.substr(message.find(": ") + 2); };
  CHECK(in_file(error([](nlohmann::json& c) { c["decode_upsample_rate"] = 960; })) ==
        "key 'decode_upsample_rate' is 960 but the decoder's strides multiply to 1920");
  CHECK(in_file(error([](nlohmann::json& c) { c["decoder_config"].erase("codebook_size"); })) ==
        "key 'decoder_config.codebook_size' is missing");
  CHECK(in_file(error([](nlohmann::json& c) { c["decoder_config"]["hidden_act"] = "gelu"; })) ==
        "key 'decoder_config.hidden_act' is 'gelu'; the codec decoder's MLP is SwiGLU (silu)");
  CHECK(in_file(error([](nlohmann::json& c) { c["decoder_config"]["num_key_value_heads"] = 5; })) ==
        "key 'decoder_config.num_key_value_heads' must divide num_attention_heads");
  CHECK(in_file(error([](nlohmann::json& c) { c["decoder_config"]["upsample_rates"] = {8, 0}; })) ==
        "key 'decoder_config.upsample_rates' holds a stride that is not an integer in [1, 64]");
  CHECK(in_file(error([](nlohmann::json& c) { c.erase("decoder_config"); })) == "key 'decoder_config' is missing");
  const std::string message = error([](nlohmann::json& c) { c["decoder_config"]["sliding_window"] = "72"; });
  CHECK(message.find("config.json: key 'decoder_config.sliding_window' is not an integer") != std::string::npos);
}

}  // namespace sluice::engine::tts
