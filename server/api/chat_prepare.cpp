#include "server/api/chat_prepare.h"

#include <string>
#include <variant>

#include "engine/chat/jinja/template_error.h"
#include "proto/chat_render.h"
#include "proto/template_kwargs.h"
#include "server/api/chat_generic_tools.h"
#include "server/api/text_fit.h"

namespace sluice::server {
namespace {

struct ContinuationError {};  // thrown out of the render job: the final message cannot be continued

void refuse(Exchange& ex, ErrorTerms terms, proto::ApiError error) {
  set_error(ex.response, terms ? terms(std::move(error)) : std::move(error));
}

// tool_choice required, a named function or auto: the grammar of the allowed calls,
// compiled on the tokenizer pool. On a refusal the response is set and nothing is
// returned.
asio::awaitable<std::optional<ToolConstraint>> compile_tool_constraint(Exchange& ex, ModelService& model,
                                                                       const proto::ChatRequest& request,
                                                                       const ChatToolPlan& plan,
                                                                       const proto::OrderedTools& ordered,
                                                                       PrepPool& prep, ErrorTerms terms) {
  ToolConstraint constraint;
  if (plan.constrained_functions.empty()) co_return constraint;
  std::vector<grammar::ToolFunctionSchema> functions;
  for (size_t i : plan.constrained_functions) {
    const proto::ChatTool& tool = request.tools[i];
    functions.push_back({tool.name, i < ordered.parameters.size() ? ordered.parameters[i] : std::string(),
                         tool.strict.value_or(false)});
  }
  using Compiled = std::variant<grammar::CompiledSpec, proto::ApiError>;
  auto compiled = co_await prep.run([&]() -> Compiled {
    try {
      return model.compile_tool_calls(functions, plan.grammar);
    } catch (const grammar::ResponseSchemaError& e) {
      const std::string& param = request.structured_output ? request.structured_output->param : std::string("tools");
      return proto::invalid_request("Invalid '" + param + "': " + e.what(), param);
    } catch (const grammar::ToolSchemaError& e) {
      const proto::ChatTool& tool = request.tools[plan.constrained_functions.at(e.function_index())];
      const std::string param = tool.param + (tool.param.starts_with("functions") ? ".parameters" : ".function.parameters");
      return proto::invalid_request("Invalid '" + param + "': " + e.what(), param);
    } catch (const grammar::GrammarError& e) {
      return proto::invalid_request(std::string("The tools cannot be enforced: ") + e.what(), "tools");
    }
  });
  if (!compiled) {
    refuse(ex, terms, prep_pool_full(prep));
    co_return std::nullopt;
  }
  if (auto* error = std::get_if<proto::ApiError>(&*compiled)) {
    refuse(ex, terms, *error);
    co_return std::nullopt;
  }
  grammar::CompiledSpec& spec = std::get<grammar::CompiledSpec>(*compiled);
  if (!spec.unenforced.empty()) {
    std::string names;
    for (const std::string& item : spec.unenforced) names += (names.empty() ? "" : "; ") + item;
    ex.response.set("x-sluice-unenforced-constraints", names);
  }
  constraint.grammar = std::move(spec.grammar);
  if (plan.lazy) constraint.trigger = grammar_trigger(plan, model.chat_syntax());
  co_return constraint;
}

}  // namespace

asio::awaitable<std::optional<PreparedChat>> prepare_chat(Exchange& ex, ModelService& model,
                                                          const proto::ChatRequest& request, std::string_view body,
                                                          const config::Config& config, PrepPool& prep,
                                                          bool compile_tools, ErrorTerms terms) {
  if (!model.has_chat_template()) {
    refuse(ex, terms, proto::invalid_request("The model '" + request.model +
                                                      "' has no chat template; use /v1/completions.",
                                                  "model"));
    co_return std::nullopt;
  }
  auto planned = plan_chat_tools(request, request.model, model.chat_syntax(), config);
  if (auto* error = std::get_if<proto::ApiError>(&planned)) {
    refuse(ex, terms, *error);
    co_return std::nullopt;
  }
  PreparedChat prepared;
  ChatToolPlan& plan = prepared.plan;
  plan = std::move(std::get<ChatToolPlan>(planned));
  size_t num_content_bytes = 0;  // the rendered prompt holds at least the contents
  for (const proto::ChatMessage& message : request.messages) num_content_bytes += message.content.size();
  const int64_t min_tokens = model.token_bound().min_tokens_of_bytes(num_content_bytes);
  if (auto error = text_too_long(model.max_model_len(), min_tokens, num_content_bytes, "messages")) {
    refuse(ex, terms, *error);
    co_return std::nullopt;
  }
  proto::OrderedTools ordered;
  std::optional<std::vector<int32_t>> tokens;
  try {
    tokens = co_await prep.run([&] {
      if (!request.tools.empty()) ordered = proto::read_tools_in_order(body, request);
      std::optional<chat::Value> tools;
      if (plan.render_tools) tools = proto::template_value(ordered.for_template);
      std::string text;
      if (plan.generic) {
        // The template knows nothing of tools: they and the conversation's calls go in as
        // text; a template that refuses a system message gets the tools in the first user turn.
        const auto render = [&](GenericPlacement placement) {
          return model.render_chat(generic_tool_messages(request, ordered, plan.generic_instructions, placement),
                                   request.add_generation_prompt, request.chat_template_kwargs, nullptr);
        };
        try {
          text = render(GenericPlacement::system);
        } catch (const chat::TemplateError&) {
          if (!plan.generic_instructions) throw;
          text = render(GenericPlacement::first_user);
        }
      } else {
        text = model.render_chat(request.messages, request.add_generation_prompt, request.chat_template_kwargs,
                                 tools ? &*tools : nullptr);
      }
      if (request.continue_final_message) {
        std::optional<std::string> continued = proto::continued_prompt(std::move(text), request.messages.back().content);
        if (!continued) throw ContinuationError();
        text = std::move(*continued);
      }
      start_from_prompt(plan, text);
      // The template writes the special tokens itself (vLLM's default: no BOS added).
      return model.tokenizer().encode(text, request.add_special_tokens.value_or(false),
                                      /*parse_special=*/true);
    });
  } catch (const ContinuationError&) {
    refuse(ex, terms, proto::final_message_not_continuable());
    co_return std::nullopt;
  } catch (const chat::TemplateError& e) {
    refuse(ex, terms, proto::invalid_request(std::string("The chat template rejected the messages: ") +
                                                      e.what(), "messages"));
    co_return std::nullopt;
  }
  if (!tokens) {
    refuse(ex, terms, prep_pool_full(prep));
    co_return std::nullopt;
  }
  prepared.tokens = std::move(*tokens);
  if (!compile_tools) co_return prepared;
  auto tool_constraint = co_await compile_tool_constraint(ex, model, request, plan, ordered, prep, terms);
  if (!tool_constraint) co_return std::nullopt;
  prepared.tools = std::move(*tool_constraint);
  co_return prepared;
}

}  // namespace sluice::server
