#include "engine/tts/model/tts_prompt.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace sluice::engine::tts {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string language_list(const TtsConfig& c) {
  std::string out = "auto";
  for (const auto& [name, id] : c.languages)
    if (name.find("dialect") == std::string::npos) out += ", " + name;
  return out;
}

std::string speaker_list(const TtsConfig& c) {
  std::string out;
  for (const auto& [name, id] : c.speakers) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// The codec-prefix part of a speaker row: a codec id (CustomVoice), the x-vector
// (Base), or none.
struct Speaker {
  int32_t codec = -1;
  bool embedding = false;
};

// The codec prefix after the role (as Qwen3TTSForConditionalGeneration.generate
// builds it): think / nothink, the language, the speaker part, pad, under tts_pad ...
// tts_bos. Its final codec bos comes with the first text (or ICL) row.
void append_prefix(const TtsConfig& c, int32_t language_id, Speaker speaker, TtsPrompt& prompt) {
  std::vector<PromptRow> prefix;
  if (language_id < 0) {
    prefix = {{-1, c.codec.nothink}, {-1, c.codec.think_bos}, {-1, c.codec.think_eos}};
  } else {
    prefix = {{-1, c.codec.think}, {-1, c.codec.think_bos}, {-1, language_id}, {-1, c.codec.think_eos}};
  }
  if (speaker.codec >= 0) prefix.push_back({-1, speaker.codec});
  if (speaker.embedding) prefix.push_back({-1, -1, true});
  prefix.push_back({-1, c.codec.pad});
  for (size_t i = 0; i < prefix.size(); ++i) {
    prefix[i].text = i + 1 < prefix.size() ? c.text.tts_pad : c.text.tts_bos;
    prompt.rows.push_back(prefix[i]);
  }
}

// The text after the prefix (generate with non_streaming_mode True / False).
void append_text(const TtsConfig& c, const std::vector<int32_t>& text, bool non_streaming, TtsPrompt& prompt) {
  if (non_streaming) {
    for (int32_t id : text) prompt.rows.push_back({id, c.codec.pad});
    prompt.rows.push_back({c.text.tts_eos, c.codec.pad});
    prompt.rows.push_back({c.text.tts_pad, c.codec.bos});
  } else {
    prompt.rows.push_back({text.front(), c.codec.bos});
    prompt.trailing_text.assign(text.begin() + 1, text.end());
    prompt.trailing_text.push_back(c.text.tts_eos);
  }
}

// ICL (the official Qwen3TTSForConditionalGeneration.generate_icl_prompt): the text
// track is the reference transcript, the text and tts_eos; the codec track codec bos,
// then each reference frame. Streaming text zips the two (text past the codec rows
// trails, codec rows past the text get tts_pad); non-streaming puts the text first
// (with codec pad) and the codec rows after it (with tts_pad).
void append_icl(const TtsConfig& c, const std::vector<int32_t>& ref_text, const std::vector<int32_t>& text,
                int32_t num_frames, bool non_streaming, TtsPrompt& prompt) {
  std::vector<int32_t> all = ref_text;
  all.insert(all.end(), text.begin(), text.end());
  all.push_back(c.text.tts_eos);
  const auto codec_row = [&](int32_t i, int32_t text_id) {
    return i == 0 ? PromptRow{text_id, c.codec.bos} : PromptRow{text_id, -1, false, i - 1};
  };
  if (non_streaming) {
    for (int32_t id : all) prompt.rows.push_back({id, c.codec.pad});
    for (int32_t i = 0; i <= num_frames; ++i) prompt.rows.push_back(codec_row(i, c.text.tts_pad));
    return;
  }
  for (int32_t i = 0; i <= num_frames; ++i)
    prompt.rows.push_back(codec_row(i, static_cast<size_t>(i) < all.size() ? all[static_cast<size_t>(i)] : c.text.tts_pad));
  if (all.size() > static_cast<size_t>(num_frames) + 1)
    prompt.trailing_text.assign(all.begin() + num_frames + 1, all.end());
}

// A Base request's reference: the x-vector, and for ICL the codes and transcript.
std::optional<PromptError> check_reference(const TtsConfig& c, const PromptRequest& req) {
  if (c.kind != TtsKind::base) {
    if (!req.speaker_embedding.empty() || !req.ref_codes.empty() || !req.ref_text.empty())
      return PromptError{"only a Base model clones a voice from reference audio", "ref_audio"};
    return std::nullopt;
  }
  if (!req.voice.empty())
    return PromptError{"this Base model has no preset voices: it clones the voice of reference audio", "voice"};
  if (req.speaker_embedding.empty()) return PromptError{"this Base model clones a voice: give reference audio", "ref_audio"};
  if (static_cast<int64_t>(req.speaker_embedding.size()) != c.talker.embedding_length)
    return PromptError{"the speaker embedding has " + std::to_string(req.speaker_embedding.size()) +
                           " values; this model's are " + std::to_string(c.talker.embedding_length),
                       "ref_audio"};
  if (req.ref_codes.empty()) return std::nullopt;  // x-vector mode
  const auto groups = static_cast<size_t>(c.num_code_groups);
  if (req.ref_codes.size() % groups != 0)
    return PromptError{"the reference codes are not whole frames of " + std::to_string(groups), "ref_audio"};
  for (int32_t code : req.ref_codes)
    if (code < 0 || code >= c.predictor.vocab_size)
      return PromptError{"a reference code is outside the codebooks", "ref_audio"};
  if (req.ref_text.empty())
    return PromptError{"cloning from reference codes needs the reference's transcript", "ref_text"};
  return std::nullopt;
}

}  // namespace

