#include "engine/tts/model/tts_config.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "engine/loader/config_reader.h"
#include "engine/loader/json_file.h"
#include "engine/loader/load_error.h"
#include "engine/models/architecture.h"

namespace sluice::engine::tts {
namespace {

using loader::LoadError;
using loader::detail::ConfigReader;
using nlohmann::json;

constexpr uint64_t kMaxConfigBytes = 1 << 20;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

int32_t id_value(const ConfigReader& r, std::string_view name) {
  const int64_t value = r.required_integer(name);
  if (value < 0 || value > INT32_MAX) r.fail(name, "is not a token id");
  return static_cast<int32_t>(value);
}

// A qwen3-style decoder (q/k norm, SwiGLU, NeoX RoPE over the whole head, no
// biases, full attention) from one of the checkpoint's decoder configs.
ModelHparams read_decoder(const ConfigReader& r) {
  ModelHparams h;
  h.architecture = "qwen3";
  h.vocab_size = r.required_integer("vocab_size");
  h.embedding_length = r.required_integer("hidden_size");
  h.num_layers = r.required_integer("num_hidden_layers");
  h.num_heads = r.required_integer("num_attention_heads");
  h.num_kv_heads = r.integer("num_key_value_heads").value_or(h.num_heads);
  if (h.num_heads <= 0) r.fail("num_attention_heads", "must be positive");
  h.head_dim = r.integer("head_dim").value_or(h.embedding_length / h.num_heads);
  h.ffn_length = r.required_integer("intermediate_size");
  h.context_length = r.integer("max_position_embeddings").value_or(32768);
  h.norm_eps = r.real("rms_norm_eps").value_or(1e-6f);
  h.qk_norm = true;
  if (r.boolean("attention_bias").value_or(false)) r.fail("attention_bias", "true is not supported");
  if (auto act = r.string("hidden_act"); act && *act != "silu") r.fail("hidden_act", "'" + *act + "' is not silu");
  h.rope.theta = r.real("rope_theta").value_or(10000.0f);
  h.rope.num_rotated = static_cast<int>(h.head_dim);
  h.rope.neox = true;
  if (const json* scaling = r.object("rope_scaling")) {
    // The talker's 3-axis M-RoPE: every axis gets the same positions in TTS, so
    // the sections interleave identical angles and it is plain RoPE (see
    // get_rope_index in qwen_tts/core/models/modeling_qwen3_tts.py).
    const std::string type = scaling->value("rope_type", scaling->value("type", "default"));
    if (type != "default") r.fail("rope_scaling", "rope_type '" + type + "' is not supported");
  }
  try {
    qwen3_architecture().check(h);
  } catch (const std::invalid_argument& e) {
    throw LoadError(r.path(), std::string(r.key("")) + ": " + e.what());
  }
  return h;
}

void read_speakers(const ConfigReader& talker, TtsConfig& c) {
  if (const json* spk = talker.object("spk_id")) {
    for (const auto& [name, value] : spk->items()) {
      // Some mirrors store each id as a one-element list.
      const json& id = value.is_array() && value.size() == 1 ? value[0] : value;
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= c.talker.vocab_size)
        talker.fail("spk_id." + name, "is not a codec id below vocab_size");
      c.speakers[lower(name)] = id.get<int32_t>();
    }
  }
  if (const json* dialects = talker.object("spk_is_dialect")) {
    for (const auto& [name, value] : dialects->items()) {
      if (value.is_boolean() && !value.get<bool>()) continue;
      if (!value.is_string()) talker.fail("spk_is_dialect." + name, "is neither false nor a language name");
      const std::string dialect = lower(value.get<std::string>());
      if (!c.languages.contains(dialect))
        talker.fail("spk_is_dialect." + name, "names '" + dialect + "', which codec_language_id lacks");
      c.speaker_dialect[lower(name)] = dialect;
    }
  }
}

std::vector<int64_t> integer_list(const ConfigReader& r, std::string_view name, std::vector<int64_t> fallback) {
  const json* value = r.find(name);
  if (value == nullptr) return fallback;
  if (!value->is_array()) r.fail(name, "is not a list");
  std::vector<int64_t> out;
  for (const json& item : *value) {
    if (!item.is_number_integer() || item.get<int64_t>() <= 0) r.fail(name, "holds a value that is not a positive integer");
    out.push_back(item.get<int64_t>());
  }
  return out;
}

// speaker_encoder_config: absent keys take the official class defaults. The mel
// front-end is fixed in the official code (128 mels of 24 kHz audio), so the
// config must agree with it; the x-vector is the talker's speaker row, so it has
// the talker's width.
SpeakerEncoderConfig read_speaker_encoder(const ConfigReader& r, int64_t talker_hidden) {
  SpeakerEncoderConfig s;
  auto positive = [&](std::string_view name, int64_t fallback) {
    const int64_t v = r.integer(name).value_or(fallback);
    if (v <= 0) r.fail(name, "must be positive");
    return v;
  };
  s.mel_dim = positive("mel_dim", s.mel_dim);
  s.enc_dim = positive("enc_dim", s.enc_dim);
  s.channels = integer_list(r, "enc_channels", s.channels);
  s.kernel_sizes = integer_list(r, "enc_kernel_sizes", s.kernel_sizes);
  s.dilations = integer_list(r, "enc_dilations", s.dilations);
  s.attention_channels = positive("enc_attention_channels", s.attention_channels);
  s.res2net_scale = positive("enc_res2net_scale", s.res2net_scale);
  s.se_channels = positive("enc_se_channels", s.se_channels);
  s.sample_rate = static_cast<int32_t>(positive("sample_rate", s.sample_rate));
  if (s.mel_dim != 128) r.fail("mel_dim", "is not 128, the official mel front-end's bins");
  if (s.sample_rate != 24000) r.fail("sample_rate", "is not 24000, the official mel front-end's rate");
  if (s.enc_dim != talker_hidden) r.fail("enc_dim", "differs from the talker's hidden_size");
  if (s.kernel_sizes.size() != s.channels.size() || s.dilations.size() != s.channels.size())
    r.fail("enc_channels", "enc_kernel_sizes and enc_dilations differ in length");
  if (s.channels.size() < 3) r.fail("enc_channels", "needs a first layer, a block and the aggregation layer");
  int64_t aggregated = 0;
  for (size_t i = 1; i + 1 < s.channels.size(); ++i) {
    // Each block adds its input back, and the Res2Net splits its width in `scale`.
    if (s.channels[i] != s.channels[i - 1]) r.fail("enc_channels", "changes width at a residual block");
    if (s.channels[i] % s.res2net_scale != 0) r.fail("enc_channels", "is not a multiple of enc_res2net_scale");
    aggregated += s.channels[i];
  }
  if (s.res2net_scale < 2) r.fail("enc_res2net_scale", "must be at least 2");
  if (aggregated != s.channels.back()) r.fail("enc_channels", "last entry is not the sum of the blocks' widths");
  return s;
}

void read_generation_config(const std::filesystem::path& path, TtsConfig& c) {
  const json root = loader::detail::parse_json_file(path, kMaxConfigBytes);
  if (!root.is_object()) throw LoadError(path, "is not a JSON object");
  const ConfigReader r(path, root, "");
  auto stage = [&](StageSampling& s, const std::string& prefix) {
    s.do_sample = r.boolean(prefix + "dosample").value_or(r.boolean(prefix + "do_sample").value_or(s.do_sample));
    s.temperature = r.real(prefix + "temperature").value_or(s.temperature);
    s.top_k = static_cast<int32_t>(r.integer(prefix + "top_k").value_or(s.top_k));
    s.top_p = r.real(prefix + "top_p").value_or(s.top_p);
  };
  stage(c.talker_sampling, "");
  stage(c.predictor_sampling, "subtalker_");
  c.talker_sampling.repetition_penalty = r.real("repetition_penalty").value_or(c.talker_sampling.repetition_penalty);
  if (auto n = r.integer("max_new_tokens")) {
    if (*n <= 0 || *n > INT32_MAX) r.fail("max_new_tokens", "must be a positive count");
    c.max_new_tokens = static_cast<int32_t>(*n);
  }
  for (const StageSampling* s : {&c.talker_sampling, &c.predictor_sampling})
    if (!(s->temperature >= 0.0f) || !(s->top_p > 0.0f && s->top_p <= 1.0f) || !(s->repetition_penalty > 0.0f))
      throw LoadError(path, "sampling values out of range (temperature >= 0, 0 < top_p <= 1, penalty > 0)");
}

}  // namespace

