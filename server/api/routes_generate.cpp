// /v1/completions and /v1/chat/completions: parse (proto/), map to engine requests
// (one per prompt, n choices each), submit, then answer with one JSON body or an SSE
// stream assembled from the engine's events.
#include "server/api/routes_generate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/chat/jinja/template_error.h"
#include "proto/chat.h"
#include "proto/completion_body.h"
#include "proto/completions.h"
#include "proto/errors.h"
#include "proto/responses.h"
#include "proto/sse.h"
#include "server/http/chunked_writer.h"
#include "server/http/client_identity.h"
#include "server/api/response_budget.h"
#include "server/http/stream_watch.h"
#include "server/api/submit_error.h"
#include "server/api/text_fit.h"

namespace sluice::server {
namespace {

enum class Api { completions, chat };

// One engine request: one prompt and its n choices.
struct Part {
  std::shared_ptr<engine::RequestStream> stream;
  int32_t first_index = 0;  // response choice index of its choice 0
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;
  std::string echo;  // completions with echo: the prompt text
  // echo with logprobs: the prompt's scored tokens, the first one (nothing before
  // it: logprob null) included.
  std::vector<proto::TokenLogprob> prompt_logprobs;
  bool echo_sent = false;  // streaming: its echo chunks are out
};

// What one response choice has gathered so far.
struct Tally {
  std::string text;
  std::vector<proto::TokenLogprob> logprobs;
  int64_t num_chars_sent = 0;  // streaming: characters already sent (text_offset)
  int64_t num_tokens = 0;
  double cumulative_logprob = 0.0;  // best_of: the rank of the choice
  std::optional<std::string> finish_reason;
  std::string error;
  bool queue_timeout = false;  // timed out before admission: the queue was busy
};

struct Job {
  Api api = Api::completions;
  ModelService* model = nullptr;
  proto::ResponseHeader header;
  std::vector<Part> parts;
  std::vector<Tally> choices;
  bool want_logprobs = false;
  bool include_usage = false;
  bool continuous_usage = false;  // vLLM stream_options.continuous_usage_stats
  // Completions only. best_of > n: the engine generates best_of choices per prompt,
  // the answer has the n of highest cumulative log-probability.
  int32_t num_returned = 0;  // n, choices per prompt in the answer
  bool score_only = false;   // max_tokens 0 with echo: the one token generated is not shown
  uint64_t client_id = 0;    // who sent it, for fair queueing (client_identity.h)
};

// One prompt, ready for the engine.
struct PreparedPrompt {
  std::vector<int32_t> tokens;
  std::string echo;         // completions with echo: the prompt text
  int32_t first_token = 0;  // tokens[0], kept for echoed logprobs
};

void set_error(Response& response, const proto::ApiError& error) {
  response.result(static_cast<unsigned>(error.status));
  response.set(http::field::content_type, "application/json");
  response.body() = proto::error_body(error);
}

std::vector<proto::TokenLogprob> to_wire(const tokenizer::Tokenizer& tok,
                                         const std::vector<engine::TokenLogprobs>& in) {
  std::vector<proto::TokenLogprob> out;
  out.reserve(in.size());
  for (const auto& entry : in) {
    proto::TokenLogprob wire{tok.token_to_piece(entry.token), entry.logprob, {}};
    for (const auto& alt : entry.top) wire.top_logprobs.push_back({tok.token_to_piece(alt.token), alt.logprob});
    out.push_back(std::move(wire));
  }
  return out;
}

proto::Usage usage_of(const Job& job) {
  proto::Usage usage;
  for (const Part& part : job.parts) {
    usage.prompt_tokens += static_cast<int32_t>(part.num_prompt_tokens);
    usage.cached_tokens += static_cast<int32_t>(part.num_cached_tokens);
  }
  for (const Tally& choice : job.choices) usage.completion_tokens += static_cast<int32_t>(choice.num_tokens);
  return usage;
}

void cancel_all(Job& job) {
  for (Part& part : job.parts) {
    part.stream->cancel();
    job.model->engine().abort(part.stream->request_id());
  }
}

// Submits one engine request per prompt, all or nothing: the engine validates every
// prompt before it queues any, so a refusal of a later prompt aborts nothing. The
// choices are allocated only once the engine has taken them.
std::optional<proto::ApiError> submit(Job& job, const proto::GenerationOptions& options,
                                      std::vector<PreparedPrompt> prompts, const config::Config& config) {
  const auto now = engine::Clock::now();
  auto after = [&](double seconds) {
    return now + std::chrono::duration_cast<engine::Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const int32_t n = options.sampling.n;
  std::vector<engine::GenerationRequest> requests;
  requests.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine::GenerationRequest request;
    request.request_id = job.header.id + "-" + std::to_string(i);
    prompts[i].first_token = prompts[i].tokens.empty() ? 0 : prompts[i].tokens.front();
    request.prompt_tokens = std::move(prompts[i].tokens);
    // A copy of the params with the model's defaults filled in (logit_bias is shared, not copied).
    request.params = engine::apply_generation_defaults(
        job.model->generation_defaults(), options.given, options.sampling,
        static_cast<int64_t>(request.prompt_tokens.size()), job.model->engine().max_model_len());
    request.stop = options.stop;
    request.stop_token_ids = options.stop_token_ids;
    request.include_stop_str_in_output = options.include_stop_str_in_output;
    request.skip_special_tokens = options.skip_special_tokens;
    request.prompt_param = job.api == Api::chat ? "messages" : "prompt";
    request.priority = options.priority;
    request.deadline = after(options.timeout_s.value_or(config.request_timeout_s));
    request.queue_deadline = after(config.queue_timeout_s);
    request.group_id = job.header.id;  // its prompts share one turn in the queue
    request.client_id = job.client_id;
    requests.push_back(std::move(request));
  }
  const ResponseShape shape{.chat = job.api == Api::chat, .streaming = options.stream, .want_logprobs = job.want_logprobs,
                            .score_only = job.score_only, .num_returned = job.num_returned};
  if (auto error = check_response_logprobs(requests, shape, job.model->engine().max_model_len(),
                                            config.max_response_logprobs))
    return error;
  std::vector<int64_t> num_prompt_tokens;
  for (const auto& request : requests) num_prompt_tokens.push_back(static_cast<int64_t>(request.prompt_tokens.size()));
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  engine::SubmitResult result = job.model->engine().submit_all(std::move(requests), streams);
  if (!result.ok()) return submit_error(result);
  for (size_t i = 0; i < streams.size(); ++i) {
    job.parts.push_back(Part{std::move(streams[i]), static_cast<int32_t>(i) * n, num_prompt_tokens[i], 0,
                             std::move(prompts[i].echo), {}, false});
    if (options.sampling.prompt_logprobs)
      job.parts.back().prompt_logprobs.push_back({job.model->tokenizer().token_to_piece(prompts[i].first_token),
                                                  std::nullopt, {}});
  }
  job.choices.resize(job.parts.size() * static_cast<size_t>(n));
  return std::nullopt;
}

// One streamed chunk; with continuous usage stats it carries the usage so far.
std::string chunk_event(const Job& job, nlohmann::ordered_json chunk) {
  if (job.continuous_usage) chunk["usage"] = proto::usage_object(usage_of(job));
  return proto::sse_event(chunk);
}

// Streamed echo: one chunk per choice of the part with the prompt text. With
// logprobs it waits until the engine has scored the whole prompt, so that the
// prompt's entries ride along; before any of the choices' own chunks either way.
std::string echo_chunks(Job& job, Part& part) {
  if (part.echo_sent || part.echo.empty()) return {};
  const bool scoring = !part.prompt_logprobs.empty();
  if (scoring && static_cast<int64_t>(part.prompt_logprobs.size()) < part.num_prompt_tokens) return {};
  part.echo_sent = true;
  const proto::LogprobsText prompt_text = proto::render_logprobs(part.prompt_logprobs, 0);  // once for all choices
  std::string out;
  for (int32_t k = 0; k < part.stream->num_choices(); ++k) {
    const int32_t index = part.first_index + k;
    const proto::CompletionChoiceText choice{
        .index = index, .text = part.echo, .has_logprobs = job.want_logprobs, .shared = &prompt_text};
    std::optional<std::string> usage;
    if (job.continuous_usage) usage = proto::dump_json(proto::usage_object(usage_of(job)));
    else if (job.include_usage) usage = "null";
    out += "data: " + proto::completion_chunk_text(job.header, choice, usage) + "\n\n";
    job.choices[static_cast<size_t>(index)].num_chars_sent = proto::num_chars(part.echo);
  }
  return out;
}

// Applies one event to its tally; returns the SSE text it contributes when streaming.
std::string apply(Job& job, Part& part, engine::RequestEvent& event, bool streaming) {
  const tokenizer::Tokenizer& tok = job.model->tokenizer();
  std::string out;
  if (auto* delta = std::get_if<engine::ChoiceDelta>(&event)) {
    const int32_t index = part.first_index + delta->index;
    Tally& tally = job.choices.at(static_cast<size_t>(index));
    if (!delta->prompt_logprobs.empty()) {
      auto scored = to_wire(tok, delta->prompt_logprobs);
      part.prompt_logprobs.insert(part.prompt_logprobs.end(), scored.begin(), scored.end());
      if (streaming) out += echo_chunks(job, part);  // once the whole prompt is scored
    }
    if (job.score_only) return out;  // the token generated only to finish the request
    for (const auto& entry : delta->logprobs) tally.cumulative_logprob += entry.logprob;
    tally.text += delta->text;
    tally.num_tokens += static_cast<int64_t>(delta->token_ids.size());
    std::vector<proto::TokenLogprob> logprobs;
    if (job.want_logprobs) logprobs = to_wire(tok, delta->logprobs);
    if (!streaming) {
      tally.logprobs.insert(tally.logprobs.end(), logprobs.begin(), logprobs.end());
      return out;
    }
    if (delta->text.empty() && logprobs.empty()) return out;
    if (job.api == Api::completions) {
      proto::CompletionChoice choice{index, delta->text, std::nullopt, tally.num_chars_sent, std::nullopt};
      if (job.want_logprobs) choice.logprobs = std::move(logprobs);
      out += chunk_event(job, proto::completion_chunk(job.header, choice, job.include_usage));
    } else {
      out += chunk_event(job, proto::chat_content_chunk(job.header, index, delta->text,
                                                       job.want_logprobs ? &logprobs : nullptr,
                                                       job.include_usage));
    }
    tally.num_chars_sent += proto::num_chars(delta->text);
    return out;
  }
  auto& finish = std::get<engine::ChoiceFinish>(event);
  const int32_t index = part.first_index + finish.index;
  Tally& tally = job.choices.at(static_cast<size_t>(index));
  tally.num_tokens = job.score_only ? 0 : finish.num_completion_tokens;
  tally.finish_reason = std::string(job.score_only ? "length" : finish.finish_reason());
  tally.error = finish.error;
  tally.queue_timeout = finish.queue_timeout;
  part.num_cached_tokens = std::max(part.num_cached_tokens, finish.num_cached_tokens);
  // A failed choice ends the whole response with an error instead. A deadline is
  // not a failure: the choice ends with what it generated, finish_reason "timeout".
  if (!streaming || finish.reason == engine::FinishReason::error) return out;
  if (job.api == Api::completions) {
    proto::CompletionChoice choice{index, "", std::nullopt, tally.num_chars_sent, tally.finish_reason};
    if (job.want_logprobs) choice.logprobs = std::vector<proto::TokenLogprob>{};
    out += chunk_event(job, proto::completion_chunk(job.header, choice, job.include_usage));
  } else {
    out += chunk_event(job, proto::chat_finish_chunk(job.header, index, *tally.finish_reason, job.include_usage));
  }
  return out;
}

bool is_done(const Job& job) {
  for (const Part& part : job.parts) {
    if (!part.stream->is_done()) return false;
  }
  return true;
}

const Tally* failed_choice(const Job& job) {
  for (const Tally& choice : job.choices) {
    if (choice.finish_reason == "error") return &choice;
  }
  return nullptr;
}

// True when the deadline ended every choice before any token: there is nothing to
// answer with, so the whole request fails.
bool timed_out_empty(const Job& job) {
  for (const Tally& choice : job.choices) {
    if (choice.finish_reason != "timeout" || choice.num_tokens > 0) return false;
  }
  return !job.choices.empty();
}

// What the client is told about a failed choice: only the request id.
proto::ApiError failure_error(const Tally& failed, const std::string& request_id) {
  spdlog::error("request {}: generation failed: {}", request_id, failed.error);
  return proto::internal_error(request_id);
}

asio::awaitable<void> answer_whole(Exchange& ex, Job& job, StreamWatch& watch) {
  while (!is_done(job) && !watch.is_client_gone()) {
    for (Part& part : job.parts) {
      while (auto event = part.stream->try_pop()) apply(job, part, *event, /*streaming=*/false);
    }
    if (!is_done(job)) co_await watch.wait();
  }
  if (watch.is_client_gone()) {
    cancel_all(job);
    set_error(ex.response, {499, "The client closed the request.", "invalid_request_error", "", "client_closed"});
    co_return;
  }
  if (const Tally* failed = failed_choice(job)) {
    set_error(ex.response, failure_error(*failed, ex.request_id));
    co_return;
  }
  if (timed_out_empty(job)) {
    set_timeout_error(ex.response, std::ranges::any_of(job.choices, [](const Tally& t) { return t.queue_timeout; }));
    co_return;
  }
  std::string body;
  if (job.api == Api::completions) {
    // Written as text: each prompt's scored entries are rendered once, not per choice.
    std::vector<proto::LogprobsText> prompt_texts;
    for (const Part& part : job.parts) prompt_texts.push_back(proto::render_logprobs(part.prompt_logprobs, 0));
    std::vector<proto::CompletionChoiceText> choices;
    const auto generated = static_cast<size_t>(job.parts.front().stream->num_choices());
    const auto returned = static_cast<size_t>(job.num_returned);
    for (size_t p = 0; p < job.parts.size(); ++p) {
      Part& part = job.parts[p];
      std::vector<size_t> ranked(generated);
      for (size_t k = 0; k < generated; ++k) ranked[k] = p * generated + k;
      // best_of: the n of highest cumulative log-probability, best first.
      if (returned < generated) {
        std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
          return job.choices[a].cumulative_logprob > job.choices[b].cumulative_logprob;
        });
        ranked.resize(returned);
      }
      for (size_t k = 0; k < ranked.size(); ++k) {
        const Tally& tally = job.choices[ranked[k]];
        choices.push_back({.index = static_cast<int32_t>(p * returned + k), .echo = part.echo, .text = tally.text,
                           .has_logprobs = job.want_logprobs, .shared = &prompt_texts[p], .entries = tally.logprobs,
                           .finish_reason = tally.finish_reason});
      }
    }
    body = proto::completion_body(job.header, choices, usage_of(job));
  } else {
    std::vector<proto::ChatChoice> choices;
    for (size_t i = 0; i < job.choices.size(); ++i) {
      Tally& tally = job.choices[i];
      proto::ChatChoice choice{static_cast<int32_t>(i), tally.text, std::nullopt, tally.finish_reason};
      if (job.want_logprobs) choice.logprobs = std::move(tally.logprobs);
      choices.push_back(std::move(choice));
    }
    body = proto::dump_json(proto::chat_completion_object(job.header, choices, usage_of(job)));
  }
  ex.response.result(http::status::ok);
  ex.response.set(http::field::content_type, "application/json");
  ex.response.body() = std::move(body);
}

