#pragma once
// The generation side of one served text model: its weights on its backend, its
// tokenizer and chat template, its Engine and the engine's metrics. ModelServices
// (model_services.h) is the daemon's set of them.
//
// A ModelService is immutable after load() apart from its Engine, whose submit(),
// abort() and stats() any thread may call. stop() is for the shutdown path only.
#include <prometheus/registry.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "config/config.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/tool_syntax.h"
#include "engine/grammar/tool_grammar.h"
#include "engine/engine.h"
#include "engine/generation_defaults.h"
#include "engine/pooling.h"
#include "engine/grammar/grammar_spec.h"
#include "server/services/register_model.h"
#include "engine/models/model.h"
#include "engine/tokenizer/token_count_bound.h"
#include "engine/tokenizer/tokenizer.h"
#include "proto/chat.h"
#include "server/metrics/engine_metrics.h"
#include "server/metrics/grammar_metrics.h"
#include "server/kv_events/zmq_kv_event_publisher.h"

namespace sluice::server {

// What a chat template shows (chat::template_traits), with the model entry's
// tool_call_parser / reasoning_parser over it. A template that does not render tools
// gets the generic format unless the entry names a parser (tool_call_parser "none"
// keeps such a model's tools refused).
chat::TemplateTraits model_chat_syntax(std::string_view template_source, const config::ModelConfig& entry);

class ModelService {
 public:
  // Loads the weights, builds the tokenizer, compiles and validates the chat template
  // (a template that cannot be rendered fails the load) and starts the engine. Throws
  // std::exception with a message naming the model and what is wrong.
  // A CPU model's engine takes its steps in turns of `cpu_turns` (shared by the
  // process's CPU engines; null: none).
  static std::unique_ptr<ModelService> load(const server::LoadedModel& loaded,
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
  // `tools`: the template's `tools` variable (none when null).
  std::string render_chat(const std::vector<proto::ChatMessage>& messages, bool add_generation_prompt,
                          const nlohmann::json& template_kwargs = nlohmann::json::object(),
                          const chat::Value* tools = nullptr) const;
  // How this model writes tool calls and reasoning: its template's traits, over
  // which its config's tool_call_parser / reasoning_parser win.
  const chat::TemplateTraits& chat_syntax() const { return chat_syntax_; }

  // A lower bound on the tokens of a text: lets a request whose text is certain to
  // overflow the context be refused before it is tokenized.
  const tokenizer::TokenCountBound& token_bound() const { return *token_bound_; }
  int64_t max_model_len() const { return engine_->max_model_len(); }
  // /v1/embeddings: how this model pools (config over the file's metadata) and the
  // width of its vectors.
  engine::Pooling pooling() const { return pooling_; }
  int64_t embedding_width() const { return model_->hparams().embedding_length; }

  // A request's output constraint compiled for this model's vocabulary, from the
  // cache when it was compiled before (recorded in the metrics). Throws
  // grammar::GrammarError for a constraint that cannot be compiled. Any thread.
  grammar::CompiledSpec compile_structured_output(const grammar::GrammarSpec& spec);
  // The grammar of tool calls (tool_grammar.h), cached the same way. Throws
  // grammar::ToolSchemaError for a refused parameters schema.
  grammar::CompiledSpec compile_tool_calls(const std::vector<grammar::ToolFunctionSchema>& functions,
                                           const grammar::ToolGrammarOptions& options);

  // Updates the engine's gauges and counters before /metrics renders.
  void refresh_metrics();

  // Finishes the requests in flight ("abort") and joins the engine thread.
  void stop();

 private:
  ModelService() = default;

  std::string id_;
  std::unique_ptr<backends::Backend> backend_;
  std::unique_ptr<engine::Model> model_;
  std::unique_ptr<engine::Model> draft_model_;  // speculative method draft_model, on backend_
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::optional<chat::ChatTemplate> chat_template_;
  chat::RenderOptions render_options_;
  chat::TemplateTraits chat_syntax_;
  engine::GenerationDefaults generation_defaults_;
  engine::Pooling pooling_ = engine::Pooling::last;
  std::unique_ptr<tokenizer::TokenCountBound> token_bound_;
  std::unique_ptr<EngineMetrics> metrics_;
  std::unique_ptr<grammar::GrammarCache> grammars_;
  std::unique_ptr<GrammarMetrics> grammar_metrics_;
  std::unique_ptr<ZmqKvEventPublisher> kv_events_;  // null: KV-cache events off; outlives the engine
  std::unique_ptr<engine::Engine> engine_;  // declared last: stopped before the rest goes
};

}  // namespace sluice::server
