#include "server/model_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "backends/backend_factory.h"
#include "engine/loader/quantize.h"
#include "engine/loader/weight_source.h"
#include "proto/template_kwargs.h"

namespace sluice::server {
namespace {

engine::EngineConfig engine_config(const engine::ModelInfo& info, const config::Config& config) {
  engine::EngineConfig out;
  out.model_name = info.id;
  out.kv_cache_bytes = config.kv_cache_bytes;
  out.block_size = config.block_size;
  out.max_num_seqs = config.max_num_seqs;
  out.max_num_batched_tokens = config.max_num_batched_tokens;
  out.max_waiting = config.max_waiting;
  // 0 lets the engine take the trained context and shrink it to the KV cache with a
  // warning; only a context the operator asked for is held to (and refused if too big).
  out.max_model_len = info.context_length_set ? info.context_length : 0;
  out.enable_prefix_caching = config.enable_prefix_caching;
  out.default_deadline =
      std::chrono::milliseconds(static_cast<int64_t>(config.request_timeout_s * 1000.0));
  return out;
}

std::optional<std::string> special_text(const tokenizer::Tokenizer& tok, int32_t id) {
  if (id < 0 || id >= tok.vocab_size()) return std::nullopt;
  return tok.token_text(id);
}

}  // namespace

std::unique_ptr<ModelService> ModelService::load(const engine::LoadedModel& loaded,
                                                 const config::Config& config,
                                                 prometheus::Registry& registry) {
  const engine::ModelInfo& info = loaded.info;
  std::unique_ptr<ModelService> service(new ModelService());
  service->id_ = info.id;

  const std::filesystem::path path(info.path);
  service->tokenizer_ = std::make_unique<tokenizer::Tokenizer>(
      std::filesystem::is_directory(path) ? tokenizer::Tokenizer::from_hf_dir(path)
                                          : tokenizer::Tokenizer::from_gguf(*loaded.file));
  service->backend_ = backends::make_backend(backends::resolve_backend(info.backend), config.compute_threads);
  service->model_ = engine::Model::load(loader::open_weights(path), *service->backend_,
                                        loader::parse_load_quantization(info.quantize));
  spdlog::info("model {}: weights on {} ({} kernels), {:.1f} MiB made at load (repacked)", info.id,
               service->backend_->name(), service->backend_->kernel_path(),
               static_cast<double>(service->backend_->made_weight_bytes()) / (1 << 20));

  const tokenizer::Tokenizer& tok = *service->tokenizer_;
  for (int32_t id = 0; id < tok.vocab_size(); ++id)
    service->max_piece_bytes_ =
        std::max({service->max_piece_bytes_, tok.token_to_piece(id).size(), tok.token_text(id).size()});
  service->render_options_.bos_token = special_text(tok, tok.bos_id());
  service->render_options_.eos_token = special_text(tok, tok.eos_id());
  if (!tok.chat_template().empty()) {
    try {
      auto compiled = chat::ChatTemplate::compile(tok.chat_template());
      compiled.validate(service->render_options_);
      service->chat_template_ = std::move(compiled);
    } catch (const std::exception& e) {
      throw std::runtime_error(info.path + ": the chat template cannot be rendered: " + e.what());
    }
  } else {
    spdlog::warn("model {}: no chat template, so /v1/chat/completions refuses it", info.id);
  }

  service->metrics_ = std::make_unique<EngineMetrics>(registry, info.id);
  service->engine_ = std::make_unique<engine::Engine>(
      *service->model_, tok, engine_config(info, config), service->metrics_.get());
  service->engine_->start();
  spdlog::info("model {}: engine started ({} KV blocks of {} tokens, max_model_len {})", info.id,
               service->engine_->num_kv_blocks(), config.block_size,
               service->engine_->max_model_len());
  return service;
}

ModelService::~ModelService() { stop(); }

std::string ModelService::render_chat(const std::vector<proto::ChatMessage>& messages, bool add_generation_prompt,
                                      const nlohmann::json& template_kwargs) const {
  std::vector<chat::ChatMessage> converted;
  converted.reserve(messages.size());
  for (const auto& message : messages) {
    chat::ChatMessage out{message.role, message.content, {}};
    if (message.name) out.fields.emplace_back("name", chat::Value(*message.name));
    converted.push_back(std::move(out));
  }
  if (template_kwargs.empty()) return chat_template_->render(converted, add_generation_prompt, render_options_);
  chat::RenderOptions options = render_options_;
  proto::add_template_variables(template_kwargs, options);
  return chat_template_->render(converted, add_generation_prompt, options);
}

void ModelService::refresh_metrics() {
  if (metrics_ && engine_) metrics_->refresh(engine_->stats());
}

void ModelService::stop() {
  if (engine_) engine_->stop();
}

void ModelServices::add(std::unique_ptr<ModelService> service) {
  std::lock_guard lock(mutex_);
  services_.push_back(std::move(service));
}

ModelService* ModelServices::find(std::string_view id) const {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(services_.begin(), services_.end(),
                         [&](const auto& s) { return s->id() == id; });
  return it == services_.end() ? nullptr : it->get();
}

ModelService* ModelServices::only() const {
  std::lock_guard lock(mutex_);
  return services_.size() == 1 ? services_.front().get() : nullptr;
}

void ModelServices::refresh_metrics() const {
  std::lock_guard lock(mutex_);
  for (const auto& service : services_) service->refresh_metrics();
}

void ModelServices::stop_all() {
  std::lock_guard lock(mutex_);
  for (const auto& service : services_) service->stop();
}

}  // namespace sluice::server
