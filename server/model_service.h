#pragma once
// The generation side of one served model: its weights on a CPU backend, its
// tokenizer and chat template, its Engine and the engine's metrics. ModelServices is
// the daemon's set of them, filled by the loader thread and read by HTTP threads.
//
// A ModelService is immutable after load() apart from its Engine, whose submit(),
// abort() and stats() any thread may call. stop() is for the shutdown path only.
#include <prometheus/registry.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "config/config.h"
#include "engine/chat/chat_template.h"
#include "engine/engine.h"
#include "engine/generation_defaults.h"
#include "engine/model_registry.h"
#include "engine/models/model.h"
#include "engine/tokenizer/token_count_bound.h"
#include "engine/tokenizer/tokenizer.h"
#include "proto/chat.h"
#include "server/engine_metrics.h"
#include "server/health.h"

namespace sluice::server {

class ModelService {
 public:
  // Loads the weights, builds the tokenizer, compiles and validates the chat template
  // (a template that cannot be rendered fails the load) and starts the engine. Throws
  // std::exception with a message naming the model and what is wrong.
  // A CPU model's engine takes its steps in turns of `cpu_turns` (shared by the
  // process's CPU engines; null: none).
  static std::unique_ptr<ModelService> load(const engine::LoadedModel& loaded,
                                            const config::Config& config,
                                            const config::ModelConfig& entry,
                                            prometheus::Registry& registry,
                                            engine::ComputeTurns* cpu_turns = nullptr);
  ~ModelService();  // stop()

  const std::string& id() const { return id_; }
  engine::Engine& engine() { return *engine_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  bool has_chat_template() const { return chat_template_.has_value(); }
  // What a request gets for the sampling fields it leaves out (see generation_defaults.h).
  const engine::GenerationDefaults& generation_defaults() const { return generation_defaults_; }

  // The prompt text of a conversation. `template_kwargs` (a JSON object, vLLM's
  // chat_template_kwargs) become further template variables, over the defaults.
  // Throws chat::TemplateError when the template rejects it (the caller answers
  // 400); requires has_chat_template().
  std::string render_chat(const std::vector<proto::ChatMessage>& messages, bool add_generation_prompt,
                          const nlohmann::json& template_kwargs = nlohmann::json::object()) const;

  // A lower bound on the tokens of a text: lets a request whose text is certain to
  // overflow the context be refused before it is tokenized.
  const tokenizer::TokenCountBound& token_bound() const { return *token_bound_; }
  int64_t max_model_len() const { return engine_->max_model_len(); }

  // Updates the engine's gauges and counters before /metrics renders.
  void refresh_metrics();

  // Finishes the requests in flight ("abort") and joins the engine thread.
  void stop();

 private:
  ModelService() = default;

  std::string id_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<engine::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::optional<chat::ChatTemplate> chat_template_;
  chat::RenderOptions render_options_;
  engine::GenerationDefaults generation_defaults_;
  std::unique_ptr<tokenizer::TokenCountBound> token_bound_;
  std::unique_ptr<EngineMetrics> metrics_;
  std::unique_ptr<engine::Engine> engine_;  // declared last: stopped before the rest goes
};

class SpeechService;  // speech_service.h

// The text models (ModelService) and the speech models (SpeechService) served.
// Thread-safe: the loader thread adds while HTTP threads look up. Services are never
// removed before stop_all(), so the pointers handed out stay valid until then.
class ModelServices {
 public:
  ModelServices();
  ~ModelServices();
  void add(std::unique_ptr<ModelService> service);
  void add(std::unique_ptr<SpeechService> service);
  ModelService* find(std::string_view id) const;          // text models only
  SpeechService* find_speech(std::string_view id) const;  // speech models only
  std::vector<SpeechService*> speech_services() const;    // in load order
  // The only text model, for requests that may leave "model" out; null unless exactly one.
  ModelService* only() const;
  void refresh_metrics() const;
  // Each model's engine health, text models then speech models, in load order
  // (step_timeout_s 0: no step is too long).
  std::vector<ModelHealth> health(double step_timeout_s) const;
  void stop_all();
  // Set once every configured model is in: until then an unknown model may still
  // be loading (503), afterwards it does not exist (404).
  void mark_all_loaded() { all_loaded_ = true; }
  bool all_loaded() const { return all_loaded_; }

 private:
  std::atomic<bool> all_loaded_{false};
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<ModelService>> services_;  // guarded by mutex_
  std::vector<std::unique_ptr<SpeechService>> speech_;   // guarded by mutex_
};

}  // namespace sluice::server
