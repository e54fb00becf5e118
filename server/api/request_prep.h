#pragma once
// The pieces of a request's prepare job: the one job each generation request runs on
// the prepare pool (PrepPool), from the body's bytes to what the engine takes: parse,
// find the model, plan, render, tokenize, compile the output constraint. A job returns
// its result or the ApiError that refuses the request; the route writes that error
// once, in its API's dialect (server/http/api_error.h).
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "config/config.h"
#include "engine/request.h"
#include "proto/errors.h"
#include "proto/generation_options.h"
#include "server/http/router.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"
#include "server/services/prep_pool.h"

namespace sluice::server {

template <class T>
using OrError = std::variant<T, proto::ApiError>;

// The grammar a request's output follows (none: unconstrained), and what of it is
// not enforced (json_schema with strict false: named in a response header).
struct OutputConstraint {
  std::shared_ptr<grammar::CompiledGrammar> grammar;
  std::optional<engine::GrammarTrigger> trigger;  // tool_choice auto: where it starts
  std::string unenforced;                         // "; "-joined, "" when all is enforced
};

// A compiled spec as the constraint the engine and the response header take.
OutputConstraint output_constraint(grammar::CompiledSpec spec);

// The request's structured-output constraint compiled (a large schema on a large
// vocabulary can take a while the first time; the model's cache keeps it).
OrError<OutputConstraint> compile_output_constraint(ModelService& model, const proto::GenerationOptions& options);

// The text model a request names: 400 for a speech model, 503 while models are still
// loading, 404 once they are all in.
OrError<ModelService*> text_model(const ModelServices& services, const std::string& name);

proto::ParseOptions parse_options(const config::Config& config);

// A client's `timeout` beyond the server's max_request_timeout_s: 400.
std::optional<proto::ApiError> check_timeout(const proto::GenerationOptions& options, const config::Config& config);

// Runs `job` (returning OrError<T>) on the prepare pool; a full pool refuses too.
template <class Job>
asio::awaitable<std::invoke_result_t<Job&>> run_prepare_job(PrepPool& prep, Job job) {
  auto done = co_await prep.run(std::move(job));
  if (!done) co_return prep_pool_full(prep);
  co_return std::move(*done);
}

// Sets the header naming what of the output constraint is not enforced.
void name_unenforced(Exchange& ex, const OutputConstraint& constraint);

}  // namespace sluice::server