asio::awaitable<void> answer_stream(Exchange& ex, Job& job, StreamWatch& watch) {
  ChunkedWriter writer(ex, "text/event-stream");
  std::string opening;
  for (size_t i = 0; i < job.choices.size(); ++i) {
    const auto index = static_cast<int32_t>(i);
    if (job.api == Api::chat) {
      opening += chunk_event(job, proto::chat_role_chunk(job.header, index, job.include_usage));
      continue;
    }
    Part& part = job.parts[i / static_cast<size_t>(job.parts.front().stream->num_choices())];
    opening += echo_chunks(job, part);
  }
  bool ok = co_await writer.begin();
  if (ok) ok = co_await writer.send(opening);
  const Tally* failed = nullptr;
  while (ok && !is_done(job) && !watch.is_client_gone()) {
    std::string events;
    for (Part& part : job.parts) {
      while (auto event = part.stream->try_pop()) events += apply(job, part, *event, /*streaming=*/true);
    }
    ok = co_await writer.send(events);
    if ((failed = failed_choice(job))) break;
    if (ok && !is_done(job)) co_await watch.wait();
  }
  if (!ok || watch.is_client_gone() || failed) cancel_all(job);
  if (!ok || watch.is_client_gone()) co_return;  // nobody to tell
  if (failed) {
    const std::string error_event = proto::sse_error(failure_error(*failed, ex.request_id));
    co_await writer.send(error_event);
    co_await writer.end();
    ex.keep_alive_after = false;
    co_return;
  }
  std::string closing;
  if (job.include_usage) {
    closing += proto::sse_event(job.api == Api::completions
                                    ? proto::completion_usage_chunk(job.header, usage_of(job))
                                    : proto::chat_usage_chunk(job.header, usage_of(job)));
  }
  closing += proto::sse_done();
  bool sent = co_await writer.send(closing);
  if (sent) co_await writer.end();
}

