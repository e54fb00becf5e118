// POST /v1/audio/speech: one prepare job on the prepare pool (parse the body, base64
// ref_audio and all; resolve the model and voice; build the prompt: the engine gets
// token rows, never text), the cloning thread for an inline reference clip, then
// submit to the model's SpeechEngine and turn its AudioDelta events into encoded
// audio (SpeechAudio: speed, sample rate, format) on the audio-encoding pool, sent
// whole, streamed, or as SSE events. The I/O thread only moves bytes.
//
// A whole response is held in memory until its end, so it is bounded by
// max_speech_body_bytes (speech_errors.h); streams are not.
//
// Streamed responses send their header only with the first audio bytes, so a request
// that fails before making any audio (a deadline passed in the queue, an engine
// error) still gets a plain error status. After the header: SSE sends an error event;
// an audio stream ends early, cleanly for a deadline (the audio made so far) and
// without its last chunk for a failure, so the client sees a broken transfer.
#include "server/api/speech/routes_speech.h"

#include <boost/beast/core/detail/base64.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "proto/errors.h"
#include "proto/responses.h"
#include "proto/speech.h"
#include "proto/sse.h"
#include "server/http/chunked_writer.h"
#include "server/audio/speech_audio.h"
#include "server/api/speech/speech_clone.h"
#include "server/api/speech/speech_errors.h"
#include "server/services/speech_service.h"
#include "server/api/stream_pump.h"
#include "server/api/submit_error.h"
#include "server/api/request_prep.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

// One speech response in progress. Its SpeechAudio is used by one thread at a time:
// the coroutine waits for each encoding job it hands out.
struct SpeechJob {
  SpeechService* service = nullptr;
  proto::SpeechRequest request;
  std::shared_ptr<engine::RequestStream> stream;
  std::unique_ptr<SpeechAudio> audio;
  std::optional<engine::ChoiceFinish> finish;
  int64_t num_frames = 0;
};

std::string base64(std::string_view bytes) {
  namespace b64 = boost::beast::detail::base64;
  std::string out(b64::encoded_size(bytes.size()), '\0');
  out.resize(b64::encode(out.data(), bytes.data(), bytes.size()));
  return out;
}

// Pops what the engine has sent: audio through the pipeline (the bytes it releases
// are returned), the finish kept, with the pipeline's rest appended when the
// speech is complete.
std::string drain(SpeechJob& job) {
  std::string bytes;
  while (auto event = job.stream->try_pop()) {
    if (auto* audio = std::get_if<engine::AudioDelta>(&*event)) {
      bytes += job.audio->push(audio->pcm);
      job.num_frames += audio->num_frames;
    } else if (auto* finish = std::get_if<engine::ChoiceFinish>(&*event)) {
      job.finish = std::move(*finish);
    }
  }
  return bytes;
}

bool is_complete(const engine::ChoiceFinish& finish) {
  return finish.reason == engine::FinishReason::stop || finish.reason == engine::FinishReason::length;
}

// Why a request that did not complete failed, as the client is told it.
proto::ApiError failure_of(const SpeechJob& job, const std::string& request_id) {
  engine::tts::SpeechEngine& engine = job.service->engine();
  return speech_failure(*job.finish, job.num_frames, {engine.death_reason(), engine.is_stopping()}, request_id);
}

// The client went away: there is no one to answer. Counted and logged as 499
// (nginx's "client closed request"), nothing is written.
void mark_client_gone(Exchange& ex) {
  ex.response.result(499);
  ex.response_sent = true;
  ex.keep_alive_after = false;
}

void set_usage_headers(Response& response, const engine::ChoiceFinish& finish) {
  response.set("x-sluice-input-tokens", std::to_string(finish.num_prompt_tokens));
  response.set("x-sluice-output-tokens", std::to_string(finish.num_completion_tokens));
}

// `encode()` (FFmpeg, sonic, soxr: milliseconds a chunk) on the audio-encoding pool;
// inline when the pool is full, so that no audio is ever refused.
template <class Encode>
asio::awaitable<std::string> off_io(PrepPool& encoder, Encode encode) {
  std::optional<std::string> bytes = co_await encoder.run(encode);
  co_return bytes ? std::move(*bytes) : encode();
}

