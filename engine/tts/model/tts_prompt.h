#pragma once
// The talker's prefill rows for one request, exactly as the official package builds
// them (Qwen3TTSForConditionalGeneration.generate in qwen_tts/core/models/
// modeling_qwen3_tts.py, with the defaults of the Qwen3TTSModel wrapper in
// qwen_tts/inference/qwen3_tts_model.py): an optional instruct block, the role rows,
// the codec prefix (think / language / speaker / pad) under tts_pad..tts_bos, then
// the text. Each row is the sum of an optional text-track id (through the text
// projection) and an optional codec-track part: a codec id's embedding; for a Base
// checkpoint's speaker row the reference voice's x-vector as it is; for its ICL rows
// the sum of a reference frame's code embeddings.
// Pure functions; any thread.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tts/model/tts_config.h"

namespace sluice::engine::tts {

struct PromptRow {
  int32_t text = -1;   // text-vocabulary id whose projection the row adds, or -1
  int32_t codec = -1;  // codec-vocabulary id whose embedding the row adds, or -1
  bool speaker = false;  // the row adds the prompt's speaker_embedding instead (codec is -1)
  // ICL: the row adds the sum of reference frame ref_frame's code embeddings (as a
  // fed-back frame does) instead (codec is -1); -1 when not.
  int32_t ref_frame = -1;
  bool operator==(const PromptRow&) const = default;
};

struct PromptRequest {
  std::string text;
  std::string voice;         // CustomVoice speaker (case-insensitive); empty for VoiceDesign and Base
  std::string language = "auto";  // "auto" or a language of the checkpoint (case-insensitive)
  std::string instructions;  // dropped by 0.6B checkpoints, as the official wrapper does
  // All text in the prefill; absent: the official default of the checkpoint's kind
  // (true for CustomVoice and VoiceDesign, false for Base voice cloning).
  std::optional<bool> non_streaming{};
  // Base: the reference voice's x-vector (SpeakerEncoder::embed, talker width), the
  // prompt's speaker row (as the official generate inserts it, unprojected).
  std::vector<float> speaker_embedding{};
  // Base ICL mode, with the x-vector: the reference's codes [frames, G] (the codec
  // encoder's) and its transcript lead the text (generate_icl_prompt). Empty:
  // x-vector mode.
  std::vector<int32_t> ref_codes{};
  std::string ref_text{};
};

struct TtsPrompt {
  std::vector<PromptRow> rows;
  std::vector<float> speaker_embedding;  // [d] what the `speaker` row adds; empty when none
  // [frames, G] the ICL reference's codes, which ref_frame rows sum; the codec decoder
  // decodes them before the generated frames and drops their samples (as
  // Qwen3TTSModel.generate_voice_clone does).
  std::vector<int32_t> ref_codes;
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

// One id per prompt row that stands for what the row adds (its text and codec ids, the
// speaker embedding's bytes, the reference frame's codes), for the talker's prefix
// cache: two requests whose rows agree up to some row hold the same KV there, so the
// rows of a cloned voice's reference (and of any voice's fixed prefix) are computed
// once and shared, keyed by their content rather than by token ids. In [0, 2^31).
std::vector<int32_t> prompt_row_keys(const TtsPrompt& prompt, int32_t num_code_groups);

// The same layout without a tokenizer, for benchmarks on random weights:
// num_text_tokens made-up text ids, the first speaker (if any), language auto.
TtsPrompt synthetic_prompt(const TtsConfig& config, int32_t num_text_tokens);

}  // namespace sluice::engine::tts