// Everything after parsing, shared by both APIs.
asio::awaitable<void> generate(Exchange& ex, Job& job, const proto::GenerationOptions& options,
                               std::vector<PreparedPrompt> prompts, const config::Config& config) {
  job.client_id = client_identity(ex.request, config);
  if (auto error = submit(job, options, std::move(prompts), config)) {
    set_error(ex.response, *error);
    co_return;
  }
  StreamWatch watch(co_await asio::this_coro::executor, ex.connection);
  for (Part& part : job.parts) watch.attach(*part.stream);
  std::exception_ptr failure;
  try {
    if (options.stream && ex.connection) {
      co_await answer_stream(ex, job, watch);
    } else {
      co_await answer_whole(ex, job, watch);
    }
  } catch (...) {
    failure = std::current_exception();
    cancel_all(job);
  }
  co_await watch.finish();
  if (failure) std::rethrow_exception(failure);
}

// The model a request names, or the error: 400 for a speech model, 503 while models
// are still loading, 404 once they are all in.
ModelService* find_model(Exchange& ex, const ModelServices& services, const std::string& name) {
  ModelService* model = services.find(name);
  if (!model && services.find_speech(name)) {
    set_error(ex.response, proto::invalid_request("The model '" + name + "' is a speech model: use /v1/audio/speech.",
                                                  "model"));
  } else if (!model) {
    set_error(ex.response, services.all_loaded() ? proto::model_not_found(name)
                                                 : proto::not_ready("Models are still loading"));
  }
  return model;
}