// Waits for events until there are audio bytes, the speech finishes or the client
// leaves; returns the audio bytes made meanwhile.
asio::awaitable<std::string> next_bytes(SpeechJob& job, StreamPump& pump, PrepPool& encoder) {
  std::string bytes;
  const StreamPump::Step encode_waiting = [&]() -> asio::awaitable<bool> {
    bytes = co_await off_io(encoder, [&job] { return drain(job); });
    co_return !bytes.empty() || job.finish.has_value();
  };
  co_await pump.run(encode_waiting);
  co_return bytes;
}

asio::awaitable<std::string> finish_audio(SpeechJob& job, PrepPool& encoder) {
  co_return co_await off_io(encoder, [&job] { return job.audio->finish(); });
}

asio::awaitable<void> answer_whole(Exchange& ex, SpeechJob& job, StreamPump& pump, PrepPool& encoder,
                                   uint64_t max_bytes) {
  std::string body;
  bool overflow = false;
  const StreamPump::Step encode_waiting = [&]() -> asio::awaitable<bool> {
    body += co_await off_io(encoder, [&job] { return drain(job); });
    // Held in memory until the end: past the limit, the rest must be streamed.
    overflow = body.size() > max_bytes;
    co_return overflow || job.finish.has_value();
  };
  const bool complete = co_await pump.run(encode_waiting);
  if (overflow) {
    set_error(ex, whole_speech_overflow(max_bytes));
    co_return;  // the pump cancels the request
  }
  if (!complete) {
    mark_client_gone(ex);
    co_return;
  }
  // A whole response is all or nothing: a deadline that cut the speech short is an
  // error, not a shorter file that would pass for the answer.
  if (!is_complete(*job.finish)) {
    set_error(ex, failure_of(job, ex.request_id));
    if (job.finish->reason == engine::FinishReason::timeout) ex.response.set("x-should-retry", "false");
    co_return;
  }
  body += co_await finish_audio(job, encoder);
  if (body.size() > max_bytes) {
    set_error(ex, whole_speech_overflow(max_bytes));
    co_return;
  }
  ex.response.result(http::status::ok);
  ex.response.set(http::field::content_type, job.audio->content_type());
  set_usage_headers(ex.response, *job.finish);
  ex.response.body() = std::move(body);
}

std::string speech_delta_event(std::string_view bytes) {
  if (bytes.empty()) return {};
  nlohmann::ordered_json event = {{"type", "speech.audio.delta"}, {"audio", base64(bytes)}};
  return proto::sse_event(event);
}

std::string speech_done_event(const engine::ChoiceFinish& finish) {
  const int64_t input = finish.num_prompt_tokens, output = finish.num_completion_tokens;
  nlohmann::ordered_json event = {
      {"type", "speech.audio.done"},
      {"usage", {{"input_tokens", input}, {"output_tokens", output}, {"total_tokens", input + output}}}};
  return proto::sse_event(event);
}

std::string speech_error_event(const proto::ApiError& error) {
  nlohmann::ordered_json event = {{"type", "error"},
                                  {"error", nlohmann::ordered_json::parse(proto::error_body(error))["error"]}};
  return proto::sse_event(event);
}

