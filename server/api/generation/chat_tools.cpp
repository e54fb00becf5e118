#include "server/api/generation/chat_tools.h"

namespace sluice::server {
namespace {

using Mode = proto::ToolChoice::Mode;

bool is_forced(const proto::ToolChoice& choice) { return choice.mode == Mode::required || choice.mode == Mode::function; }

// A constraint that describes a JSON value (so that the generic envelope can hold it
// as its "response"), rather than the output's raw text.
bool is_json_constraint(const proto::StructuredOutput& constraint) {
  using Kind = grammar::GrammarSpec::Kind;
  return constraint.spec.kind == Kind::json_schema || constraint.spec.kind == Kind::json_object;
}

}  // namespace

std::variant<ChatToolPlan, proto::ApiError> plan_chat_tools(const proto::ChatRequest& request,
                                                            const std::string& model_name,
                                                            const chat::TemplateTraits& syntax,
                                                            const config::Config& config) {
  ChatToolPlan plan;
  const bool has_tools = !request.tools.empty();
  const bool none = request.tool_choice.mode == Mode::none;
  const std::string tools_param = has_tools ? request.tools.front().param.substr(0, request.tools.front().param.find('['))
                                            : std::string("tools");
  const bool generic = syntax.tool_calls == chat::ToolCallSyntax::generic;
  if (has_tools && !none) {
    if (!syntax.renders_tools && !generic) {
      return proto::invalid_request("The chat template of model '" + model_name +
                                        "' does not render tools, so the model would never see them; serve it with "
                                        "a tool-capable chat_template (see docs/tools-and-reasoning.md).",
                                    tools_param);
    }
    if (syntax.tool_calls == chat::ToolCallSyntax::none) {
      return proto::invalid_request("Model '" + model_name +
                                        "' has no tool-call parser (its template shows no known call format); set "
                                        "tool_call_parser in its config.",
                                    tools_param);
    }
    if (is_forced(request.tool_choice) && request.structured_output) {
      return proto::invalid_request("A forced tool call (tool_choice '" +
                                        std::string(request.tool_choice.mode == Mode::required ? "required" : "function") +
                                        "') cannot be combined with '" + request.structured_output->param + "'.",
                                    "tool_choice");
    }
  }
  plan.render_tools =
      has_tools && syntax.renders_tools && !generic && !(none && config.exclude_tools_when_tool_choice_none);
  plan.generic = generic && has_tools;
  plan.generic_instructions = plan.generic && !none;

  ChatOutputOptions& output = plan.output;
  output.reasoning = syntax.reasoning != chat::ReasoningSyntax::none;
  output.include_reasoning = request.include_reasoning;
  output.parser.reasoning = syntax.reasoning;
  if (has_tools && !none) output.parser.tool_calls = syntax.tool_calls;
  if (!request.parallel_tool_calls) output.parser.max_calls = 1;
  output.parse = output.reasoning || output.parser.tool_calls != chat::ToolCallSyntax::none;

  // The grammar: a forced call from the first token; auto lazily, unless the request
  // brings its own constraint (which then covers the whole output). The generic
  // envelope is enforced from the first token under auto too; a JSON constraint there
  // holds its "response" value.
  const bool response_in_envelope =
      generic && request.structured_output && is_json_constraint(*request.structured_output);
  if (!has_tools || none ||
      (request.tool_choice.mode == Mode::auto_ && request.structured_output && !response_in_envelope))
    return plan;
  for (size_t i = 0; i < request.tools.size(); ++i) {
    if (request.tool_choice.mode != Mode::function || request.tools[i].name == request.tool_choice.function)
      plan.constrained_functions.push_back(i);
  }
  const chat::ToolCallShape shape = chat::tool_call_shape(syntax.tool_calls);
  grammar::ToolGrammarOptions& g = plan.grammar;
  g.before_name = shape.before_name;
  g.between = shape.between;
  g.after_arguments = shape.after_arguments;
  g.separator = shape.separator;
  g.parallel = request.parallel_tool_calls && request.tool_choice.mode != Mode::function;
  plan.lazy = request.tool_choice.mode == Mode::auto_ && !generic;
  if (generic) {
    g.leading_whitespace = false;
    g.calls_open = shape.calls_open;
    g.calls_close = shape.calls_close;
    if (request.tool_choice.mode == Mode::auto_) {
      g.response_open = shape.response_open;
      g.response_close = shape.response_close;
      if (response_in_envelope) {
        g.response_spec = request.structured_output->spec;
        output.parser.raw_response = true;
      }
    }
  }
  if (!plan.lazy && syntax.reasoning == chat::ReasoningSyntax::think) {
    g.reasoning_open = std::string(chat::kThinkOpen);
    g.reasoning_close = std::string(chat::kThinkClose);
  }
  return plan;
}

void start_from_prompt(ChatToolPlan& plan, std::string_view rendered_prompt) {
  const bool inside = plan.output.parser.reasoning == chat::ReasoningSyntax::think &&
                      chat::starts_in_reasoning(rendered_prompt);
  plan.output.parser.starts_in_reasoning = inside;
  if (!plan.grammar.reasoning_open.empty()) plan.grammar.starts_in_reasoning = inside;
}

engine::GrammarTrigger grammar_trigger(const ChatToolPlan& plan, const chat::TemplateTraits& syntax) {
  engine::GrammarTrigger trigger;
  const chat::ToolCallShape shape = chat::tool_call_shape(syntax.tool_calls);
  if (shape.trigger.empty()) {
    trigger.at_start = plan.grammar.before_name.substr(0, 1);
  } else {
    trigger.anywhere.push_back(shape.trigger);
  }
  if (syntax.reasoning == chat::ReasoningSyntax::think) {
    trigger.quiet_open = std::string(chat::kThinkOpen);
    trigger.quiet_close = std::string(chat::kThinkClose);
    trigger.starts_quiet = plan.output.parser.starts_in_reasoning;
  }
  return trigger;
}

}  // namespace sluice::server
