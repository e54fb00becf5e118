#include "server/services/model_service.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <stdexcept>

#include "engine/grammar_tokens.h"
#include "engine/grammar/tool_grammar.h"
#include "proto/chat_render.h"
#include "proto/template_kwargs.h"
#include "server/services/draft_model.h"
#include "server/services/model_prepare.h"

namespace sluice::server {
namespace {

// Compiled output constraints kept per model (LRU): a JSON schema is compiled once
// for all the requests that send it.
constexpr size_t kCompiledGrammars = 32;

engine::EngineConfig engine_config(const engine::ModelInfo& info, const config::Config& config) {
  engine::EngineConfig out;
  out.model_name = info.id;
  out.kv_cache_bytes = config.kv_cache_bytes;
  out.block_size = config.block_size;
  out.max_num_seqs = config.max_num_seqs;
  out.max_num_batched_tokens = config.max_num_batched_tokens;
  out.max_waiting = config.max_waiting;
  out.max_waiting_per_request = config.max_waiting_per_request > 0
                                    ? std::min(config.max_waiting_per_request, config.max_waiting)
                                    : std::max(1, config.max_waiting / 4);
  // 0 lets the engine take the trained context and shrink it to the KV cache with a
  // warning; only a context the operator asked for is held to (and refused if too big).
  out.max_model_len = info.context_length_set ? info.context_length : 0;
  out.enable_prefix_caching = config.enable_prefix_caching;
  out.max_prefill_tokens_while_decoding = config.max_prefill_tokens_while_decoding;
  out.default_deadline =
      std::chrono::milliseconds(static_cast<int64_t>(config.request_timeout_s * 1000.0));
  return out;
}

engine::SpeculativeConfig speculative_config(const config::SpeculativeModelConfig& c) {
  engine::SpeculativeConfig out;
  out.method = c.method == "ngram"         ? engine::SpeculativeMethod::ngram
               : c.method == "draft_model" ? engine::SpeculativeMethod::draft_model
                                           : engine::SpeculativeMethod::none;
  out.num_speculative_tokens = static_cast<int32_t>(c.num_speculative_tokens);
  out.prompt_lookup_min = static_cast<int32_t>(c.prompt_lookup_min);
  out.prompt_lookup_max = static_cast<int32_t>(c.prompt_lookup_max);
  out.disable_by_batch_size = static_cast<int32_t>(c.disable_by_batch_size);
  return out;
}

engine::GenerationDefaults to_defaults(const config::GenerationConfig& g) {
  auto real = [](const std::optional<double>& v) -> std::optional<float> {
    return v ? std::optional<float>(static_cast<float>(*v)) : std::nullopt;
  };
  auto integer = [](const std::optional<int64_t>& v) -> std::optional<int32_t> {
    return v ? std::optional<int32_t>(static_cast<int32_t>(*v)) : std::nullopt;
  };
  engine::GenerationDefaults d;
  d.temperature = real(g.temperature);
  d.top_p = real(g.top_p);
  d.top_k = integer(g.top_k);
  d.min_p = real(g.min_p);
  d.presence_penalty = real(g.presence_penalty);
  d.frequency_penalty = real(g.frequency_penalty);
  d.repetition_penalty = real(g.repetition_penalty);
  d.max_tokens = integer(g.max_tokens);
  return d;
}

// Lowest to highest: sluice's cap for unbounded requests, the model file, the
// daemon's generation_config, the model entry's generation.
engine::GenerationDefaults resolve_generation_defaults(const engine::GenerationDefaults& file,
                                                       const config::Config& config,
                                                       const config::ModelConfig& entry) {
  engine::GenerationDefaults d;
  if (config.default_max_tokens > 0) d.unbounded_max_tokens = config.default_max_tokens;
  d = engine::overlay(d, file);
  d = engine::overlay(d, to_defaults(config.generation_config));
  return engine::overlay(d, to_defaults(entry.generation));
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The KV-cache event publisher of the model at `index` in config.models, or null
// when the events are off. Each model gets its own endpoint (offset_endpoint).
std::unique_ptr<ZmqKvEventPublisher> kv_event_publisher(const config::Config& config, int index,
                                                        const std::string& model_id) {
  const config::KvEventsConfig& c = config.kv_events_config;
  if (!c.enabled()) return nullptr;
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host = {'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't'};
  KvEventPublisherOptions options;
  options.endpoint = offset_endpoint(c.endpoint, index);
  options.replay_endpoint = offset_endpoint(c.replay_endpoint, index);
  options.topic = replace_all(replace_all(c.topic, "{host}", host.data()), "{model}", model_id);
  options.buffer_steps = c.buffer_steps;
  options.max_queue_size = c.max_queue_size;
  options.hwm = static_cast<int32_t>(c.hwm);
  parse_kv_event_layout(c.event_layout, options.layout);
  auto publisher = std::make_unique<ZmqKvEventPublisher>(std::move(options));
  publisher->start();
  return publisher;
}

}  // namespace

chat::TemplateTraits model_chat_syntax(std::string_view template_source, const config::ModelConfig& entry) {
  chat::TemplateTraits traits = chat::template_traits(template_source);
  if (entry.tool_call_parser != "auto") {
    traits.tool_calls = *chat::tool_call_syntax_named(entry.tool_call_parser);
  } else if (!traits.renders_tools) {
    traits.tool_calls = chat::ToolCallSyntax::generic;
  }
  if (entry.reasoning_parser != "auto") traits.reasoning = *chat::reasoning_syntax_named(entry.reasoning_parser);
  return traits;
}

std::unique_ptr<ModelService> ModelService::load(const server::LoadedModel& loaded,
                                                 const config::Config& config,
                                                 const config::ModelConfig& entry,
                                                 prometheus::Registry& registry,
                                                 engine::ComputeTurns* cpu_turns) {
  const engine::ModelInfo& info = loaded.info;
  std::unique_ptr<ModelService> service(new ModelService());
  service->id_ = info.id;

  PreparedModel prepared = prepare_model(loaded, info.backend, config.compute_threads, entry.chat_template);
  service->backend_ = std::move(prepared.backend);
  service->model_ = std::move(prepared.model);
  service->tokenizer_ = std::move(prepared.tokenizer);
  service->chat_template_ = std::move(prepared.chat_template);
  service->render_options_ = std::move(prepared.render_options);
  if (service->chat_template_) {
    service->chat_syntax_ = model_chat_syntax(service->chat_template_->source(), entry);
    spdlog::info("model {}: chat template {} tools; tool calls: {}, reasoning: {}", info.id,
                 service->chat_syntax_.renders_tools ? "renders" : "does not render",
                 chat::tool_call_syntax_name(service->chat_syntax_.tool_calls),
                 chat::reasoning_syntax_name(service->chat_syntax_.reasoning));
  }
  service->generation_defaults_ = resolve_generation_defaults(prepared.file_defaults, config, entry);
  spdlog::info("model {}: generation defaults for fields a request leaves out: {}", info.id,
               service->generation_defaults_.empty() ? "none" : service->generation_defaults_.describe());
  std::optional<uint64_t> file_pooling;
  if (loaded.file) file_pooling = loaded.file->get_uint(service->model_->hparams().architecture + ".pooling_type");
  service->pooling_ = engine::choose_pooling(entry.pooling, file_pooling);
  spdlog::info("model {}: embeddings pool the {} token(s)' final hidden states", info.id,
               engine::to_string(service->pooling_));
  const tokenizer::Tokenizer& tok = *service->tokenizer_;
  service->token_bound_ = std::make_unique<tokenizer::TokenCountBound>(tok);
  service->metrics_ = std::make_unique<EngineMetrics>(registry, info.id, config.metrics_vllm_names);
  grammar::GrammarLimits grammar_limits;
  grammar_limits.max_recursive_nesting = config.structured_output_max_nesting;
  service->grammars_ = std::make_unique<grammar::GrammarCache>(
      engine::make_token_table(tok, static_cast<int32_t>(service->model_->hparams().vocab_size)), kCompiledGrammars,
      grammar_limits);
  service->grammar_metrics_ = std::make_unique<GrammarMetrics>(registry, info.id);
  engine::EngineConfig engine_settings = engine_config(info, config);
  engine_settings.speculative = speculative_config(entry.speculative);
  if (engine_settings.speculative.method == engine::SpeculativeMethod::draft_model) {
    service->draft_model_ = load_draft_model(entry.speculative.model, *service->backend_, tok, info.id);
    engine_settings.speculative.draft_model = service->draft_model_.get();
  }
  if (service->backend_->device() == backends::DeviceKind::cpu) engine_settings.compute_turns = cpu_turns;
  // The entry's position in config.models numbers the model's event endpoint.
  int index = 0;
  for (size_t i = 0; i < config.models.size(); ++i)
    if (&config.models[i] == &entry) index = static_cast<int>(i);
  service->kv_events_ = kv_event_publisher(config, index, info.id);
  if (service->kv_events_) {
    engine_settings.kv_events = service->kv_events_.get();
    spdlog::info("model {}: KV-cache events on {} (topic \"{}\"{}{})", info.id, service->kv_events_->endpoint(),
                 service->kv_events_->topic(), service->kv_events_->replay_endpoint().empty() ? "" : ", replay on ",
                 service->kv_events_->replay_endpoint());
  }
  service->engine_ = std::make_unique<engine::Engine>(*service->model_, tok, std::move(engine_settings),
                                                      service->metrics_.get());
  service->engine_->start();
  spdlog::info("model {}: engine started ({} KV blocks of {} tokens, max_model_len {})", info.id,
               service->engine_->num_kv_blocks(), config.block_size,
               service->engine_->max_model_len());
  return service;
}

ModelService::~ModelService() { stop(); }

grammar::CompiledSpec ModelService::compile_structured_output(const grammar::GrammarSpec& spec) {
  grammar_metrics_->on_request(grammar::kind_name(spec.kind));
  try {
    grammar::GrammarCache::Lookup lookup = grammars_->get(spec);
    grammar_metrics_->on_lookup(lookup.hit, lookup.compile_seconds);
    return std::move(lookup.compiled);
  } catch (...) {
    grammar_metrics_->on_lookup(false, 0.0);
    throw;
  }
}

std::string ModelService::render_chat(const std::vector<proto::ChatMessage>& messages, bool add_generation_prompt,
                                      const nlohmann::json& template_kwargs, const chat::Value* tools) const {
  const std::vector<chat::ChatMessage> converted = proto::template_messages(messages);
  if (template_kwargs.empty() && tools == nullptr)
    return chat_template_->render(converted, add_generation_prompt, render_options_);
  chat::RenderOptions options = render_options_;
  proto::add_template_variables(template_kwargs, options);
  if (tools != nullptr) options.tools = *tools;
  return chat_template_->render(converted, add_generation_prompt, options);
}

grammar::CompiledSpec ModelService::compile_tool_calls(const std::vector<grammar::ToolFunctionSchema>& functions,
                                                       const grammar::ToolGrammarOptions& options) {
  grammar_metrics_->on_request("tool_calls");
  // The key: every input of the grammar, each length-prefixed so no two inputs collide.
  std::string key = "tools\n";
  auto add = [&key](std::string_view part) { key += std::to_string(part.size()) + ":" + std::string(part); };
  for (const auto& f : functions) {
    add(f.name);
    add(f.parameters_json);
    add(f.strict ? "1" : "0");
  }
  for (const std::string* part : {&options.before_name, &options.between, &options.after_arguments,
                                  &options.separator, &options.reasoning_open, &options.reasoning_close,
                                  &options.calls_open, &options.calls_close, &options.response_open,
                                  &options.response_close})
    add(*part);
  add(options.response_spec ? options.response_spec->cache_key() : std::string());
  add(std::string{options.parallel ? 'p' : '-', options.starts_in_reasoning ? 'r' : '-',
                  options.leading_whitespace ? 'w' : '-'});
  try {
    grammar::GrammarCache::Lookup lookup = grammars_->get(key, [&](const std::shared_ptr<const grammar::TokenTable>& tokens,
                                                                     const grammar::GrammarLimits& limits) {
      grammar::ToolGrammarResult built = grammar::tool_call_grammar(functions, options, limits);
      return grammar::CompiledSpec{grammar::CompiledGrammar::compile(std::move(built.grammar), tokens),
                                   std::move(built.unenforced)};
    });
    grammar_metrics_->on_lookup(lookup.hit, lookup.compile_seconds);
    return std::move(lookup.compiled);
  } catch (...) {
    grammar_metrics_->on_lookup(false, 0.0);
    throw;
  }
}

void ModelService::refresh_metrics() {
  if (metrics_ && engine_) metrics_->refresh(engine_->stats());
}

void ModelService::stop() {
  if (engine_) engine_->stop();
}

}  // namespace sluice::server