std::optional<proto::ApiError> check_timeout(const proto::GenerationOptions& options,
                                             const config::Config& config) {
  if (options.timeout_s && *options.timeout_s > config.max_request_timeout_s) {
    return proto::invalid_request("'timeout' must be at most " +
                                      nlohmann::json(config.max_request_timeout_s).dump() + " seconds.",
                                  "timeout");
  }
  return std::nullopt;
}

proto::ParseOptions parse_options(const config::Config& config) {
  return {.strict_fields = config.strict_request_fields, .allow_priority = config.allow_priority};
}

void log_ignored(const Exchange& ex, const proto::GenerationOptions& options) {
  for (const std::string& field : options.ignored_fields)
    spdlog::debug("request {}: field '{}' accepted and ignored", ex.request_id, field);
}

asio::awaitable<void> handle_completions(Exchange& ex, const ModelServices& services,
                                         const config::Config& config, PrepPool& prep) {
  // Parsing a body of megabytes costs milliseconds: off the I/O thread too.
  auto parsed_or_busy = co_await prep.run([&] { return proto::parse_completion_request(ex.request.body(), parse_options(config)); });
  if (!parsed_or_busy) {
    set_error(ex.response, prep_pool_full(prep));
    co_return;
  }
  auto& parsed = *parsed_or_busy;
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) {
    set_error(ex.response, *error);
    co_return;
  }
  auto& request = std::get<proto::CompletionRequest>(parsed);
  log_ignored(ex, request);
  if (auto error = check_timeout(request, config)) {
    set_error(ex.response, *error);
    co_return;
  }
  Job job;
  job.num_returned = request.sampling.n;
  job.want_logprobs = request.sampling.logprobs.has_value();
  if (request.echo && request.sampling.logprobs) {
    request.sampling.prompt_logprobs = request.sampling.logprobs;  // score the echoed prompt too
  }
  if (request.sampling.max_tokens == 0) {  // echo only (checked by the parser): score the prompt
    job.score_only = true;
    request.sampling.max_tokens = 1;  // the engine generates at least one token; it is not shown
  }
  if (request.best_of > request.sampling.n) {
    request.sampling.n = request.best_of;
    if (!request.sampling.logprobs) request.sampling.logprobs = 0;  // the ranking needs each token's logprob
  }
  job.model = find_model(ex, services, request.model);
  if (!job.model) co_return;
  const tokenizer::Tokenizer& tok = job.model->tokenizer();
  const bool add_special = request.add_special_tokens.value_or(true);
  for (const proto::Prompt& prompt : request.prompts) {
    const auto* text = std::get_if<std::string>(&prompt);
    if (!text) continue;
    if (auto error = text_too_long(job.model->max_model_len(), job.model->token_bound().min_tokens(*text), text->size(), "prompt")) {
      set_error(ex.response, *error);
      co_return;
    }
  }
  auto tokenized = co_await prep.run([&] {
    std::vector<PreparedPrompt> prompts;
    prompts.reserve(request.prompts.size());
    for (const proto::Prompt& prompt : request.prompts) {
      PreparedPrompt prepared;
      if (const auto* text = std::get_if<std::string>(&prompt)) {
        prepared.tokens = tok.encode(*text, add_special, /*parse_special=*/true);
        if (request.echo) prepared.echo = *text;
      } else {
        prepared.tokens = std::get<std::vector<int32_t>>(prompt);
        if (request.echo) prepared.echo = tok.decode(prepared.tokens, /*skip_special=*/false);
      }
      prompts.push_back(std::move(prepared));
    }
    return prompts;
  });
  if (!tokenized) {
    set_error(ex.response, prep_pool_full(prep));
    co_return;
  }
  std::vector<PreparedPrompt> prompts = std::move(*tokenized);
  job.api = Api::completions;
  job.header = {proto::new_completion_id(), proto::unix_now(), request.model};
  job.include_usage = request.include_usage;
  job.continuous_usage = request.continuous_usage_stats;
  co_await generate(ex, job, request, std::move(prompts), config);
}

