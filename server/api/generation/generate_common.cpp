#include "server/api/generation/generate_common.h"

#include <chrono>

#include "server/api/generation/response_budget.h"
#include "server/http/api_error.h"
#include "server/api/stream_pump.h"
#include "server/api/submit_error.h"
#include "server/http/chunked_writer.h"
#include "server/http/client_identity.h"

namespace sluice::server {

TokenPiece token_piece(const ModelService& model) {
  return [&tok = model.tokenizer()](int32_t token) { return tok.token_to_piece(token); };
}

namespace {

// Submits one engine request per prompt, all or nothing: the engine validates every
// prompt before it queues any, so a refusal of a later prompt aborts nothing. The
// job gets the streams only once the engine has taken them.
std::optional<proto::ApiError> submit(GenerationJob& job, ModelService& model, const proto::GenerationOptions& options,
                                      std::vector<PreparedPrompt> prompts, const ResponseShape& shape,
                                      uint64_t client_id, const config::Config& config,
                                      const std::shared_ptr<grammar::CompiledGrammar>& grammar,
                                      const std::optional<engine::GrammarTrigger>& trigger) {
  const auto now = engine::Clock::now();
  auto after = [&](double seconds) {
    return now + std::chrono::duration_cast<engine::Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const std::string& id = job.settings().header.id;
  std::vector<engine::GenerationRequest> requests;
  requests.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine::GenerationRequest request;
    request.request_id = id + "-" + std::to_string(i);
    request.prompt_tokens = std::move(prompts[i].tokens);
    // A copy of the params with the model's defaults filled in (logit_bias is shared, not copied).
    request.params = engine::apply_generation_defaults(
        model.generation_defaults(), options.given, options.sampling,
        static_cast<int64_t>(request.prompt_tokens.size()), model.engine().max_model_len());
    request.stop = options.stop;
    request.stop_token_ids = options.stop_token_ids;
    request.include_stop_str_in_output = options.include_stop_str_in_output;
    request.speculative = options.speculative;
    request.skip_special_tokens = options.skip_special_tokens;
    request.prompt_param = shape.chat ? "messages" : "prompt";
    request.priority = options.priority;
    request.deadline = after(options.timeout_s.value_or(config.request_timeout_s));
    request.queue_deadline = after(config.queue_timeout_s);
    request.group_id = id;  // its prompts share one turn in the queue
    request.client_id = client_id;
    request.grammar = grammar;
    if (grammar) request.grammar_trigger = trigger;
    requests.push_back(std::move(request));
  }
  if (auto error = check_response_logprobs(requests, shape, model.engine().max_model_len(),
                                            config.max_response_logprobs))
    return error;
  std::vector<int64_t> num_prompt_tokens;
  for (const auto& request : requests) num_prompt_tokens.push_back(static_cast<int64_t>(request.prompt_tokens.size()));
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  engine::SubmitResult result = model.engine().submit_all(std::move(requests), streams);
  if (!result.ok()) return submit_error(result);
  for (size_t i = 0; i < streams.size(); ++i) job.add_part(std::move(streams[i]), num_prompt_tokens[i]);
  return std::nullopt;
}

asio::awaitable<void> answer_whole(Exchange& ex, GenerationJob& job, StreamPump& pump) {
  const StreamPump::Step fold = [&job]() -> asio::awaitable<bool> {
    job.fold_waiting(/*streaming=*/false);
    co_return job.is_done();
  };
  const bool complete = co_await pump.run(fold);
  if (!complete) {
    set_error(ex, {499, "The client closed the request.", "invalid_request_error", "", "client_closed"});
    co_return;
  }
  if (job.has_failed()) {
    set_error(ex, job.failure_error(ex.request_id));
    co_return;
  }
  if (job.is_timed_out_empty()) {
    set_timeout_error(ex, job.is_queue_timeout());
    co_return;
  }
  ex.response.result(http::status::ok);
  ex.response.set(http::field::content_type, "application/json");
  ex.response.body() = job.whole_body();
}

asio::awaitable<void> answer_stream(Exchange& ex, GenerationJob& job, StreamPump& pump) {
  ChunkedWriter writer(ex, "text/event-stream");
  const std::string opening = job.open_stream();
  bool ok = co_await writer.begin();
  if (ok) ok = co_await writer.send(opening);
  bool failed = false;
  const StreamPump::Step fold_and_send = [&]() -> asio::awaitable<bool> {
    const std::string events = job.fold_waiting(/*streaming=*/true);
    ok = co_await writer.send(events);
    failed = job.has_failed();
    co_return !ok || failed || job.is_done();
  };
  if (ok) co_await pump.run(fold_and_send);
  if (!ok || pump.is_client_gone()) co_return;  // nobody to tell
  if (failed) {
    pump.cancel_unfinished();  // the other choices stop before the error event goes out
    const std::string error_event = job.error_event(job.failure_error(ex.request_id));
    co_await writer.send(error_event);
    co_await writer.end();
    ex.keep_alive_after = false;
    co_return;
  }
  const std::string closing = job.close_stream();
  bool sent = co_await writer.send(closing);
  if (sent) co_await writer.end();
}

}  // namespace

asio::awaitable<void> generate(Exchange& ex, ModelService& model, GenerationJob& job,
                               const proto::GenerationOptions& options, std::vector<PreparedPrompt> prompts,
                               const ResponseShape& shape, const config::Config& config,
                               const OutputConstraint& constraint) {
  const uint64_t client_id = client_identity(ex.request, config);
  name_unenforced(ex, constraint);
  if (auto error = submit(job, model, options, std::move(prompts), shape, client_id, config, constraint.grammar,
                              constraint.trigger)) {
    set_error(ex, *error);
    co_return;
  }
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  for (JobPart& part : job.parts()) streams.push_back(part.stream);
  const bool streaming = options.stream && ex.connection;
  const StreamPump::Abort abort = engine_abort(model);
  const StreamPump::Answer answer = [&](StreamPump& pump) {
    return streaming ? answer_stream(ex, job, pump) : answer_whole(ex, job, pump);
  };
  co_await pump_streams(ex, streams, abort, answer);
}

void log_ignored(const Exchange& ex, const proto::GenerationOptions& options) {
  for (const std::string& field : options.ignored_fields)
    spdlog::debug("request {}: field '{}' accepted and ignored", ex.request_id, field);
}

}  // namespace sluice::server
