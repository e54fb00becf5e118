#pragma once
// What a Qwen3-TTS checkpoint folder declares (config.json + generation_config.json),
// read once at load and checked, so the talker, the code predictor and the prompt
// builder can trust it. Plain data; any thread may read it.
//
// Sources: the official qwen-tts package (qwen_tts/core/models/
// configuration_qwen3_tts.py, modeling_qwen3_tts.py) and the config.json /
// generation_config.json published with Qwen/Qwen3-TTS-12Hz-0.6B-Base. The
// talker's 3-axis M-RoPE collapses to 1-D NeoX RoPE over the whole head (all three
// position rows are equal for TTS), so both decoders are plain qwen3 hparams.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/models/hparams.h"
#include "engine/tts/speaker/speaker_encoder_config.h"

namespace sluice::engine::tts {

// config.json's tts_model_type.
enum class TtsKind { custom_voice, voice_design, base };
std::string_view tts_kind_name(TtsKind kind);  // as on the wire: "custom_voice"

// Text-vocabulary ids the prompt inserts as integers (never tokenized).
struct TextSpecialIds {
  int32_t im_start = 0;
  int32_t im_end = 0;
  int32_t assistant = 0;
  int32_t tts_pad = 0;
  int32_t tts_bos = 0;
  int32_t tts_eos = 0;
};

// Codec-vocabulary control ids (talker_config.codec_*_id).
struct CodecControlIds {
  int32_t pad = 0;
  int32_t bos = 0;
  int32_t eos = 0;
  int32_t think = 0;
  int32_t nothink = 0;
  int32_t think_bos = 0;
  int32_t think_eos = 0;
};

// One stage's sampling defaults (generation_config.json; the official wrapper's
// hard defaults where a key is absent). do_sample false is greedy.
struct StageSampling {
  bool do_sample = true;
  float temperature = 0.9f;
  int32_t top_k = 50;
  float top_p = 1.0f;
  float repetition_penalty = 1.0f;  // talker only: over the generated codebook-0 ids
};

struct TtsConfig {
  std::filesystem::path path;  // config.json, for messages
  std::string model_size;      // tts_model_size: "0b6" | "1b7"
  TtsKind kind = TtsKind::custom_voice;
  TextSpecialIds text;
  // Talker decoder: vocab_size is the codec vocabulary (codec_embedding rows and
  // codec_head outputs), embedding_length the talker hidden.
  ModelHparams talker;
  int64_t text_vocab_size = 0;   // text_embedding rows
  int64_t text_hidden_size = 0;  // text_embedding width, text_projection's inner width
  // Code predictor decoder: vocab_size is each codebook's size (its lm_heads' outputs).
  ModelHparams predictor;
  int32_t num_code_groups = 16;
  CodecControlIds codec;
  std::map<std::string, int32_t> speakers;          // lower-case name -> codec_embedding row
  std::map<std::string, std::string> speaker_dialect;  // name -> its dialect's language key (spk_is_dialect)
  std::map<std::string, int32_t> languages;         // lower-case name -> codec id (dialects included)
  std::optional<SpeakerEncoderConfig> speaker_encoder;  // Base checkpoints only
  StageSampling talker_sampling{true, 0.9f, 50, 1.0f, 1.05f};
  StageSampling predictor_sampling{true, 0.9f, 50, 1.0f, 1.0f};
  int32_t max_new_tokens = 2048;

  // The official wrapper drops instructions when `tts_model_size in "0b6"` (a
  // substring test, so an empty size counts too).
  bool accepts_instructions() const { return std::string_view("0b6").find(model_size) == std::string_view::npos; }
  // Whether the code predictor projects talker-width vectors to its own width
  // (small_to_mtp_projection): only when the two hidden sizes differ.
  bool has_mtp_projection() const { return talker.embedding_length != predictor.embedding_length; }
};

// Reads dir/config.json and, when present, dir/generation_config.json. Throws
// loader::LoadError naming the file and the key.
TtsConfig read_tts_config(const std::filesystem::path& dir);

// The published configuration of a size ("0.6b" | "1.7b") and kind (CustomVoice
// speakers and dialects; VoiceDesign is 1.7B only), for benchmarks on random
// weights without files. Throws std::invalid_argument for another size or a
// combination that was never published, and for Base (no random speaker encoder).
TtsConfig tts_config_preset(std::string_view size, TtsKind kind);

}  // namespace sluice::engine::tts
