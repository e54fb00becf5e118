#include "server/api/generation/chat_prepare.h"

#include <string>
#include <variant>

#include "engine/chat/jinja/template_error.h"
#include "proto/chat_render.h"
#include "proto/template_kwargs.h"
#include "server/api/generation/chat_generic_tools.h"
#include "server/api/text_fit.h"

namespace sluice::server {
namespace {

// tool_choice required, a named function or auto: the grammar of the allowed calls.
OrError<OutputConstraint> compile_tool_constraint(ModelService& model, const proto::ChatRequest& request,
                                                  const ChatToolPlan& plan, const proto::OrderedTools& ordered) {
  std::vector<grammar::ToolFunctionSchema> functions;
  for (size_t i : plan.constrained_functions) {
    const proto::ChatTool& tool = request.tools[i];
    functions.push_back({tool.name, i < ordered.parameters.size() ? ordered.parameters[i] : std::string(),
                         tool.strict.value_or(false)});
  }
  grammar::CompiledSpec spec;
  try {
    spec = model.compile_tool_calls(functions, plan.grammar);
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
  OutputConstraint constraint = output_constraint(std::move(spec));
  if (plan.lazy) constraint.trigger = grammar_trigger(plan, model.chat_syntax());
  return constraint;
}

// The conversation as the template writes it; nullopt when the final message cannot
// be continued (continue_final_message). chat::TemplateError when the template refuses.
std::optional<std::string> render(ModelService& model, const proto::ChatRequest& request, const ChatToolPlan& plan,
                                  const proto::OrderedTools& ordered) {
  std::optional<chat::Value> tools;
  if (plan.render_tools) tools = proto::template_value(ordered.for_template);
  std::string text;
  if (plan.generic) {
    // The template knows nothing of tools: they and the conversation's calls go in as
    // text; a template that refuses a system message gets the tools in the first user turn.
    const auto render_generic = [&](GenericPlacement placement) {
      return model.render_chat(generic_tool_messages(request, ordered, plan.generic_instructions, placement),
                               request.add_generation_prompt, request.chat_template_kwargs, nullptr);
    };
    try {
      text = render_generic(GenericPlacement::system);
    } catch (const chat::TemplateError&) {
      if (!plan.generic_instructions) throw;
      text = render_generic(GenericPlacement::first_user);
    }
  } else {
    text = model.render_chat(request.messages, request.add_generation_prompt, request.chat_template_kwargs,
                             tools ? &*tools : nullptr);
  }
  if (!request.continue_final_message) return text;
  return proto::continued_prompt(std::move(text), request.messages.back().content);
}

}  // namespace

OrError<PreparedChat> prepare_chat(ModelService& model, const proto::ChatRequest& request,
                                   const config::Config& config, bool compile_constraint) {
  if (!model.has_chat_template()) {
    return proto::invalid_request("The model '" + request.model + "' has no chat template; use /v1/completions.",
                                  "model");
  }
  auto planned = plan_chat_tools(request, request.model, model.chat_syntax(), config);
  if (auto* error = std::get_if<proto::ApiError>(&planned)) return *error;
  PreparedChat prepared;
  ChatToolPlan& plan = prepared.plan;
  plan = std::move(std::get<ChatToolPlan>(planned));
  size_t num_content_bytes = 0;  // the rendered prompt holds at least the contents
  for (const proto::ChatMessage& message : request.messages) num_content_bytes += message.content.size();
  const int64_t min_tokens = model.token_bound().min_tokens_of_bytes(num_content_bytes);
  if (auto error = text_too_long(model.max_model_len(), min_tokens, num_content_bytes, "messages")) return *error;
  const proto::OrderedTools ordered = proto::tools_in_order(request);
  std::optional<std::string> text;
  try {
    text = render(model, request, plan, ordered);
  } catch (const chat::TemplateError& e) {
    return proto::invalid_request(std::string("The chat template rejected the messages: ") + e.what(), "messages");
  }
  if (!text) return proto::final_message_not_continuable();
  start_from_prompt(plan, *text);
  // The template writes the special tokens itself (vLLM's default: no BOS added).
  prepared.tokens = model.tokenizer().encode(*text, request.add_special_tokens.value_or(false),
                                             /*parse_special=*/true);
  if (!compile_constraint) return prepared;
  auto constraint = plan.constrained_functions.empty() ? compile_output_constraint(model, request)
                                                       : compile_tool_constraint(model, request, plan, ordered);
  if (auto* error = std::get_if<proto::ApiError>(&constraint)) return *error;
  prepared.constraint = std::move(std::get<OutputConstraint>(constraint));
  return prepared;
}

}  // namespace sluice::server
