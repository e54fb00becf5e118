#pragma once
// POST /v1/audio/speech: the body parsed and validated into a SpeechRequest, or the
// 400 that names the offending field. OpenAI's fields (model, input, voice,
// instructions, response_format, speed, stream_format) plus the extensions vLLM-Omni
// names for Qwen3-TTS (language, max_new_tokens, seed, temperature, top_k, top_p,
// repetition_penalty, sample_rate, initial_codec_chunk_frames, stream) and vLLM's
// ignore_eos (speech that runs max_new_tokens frames, for benchmarks), and
// vLLM-Omni's voice-cloning fields for Base checkpoints: ref_audio (base64 or a
// data: URI, decoded here: audio_payload.h), ref_text, x_vector_only_mode. Whether
// the voice or language exists, and whether the model clones, is the model's
// check, not this one's.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto/audio_payload.h"
#include "proto/errors.h"
#include "proto/generation_options.h"

namespace sluice::proto {

inline constexpr int64_t kMaxSpeechInputChars = 4096;  // OpenAI's limit, in characters

enum class AudioFormat { mp3, opus, aac, flac, wav, pcm };
enum class SpeechStreamFormat { none, audio, sse };

std::string_view audio_format_name(AudioFormat format);

struct SpeechRequest {
  std::string model;
  std::string input;                  // 1..4096 characters (code points)
  std::string voice;                  // empty: the model's default; {"id": ...} objects give their id
  std::string instructions;
  AudioFormat response_format = AudioFormat::mp3;  // OpenAI's default
  float speed = 1.0f;                 // 0.25..4
  // audio: the encoded bytes streamed as made; sse: speech.audio.delta events;
  // none: one whole body (OpenAI's default when stream_format is absent).
  SpeechStreamFormat stream_format = SpeechStreamFormat::none;
  // Extensions.
  std::optional<std::string> language;          // "auto" or a language of the model
  std::optional<int32_t> max_new_tokens;        // codec frames, 1..8192
  std::optional<uint64_t> seed;
  std::optional<float> temperature;             // 0..2; 0 is greedy
  std::optional<int32_t> top_k;                 // >= 0; 0 is off
  std::optional<float> top_p;                   // (0, 1]
  std::optional<float> repetition_penalty;      // (0, 2]
  std::optional<int32_t> sample_rate;           // 8000..48000 Hz; absent: the model's
  std::optional<int32_t> initial_codec_chunk_frames;  // 1..64: frames in the first audio chunk
  bool ignore_eos = false;                      // vLLM's name: never stop before max_new_tokens
  // Voice cloning (Base checkpoints): the reference clip's bytes, decoded from
  // base64 (not yet checked as audio), its transcript (ICL mode), and whether to
  // clone from the speaker embedding alone.
  std::optional<AudioPayload> ref_audio;
  std::optional<std::string> ref_text;
  bool x_vector_only_mode = false;
  std::vector<std::string> ignored_fields;      // unknown keys when not strict
};

using SpeechParse = std::variant<SpeechRequest, ApiError>;

SpeechParse parse_speech_request(std::string_view body, const ParseOptions& parse = {});

}  // namespace sluice::proto
