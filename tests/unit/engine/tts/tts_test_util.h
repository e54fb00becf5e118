#pragma once
// A tiny Qwen3-TTS world for unit tests: a config with the real structure at toy
// sizes (talker wider than the predictor when `wide`, so small_to_mtp_projection
// exists), its config.json, and a byte-level tokenizer folder (vocab.json +
// merges.txt + tokenizer_config.json) whose words "assistant" and "user" are
// single tokens, as in the real vocabulary.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/model/tts_generator.h"

namespace sluice::engine::tts::testing {

// Special text ids of the tiny vocabulary (after 256 bytes and the word merges).
inline constexpr int32_t kImStart = 300, kImEnd = 301, kTtsPad = 302, kTtsBos = 303, kTtsEos = 304, kEndOfText = 305;

// GPT-2's byte -> printable character map, as UTF-8 strings.
inline std::vector<std::string> byte_alphabet() {
  std::vector<int> printable;
  for (int b = '!'; b <= '~'; ++b) printable.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) printable.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) printable.push_back(b);
  std::vector<std::string> out(256);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool kept = std::find(printable.begin(), printable.end(), b) != printable.end();
    const int cp = kept ? b : 256 + extra++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    out[static_cast<size_t>(b)] = s;
  }
  return out;
}

struct TempDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("sluice-tts-" + std::to_string(std::random_device{}()));
  TempDir() { std::filesystem::create_directories(dir); }
  ~TempDir() { std::filesystem::remove_all(dir); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// vocab.json, merges.txt and tokenizer_config.json into `dir`.
inline void write_tokenizer(const std::filesystem::path& dir) {
  const auto alphabet = byte_alphabet();
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[alphabet[static_cast<size_t>(b)]] = b;
  std::string merges = "#version: 0.2\n";
  int32_t next = 256;
  for (const std::string word : {"assistant", "user"}) {
    std::string left(1, word[0]);
    for (size_t i = 1; i < word.size(); ++i) {
      merges += left + " " + word[i] + "\n";
      left += word[i];
      if (!vocab.contains(left)) vocab[left] = next++;
    }
  }
  write_file(dir / "vocab.json", vocab.dump());
  write_file(dir / "merges.txt", merges);
  nlohmann::json added = nlohmann::json::object();
  const std::pair<int32_t, const char*> specials[] = {{kImStart, "<|im_start|>"}, {kImEnd, "<|im_end|>"},
                                                      {kTtsPad, "<tts_pad>"},     {kTtsBos, "<tts_text_bos>"},
                                                      {kTtsEos, "<tts_text_eod>"}, {kEndOfText, "<|endoftext|>"}};
  for (const auto& [id, text] : specials) added[std::to_string(id)] = {{"content", text}, {"special", true}};
  write_file(dir / "tokenizer_config.json",
             nlohmann::json{{"added_tokens_decoder", added}, {"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}}
                 .dump());
}

// The tiny config.json: codec vocab 1280 (ids >= 256 are control rows, so codes
// are < 256 = the predictor's vocabulary), talker hidden 32 (wide: 96), predictor
// hidden 32, text hidden 64, heads 4 / 2 KV of head_dim 16, 16 code groups as real
// checkpoints have. Every width is a multiple of 32, so Q8_0 applies to all matrices.
inline nlohmann::json tiny_config_json(bool wide, const std::string& kind = "custom_voice",
                                       const std::string& size = "0b6") {
  auto decoder = [](int hidden, int layers, int vocab) {
    return nlohmann::json{{"vocab_size", vocab},          {"hidden_size", hidden},
                          {"intermediate_size", 64},      {"num_hidden_layers", layers},
                          {"num_attention_heads", 4},     {"num_key_value_heads", 2},
                          {"head_dim", 16},               {"rms_norm_eps", 1e-6},
                          {"rope_theta", 1000000.0},      {"hidden_act", "silu"},
                          {"max_position_embeddings", 4096}};
  };
  nlohmann::json talker = decoder(wide ? 96 : 32, 2, 1280);
  talker["rope_scaling"] = {{"rope_type", "default"}, {"interleaved", true}, {"mrope_section", {4, 2, 2}}};
  talker["text_vocab_size"] = 320;
  talker["text_hidden_size"] = 64;
  talker["num_code_groups"] = 16;
  talker["codec_pad_id"] = 1100;
  talker["codec_bos_id"] = 1101;
  talker["codec_eos_token_id"] = 1102;
  talker["codec_think_id"] = 1104;
  talker["codec_nothink_id"] = 1105;
  talker["codec_think_bos_id"] = 1106;
  talker["codec_think_eos_id"] = 1107;
  talker["codec_language_id"] = {{"english", 1050}, {"chinese", 1055}, {"sichuan_dialect", 1062}};
  if (kind == "custom_voice") {
    talker["spk_id"] = {{"Anna", 1200}, {"eric", {1201}}};
    talker["spk_is_dialect"] = {{"anna", false}, {"eric", "sichuan_dialect"}};
  }
  nlohmann::json predictor = decoder(32, 2, 256);
  predictor["num_code_groups"] = 16;
  talker["code_predictor_config"] = predictor;
  return {{"model_type", "qwen3_tts"},   {"tts_model_type", kind},       {"tts_model_size", size},
          {"im_start_token_id", kImStart}, {"im_end_token_id", kImEnd},   {"assistant_token_id", 0},
          {"tts_pad_token_id", kTtsPad}, {"tts_bos_token_id", kTtsBos}, {"tts_eos_token_id", kTtsEos},
          {"talker_config", talker}};
}

// A folder with config.json (assistant id patched to the tokenizer's) and the tokenizer.
inline void write_tiny_folder(const std::filesystem::path& dir, nlohmann::json config) {
  write_tokenizer(dir);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_hf_dir(dir);
  config["assistant_token_id"] = tok.token_id("assistant");
  write_file(dir / "config.json", config.dump());
}

// A request for `text` in `voice`, seeded, at most max_frames frames
// (temperature 0: greedy).
inline TtsRequest make_request(const std::string& text, const std::string& voice, std::optional<float> temperature,
                               uint64_t seed, int32_t max_frames) {
  TtsRequest r;
  r.prompt.text = text;
  r.prompt.voice = voice;
  r.temperature = temperature;
  r.seed = seed;
  r.max_frames = max_frames;
  return r;
}

}  // namespace sluice::engine::tts::testing
