#include "server/api/speech/speech_clone.h"

#include <utility>

namespace sluice::server {
namespace {

proto::ApiError cloning_busy(const PrepPool& pool) {
  return {429,
          "The server is busy: " + std::to_string(pool.max_jobs()) +
              " voice-cloning references are already being encoded or waiting to be; retry shortly.",
          "rate_limit_error", "", "voice_cloning_busy"};
}

// The reference of an uploaded voice, as the request asks for it.
std::optional<proto::ApiError> use_uploaded(const proto::SpeechRequest& request, const ClonedVoice& voice,
                                            engine::tts::PromptRequest& prompt) {
  if (request.ref_text)
    return proto::invalid_request("The voice '" + voice.name +
                                      "' is an uploaded voice: its transcript was given at upload, so the request "
                                      "takes no 'ref_text'.",
                                  "ref_text");
  prompt.speaker_embedding = voice.speaker_embedding;
  if (voice.is_icl() && !request.x_vector_only_mode) {
    prompt.ref_codes = voice.ref_codes;
    prompt.ref_text = voice.ref_text;
  }
  return std::nullopt;
}

}  // namespace

asio::awaitable<std::variant<VoiceReference, proto::ApiError>> compute_voice_reference(SpeechService& service,
                                                                                      std::string_view audio,
                                                                                      bool with_codes,
                                                                                      const std::string& param) {
  VoiceCloner& cloner = *service.cloner();
  std::optional<VoiceReference> reference;
  try {
    reference = co_await service.clone_pool()->run([&] { return cloner.clone(audio, with_codes); });
  } catch (const ReferenceAudioError& e) {
    co_return proto::invalid_request("'" + param + "' " + e.what() + ".", param);
  }
  if (!reference) co_return cloning_busy(*service.clone_pool());
  co_return std::move(*reference);
}

std::optional<proto::ApiError> check_voice_reference(const proto::SpeechRequest& request, SpeechService& service,
                                                     engine::tts::PromptRequest& prompt, bool& needs_clip) {
  needs_clip = false;
  if (!service.clones_voices()) {
    const std::string kind(engine::tts::tts_kind_name(service.tts_config().kind));
    if (request.ref_audio)
      return proto::invalid_request("The model '" + service.id() + "' is a " + kind +
                                        " checkpoint: only Base checkpoints clone a voice from 'ref_audio'.",
                                    "ref_audio");
    if (request.ref_text)
      return proto::invalid_request("The model '" + service.id() + "' is a " + kind +
                                        " checkpoint: 'ref_text' is for voice cloning (Base checkpoints).",
                                    "ref_text");
    return std::nullopt;
  }
  if (request.ref_audio) {
    // The official rule: ICL needs the reference's transcript; without one, say
    // x-vector mode explicitly.
    if (!request.x_vector_only_mode && (!request.ref_text || request.ref_text->empty()))
      return proto::invalid_request("Cloning from 'ref_audio' in ICL mode needs 'ref_text', the transcript of "
                                    "the reference; or set 'x_vector_only_mode' to clone from the speaker "
                                    "embedding alone.",
                                    "ref_text");
    needs_clip = true;
    return std::nullopt;
  }
  if (request.voice.empty())
    return proto::invalid_request("The model '" + service.id() +
                                      "' is a Base checkpoint: it clones a voice. Give 'ref_audio' (and "
                                      "'ref_text'), or name a voice uploaded at POST /v1/audio/voices.",
                                  "ref_audio");
  const std::shared_ptr<const ClonedVoice> voice = service.voice_store()->find(request.voice);
  if (!voice)
    return proto::invalid_request("The voice '" + request.voice + "' is not a voice uploaded to model '" +
                                      service.id() +
                                      "' (a Base checkpoint clones: give 'ref_audio', or upload the voice at "
                                      "POST /v1/audio/voices; GET /v1/audio/voices lists them).",
                                  "voice");
  return use_uploaded(request, *voice, prompt);
}

asio::awaitable<std::optional<proto::ApiError>> apply_inline_reference(const proto::SpeechRequest& request,
                                                                       SpeechService& service,
                                                                       engine::tts::PromptRequest& prompt) {
  const bool icl = !request.x_vector_only_mode;
  auto computed = co_await compute_voice_reference(service, request.ref_audio->bytes, icl, "ref_audio");
  if (auto* error = std::get_if<proto::ApiError>(&computed)) co_return std::move(*error);
  VoiceReference& reference = std::get<VoiceReference>(computed);
  prompt.speaker_embedding = std::move(reference.speaker_embedding);
  if (icl) {
    prompt.ref_codes = std::move(reference.ref_codes);
    prompt.ref_text = *request.ref_text;
  }
  co_return std::nullopt;
}

}  // namespace sluice::server
