#include "server/services/model_services.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "server/services/model_service.h"
#include "server/services/speech_service.h"

namespace sluice::server {

ModelServices::ModelServices() = default;
ModelServices::~ModelServices() = default;

void ModelServices::add(LoadedModel model, std::unique_ptr<ModelService> service) {
  add(Served{std::move(model), std::move(service), nullptr});
}

void ModelServices::add(LoadedModel model, std::unique_ptr<SpeechService> service) {
  add(Served{std::move(model), nullptr, std::move(service)});
}

void ModelServices::add(Served served) {
  std::lock_guard lock(mutex_);
  if (const Served* existing = find_served(served.model.info.id))
    throw std::invalid_argument("model id '" + served.model.info.id + "' is already registered (" +
                                existing->model.info.path + ")");
  served_.push_back(std::move(served));
}

const ModelServices::Served* ModelServices::find_served(std::string_view id) const {
  auto it = std::find_if(served_.begin(), served_.end(), [&](const Served& s) { return s.model.info.id == id; });
  return it == served_.end() ? nullptr : &*it;
}

std::vector<engine::ModelInfo> ModelServices::list() const {
  std::lock_guard lock(mutex_);
  std::vector<engine::ModelInfo> out;
  for (const auto& served : served_) out.push_back(served.model.info);
  return out;
}

std::optional<engine::ModelInfo> ModelServices::info(std::string_view id) const {
  std::lock_guard lock(mutex_);
  const Served* served = find_served(id);
  return served ? std::optional(served->model.info) : std::nullopt;
}

ModelService* ModelServices::find(std::string_view id) const {
  std::lock_guard lock(mutex_);
  const Served* served = find_served(id);
  return served ? served->text.get() : nullptr;
}

SpeechService* ModelServices::find_speech(std::string_view id) const {
  std::lock_guard lock(mutex_);
  const Served* served = find_served(id);
  return served ? served->speech.get() : nullptr;
}

std::vector<SpeechService*> ModelServices::speech_services() const {
  std::lock_guard lock(mutex_);
  std::vector<SpeechService*> out;
  for (const auto& served : served_)
    if (served.speech) out.push_back(served.speech.get());
  return out;
}

std::vector<ModelService*> ModelServices::text_services() const {
  std::lock_guard lock(mutex_);
  std::vector<ModelService*> out;
  for (const auto& served : served_)
    if (served.text) out.push_back(served.text.get());
  return out;
}

std::vector<ReplicaModel> ModelServices::replica_models() const {
  std::lock_guard lock(mutex_);
  std::vector<ReplicaModel> out;
  for (const auto& served : served_) {
    ReplicaModel model{served.model.info, {}, 0, 0};
    if (served.text) {
      const engine::EngineConfig& config = served.text->engine().config();
      model.stats = served.text->engine().stats();
      model.max_num_seqs = config.max_num_seqs;
      model.max_num_batched_tokens = config.max_num_batched_tokens;
    } else if (served.speech) {
      model.stats = served.speech->engine().stats();
    }
    out.push_back(std::move(model));
  }
  return out;
}

ModelService* ModelServices::only() const {
  std::lock_guard lock(mutex_);
  ModelService* only = nullptr;
  for (const auto& served : served_) {
    if (!served.text) continue;
    if (only) return nullptr;
    only = served.text.get();
  }
  return only;
}

size_t ModelServices::size() const {
  std::lock_guard lock(mutex_);
  return served_.size();
}

void ModelServices::refresh_metrics() const {
  std::lock_guard lock(mutex_);
  for (const auto& served : served_) {
    if (served.text) served.text->refresh_metrics();
    if (served.speech) served.speech->refresh_metrics();
  }
}

std::vector<ModelHealth> ModelServices::health(double step_timeout_s) const {
  const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(step_timeout_s));
  std::lock_guard lock(mutex_);
  std::vector<ModelHealth> out;
  for (const auto& served : served_) {
    const std::string& id = served.model.info.id;
    if (served.text) out.push_back({id, served.text->engine().health(timeout)});
    if (served.speech) out.push_back({id, served.speech->health(timeout)});
  }
  return out;
}

void ModelServices::stop_all() {
  std::lock_guard lock(mutex_);
  for (const auto& served : served_) {
    if (served.text) served.text->stop();
    if (served.speech) served.speech->stop();
  }
}

}  // namespace sluice::server
