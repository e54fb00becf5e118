#pragma once
// The talker's prefill rows for one request, exactly as the official package
// builds them (reference §1.4, §8.3-8.5): an optional instruct block, the role
// rows, the codec prefix (think / language / speaker / pad) under tts_pad..tts_bos,
// then the text. Each row is the sum of an optional text-track id (through the
// text projection) and an optional codec-track id. Pure functions; any thread.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tts/model/tts_config.h"

namespace sluice::engine::tts {

struct PromptRow {
  int32_t text = -1;   // text-vocabulary id whose projection the row adds, or -1
  int32_t codec = -1;  // codec-vocabulary id whose embedding the row adds, or -1
  bool operator==(const PromptRow&) const = default;
};

struct PromptRequest {
  std::string text;
  std::string voice;         // CustomVoice speaker (case-insensitive); empty for VoiceDesign
  std::string language = "auto";  // "auto" or a language of the checkpoint (case-insensitive)
  std::string instructions;  // dropped by 0.6B checkpoints, as the official wrapper does
  bool non_streaming = true;  // all text in the prefill (the official CustomVoice/VoiceDesign default)
};

struct TtsPrompt {
  std::vector<PromptRow> rows;
  // Text ids added to generation step k's input while k < size (streaming text
  // mode); tts_pad afterwards.
  std::vector<int32_t> trailing_text;
  bool instructions_dropped = false;
  int64_t num_text_tokens = 0;  // tokens of the text to speak (the API's usage.input_tokens)
};

// A request the checkpoint cannot serve: `param` names the request field.
struct PromptError {
  std::string message;
  std::string param;
};

std::variant<TtsPrompt, PromptError> build_prompt(const TtsConfig& config, const tokenizer::Tokenizer& tokenizer,
                                                  const PromptRequest& request);

// The same layout without a tokenizer, for benchmarks on random weights:
// num_text_tokens made-up text ids, the first speaker (if any), language auto.
TtsPrompt synthetic_prompt(const TtsConfig& config, int32_t num_text_tokens);

}  // namespace sluice::engine::tts