TtsPrompt synthetic_prompt(const TtsConfig& c, int32_t num_text_tokens) {
  TtsPrompt prompt;
  for (int32_t id : {c.text.im_start, c.text.assistant, c.text.im_end}) prompt.rows.push_back({id, -1});
  std::vector<int32_t> text;
  for (int32_t i = 0; i < std::max(num_text_tokens, 1); ++i)
    text.push_back(static_cast<int32_t>((1000 + 7919 * static_cast<int64_t>(i)) % c.text_vocab_size));
  const int32_t speaker = c.speakers.empty() ? -1 : c.speakers.begin()->second;
  append_prefix(c, -1, {speaker, false}, prompt);
  append_text(c, text, true, prompt);
  return prompt;
}

std::variant<TtsPrompt, PromptError> build_prompt(const TtsConfig& c, const tokenizer::Tokenizer& tok,
                                                  const PromptRequest& req) {
  if (req.text.empty()) return PromptError{"the text to speak is empty", "input"};

  // Speaker: a codec row of the CustomVoice checkpoint, the reference voice's
  // x-vector for Base; VoiceDesign has none.
  const std::string voice = lower(req.voice);
  int32_t speaker = -1;
  if (c.kind == TtsKind::custom_voice) {
    const auto it = c.speakers.find(voice);
    if (it == c.speakers.end())
      return PromptError{"voice '" + req.voice + "' is not one of this model's speakers: " + speaker_list(c), "voice"};
    speaker = it->second;
  } else if (c.kind == TtsKind::voice_design && !voice.empty()) {
    return PromptError{"this VoiceDesign model has no preset voices: describe the voice in the instructions",
                       "voice"};
  }
  if (auto error = check_reference(c, req)) return *error;

  // Language: "auto" or a listed non-dialect language; dialect speakers replace
  // chinese and auto by their dialect (spk_is_dialect in the official generate;
  // tests/fixtures/qwen3_tts/README.md).
  const std::string language = lower(req.language.empty() ? "auto" : req.language);
  int32_t language_id = -1;
  if (language != "auto") {
    const auto it = c.languages.find(language);
    if (it == c.languages.end() || language.find("dialect") != std::string::npos)
      return PromptError{"language '" + req.language + "' is not supported; choose one of: " + language_list(c),
                         "language"};
    language_id = it->second;
  }
  if ((language == "chinese" || language == "auto") && speaker >= 0) {
    if (const auto it = c.speaker_dialect.find(voice); it != c.speaker_dialect.end())
      language_id = c.languages.at(it->second);
  }

  TtsPrompt prompt;
  const auto encode = [&](const std::string& s) { return tok.encode(s, /*add_special=*/false, /*parse_special=*/true); };
  if (!req.instructions.empty()) {
    if (c.accepts_instructions()) {
      for (int32_t id : encode("<|im_start|>user\n" + req.instructions + "<|im_end|>\n")) prompt.rows.push_back({id, -1});
    } else {
      prompt.instructions_dropped = true;
    }
  }
  const std::vector<int32_t> ids = encode("<|im_start|>assistant\n" + req.text + "<|im_end|>\n<|im_start|>assistant\n");
  // Sliced by position as the reference does: [:3] role, [3:-5] text.
  if (ids.size() < 9) return PromptError{"the text to speak is empty after tokenization", "input"};
  for (size_t i = 0; i < 3; ++i) prompt.rows.push_back({ids[i], -1});
  const std::vector<int32_t> text(ids.begin() + 3, ids.end() - 5);
  prompt.num_text_tokens = static_cast<int64_t>(text.size());

  // The official wrapper feeds a Base voice clone's text while it speaks
  // (generate_voice_clone's non_streaming_mode=False) and the others' all at once.
  const bool non_streaming = req.non_streaming.value_or(c.kind != TtsKind::base);
  const bool clone = c.kind == TtsKind::base;
  if (clone) prompt.speaker_embedding = req.speaker_embedding;
  append_prefix(c, language_id, {speaker, clone}, prompt);
  if (req.ref_codes.empty()) {
    append_text(c, text, non_streaming, prompt);
    return prompt;
  }
  // The transcript is sliced by position as the reference does: [3:-2].
  const std::vector<int32_t> ref = encode("<|im_start|>assistant\n" + req.ref_text + "<|im_end|>\n");
  if (ref.size() < 6) return PromptError{"the reference transcript is empty after tokenization", "ref_text"};
  prompt.ref_codes = req.ref_codes;
  const auto frames = static_cast<int32_t>(req.ref_codes.size() / static_cast<size_t>(c.num_code_groups));
  append_icl(c, std::vector<int32_t>(ref.begin() + 3, ref.end() - 2), text, frames, non_streaming, prompt);
  return prompt;
}