asio::awaitable<void> handle_chat(Exchange& ex, const ModelServices& services, const config::Config& config,
                                  PrepPool& prep) {
  // Parsing a body of megabytes costs milliseconds: off the I/O thread too.
  auto parsed_or_busy = co_await prep.run([&] { return proto::parse_chat_request(ex.request.body(), parse_options(config)); });
  if (!parsed_or_busy) {
    set_error(ex.response, prep_pool_full(prep));
    co_return;
  }
  auto& parsed = *parsed_or_busy;
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) {
    set_error(ex.response, *error);
    co_return;
  }
  auto& request = std::get<proto::ChatRequest>(parsed);
  log_ignored(ex, request);
  if (auto error = check_timeout(request, config)) {
    set_error(ex.response, *error);
    co_return;
  }
  Job job;
  job.model = find_model(ex, services, request.model);
  if (!job.model) co_return;
  if (!job.model->has_chat_template()) {
    set_error(ex.response, proto::invalid_request("The model '" + request.model +
                                                      "' has no chat template; use /v1/completions.",
                                                  "model"));
    co_return;
  }
  size_t num_content_bytes = 0;  // the rendered prompt holds at least the contents
  for (const proto::ChatMessage& message : request.messages) num_content_bytes += message.content.size();
  const int64_t min_tokens = job.model->token_bound().min_tokens_of_bytes(num_content_bytes);
  if (auto error = text_too_long(job.model->max_model_len(), min_tokens, num_content_bytes, "messages")) {
    set_error(ex.response, *error);
    co_return;
  }
  std::optional<std::vector<int32_t>> tokens;
  try {
    tokens = co_await prep.run([&] {
      const std::string text =
          job.model->render_chat(request.messages, /*add_generation_prompt=*/true, request.chat_template_kwargs);
      // The template writes the special tokens itself (vLLM's default: no BOS added).
      return job.model->tokenizer().encode(text, request.add_special_tokens.value_or(false),
                                           /*parse_special=*/true);
    });
  } catch (const chat::TemplateError& e) {
    set_error(ex.response, proto::invalid_request(std::string("The chat template rejected the messages: ") +
                                                      e.what(), "messages"));
    co_return;
  }
  if (!tokens) {
    set_error(ex.response, prep_pool_full(prep));
    co_return;
  }
  std::vector<PreparedPrompt> prompts(1);
  prompts[0].tokens = std::move(*tokens);
  job.api = Api::chat;
  job.header = {proto::new_chat_completion_id(), proto::unix_now(), request.model};
  job.want_logprobs = request.sampling.logprobs.has_value();
  job.include_usage = request.include_usage;
  job.continuous_usage = request.continuous_usage_stats;
  job.num_returned = request.sampling.n;
  co_await generate(ex, job, request, std::move(prompts), config);
}

}  // namespace

void add_generation_routes(Router& router, const ModelServices& services, const config::Config& config,
                           PrepPool& prep) {
  router.add(http::verb::post, "/v1/completions", [&services, &config, &prep](Exchange& ex) {
    return handle_completions(ex, services, config, prep);
  });
  router.add(http::verb::post, "/v1/chat/completions", [&services, &config, &prep](Exchange& ex) {
    return handle_chat(ex, services, config, prep);
  });
}

}  // namespace sluice::server
