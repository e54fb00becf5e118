#include "server/api/speech/routes_voices.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "proto/errors.h"
#include "proto/sse.h"
#include "server/api/speech/routes_speech.h"
#include "server/api/speech/speech_clone.h"
#include "server/http/multipart.h"
#include "server/services/speech_service.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

using ordered_json = nlohmann::ordered_json;

void set_ok(Response& response, const ordered_json& body) {
  response.result(http::status::ok);
  response.set(http::field::content_type, "application/json");
  response.body() = proto::dump_json(body);
}

// The value of `key` in the target's query string, decoded; nullopt when absent.
std::optional<std::string> query_value(std::string_view target, std::string_view key) {
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t equals = pair.find('=');
    if (pair.substr(0, equals) != key) continue;
    std::string decoded;
    if (equals == std::string_view::npos) return decoded;
    if (!percent_decode(pair.substr(equals + 1), decoded)) return std::nullopt;
    return decoded;
  }
  return std::nullopt;
}

ordered_json voice_object(const ClonedVoice& voice, const std::string& model) {
  return {{"name", voice.name},
          {"consent", voice.consent},
          {"created_at", voice.created_at},
          {"mime_type", voice.mime_type},
          {"file_size", voice.file_size},
          {"model", model},
          {"ref_text", voice.is_icl() ? ordered_json(voice.ref_text) : ordered_json()},
          {"x_vector_only_mode", !voice.is_icl()}};
}

// GET /v1/audio/voices[?model=ID]: every voice name the speech models accept (the
// "voices" list clients of Kokoro and vLLM-Omni read), per model its speakers,
// OpenAI aliases and default, and the voices uploaded to Base models.
void handle_list(Exchange& ex, const ModelServices& services) {
  const std::optional<std::string> model = query_value(ex.request.target(), "model");
  std::vector<SpeechService*> chosen;
  if (model) {
    SpeechService* service = find_speech_model(ex.response, services, *model);
    if (!service) return;
    chosen.push_back(service);
  } else if (!services.all_loaded()) {
    // The list would lack the models still loading: say so, as the model routes do.
    set_error(ex, proto::not_ready("Models are still loading"));
    return;
  } else {
    chosen = services.speech_services();
  }
  ordered_json names = ordered_json::array();
  ordered_json data = ordered_json::array();
  ordered_json uploaded = ordered_json::array();
  auto add_name = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (SpeechService* service : chosen) {
    const SpeechVoices& voices = service->voices();
    ordered_json uploaded_names = ordered_json::array();
    if (VoiceStore* store = service->voice_store()) {
      // A Base model answers to its uploaded voices only.
      for (const auto& voice : store->list()) {
        add_name(voice->name);
        uploaded_names.push_back(voice->name);
        uploaded.push_back(voice_object(*voice, service->id()));
      }
    } else {
      for (const std::string& name : voices.names()) add_name(name);
    }
    ordered_json aliases = ordered_json::object();
    if (!service->clones_voices())
      for (const auto& [alias, speaker] : voices.aliases())
        aliases[alias] = speaker.empty() ? ordered_json() : ordered_json(speaker);
    const engine::tts::TtsConfig& tts = service->tts_config();
    ordered_json entry = {{"model", service->id()},
                          {"tts_model_type", engine::tts::tts_kind_name(tts.kind)},
                          {"speakers", voices.speakers()},
                          {"aliases", aliases},
                          {"default", voices.has_speakers() ? ordered_json(voices.default_speaker()) : ordered_json()},
                          {"accepts_instructions", tts.accepts_instructions()}};
    if (service->clones_voices()) entry["uploaded_voices"] = uploaded_names;
    data.push_back(std::move(entry));
  }
  set_ok(ex.response, {{"voices", names}, {"uploaded_voices", uploaded}, {"data", data}});
}