std::string_view tts_kind_name(TtsKind kind) {
  switch (kind) {
    case TtsKind::custom_voice: return "custom_voice";
    case TtsKind::voice_design: return "voice_design";
    case TtsKind::base: return "base";
  }
  return "?";
}

TtsConfig read_tts_config(const std::filesystem::path& dir) {
  TtsConfig c;
  c.path = dir / "config.json";
  const json root = loader::detail::parse_json_file(c.path, kMaxConfigBytes);
  if (!root.is_object()) throw LoadError(c.path, "is not a JSON object");
  const ConfigReader top(c.path, root, "");
  if (auto type = top.string("model_type"); type && *type != "qwen3_tts")
    top.fail("model_type", "is '" + *type + "', not qwen3_tts");
  const std::string kind = top.string("tts_model_type").value_or("");
  if (kind == "custom_voice") {
    c.kind = TtsKind::custom_voice;
  } else if (kind == "voice_design") {
    c.kind = TtsKind::voice_design;
  } else if (kind == "base") {
    c.kind = TtsKind::base;
  } else {
    top.fail("tts_model_type", "is '" + kind + "', not base, custom_voice or voice_design");
  }
  c.model_size = top.string("tts_model_size").value_or("");
  c.text = {id_value(top, "im_start_token_id"), id_value(top, "im_end_token_id"), id_value(top, "assistant_token_id"),
            id_value(top, "tts_pad_token_id"),  id_value(top, "tts_bos_token_id"), id_value(top, "tts_eos_token_id")};

  const json* talker_json = top.object("talker_config");
  if (talker_json == nullptr) top.fail("talker_config", "is missing");
  const ConfigReader talker(c.path, *talker_json, "talker_config.");
  c.talker = read_decoder(talker);
  c.text_vocab_size = talker.required_integer("text_vocab_size");
  c.text_hidden_size = talker.required_integer("text_hidden_size");
  if (c.text_vocab_size <= 0 || c.text_hidden_size <= 0) talker.fail("text_vocab_size", "and text_hidden_size must be positive");
  for (int32_t id : {c.text.im_start, c.text.im_end, c.text.assistant, c.text.tts_pad, c.text.tts_bos, c.text.tts_eos})
    if (id >= c.text_vocab_size) top.fail("tts_pad_token_id", "or another special text id is beyond text_vocab_size");
  const int64_t groups = talker.required_integer("num_code_groups");
  if (groups < 2 || groups > 64) talker.fail("num_code_groups", "must be 2..64");
  c.num_code_groups = static_cast<int32_t>(groups);
  c.codec = {id_value(talker, "codec_pad_id"),     id_value(talker, "codec_bos_id"),
             id_value(talker, "codec_eos_token_id"), id_value(talker, "codec_think_id"),
             id_value(talker, "codec_nothink_id"), id_value(talker, "codec_think_bos_id"),
             id_value(talker, "codec_think_eos_id")};
  for (int32_t id : {c.codec.pad, c.codec.bos, c.codec.eos, c.codec.think, c.codec.nothink, c.codec.think_bos,
                     c.codec.think_eos})
    if (id >= c.talker.vocab_size) talker.fail("codec_eos_token_id", "or another codec control id is beyond vocab_size");
  if (const json* langs = talker.object("codec_language_id")) {
    for (const auto& [name, value] : langs->items()) {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= c.talker.vocab_size)
        talker.fail("codec_language_id." + name, "is not a codec id below vocab_size");
      c.languages[lower(name)] = value.get<int32_t>();
    }
  }
  read_speakers(talker, c);

  const json* predictor_json = talker.object("code_predictor_config");
  if (predictor_json == nullptr) talker.fail("code_predictor_config", "is missing");
  const ConfigReader predictor(c.path, *predictor_json, "talker_config.code_predictor_config.");
  c.predictor = read_decoder(predictor);
  if (auto n = predictor.integer("num_code_groups"); n && *n != groups)
    predictor.fail("num_code_groups", "differs from the talker's");
  // The code predictor's first input row is the talker's last hidden state, its
  // codebooks index its own vocabulary, and the 16 codes feed the talker back.
  if (c.predictor.vocab_size > c.talker.vocab_size) predictor.fail("vocab_size", "exceeds the talker's codec vocabulary");

  if (c.kind == TtsKind::base) {
    // The official config class fills an absent speaker_encoder_config with defaults.
    static const json kEmpty = json::object();
    const json* speaker = top.object("speaker_encoder_config");
    const ConfigReader reader(c.path, speaker ? *speaker : kEmpty, "speaker_encoder_config.");
    c.speaker_encoder = read_speaker_encoder(reader, c.talker.embedding_length);
  }

  const std::filesystem::path generation = dir / "generation_config.json";
  if (std::filesystem::exists(generation)) read_generation_config(generation, c);
  return c;
}

