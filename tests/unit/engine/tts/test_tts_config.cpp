#include "engine/tts/model/tts_config.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <tuple>

#include "engine/loader/load_error.h"
#include "tts_test_util.h"

namespace sluice::engine::tts::unit_engine_tts_test_tts_config {
namespace {

using testing::TempDir;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const loader::LoadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("tts config: config.json and generation_config.json of a CustomVoice checkpoint") {
  TempDir t;
  testing::write_file(t.dir / "config.json", testing::tiny_config_json(false).dump());
  testing::write_file(t.dir / "generation_config.json",
                      R"({"do_sample": true, "temperature": 0.7, "top_k": 30, "top_p": 0.8, "repetition_penalty": 1.1,
                          "subtalker_dosample": false, "subtalker_temperature": 0.5, "subtalker_top_k": 20,
                          "subtalker_top_p": 0.9, "max_new_tokens": 100})");
  const TtsConfig c = read_tts_config(t.dir);
  CHECK(c.kind == TtsKind::custom_voice);
  CHECK(c.model_size == "0b6");
  CHECK_FALSE(c.accepts_instructions());
  CHECK(c.text.im_start == testing::kImStart);
  CHECK(c.text.tts_eos == testing::kTtsEos);
  // Talker: qwen3 with NeoX RoPE over the whole head; M-RoPE collapses to 1-D.
  CHECK(c.talker.architecture == "qwen3");
  CHECK(c.talker.vocab_size == 1280);
  CHECK(c.talker.embedding_length == 32);
  CHECK(c.talker.head_dim == 16);
  CHECK(c.talker.qk_norm);
  CHECK(c.talker.rope.neox);
  CHECK(c.talker.rope.num_rotated == 16);
  CHECK(c.talker.rope.theta == doctest::Approx(1e6));
  CHECK(c.text_vocab_size == 320);
  CHECK(c.text_hidden_size == 64);
  CHECK(c.predictor.vocab_size == 256);
  CHECK(c.predictor.num_layers == 2);
  CHECK_FALSE(c.has_mtp_projection());
  CHECK(c.num_code_groups == 16);
  CHECK(c.codec.eos == 1102);
  CHECK(c.codec.nothink == 1105);
  // Speakers lower-cased; a one-element list is accepted; dialects resolved.
  CHECK(c.speakers.at("anna") == 1200);
  CHECK(c.speakers.at("eric") == 1201);
  CHECK(c.speaker_dialect.size() == 1);
  CHECK(c.speaker_dialect.at("eric") == "sichuan_dialect");
  CHECK(c.languages.at("sichuan_dialect") == 1062);
  CHECK(c.talker_sampling.do_sample);
  CHECK(c.talker_sampling.temperature == doctest::Approx(0.7));
  CHECK(c.talker_sampling.top_k == 30);
  CHECK(c.talker_sampling.repetition_penalty == doctest::Approx(1.1));
  CHECK_FALSE(c.predictor_sampling.do_sample);
  CHECK(c.predictor_sampling.temperature == doctest::Approx(0.5));
  CHECK(c.predictor_sampling.top_k == 20);
  CHECK(c.predictor_sampling.top_p == doctest::Approx(0.9));
  CHECK(c.max_new_tokens == 100);
}

TEST_CASE("tts config: a wide talker has the mtp projection; 1.7B accepts instructions") {
  TempDir t;
  testing::write_file(t.dir / "config.json", testing::tiny_config_json(true, "voice_design", "1b7").dump());
  const TtsConfig c = read_tts_config(t.dir);
  CHECK(c.kind == TtsKind::voice_design);
  CHECK(c.has_mtp_projection());
  CHECK(c.accepts_instructions());
  CHECK(c.speakers.empty());
  // Without generation_config.json: the official wrapper's hard defaults.
  CHECK(c.talker_sampling.temperature == doctest::Approx(0.9));
  CHECK(c.talker_sampling.repetition_penalty == doctest::Approx(1.05));
  CHECK(c.predictor_sampling.repetition_penalty == doctest::Approx(1.0));
  CHECK(c.max_new_tokens == 2048);
}

TEST_CASE("tts config: a Base checkpoint reads its speaker encoder, official defaults for absent keys") {
  TempDir t;
  auto config = testing::tiny_config_json(false, "base");
  config["speaker_encoder_config"] = {{"enc_dim", 32}, {"enc_channels", {16, 16, 16, 32}},
                                      {"enc_kernel_sizes", {5, 3, 3, 1}}, {"enc_dilations", {1, 2, 3, 1}},
                                      {"enc_res2net_scale", 4}, {"sample_rate", 24000}};
  testing::write_file(t.dir / "config.json", config.dump());
  const TtsConfig c = read_tts_config(t.dir);
  CHECK(c.kind == TtsKind::base);
  CHECK(c.speakers.empty());
  REQUIRE(c.speaker_encoder.has_value());
  const SpeakerEncoderConfig& s = *c.speaker_encoder;
  CHECK(s.enc_dim == 32);
  CHECK(s.mel_dim == 128);
  CHECK(s.channels == std::vector<int64_t>{16, 16, 16, 32});
  CHECK(s.dilations == std::vector<int64_t>{1, 2, 3, 1});
  CHECK(s.res2net_scale == 4);
  CHECK(s.attention_channels == 128);  // absent: the official class default
  CHECK(s.se_channels == 128);
  CHECK(s.pooled_channels() == 32);

  // Absent altogether: the official defaults, whose 1024-wide x-vector must be the
  // talker's width.
  config.erase("speaker_encoder_config");
  testing::write_file(t.dir / "config.json", config.dump());
  std::string error = error_of([&] { read_tts_config(t.dir); });
  CHECK(error.find("config.json") != std::string::npos);
  CHECK(error.find("'speaker_encoder_config.enc_dim' differs from the talker's hidden_size") != std::string::npos);

  // (key set, its value, the key the error names, what it says)
  for (const auto& [key, value, named, message] :
       {std::tuple<std::string, nlohmann::json, std::string, std::string>{"sample_rate", 16000, "sample_rate",
                                                                          "is not 24000"},
        {"mel_dim", 80, "mel_dim", "is not 128"},
        {"enc_channels", nlohmann::json{16, 16, 16, 40}, "enc_channels", "sum of the blocks' widths"},
        {"enc_channels", nlohmann::json{16, 24, 24, 24}, "enc_channels", "changes width"},
        {"enc_dilations", nlohmann::json{1, 2, 3}, "enc_channels", "differ in length"},
        {"enc_res2net_scale", 5, "enc_channels", "multiple of enc_res2net_scale"},
        {"enc_kernel_sizes", nlohmann::json{5, 0, 3, 1}, "enc_kernel_sizes", "not a positive integer"}}) {
    CAPTURE(key);
    auto bad = testing::tiny_config_json(false, "base");
    bad["speaker_encoder_config"] = {{"enc_dim", 32}, {"enc_channels", {16, 16, 16, 32}},
                                     {"enc_kernel_sizes", {5, 3, 3, 1}}, {"enc_dilations", {1, 2, 3, 1}},
                                     {"enc_res2net_scale", 4}};
    bad["speaker_encoder_config"][key] = value;
    testing::write_file(t.dir / "config.json", bad.dump());
    error = error_of([&] { read_tts_config(t.dir); });
    CHECK(error.find("speaker_encoder_config." + named) != std::string::npos);
    CHECK(error.find(message) != std::string::npos);
  }
}

TEST_CASE("tts config: unknown kinds and bad keys are named with their file") {
  TempDir t;
  testing::write_file(t.dir / "config.json", testing::tiny_config_json(false, "voice_clone").dump());
  std::string error = error_of([&] { read_tts_config(t.dir); });
  CHECK(error.find("config.json") != std::string::npos);
  CHECK(error.find("'tts_model_type' is 'voice_clone', not base, custom_voice or voice_design") != std::string::npos);

  auto config = testing::tiny_config_json(false);
  config["talker_config"].erase("codec_bos_id");
  testing::write_file(t.dir / "config.json", config.dump());
  error = error_of([&] { read_tts_config(t.dir); });
  CHECK(error.find("config.json") != std::string::npos);
  CHECK(error.find("'talker_config.codec_bos_id' is missing") != std::string::npos);

  config = testing::tiny_config_json(false);
  config["talker_config"]["code_predictor_config"]["hidden_size"] = "wide";
  testing::write_file(t.dir / "config.json", config.dump());
  error = error_of([&] { read_tts_config(t.dir); });
  CHECK(error.find("'talker_config.code_predictor_config.hidden_size' is not an integer") != std::string::npos);

  config = testing::tiny_config_json(false);
  config["talker_config"]["spk_is_dialect"]["eric"] = "martian_dialect";
  testing::write_file(t.dir / "config.json", config.dump());
  error = error_of([&] { read_tts_config(t.dir); });
  CHECK(error.find("spk_is_dialect.eric") != std::string::npos);

  testing::write_file(t.dir / "config.json", testing::tiny_config_json(false).dump());
  testing::write_file(t.dir / "generation_config.json", R"({"top_p": 0})");
  error = error_of([&] { read_tts_config(t.dir); });
  CHECK(error.find("generation_config.json") != std::string::npos);
}

TEST_CASE("tts config: presets carry the published values") {
  const TtsConfig small = tts_config_preset("0.6b", TtsKind::custom_voice);
  CHECK(small.talker.embedding_length == 1024);
  CHECK(small.talker.ffn_length == 3072);
  CHECK(small.talker.num_layers == 28);
  CHECK(small.talker.num_heads * small.talker.head_dim == 2048);
  CHECK_FALSE(small.has_mtp_projection());
  CHECK_FALSE(small.accepts_instructions());
  CHECK(small.speakers.at("vivian") == 3065);
  CHECK(small.speaker_dialect.at("dylan") == "beijing_dialect");
  CHECK(small.codec.eos == 2150);
  CHECK(small.text.tts_pad == 151671);
  const TtsConfig large = tts_config_preset("1.7b", TtsKind::voice_design);
  CHECK(large.talker.embedding_length == 2048);
  CHECK(large.talker.ffn_length == 6144);
  CHECK(large.predictor.embedding_length == 1024);
  CHECK(large.predictor.num_layers == 5);
  CHECK(large.has_mtp_projection());
  CHECK(large.speakers.empty());
  CHECK_THROWS_AS(tts_config_preset("0.6b", TtsKind::voice_design), std::invalid_argument);
  CHECK_THROWS_AS(tts_config_preset("3b", TtsKind::custom_voice), std::invalid_argument);
}

}  // namespace sluice::engine::tts