// stream_format "audio" or "sse".
asio::awaitable<void> answer_stream(Exchange& ex, SpeechJob& job, StreamPump& pump, PrepPool& encoder) {
  const bool sse = job.request.stream_format == proto::SpeechStreamFormat::sse;
  std::string bytes = co_await next_bytes(job, pump, encoder);
  if (pump.is_client_gone()) {
    mark_client_gone(ex);
    co_return;
  }
  if (job.finish && !is_complete(*job.finish) && job.num_frames == 0) {
    // Nothing made, nothing sent yet: a plain error status.
    set_error(ex, failure_of(job, ex.request_id));
    if (job.finish->reason == engine::FinishReason::timeout) ex.response.set("x-should-retry", "false");
    co_return;
  }
  ChunkedWriter writer(ex, sse ? std::string("text/event-stream") : std::string(job.audio->content_type()));
  bool ok = co_await writer.begin();
  while (ok) {
    std::string out = sse ? speech_delta_event(bytes) : bytes;
    if (job.finish) {
      if (is_complete(*job.finish) || job.finish->reason == engine::FinishReason::timeout) {
        // A deadline after audio went out: what was made is sent, well-formed.
        std::string rest = co_await finish_audio(job, encoder);
        out += sse ? speech_delta_event(rest) : rest;
      }
      if (is_complete(*job.finish)) {
        if (sse) out += speech_done_event(*job.finish);
      } else if (sse) {
        out += speech_error_event(failure_of(job, ex.request_id));
      } else {
        spdlog::warn("request {}: speech stream ended early ({}: {} frames sent)", ex.request_id,
                     job.finish->finish_reason(), job.num_frames);
      }
      ok = co_await writer.send(out);
      // An audio stream that failed keeps its last chunk back: a truncated transfer
      // is the only way left to tell the client.
      const bool broken = !sse && !is_complete(*job.finish) && job.finish->reason != engine::FinishReason::timeout;
      if (ok && !broken) co_await writer.end();
      if (broken) ex.keep_alive_after = false;
      co_return;
    }
    ok = co_await writer.send(out);
    if (!ok) break;
    bytes = co_await next_bytes(job, pump, encoder);
    if (pump.is_client_gone()) break;
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

engine::tts::SpeechRequest engine_request(const proto::SpeechRequest& request, std::string speaker,
                                          const config::Config& config) {
  engine::tts::SpeechRequest out;
  out.request_id = "speech-" + proto::new_completion_id().substr(5);  // "cmpl-" + hex
  engine::tts::TtsRequest& tts = out.tts;
  tts.prompt.text = request.input;
  tts.prompt.voice = std::move(speaker);
  tts.prompt.language = request.language.value_or("auto");
  tts.prompt.instructions = request.instructions;
  tts.seed = request.seed;
  tts.temperature = request.temperature;
  tts.top_k = request.top_k;
  tts.top_p = request.top_p;
  tts.repetition_penalty = request.repetition_penalty;
  tts.max_frames = request.max_new_tokens;
  tts.ignore_eos = request.ignore_eos;
  if (request.initial_codec_chunk_frames) out.first_chunk_frames = *request.initial_codec_chunk_frames;
  out.deadline = engine::Clock::now() + std::chrono::duration_cast<engine::Clock::duration>(
                                            std::chrono::duration<double>(config.request_timeout_s));
  return out;
}

// What a speech request's prepare job makes. `needs_clip`: an inline reference clip
// still to encode on the cloning thread, and the prompt to build after it.
struct PreparedSpeech {
  SpeechJob job;
  engine::tts::SpeechRequest engine_request;
  SpeechAudioOptions audio_options;
  bool streaming = false;
  bool instructions_ignored = false;
  bool needs_clip = false;
};

// The prompt's rows (text tokens and the voice's reference) for the engine.
std::optional<proto::ApiError> build_speech_prompt(SpeechService& service, engine::tts::SpeechRequest& request) {
  const auto& tokenizer = service.tokenizer();
  if (!tokenizer) return proto::invalid_request("The model '" + service.id() + "' has no tokenizer.", "model");
  auto built = engine::tts::build_prompt(service.tts_config(), *tokenizer, request.tts.prompt);
  if (auto* error = std::get_if<engine::tts::PromptError>(&built)) {
    return proto::invalid_request(error->message, error->param);
  }
  request.prompt = std::get<engine::tts::TtsPrompt>(std::move(built));
  return std::nullopt;
}

OrError<PreparedSpeech> prepare_speech(std::string_view body, const ModelServices& services,
                                       const config::Config& config, bool can_stream) {
  auto parsed =
      proto::parse_speech_request(body, {.strict_fields = config.strict_request_fields, .allow_priority = false});
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  PreparedSpeech prepared;
  SpeechJob& job = prepared.job;
  job.request = std::move(std::get<proto::SpeechRequest>(parsed));
  const proto::SpeechRequest& request = job.request;
  auto service = speech_model(services, request.model);
  if (auto* error = std::get_if<proto::ApiError>(&service)) return *error;
  job.service = std::get<SpeechService*>(service);

  const SpeechVoices& voices = job.service->voices();
  // A Base model's voice is the reference (check_voice_reference below), not a speaker.
  std::optional<std::string> speaker = job.service->clones_voices() ? std::string() : voices.resolve(request.voice);
  if (!speaker) {
    return proto::invalid_request("The voice '" + request.voice + "' is not available for model '" + request.model +
                                      "'. Voices: " + join(voices.names()) + " (see GET /v1/audio/voices).",
                                  "voice");
  }
  prepared.streaming = request.stream_format != proto::SpeechStreamFormat::none && can_stream;
  prepared.audio_options = {.format = request.response_format,
                            .input_rate = job.service->sample_rate(),
                            .output_rate = request.sample_rate.value_or(0),
                            .speed = request.speed,
                            .delivery = prepared.streaming ? AudioDelivery::stream : AudioDelivery::whole};
  if (auto error = SpeechAudio::options_error(prepared.audio_options)) return *error;
  if (!prepared.streaming) {
    if (auto error = whole_speech_too_long(request, job.service->sample_rate(), job.service->samples_per_frame(),
                                           config.max_speech_body_bytes))
      return *error;
  }
  // 0.6B checkpoints drop instructions (as the official package does): say so.
  prepared.instructions_ignored =
      !request.instructions.empty() && !job.service->tts_config().accepts_instructions();
  prepared.engine_request = engine_request(request, *speaker, config);
  engine::tts::PromptRequest& prompt = prepared.engine_request.tts.prompt;
  if (auto error = check_voice_reference(request, *job.service, prompt, prepared.needs_clip)) return *error;
  if (prepared.needs_clip) return prepared;  // the prompt waits for the clip's reference
  if (auto error = build_speech_prompt(*job.service, prepared.engine_request)) return *error;
  return prepared;
}

asio::awaitable<void> handle_speech(Exchange& ex, const ModelServices& services, const config::Config& config,
                                    PrepPool& prep, PrepPool& encoder) {
  const bool can_stream = ex.connection != nullptr;
  auto prepared_or_error = co_await run_prepare_job(
      prep, [&] { return prepare_speech(ex.request.body(), services, config, can_stream); });
  if (auto* error = std::get_if<proto::ApiError>(&prepared_or_error)) co_return set_error(ex, *error);
  PreparedSpeech& prepared = std::get<PreparedSpeech>(prepared_or_error);
  SpeechJob& job = prepared.job;
  for (const std::string& field : job.request.ignored_fields)
    spdlog::debug("request {}: field '{}' accepted and ignored", ex.request_id, field);
  if (prepared.instructions_ignored) {
    ex.response.set("x-sluice-instructions-ignored", "true");
    spdlog::debug("request {}: instructions ignored by this checkpoint size", ex.request_id);
  }
  if (prepared.needs_clip) {
    // Last: a clip costs the most to encode, after every cheap refusal.
    engine::tts::SpeechRequest& request = prepared.engine_request;
    if (auto error = co_await apply_inline_reference(job.request, *job.service, request.tts.prompt))
      co_return set_error(ex, *error);
    auto built = co_await run_prepare_job(prep, [&]() -> OrError<bool> {
      if (auto error = build_speech_prompt(*job.service, request)) return *error;
      return true;
    });
    if (auto* error = std::get_if<proto::ApiError>(&built)) co_return set_error(ex, *error);
  }
  job.audio = std::make_unique<SpeechAudio>(prepared.audio_options);
  engine::SubmitResult submitted = job.service->engine().submit(std::move(prepared.engine_request));
  if (!submitted.ok()) co_return set_error(ex, submit_error(submitted));
  job.stream = std::move(submitted.stream);

  // The speech engine has no queue to take a request out of: the stream's cancel
  // flag is all it reads (at its next step).
  const std::vector<std::shared_ptr<engine::RequestStream>> streams{job.stream};
  const StreamPump::Abort no_abort;
  const StreamPump::Answer answer = [&](StreamPump& pump) {
    return prepared.streaming ? answer_stream(ex, job, pump, encoder)
                              : answer_whole(ex, job, pump, encoder, config.max_speech_body_bytes);
  };
  co_await pump_streams(ex, streams, no_abort, answer);
}

}  // namespace

OrError<SpeechService*> speech_model(const ModelServices& services, const std::string& name) {
  if (SpeechService* service = services.find_speech(name)) return service;
  if (services.find(name)) {
    return proto::invalid_request("The model '" + name + "' is a text model: /v1/audio/speech needs a speech model.",
                                  "model");
  }
  return services.all_loaded() ? proto::model_not_found(name) : proto::not_ready("Models are still loading");
}

SpeechService* find_speech_model(Response& response, const ModelServices& services, const std::string& name) {
  auto found = speech_model(services, name);
  if (auto* error = std::get_if<proto::ApiError>(&found)) {
    set_api_error(response, *error);
    return nullptr;
  }
  return std::get<SpeechService*>(found);
}

void add_speech_routes(Router& router, const ModelServices& services, const config::Config& config, PrepPool& prep,
                       PrepPool& encoder) {
  router.add(http::verb::post, "/v1/audio/speech", [&services, &config, &prep, &encoder](Exchange& ex) {
    return handle_speech(ex, services, config, prep, encoder);
  });
}

}  // namespace sluice::server