// The Base model an upload or delete is for: the one named, else the only Base
// model served. `voice`: for a delete without a model, the model holding it.
SpeechService* cloning_model(Response& response, const ModelServices& services, const std::optional<std::string>& name,
                             const std::string& voice = {}) {
  if (name && !name->empty()) {
    SpeechService* service = find_speech_model(response, services, *name);
    if (service && !service->clones_voices()) {
      set_api_error(response, proto::invalid_request("The model '" + *name + "' is a " +
                                                     std::string(engine::tts::tts_kind_name(service->tts_config().kind)) +
                                                     " checkpoint: only Base checkpoints take uploaded voices.",
                                                 "model"));
      return nullptr;
    }
    return service;
  }
  if (!services.all_loaded()) {
    set_api_error(response, proto::not_ready("Models are still loading"));
    return nullptr;
  }
  std::vector<SpeechService*> base;
  for (SpeechService* service : services.speech_services())
    if (service->clones_voices() && (voice.empty() || service->voice_store()->find(voice))) base.push_back(service);
  if (base.size() == 1) return base.front();
  if (base.empty() && !voice.empty()) {
    set_api_error(response, {404, "The voice '" + voice + "' does not exist", "invalid_request_error", "name",
                         "voice_not_found"});
  } else {
    set_api_error(response,
              proto::invalid_request(base.empty() ? "No Base (voice-cloning) model is served: only Base checkpoints "
                                                    "take uploaded voices."
                                                  : "Several Base models are served: name one in 'model'.",
                                     "model"));
  }
  return nullptr;
}

// The form's fields, each at most once.
struct UploadForm {
  const MultipartPart* audio = nullptr;
  std::optional<std::string> name, consent, ref_text, model, x_vector_only_mode;
  bool x_vector_only = false;  // x_vector_only_mode read
};

