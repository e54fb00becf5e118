#include "engine/tts/model/tts_prompt.h"

#include <algorithm>
#include <cctype>

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

// The rows after the role: codec prefix and text (reference §1.4 steps 3-4).
void append_body(const TtsConfig& c, int32_t language_id, int32_t speaker, const std::vector<int32_t>& text,
                 bool non_streaming, TtsPrompt& prompt) {
  std::vector<int32_t> prefix;
  if (language_id < 0) {
    prefix = {c.codec.nothink, c.codec.think_bos, c.codec.think_eos};
  } else {
    prefix = {c.codec.think, c.codec.think_bos, language_id, c.codec.think_eos};
  }
  if (speaker >= 0) prefix.push_back(speaker);
  prefix.push_back(c.codec.pad);  // the final bos is added with the first text row
  for (size_t i = 0; i < prefix.size(); ++i)
    prompt.rows.push_back({i + 1 < prefix.size() ? c.text.tts_pad : c.text.tts_bos, prefix[i]});

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

}  // namespace

TtsPrompt synthetic_prompt(const TtsConfig& c, int32_t num_text_tokens) {
  TtsPrompt prompt;
  for (int32_t id : {c.text.im_start, c.text.assistant, c.text.im_end}) prompt.rows.push_back({id, -1});
  std::vector<int32_t> text;
  for (int32_t i = 0; i < std::max(num_text_tokens, 1); ++i)
    text.push_back(static_cast<int32_t>((1000 + 7919 * static_cast<int64_t>(i)) % c.text_vocab_size));
  const int32_t speaker = c.speakers.empty() ? -1 : c.speakers.begin()->second;
  append_body(c, -1, speaker, text, true, prompt);
  return prompt;
}

std::variant<TtsPrompt, PromptError> build_prompt(const TtsConfig& c, const tokenizer::Tokenizer& tok,
                                                  const PromptRequest& req) {
  if (req.text.empty()) return PromptError{"the text to speak is empty", "input"};

  // Speaker: a codec row of the CustomVoice checkpoint; VoiceDesign has none.
  const std::string voice = lower(req.voice);
  int32_t speaker = -1;
  if (c.kind == TtsKind::custom_voice) {
    const auto it = c.speakers.find(voice);
    if (it == c.speakers.end())
      return PromptError{"voice '" + req.voice + "' is not one of this model's speakers: " + speaker_list(c), "voice"};
    speaker = it->second;
  } else if (!voice.empty()) {
    return PromptError{"this VoiceDesign model has no preset voices: describe the voice in the instructions",
                       "voice"};
  }

  // Language: "auto" or a listed non-dialect language; dialect speakers replace
  // chinese and auto by their dialect (reference §8.4).
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

  append_body(c, language_id, speaker, text, req.non_streaming, prompt);
  return prompt;
}

}  // namespace sluice::engine::tts
