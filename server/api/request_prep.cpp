#include "server/api/request_prep.h"

#include <nlohmann/json.hpp>

namespace sluice::server {

OrError<OutputConstraint> compile_output_constraint(ModelService& model, const proto::GenerationOptions& options) {
  if (!options.structured_output) return OutputConstraint{};
  const proto::StructuredOutput& constraint = *options.structured_output;
  grammar::CompiledSpec spec;
  try {
    spec = model.compile_structured_output(constraint.spec);
  } catch (const grammar::GrammarError& e) {
    return proto::invalid_request("Invalid '" + constraint.param + "': " + e.what(), constraint.param);
  }
  return output_constraint(std::move(spec));
}

OutputConstraint output_constraint(grammar::CompiledSpec spec) {
  OutputConstraint out;
  for (const std::string& item : spec.unenforced) out.unenforced += (out.unenforced.empty() ? "" : "; ") + item;
  out.grammar = std::move(spec.grammar);
  return out;
}

OrError<ModelService*> text_model(const ModelServices& services, const std::string& name) {
  if (ModelService* model = services.find(name)) return model;
  if (services.find_speech(name)) {
    return proto::invalid_request("The model '" + name + "' is a speech model: use /v1/audio/speech.", "model");
  }
  return services.all_loaded() ? proto::model_not_found(name) : proto::not_ready("Models are still loading");
}

proto::ParseOptions parse_options(const config::Config& config) {
  return {.strict_fields = config.strict_request_fields, .allow_priority = config.allow_priority};
}

std::optional<proto::ApiError> check_timeout(const proto::GenerationOptions& options, const config::Config& config) {
  if (options.timeout_s && *options.timeout_s > config.max_request_timeout_s) {
    return proto::invalid_request("'timeout' must be at most " +
                                      nlohmann::json(config.max_request_timeout_s).dump() + " seconds.",
                                  "timeout");
  }
  return std::nullopt;
}

void name_unenforced(Exchange& ex, const OutputConstraint& constraint) {
  if (!constraint.unenforced.empty()) ex.response.set("x-sluice-unenforced-constraints", constraint.unenforced);
}

}  // namespace sluice::server
