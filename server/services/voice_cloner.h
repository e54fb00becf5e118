#pragma once
// What voice cloning computes from a reference clip (a Base checkpoint's
// `ref_audio` or uploaded voice): the clip decoded and resampled
// (reference_audio.h), its x-vector from the speaker encoder and, for ICL, its
// codes from the codec encoder. Both encoders run on a backend of their own, so
// cloning never touches the talker's or the codec decoder's backend while the
// engine uses them; on the CPU each encoder pass takes a turn of the engines'
// compute turns (compute_turns.h), so their thread pools do not fight over the
// cores.
//
// One thread at a time calls clone() (the speech service runs it on a
// one-thread pool); the mutex only makes a second caller wait.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "engine/compute_turns.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_encoder.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/speaker/speaker_encoder.h"
#include "server/audio/reference_audio.h"

namespace sluice::server {

struct VoiceReference {
  std::vector<float> speaker_embedding;  // [enc_dim]
  std::vector<int32_t> ref_codes;        // [frames, num_codes]; empty unless asked for
};

class VoiceCloner {
 public:
  // `checkpoint`: the Base checkpoint folder (its model.safetensors holds the
  // speaker encoder, its speech_tokenizer/ the codec encoder). Throws
  // loader::LoadError naming the file and tensor, std::exception otherwise.
  VoiceCloner(const std::filesystem::path& checkpoint, const engine::tts::SpeakerEncoderConfig& speaker,
              const backends::BackendSpec& spec, int compute_threads, ReferenceAudioLimits limits,
              engine::ComputeTurns* turns);
  ~VoiceCloner();

  // `audio`: the bytes of a WAV, FLAC, MP3 or Ogg file. with_codes: also the ICL
  // reference codes. Throws ReferenceAudioError (the message for a 400) for bytes
  // that are not such audio, a clip too long (limits) or too short for the
  // encoders.
  VoiceReference clone(std::string_view audio, bool with_codes);

  const ReferenceAudioLimits& limits() const { return limits_; }
  int64_t num_code_groups() const { return codec_encoder_->config().num_codes; }

 private:
  std::mutex mutex_;
  ReferenceAudioLimits limits_;
  engine::ComputeTurns* turns_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<loader::TensorSet> speaker_tensors_;  // the weights view these bytes
  std::unique_ptr<loader::TensorSet> codec_tensors_;
  std::unique_ptr<engine::tts::SpeakerEncoder> speaker_encoder_;
  std::unique_ptr<engine::tts::CodecEncoder> codec_encoder_;
};

}  // namespace sluice::server