std::variant<UploadForm, proto::ApiError> read_form(const std::vector<MultipartPart>& parts) {
  UploadForm form;
  for (const MultipartPart& part : parts) {
    std::optional<std::string>* field = part.name == "name"                 ? &form.name
                                         : part.name == "consent"            ? &form.consent
                                         : part.name == "ref_text"           ? &form.ref_text
                                         : part.name == "model"              ? &form.model
                                         : part.name == "x_vector_only_mode" ? &form.x_vector_only_mode
                                                                             : nullptr;
    const bool repeated = part.name == "audio_sample" ? form.audio != nullptr : field && field->has_value();
    if (repeated) return proto::invalid_request("The form field '" + part.name + "' is given twice.", part.name);
    if (part.name == "audio_sample") {
      form.audio = &part;
    } else if (field) {
      *field = std::string(part.data);
    }
  }
  if (!form.audio || form.audio->data.empty())
    return proto::invalid_request("The form needs the file field 'audio_sample': the voice's reference audio.",
                                  "audio_sample");
  if (!form.name) return proto::invalid_request("The form needs the field 'name'.", "name");
  if (auto error = VoiceStore::name_error(*form.name))
    return proto::invalid_request("'name' is not a valid voice name: " + *error + ".", "name");
  if (!form.consent || form.consent->empty())
    return proto::invalid_request("The form needs the field 'consent': the id of the speaker's consent.", "consent");
  if (form.x_vector_only_mode) {
    // As form libraries write a boolean: Python's True/False, JavaScript's true/false, 1/0.
    std::string flag = *form.x_vector_only_mode;
    std::transform(flag.begin(), flag.end(), flag.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (flag == "true" || flag == "1") {
      form.x_vector_only = true;
    } else if (flag != "false" && flag != "0") {
      return proto::invalid_request("'x_vector_only_mode' must be true or false.", "x_vector_only_mode");
    }
  }
  return form;
}

proto::ApiError voice_exists(const std::string& name) {
  return {409, "A voice named '" + name + "' exists already: delete it first or pick another name.",
          "invalid_request_error", "name", "voice_exists"};
}

proto::ApiError voices_full(const VoiceStore& store) {
  return {409,
          "This model keeps " + std::to_string(store.max_voices()) +
              " uploaded voices at most (max_voices): delete one first.",
          "invalid_request_error", "name", "max_voices_reached"};
}

// POST /v1/audio/voices.
asio::awaitable<void> handle_upload(Exchange& ex, const ModelServices& services) {
  const std::optional<std::string> boundary = multipart_boundary(ex.request[http::field::content_type]);
  if (!boundary) {
    set_error(ex, proto::invalid_request("POST /v1/audio/voices takes a multipart/form-data body with a "
                                                  "boundary (file 'audio_sample', fields 'name', 'consent')."));
    co_return;
  }
  auto parsed = parse_multipart(ex.request.body(), *boundary);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    set_error(ex, proto::invalid_request("The multipart body is malformed: " + *error + "."));
    co_return;
  }
  const auto& parts = std::get<std::vector<MultipartPart>>(parsed);
  auto form_or_error = read_form(parts);
  if (auto* error = std::get_if<proto::ApiError>(&form_or_error)) {
    set_error(ex, *error);
    co_return;
  }
  const UploadForm& form = std::get<UploadForm>(form_or_error);
  SpeechService* service = cloning_model(ex.response, services, form.model);
  if (!service) co_return;
  VoiceStore& store = *service->voice_store();
  // Cheap refusals before the clip is encoded; add() decides for good.
  if (store.find(*form.name)) {
    set_error(ex, voice_exists(*form.name));
    co_return;
  }
  if (store.list().size() >= store.max_voices()) {
    set_error(ex, voices_full(store));
    co_return;
  }
  const bool icl = !form.x_vector_only && form.ref_text && !form.ref_text->empty();
  auto computed = co_await compute_voice_reference(*service, form.audio->data, icl, "audio_sample");
  if (auto* error = std::get_if<proto::ApiError>(&computed)) {
    set_error(ex, *error);
    co_return;
  }
  VoiceReference& reference = std::get<VoiceReference>(computed);
  ClonedVoice voice;
  voice.name = *form.name;
  voice.consent = *form.consent;
  voice.created_at =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  voice.mime_type = form.audio->content_type.empty() ? "application/octet-stream" : form.audio->content_type;
  voice.file_size = static_cast<int64_t>(form.audio->data.size());
  voice.speaker_embedding = std::move(reference.speaker_embedding);
  if (icl) {
    voice.ref_codes = std::move(reference.ref_codes);
    voice.ref_text = *form.ref_text;
  }
  const ordered_json shown = voice_object(voice, service->id());
  // The voice file is written on the cloning thread: disk I/O stays off this one.
  auto added = co_await service->clone_pool()->run([&] { return store.add(std::move(voice)); });
  if (!added) {
    set_error(ex, {429, "The server is busy encoding voices; retry shortly.", "rate_limit_error", "",
                            "voice_cloning_busy"});
    co_return;
  }
  if (*added == VoiceStore::AddResult::duplicate) {
    set_error(ex, voice_exists(*form.name));
    co_return;
  }
  if (*added == VoiceStore::AddResult::full) {
    set_error(ex, voices_full(store));
    co_return;
  }
  spdlog::info("model {}: voice '{}' uploaded ({} mode, {} bytes)", service->id(), shown["name"].get<std::string>(),
               icl ? "ICL" : "x-vector", shown["file_size"].get<int64_t>());
  set_ok(ex.response, {{"success", true}, {"voice", shown}});
}

// DELETE /v1/audio/voices/{name}[?model=ID].
void handle_delete(Exchange& ex, const ModelServices& services) {
  const std::string name(ex.param("name"));
  SpeechService* service = cloning_model(ex.response, services, query_value(ex.request.target(), "model"), name);
  if (!service) return;
  if (!service->voice_store()->remove(name)) {
    set_error(ex, {404, "The voice '" + name + "' does not exist", "invalid_request_error", "name",
                            "voice_not_found"});
    return;
  }
  spdlog::info("model {}: voice '{}' deleted", service->id(), name);
  set_ok(ex.response, {{"success", true}, {"message", "Voice '" + name + "' deleted"}});
}

}  // namespace

void add_voice_routes(Router& router, const ModelServices& services) {
  router.add(http::verb::get, "/v1/audio/voices", [&services](Exchange& ex) -> asio::awaitable<void> {
    handle_list(ex, services);
    co_return;
  });
  router.add(http::verb::post, "/v1/audio/voices",
             [&services](Exchange& ex) { return handle_upload(ex, services); });
  router.add(http::verb::delete_, "/v1/audio/voices/{name}", [&services](Exchange& ex) -> asio::awaitable<void> {
    handle_delete(ex, services);
    co_return;
  });
}

}  // namespace sluice::server