TtsConfig tts_config_preset(std::string_view size, TtsKind kind) {
  const bool large = size == "1.7b";
  if (!large && size != "0.6b") throw std::invalid_argument("Qwen3-TTS size must be 0.6b or 1.7b");
  if (kind == TtsKind::base) throw std::invalid_argument("Base has no preset: its speaker encoder needs real weights");
  if (kind == TtsKind::voice_design && !large) throw std::invalid_argument("VoiceDesign is published at 1.7b only");
  TtsConfig c;
  c.path = "preset:" + std::string(size) + "-" + std::string(tts_kind_name(kind));
  c.model_size = large ? "1b7" : "0b6";
  c.kind = kind;
  c.text = {151644, 151645, 77091, 151671, 151672, 151673};
  auto decoder = [](int64_t hidden, int64_t ffn, int64_t layers, int64_t vocab, int64_t context) {
    ModelHparams h;
    h.architecture = "qwen3";
    h.vocab_size = vocab;
    h.embedding_length = hidden;
    h.num_layers = layers;
    h.num_heads = 16;
    h.num_kv_heads = 8;
    h.head_dim = 128;
    h.ffn_length = ffn;
    h.context_length = context;
    h.norm_eps = 1e-6f;
    h.qk_norm = true;
    h.rope.theta = 1000000.0f;
    h.rope.num_rotated = 128;
    h.rope.neox = true;
    return h;
  };
  c.talker = large ? decoder(2048, 6144, 28, 3072, 32768) : decoder(1024, 3072, 28, 3072, 32768);
  c.predictor = decoder(1024, 3072, 5, 2048, 65536);
  c.text_vocab_size = 151936;
  c.text_hidden_size = 2048;
  c.num_code_groups = 16;
  c.codec = {2148, 2149, 2150, 2154, 2155, 2156, 2157};
  c.languages = {{"chinese", 2055}, {"english", 2050}, {"german", 2053},  {"italian", 2070},
                 {"portuguese", 2071}, {"spanish", 2054}, {"japanese", 2058}, {"korean", 2064},
                 {"french", 2061}, {"russian", 2069}};
  if (kind == TtsKind::custom_voice) {
    c.languages["beijing_dialect"] = 2074;
    c.languages["sichuan_dialect"] = 2062;
    c.speakers = {{"serena", 3066}, {"vivian", 3065}, {"uncle_fu", 3010}, {"ryan", 3061},   {"aiden", 2861},
                  {"ono_anna", 2873}, {"sohee", 2864}, {"eric", 2875},    {"dylan", 2878}};
    c.speaker_dialect = {{"eric", "sichuan_dialect"}, {"dylan", "beijing_dialect"}};
  }
  c.max_new_tokens = 8192;
  return c;
}

}  // namespace sluice::engine::tts
