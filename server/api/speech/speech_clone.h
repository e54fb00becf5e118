#pragma once
// Voice cloning for /v1/audio/speech and /v1/audio/voices, as vLLM-Omni and the
// official qwen-tts package take it: a Base checkpoint speaks in the voice of a
// reference clip, given inline (`ref_audio`) or uploaded before (`voice` names
// it). x-vector mode uses the clip's speaker embedding alone; ICL mode also its
// codec codes and transcript (`ref_text`). The other checkpoints refuse a
// reference.
//
// The clip's encoding runs on the model's cloning thread (speech_service.h), never
// on the connection's; the handlers only wait for it.
#include <optional>
#include <string>
#include <string_view>

#include "engine/tts/model/tts_prompt.h"
#include "proto/errors.h"
#include "proto/speech.h"
#include "server/http/http.h"
#include "server/services/speech_service.h"

namespace sluice::server {

// For a Base model: checks the request's reference (inline or an uploaded voice);
// an uploaded voice sets `prompt`'s speaker_embedding, and for ICL its ref_codes and
// ref_text, at once; an inline clip is left to apply_inline_reference (it costs the
// cloning thread a pass of the encoders) and `needs_clip` is set. For another model:
// refuses ref_audio and ref_text. The error names the field. Any thread.
std::optional<proto::ApiError> check_voice_reference(const proto::SpeechRequest& request, SpeechService& service,
                                                     engine::tts::PromptRequest& prompt, bool& needs_clip);

// The inline clip (`ref_audio`) encoded on the cloning thread into `prompt`.
asio::awaitable<std::optional<proto::ApiError>> apply_inline_reference(const proto::SpeechRequest& request,
                                                                       SpeechService& service,
                                                                       engine::tts::PromptRequest& prompt);

// Computes a clip's reference on `service`'s cloning thread: the 400 naming
// `param` for audio it cannot use, 429 when the cloning queue is full.
asio::awaitable<std::variant<VoiceReference, proto::ApiError>> compute_voice_reference(SpeechService& service,
                                                                                      std::string_view audio,
                                                                                      bool with_codes,
                                                                                      const std::string& param);

}  // namespace sluice::server
