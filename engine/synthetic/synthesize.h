#pragma once
// One utterance from request to PCM as a stream: every generator step's frame goes
// through the codec stream at once, so audio comes out from the first step on (the
// way the engine streams speech). Used by `sluice speak` and `sluice bench --tts`.
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/model/tts_generator.h"

namespace sluice::engine::tts {

inline constexpr int64_t kDefaultFramesPerChunk = 4;  // 320 ms of audio

struct SynthesisStats {
  int64_t frames = 0;
  std::string finish_reason;  // "stop" (codec EOS) | "length" (max_frames)
  bool instructions_dropped = false;
  double talker_ms = 0.0;      // whole talker time, the prompt's prefill included
  double predictor_ms = 0.0;
  double decoder_ms = 0.0;
  double first_audio_ms = 0.0;  // from the call to the first samples handed out
  // Where first_audio_ms went: the talker (the prompt's prefill and frame 0's step),
  // the code predictor (frame 0), and the codec's first decode (that frame alone).
  double first_talker_ms = 0.0;
  double first_predictor_ms = 0.0;
  double first_decoder_ms = 0.0;
  double wall_ms = 0.0;
  double audio_seconds = 0.0;
  // Audio seconds per wall second (> 1: faster than real time).
  double real_time_factor() const { return wall_ms > 0.0 ? audio_seconds * 1000.0 / wall_ms : 0.0; }
};

// A request the generator refuses (bad voice, language, text...).
struct SynthesisError : std::invalid_argument {
  SynthesisError(const std::string& message, std::string param)
      : std::invalid_argument(message), param(std::move(param)) {}
  std::string param;
};

// Runs `request` alone on `generator` (which must have no other sequence running)
// and hands the samples to on_audio as they are made: the first frame alone (the
// time to first audio), then every frames_per_chunk frames. One codec call over
// several frames reads the decoder's weights once for all of them (a one-frame
// call is bound by reading ~230 MB of F32 conv weights), and gives the same samples
// as frame by frame (exact streaming). Throws SynthesisError when the request is
// refused.
SynthesisStats synthesize(TtsGenerator& generator, CodecDecoder& codec, const TtsRequest& request,
                          int64_t frames_per_chunk, const std::function<void(std::span<const float>)>& on_audio);
// The same with a prompt built elsewhere (synthetic_prompt, for benchmarks).
SynthesisStats synthesize_prompt(TtsGenerator& generator, CodecDecoder& codec, TtsPrompt prompt,
                                 const TtsRequest& request, int64_t frames_per_chunk,
                                 const std::function<void(std::span<const float>)>& on_audio);

}  // namespace sluice::engine::tts
