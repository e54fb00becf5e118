#include "server/services/voice_cloner.h"

#include <optional>
#include <stdexcept>
#include <utility>

#include "engine/tts/codec/codec_encoder_config.h"

namespace sluice::server {
namespace {

// A turn of the engines' compute turns when there are any; none otherwise.
class OptionalTurn {
 public:
  explicit OptionalTurn(engine::ComputeTurns* turns) {
    if (turns) turn_.emplace(*turns);
  }

 private:
  std::optional<engine::ComputeTurns::Turn> turn_;
};

}  // namespace

VoiceCloner::VoiceCloner(const std::filesystem::path& checkpoint, const engine::tts::SpeakerEncoderConfig& speaker,
                         const backends::BackendSpec& spec, int compute_threads, ReferenceAudioLimits limits,
                         engine::ComputeTurns* turns)
    : limits_(limits), turns_(turns) {
  namespace tts = engine::tts;
  backend_ = backends::make_backend(spec, compute_threads);
  if (backend_->device() != backends::DeviceKind::cpu) turns_ = nullptr;  // turns share CPU cores only
  speaker_tensors_ = loader::open_tensor_set(checkpoint);
  speaker_encoder_ = std::make_unique<tts::SpeakerEncoder>(*speaker_tensors_, speaker, *backend_);
  const std::filesystem::path codec_dir = checkpoint / "speech_tokenizer";
  codec_tensors_ = loader::open_tensor_set(codec_dir);
  codec_encoder_ = std::make_unique<tts::CodecEncoder>(
      tts::CodecEncoder::load(*codec_tensors_, tts::read_codec_encoder_config(codec_dir / "config.json"), *backend_));
}

VoiceCloner::~VoiceCloner() = default;

VoiceReference VoiceCloner::clone(std::string_view audio, bool with_codes) {
  std::lock_guard lock(mutex_);
  const int rate = speaker_encoder_->sample_rate();
  const std::vector<float> samples = decode_reference_audio(audio, rate, limits_);
  if (auto error = speaker_encoder_->check_length(static_cast<int64_t>(samples.size())))
    throw ReferenceAudioError("is too short: " + *error);
  VoiceReference out;
  {
    OptionalTurn turn(turns_);
    out.speaker_embedding = speaker_encoder_->embed(samples);
  }
  if (!with_codes) return out;
  const auto codec_rate = static_cast<int>(codec_encoder_->config().sample_rate);
  const std::vector<float> codec_samples = codec_rate == rate ? samples : resample_mono(samples, rate, codec_rate);
  try {
    OptionalTurn turn(turns_);
    out.ref_codes = codec_encoder_->encode(codec_samples);
  } catch (const std::invalid_argument& e) {
    throw ReferenceAudioError(std::string("cannot be encoded: ") + e.what());
  }
  return out;
}

}  // namespace sluice::server