namespace {

// 64-bit FNV-1a over bytes, then over further values: a stable content hash.
class ContentHash {
 public:
  void add_bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  template <class T>
  void add(const T& value) {
    add_bytes(&value, sizeof value);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace

std::vector<int32_t> prompt_row_keys(const TtsPrompt& prompt, int32_t num_code_groups) {
  ContentHash speaker;
  speaker.add_bytes(prompt.speaker_embedding.data(), prompt.speaker_embedding.size() * sizeof(float));
  std::vector<int32_t> keys;
  keys.reserve(prompt.rows.size());
  for (const PromptRow& row : prompt.rows) {
    ContentHash h;
    h.add(row.text);
    h.add(row.codec);
    h.add(row.speaker ? speaker.value() : uint64_t{0});
    if (row.ref_frame >= 0) {
      const auto* codes = prompt.ref_codes.data() + static_cast<size_t>(row.ref_frame) * static_cast<size_t>(num_code_groups);
      h.add_bytes(codes, static_cast<size_t>(num_code_groups) * sizeof(int32_t));
    } else {
      h.add(int32_t{-1});
    }
    keys.push_back(static_cast<int32_t>(h.value() >> 33));  // 31 bits: a non-negative id
  }
  return keys;
}

}  // namespace sluice::engine::tts
