#pragma once
// The models this daemon serves, in load order: each one's description (what
// /v1/models and /ready list) beside its text service (ModelService) or speech
// service (SpeechService). The one list of served models: the loader thread adds,
// HTTP threads look up. Services are never removed before stop_all(), so the
// pointers handed out stay valid until then.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "server/services/model_status.h"
#include "server/services/register_model.h"

namespace sluice::server {

class ModelService;   // model_service.h
class SpeechService;  // speech_service.h

class ModelServices {
 public:
  ModelServices();
  ~ModelServices();
  // Throws std::invalid_argument when a model with the same id is served already.
  void add(LoadedModel model, std::unique_ptr<ModelService> service);
  void add(LoadedModel model, std::unique_ptr<SpeechService> service);

  std::vector<engine::ModelInfo> list() const;  // every model, in load order
  std::optional<engine::ModelInfo> info(std::string_view id) const;
  ModelService* find(std::string_view id) const;          // text models only
  SpeechService* find_speech(std::string_view id) const;  // speech models only
  std::vector<SpeechService*> speech_services() const;    // in load order
  std::vector<ModelService*> text_services() const;       // in load order
  // Every model's description with its engine's stats and limits, in load order:
  // what routers read (/get_load, /get_server_info).
  std::vector<ReplicaModel> replica_models() const;
  // The only text model, for requests that may leave "model" out; null unless exactly one.
  ModelService* only() const;
  size_t size() const;

  void refresh_metrics() const;
  // Each model's engine health, in load order (step_timeout_s 0: no step is too long).
  std::vector<ModelHealth> health(double step_timeout_s) const;
  void stop_all();
  // Set once every configured model is in: until then an unknown model may still
  // be loading (503), afterwards it does not exist (404).
  void mark_all_loaded() { all_loaded_ = true; }
  bool all_loaded() const { return all_loaded_; }

 private:
  struct Served {
    LoadedModel model;  // declared first: its file mapping outlives the service
    std::unique_ptr<ModelService> text;
    std::unique_ptr<SpeechService> speech;
  };
  void add(Served served);
  const Served* find_served(std::string_view id) const;  // requires mutex_

  std::atomic<bool> all_loaded_{false};
  mutable std::mutex mutex_;
  std::vector<Served> served_;  // guarded by mutex_
};

}  // namespace sluice::server
