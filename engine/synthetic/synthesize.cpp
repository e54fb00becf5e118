#include "engine/synthetic/synthesize.h"

#include <chrono>
#include <utility>
#include <vector>

namespace sluice::engine::tts {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Runs the started sequence to its end; `start` is when the request arrived.
SynthesisStats run(TtsGenerator& generator, CodecDecoder& codec, const TtsStarted& started,
                   std::span<const int32_t> ref_codes, const TtsStageTimes& before, Clock::time_point start,
                   int64_t frames_per_chunk, const std::function<void(std::span<const float>)>& on_audio) {
  if (!started.ok()) throw SynthesisError(started.error, started.param);

  SynthesisStats stats;
  stats.instructions_dropped = started.instructions_dropped;
  CodecStream stream = codec.start();
  std::vector<int32_t> pending;  // codes of frames not yet decoded
  std::vector<float> pcm;
  // ICL: the official package decodes the reference codes and the generated ones
  // together and drops the reference's samples (Qwen3TTSModel.generate_voice_clone in
  // qwen_tts/inference/qwen3_tts_model.py). The stream decodes exactly as one pass, so
  // decoding the reference first and dropping its output is the same audio. (The
  // official cut, int(ref / total * samples), lands one sample short of the frame
  // boundary for some totals; that stray sample is not made here.)
  if (!ref_codes.empty()) {
    const Clock::time_point decode_start = Clock::now();
    stream.decode(ref_codes, pcm);
    stats.decoder_ms += ms_between(decode_start, Clock::now());
  }
  const auto decode_pending = [&] {
    const Clock::time_point decode_start = Clock::now();
    pcm.clear();
    stream.decode(pending, pcm);
    codec.backend().synchronize();
    const Clock::time_point decoded = Clock::now();
    stats.decoder_ms += ms_between(decode_start, decoded);
    if (stats.frames == 0) {
      stats.first_audio_ms = ms_between(start, decoded);
      stats.first_talker_ms = generator.times().talker_ms - before.talker_ms;
      stats.first_predictor_ms = generator.times().predictor_ms - before.predictor_ms;
      stats.first_decoder_ms = ms_between(decode_start, decoded);
    }
    stats.frames += static_cast<int64_t>(pending.size()) / codec.config().num_quantizers;
    pending.clear();
    on_audio(pcm);
  };
  bool finished = false;
  while (!finished) {
    for (const TtsFrameEvent& event : generator.step()) {
      if (event.id != started.id) continue;
      pending.insert(pending.end(), event.codes.begin(), event.codes.end());
      if (event.finished) {
        finished = true;
        stats.finish_reason = std::string(event.finish_reason);
      }
      // The first frame goes out alone (time to first audio); later ones in chunks.
      const auto frames_pending = static_cast<int64_t>(pending.size()) / codec.config().num_quantizers;
      if (frames_pending > 0 && (stats.frames == 0 || frames_pending >= frames_per_chunk || finished))
        decode_pending();
    }
  }
  stats.wall_ms = ms_between(start, Clock::now());
  stats.talker_ms = generator.times().talker_ms - before.talker_ms;
  stats.predictor_ms = generator.times().predictor_ms - before.predictor_ms;
  stats.audio_seconds = static_cast<double>(stats.frames * codec.config().samples_per_frame) /
                        static_cast<double>(codec.config().output_sample_rate);
  return stats;
}

}  // namespace

SynthesisStats synthesize(TtsGenerator& generator, CodecDecoder& codec, const TtsRequest& request,
                          int64_t frames_per_chunk, const std::function<void(std::span<const float>)>& on_audio) {
  const Clock::time_point start = Clock::now();
  const TtsStageTimes before = generator.times();
  return run(generator, codec, generator.start(request), request.prompt.ref_codes, before, start, frames_per_chunk,
             on_audio);
}

SynthesisStats synthesize_prompt(TtsGenerator& generator, CodecDecoder& codec, TtsPrompt prompt,
                                 const TtsRequest& request, int64_t frames_per_chunk,
                                 const std::function<void(std::span<const float>)>& on_audio) {
  const Clock::time_point start = Clock::now();
  const TtsStageTimes before = generator.times();
  const std::vector<int32_t> ref_codes = prompt.ref_codes;
  return run(generator, codec, generator.start(std::move(prompt), request), ref_codes, before, start,
             frames_per_chunk, on_audio);
}

}  // namespace sluice::engine::tts
