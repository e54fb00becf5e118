#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <stdexcept>
#include <utility>

#include "backends/errors.h"
#include "engine/engine_internal.h"

namespace sluice::engine {

namespace {

constexpr const char* kDeathPrefix = "the engine thread stopped: ";

SubmitResult rejected(std::string message, std::string param) { return submit_rejected(std::move(message), std::move(param)); }

}  // namespace

int64_t prefill_cap_while_decoding(int64_t configured, backends::DeviceKind device) {
  if (configured >= 0) return configured;
  return device == backends::DeviceKind::cpu ? 32 : 256;
}

bool paces_prefill(int64_t configured, backends::DeviceKind device) {
  return configured < 0 && device == backends::DeviceKind::cpu;
}

Engine::Engine(Model& model, const tokenizer::Tokenizer& tokenizer, EngineConfig config, EngineObserver* observer)
    : model_(model), tokenizer_(tokenizer), config_(std::move(config)), observer_(observer), shell_(config_.max_waiting) {
  const ModelHparams& hp = model_.hparams();
  if (config_.block_size <= 0 || config_.max_num_seqs <= 0 || config_.max_num_batched_tokens <= 0 ||
      config_.max_waiting < 0 || config_.max_waiting_per_request < 0 || config_.max_n <= 0)
    throw std::invalid_argument("engine limits must be positive");
  max_model_len_ = config_.max_model_len > 0 ? config_.max_model_len : hp.context_length;
  if (max_model_len_ <= 0) max_model_len_ = 4096;

  const uint64_t per_block = KvCache::bytes_per_block(hp, config_.block_size, config_.kv_dtype);
  const uint64_t budget = config_.kv_cache_bytes > 0 ? config_.kv_cache_bytes
                                                     : automatic_kv_budget(hp, config_, model_.backend().device(),
                                                                           model_.backend().memory_info());
  const uint64_t blocks = per_block == 0 ? 0 : budget / per_block;
  if (blocks == 0)
    throw std::invalid_argument("kv_cache_bytes (" + std::to_string(budget) +
                                (config_.kv_cache_bytes > 0 ? "" : ", automatic") + ") holds no KV block of " +
                                std::to_string(per_block) + " bytes");
  num_blocks_ = static_cast<int32_t>(std::min<uint64_t>(blocks, std::numeric_limits<int32_t>::max() / 2));
  kv_bytes_ = per_block * static_cast<uint64_t>(num_blocks_);
  // One sequence must fit in the pool (vLLM refuses to start otherwise). An explicit
  // max_model_len that does not fit is an operator error; the automatic one shrinks.
  const int64_t kv_tokens = static_cast<int64_t>(num_blocks_) * config_.block_size;
  if (max_model_len_ > kv_tokens) {
    if (config_.max_model_len > 0)
      throw std::invalid_argument(
          "engine " + config_.model_name + ": context_length " + std::to_string(max_model_len_) +
          " does not fit the KV cache (" + std::to_string(kv_tokens) +
          " tokens); raise kv_cache_bytes (--kv-cache-bytes) or lower context_length (--context-length, or the "
          "model entry's context_length)");
    spdlog::warn("engine {}: the KV cache holds {} tokens, less than the model's context of {}; serving a context "
                 "of {} tokens (set context_length / --context-length to choose, kv_cache_bytes / "
                 "--kv-cache-bytes to make room)",
                 config_.model_name, kv_tokens, max_model_len_, kv_tokens);
    max_model_len_ = kv_tokens;
  }

  try {
    runner_ = std::make_unique<ModelRunner>(model_, num_blocks_, config_.block_size, config_.kv_dtype);
  } catch (const backends::OutOfMemoryError& e) {
    // The partial cache is freed by now, so free memory is what a smaller pool gets.
    const uint64_t free_bytes = model_.backend().memory_info().free_bytes;
    const uint64_t fit = free_bytes / per_block * 9 / 10;  // leave room for activations
    throw std::runtime_error(fmt::format(
        "engine {}: the KV cache of {} blocks ({:.1f} MiB) does not fit on {} ({}); about {} blocks ({} tokens) "
        "would fit: set kv_cache_bytes to at most {}",
        config_.model_name, num_blocks_, static_cast<double>(kv_bytes_) / (1 << 20), model_.backend().name(),
        e.what(), fit, fit * static_cast<uint64_t>(config_.block_size), fit * per_block));
  }
  // The largest step's activations now, not at the first long prompt: an
  // out-of-memory shows at start, and the workspace never grows past what the KV
  // budget held back for it.
  try {
    model_.reserve_workspace(config_.max_num_batched_tokens,
                             std::min<int64_t>(config_.max_num_seqs, config_.max_num_batched_tokens));
  } catch (const backends::OutOfMemoryError& e) {
    throw std::runtime_error(fmt::format(
        "engine {}: the activations of a step of {} tokens do not fit on {} after the KV cache ({}): lower "
        "max_num_batched_tokens (--max-num-batched-tokens), max_num_seqs or kv_cache_bytes",
        config_.model_name, config_.max_num_batched_tokens, model_.backend().name(), e.what()));
  }
  SchedulerConfig sc;
  sc.max_num_batched_tokens = config_.max_num_batched_tokens;
  sc.max_num_seqs = config_.max_num_seqs;
  sc.max_waiting = std::numeric_limits<int32_t>::max() / 2;  // submit() enforces max_waiting
  sc.long_prefill_token_threshold = config_.long_prefill_token_threshold;
  sc.max_prefill_tokens_while_decoding =
      prefill_cap_while_decoding(config_.max_prefill_tokens_while_decoding, model_.backend().device());
  sc.max_model_len = max_model_len_;
  sc.kv = BlockPoolConfig{.num_blocks = num_blocks_, .block_size = config_.block_size,
                          .enable_prefix_caching = config_.enable_prefix_caching};
  scheduler_ = std::make_unique<Scheduler>(sc);
  if (paces_prefill(config_.max_prefill_tokens_while_decoding, model_.backend().device()))
    prefill_pacer_.emplace(sc.max_prefill_tokens_while_decoding, kMinPacedPrefillTokens, sc.max_num_batched_tokens);
  if (config_.kv_events != nullptr) scheduler_->record_kv_events(&kv_event_log_);
  // One sampler (scratch sized to the vocabulary) per host thread that samples rows;
  // in the device's draw order where the device samples (sampler.h: DrawOrder).
  const int num_samplers = std::max(1, model_.backend().host_threads());
  const DrawOrder draw_order = runner_->samples_on_device() ? DrawOrder::by_id : DrawOrder::descending;
  for (int i = 0; i < num_samplers; ++i)
    samplers_.push_back(std::make_unique<Sampler>(static_cast<int32_t>(hp.vocab_size), draw_order));
  masks_.resize(samplers_.size());
  histories_.resize(samplers_.size());
  const SpeculativeConfig& spec = config_.speculative;
  if (spec.enabled()) {
    if (spec.prompt_lookup_min < 1 || spec.prompt_lookup_max < spec.prompt_lookup_min)
      throw std::invalid_argument("speculative: need 1 <= prompt_lookup_min <= prompt_lookup_max");
    speculation_stats_.num_accepted_tokens_per_pos.assign(static_cast<size_t>(spec.num_speculative_tokens), 0);
    if (spec.method == SpeculativeMethod::draft_model) {
      start_draft_model(spec);
    } else {
      drafter_ = make_drafter(spec);
      spdlog::info("engine {}: speculative decoding: ngram, {} tokens per step (lookup {}..{}), off above {} "
                   "decoding sequences",
                   config_.model_name, spec.num_speculative_tokens, spec.prompt_lookup_min, spec.prompt_lookup_max,
                   spec.disable_by_batch_size);
    }
  }

  spdlog::info("engine {}: KV cache {} blocks x {} tokens = {} tokens, {:.1f} MiB ({} bytes/block, {}), "
               "max_model_len {}, max_num_seqs {}, max_num_batched_tokens {}",
               config_.model_name, num_blocks_, config_.block_size,
               static_cast<int64_t>(num_blocks_) * config_.block_size, static_cast<double>(kv_bytes_) / (1 << 20),
               per_block, config_.kv_dtype == backends::DType::F32 ? "f32" : "f16", max_model_len_,
               config_.max_num_seqs, config_.max_num_batched_tokens);
  publish_stats(nullptr);
}

// The draft model's cache holds what the drafting sequences need: at most
// disable_by_batch_size of them (no more draft in one step), each up to the context
// and its drafts, and never more tokens than the target's pool plus their drafts.
void Engine::start_draft_model(const SpeculativeConfig& spec) {
  if (spec.draft_model == nullptr) throw std::invalid_argument("speculative: draft_model needs its model");
  if (&spec.draft_model->backend() != &model_.backend())
    throw std::invalid_argument("speculative: the draft model must run on the target's backend");
  const int64_t rows = std::min<int64_t>(spec.disable_by_batch_size, config_.max_num_seqs);
  const int64_t block = config_.block_size;
  const int64_t per_sequence = (max_model_len_ + spec.num_speculative_tokens + block - 1) / block;
  const int64_t draft_slack = rows * ((spec.num_speculative_tokens + block - 1) / block + 1);
  const DraftModelSetup setup{.target_vocab_size = model_.hparams().vocab_size,
                              .num_blocks = std::min(rows * per_sequence, num_blocks_ + draft_slack),
                              .block_size = block,
                              .kv_dtype = config_.kv_dtype,
                              .max_chunk_tokens = std::min<int64_t>(config_.max_num_batched_tokens, 512),
                              .max_rows = rows};
  try {
    drafter_ = make_drafter(spec, setup);
  } catch (const backends::OutOfMemoryError& e) {
    throw std::runtime_error(fmt::format("engine {}: the draft model's KV cache of {} blocks does not fit on {} ({})",
                                         config_.model_name, setup.num_blocks, model_.backend().name(), e.what()));
  }
  const uint64_t draft_kv =
      KvCache::bytes_per_block(spec.draft_model->hparams(), block, config_.kv_dtype) * static_cast<uint64_t>(setup.num_blocks);
  spdlog::info("engine {}: speculative decoding: draft model ({} layers, vocabulary {}), {} tokens per step, off "
               "above {} decoding sequences; its KV cache {} blocks, {:.1f} MiB",
               config_.model_name, spec.draft_model->hparams().num_layers, spec.draft_model->hparams().vocab_size,
               spec.num_speculative_tokens, spec.disable_by_batch_size, setup.num_blocks,
               static_cast<double>(draft_kv) / (1 << 20));
}

Engine::~Engine() { stop(); }

uint64_t automatic_kv_budget(const ModelHparams& hp, const EngineConfig& config, backends::DeviceKind device,
                             const backends::MemoryInfo& memory) {
  if (device == backends::DeviceKind::cpu) return 256ull << 20;
  const auto tokens = static_cast<uint64_t>(std::max<int64_t>(config.max_num_batched_tokens, 256));
  const auto width = static_cast<uint64_t>(3 * hp.embedding_length + 2 * hp.num_heads * hp.head_dim +
                                           2 * hp.num_kv_heads * hp.head_dim + 2 * hp.ffn_length);
  const uint64_t logit_rows = std::max<uint64_t>(static_cast<uint64_t>(config.max_num_seqs), 256);
  const uint64_t reserve =
      2 * 4 * (tokens * width + logit_rows * static_cast<uint64_t>(hp.vocab_size)) + (1ull << 30);
  const uint64_t held_back = memory.total_bytes / 10 + reserve;
  return memory.free_bytes > held_back ? memory.free_bytes - held_back : 0;
}

void Engine::start() {
  shell_.start([this] { loop_steps(); shutdown(); }, kDeathPrefix,
               [this](const std::string& reason, std::vector<InboxItem> queued) { die(reason, std::move(queued)); });
}

void Engine::stop() {
  if (shell_.stop()) return;
  // Never started: whatever was submitted still gets its "abort", on this thread.
  drain_inbox();
  if (!active_.empty()) shutdown();
}

std::optional<SubmitResult> Engine::validate(const GenerationRequest& request) const {
  const SamplingParams& p = request.params;
  const auto num_prompt = static_cast<int64_t>(request.prompt_tokens.size());
  const std::string& prompt_param = request.prompt_param;
  if (request.request_id.empty()) return rejected("the request needs an id", "request_id");
  if (num_prompt == 0) return rejected("the prompt is empty", prompt_param);
  const int64_t vocab = model_.hparams().vocab_size;
  const auto outside = [&](int32_t id) { return id < 0 || id >= vocab; };
  for (int32_t id : request.prompt_tokens)
    if (outside(id))
      return rejected("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab) + ")",
                      prompt_param);
  if (request.embed) return validate_embedding(request);
  if (p.n < 1 || p.n > config_.max_n)
    return rejected("n must be between 1 and " + std::to_string(config_.max_n), "n");
  if (request.stop.size() > kMaxStopStrings)
    return rejected("at most " + std::to_string(kMaxStopStrings) + " stop sequences are allowed", "stop");
  if (p.logit_bias) {
    if (p.logit_bias->size() > kMaxLogitBias)
      return rejected("logit_bias may hold at most " + std::to_string(kMaxLogitBias) + " entries", "logit_bias");
    for (const auto& [id, bias] : *p.logit_bias)
      if (outside(id))
        return rejected("logit_bias names token id " + std::to_string(id) + ", outside the vocabulary (0 to " +
                            std::to_string(vocab - 1) + ")",
                        "logit_bias");
  }
  if (request.stop_token_ids.size() > kMaxStopTokenIds)
    return rejected("at most " + std::to_string(kMaxStopTokenIds) + " stop_token_ids are allowed", "stop_token_ids");
  for (int32_t id : request.stop_token_ids)
    if (outside(id))
      return rejected("stop_token_ids names token id " + std::to_string(id) + ", outside the vocabulary (0 to " +
                          std::to_string(vocab - 1) + ")",
                      "stop_token_ids");
  if (p.logprobs && (*p.logprobs < 0 || *p.logprobs > config_.max_logprobs))
    return rejected("logprobs must be between 0 and " + std::to_string(config_.max_logprobs), "logprobs");
  if (p.prompt_logprobs && (*p.prompt_logprobs < 0 || *p.prompt_logprobs > config_.max_logprobs))
    return rejected("prompt_logprobs must be between 0 and " + std::to_string(config_.max_logprobs), "logprobs");
  if (p.max_tokens && *p.max_tokens < 1) return rejected("max_tokens must be at least 1", "max_tokens");
  if (p.min_tokens < 0 || (p.max_tokens && p.min_tokens > *p.max_tokens))
    return rejected("min_tokens must be between 0 and max_tokens", "min_tokens");
  const std::string what = prompt_param == "messages" ? "messages" : "prompt";
  if (num_prompt >= max_model_len_) {
    SubmitResult r = rejected("This model's maximum context length is " + std::to_string(max_model_len_) +
                                  " tokens. However, your " + what + " has " + std::to_string(num_prompt) +
                                  " tokens. Please reduce the length of the " + what + ".",
                              prompt_param);
    r.code = "context_length_exceeded";
    return r;
  }
  if (p.max_tokens && num_prompt + *p.max_tokens > max_model_len_) {
    SubmitResult r = rejected("This model's maximum context length is " + std::to_string(max_model_len_) +
                                  " tokens. However, you requested " + std::to_string(num_prompt + *p.max_tokens) +
                                  " tokens (" + std::to_string(num_prompt) + " in the " + what + ", " +
                                  std::to_string(*p.max_tokens) + " in the completion). Please reduce the length of "
                                  "the " + what + " or completion.",
                              "max_tokens");
    r.code = "context_length_exceeded";
    return r;
  }
  const int64_t num_output = p.max_tokens ? *p.max_tokens : max_model_len_ - num_prompt;
  const int64_t num_kv_tokens = num_prompt + num_output - 1;  // the last token never enters the cache
  const int64_t num_blocks = (num_kv_tokens + config_.block_size - 1) / config_.block_size;
  if (num_blocks > num_blocks_)
    return rejected("the request needs " + std::to_string(num_kv_tokens) + " tokens of KV cache but the cache holds " +
                        std::to_string(static_cast<int64_t>(num_blocks_) * config_.block_size) +
                        "; lower max_tokens",
                    "max_tokens");
  return std::nullopt;
}

// An embedding is prefill only: the input may fill the whole context, and nothing of
// sampling applies.
std::optional<SubmitResult> Engine::validate_embedding(const GenerationRequest& request) const {
  const auto num_prompt = static_cast<int64_t>(request.prompt_tokens.size());
  if (request.params.n != 1) return rejected("an embedding request has one choice", "n");
  if (request.grammar || request.params.prompt_logprobs)
    return rejected("an embedding request samples nothing", request.prompt_param);
  if (num_prompt > max_model_len_) {
    SubmitResult r = rejected("This model's maximum context length is " + std::to_string(max_model_len_) +
                                  " tokens. However, your input has " + std::to_string(num_prompt) +
                                  " tokens. Please reduce the length of the input.",
                              request.prompt_param);
    r.code = "context_length_exceeded";
    return r;
  }
  const int64_t num_blocks = (num_prompt + config_.block_size - 1) / config_.block_size;
  if (num_blocks > num_blocks_)
    return rejected("the input needs " + std::to_string(num_prompt) + " tokens of KV cache but the cache holds " +
                        std::to_string(static_cast<int64_t>(num_blocks_) * config_.block_size),
                    request.prompt_param);
  return std::nullopt;
}

SubmitResult Engine::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  std::vector<std::shared_ptr<RequestStream>> streams;
  SubmitResult result = submit_all(std::move(one), streams);
  if (result.ok()) result.stream = std::move(streams.front());
  return result;
}

SubmitResult Engine::submit_all(std::vector<GenerationRequest> requests,
                                std::vector<std::shared_ptr<RequestStream>>& streams) {
  streams.clear();
  int32_t num_choices = 0;
  for (const GenerationRequest& request : requests) {
    if (auto error = validate(request)) {
      shell_.count_rejected();
      return *error;
    }
    num_choices += request.params.n;
  }
  if (config_.max_waiting_per_request > 0 && num_choices > config_.max_waiting_per_request) {
    shell_.count_rejected();
    const bool several = requests.size() > 1;
    return rejected("This request would queue " + std::to_string(num_choices) + " sequences (" +
                        std::to_string(requests.size()) + " prompt(s) x " + std::to_string(requests.front().params.n) +
                        " choice(s)) but one request may queue at most " +
                        std::to_string(config_.max_waiting_per_request) +
                        " (max_waiting_per_request); send fewer prompts or a lower n.",
                    several ? requests.front().prompt_param : "n");
  }
  const Clock::time_point arrival = Clock::now();
  std::vector<std::string> ids;
  std::vector<InboxItem> items;
  for (GenerationRequest& request : requests) {
    const size_t capacity = request.stream_capacity > 0 ? request.stream_capacity : config_.stream_capacity;
    streams.push_back(std::make_shared<RequestStream>(request.request_id, request.params.n, capacity));
    ids.push_back(request.request_id);
    items.push_back(InboxItem{.request = std::move(request), .stream = streams.back(), .arrival = arrival});
  }
  SubmitResult result = shell_.push(std::move(items), ids, num_choices);
  if (!result.ok()) streams.clear();
  return result;
}

bool Engine::abort(std::string_view request_id) { return shell_.abort(request_id); }

EngineStats Engine::stats() const { return shell_.stats(); }

void Engine::publish_stats(const StepMetrics* step) {
  EngineStats stats =
      engine_stats(scheduler_->stats(), static_cast<int32_t>(active_.size()), num_blocks_, config_.block_size, kv_bytes_);
  stats.speculation = speculation_stats_;
  shell_.publish(std::move(stats));
  if (step != nullptr && observer_ != nullptr) observer_->on_step(*step);
}

void Engine::publish_kv_events() {
  if (kv_event_log_.empty()) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  config_.kv_events->publish(
      KvEventBatch{.timestamp = std::chrono::duration<double>(now).count(), .events = std::move(kv_event_log_)});
  kv_event_log_.clear();  // moved-from: valid, emptied for the next step
}

void Engine::loop_steps() {
  while (drain_inbox()) {
    check_cancellations();
    if (!scheduler_->has_unfinished()) {
      reap_done();
      publish_stats(nullptr);
      publish_kv_events();
      shell_.wait_for_work();
      continue;
    }
    shell_.begin_step();
    if (drafter_) propose_drafts();
    if (prefill_pacer_) scheduler_->set_max_prefill_tokens_while_decoding(prefill_pacer_->cap());
    ScheduledStep step = scheduler_->schedule(Clock::now());
    shell_.set_num_waiting(scheduler_->num_waiting());
    for (const SequencePtr& seq : step.finished) {  // aborted or timed out
      ActiveRequest* request = find(seq);
      if (request == nullptr) continue;
      std::string why;
      if (seq->finish_reason() == FinishReason::timeout)
        why = seq->timed_out_in_queue() ? "the queue timeout passed before admission" : "the request deadline passed";
      finish_choice(*request, *request->choices[static_cast<size_t>(seq->choice_index())], seq->finish_reason(),
                    std::move(why));
    }
    if (step.empty()) {
      shell_.end_step();
      // Nothing runnable (e.g. only finished sequences were reaped): wait briefly
      // for news instead of spinning.
      flush_deltas();
      reap_done();
      publish_stats(nullptr);
      publish_kv_events();
      if (scheduler_->has_unfinished()) shell_.wait_for_work(std::chrono::milliseconds(1));
      continue;
    }
    try {
      std::optional<ComputeTurns::Turn> turn;
      if (config_.compute_turns != nullptr) turn.emplace(*config_.compute_turns);
      step_constrained_rows_ = 0;
      const Clock::time_point started = Clock::now();
      run_step(step);
      if (prefill_pacer_) {
        int64_t decode_rows = 0;
        int64_t prompt_tokens = 0;
        for (const ScheduledSequence& scheduled : step.seqs)
          (scheduled.decodes ? decode_rows : prompt_tokens) += scheduled.num_new_tokens;
        prefill_pacer_->observe(decode_rows, prompt_tokens,
                                std::chrono::duration<double>(Clock::now() - started).count());
      }
    } catch (const std::exception& e) {
      fail_step(step, e.what());
    } catch (...) {
      fail_step(step, "an exception of unknown type");
    }
    flush_deltas();
    reap_done();
    StepMetrics metrics{.num_batched_tokens = step.num_batched_tokens,
                        .num_running = scheduler_->num_running(),
                        .num_waiting = scheduler_->num_waiting(),
                        .kv_cache_usage = scheduler_->block_pool().usage(),
                        .num_preempted = static_cast<int32_t>(step.preempted.size()),
                        .num_constrained = step_constrained_rows_};
    publish_stats(&metrics);
    publish_kv_events();
    shell_.end_step();
  }
}

// The step's sequences may have written part of their KV and the scheduler has not
// advanced them, so they cannot go on: their requests end with "error" (whole
// requests, as a response is all its choices) and their blocks go back at the next
// schedule(). Blocks enter the prefix cache only in update(), after a step
// succeeded, so nothing half-written is ever shared.
void Engine::fail_step(const ScheduledStep& step, const std::string& what) {
  spdlog::error("engine {}: a step of {} sequences ({} tokens) failed: {}; ending their requests with error",
                config_.model_name, step.seqs.size(), step.num_batched_tokens, what);
  for (const ScheduledSequence& scheduled : step.seqs) {
    ActiveRequest* request = find(scheduled.seq);
    if (request != nullptr && !request->done)
      abort_request(*request, FinishReason::error, "the model step failed: " + what);
  }
}

// Something outside a step threw: the scheduling state can no longer be trusted, so
// the engine takes no more work (the shell is marked dead by now) and ends
// everything it holds with "error".
void Engine::die(const std::string& reason, std::vector<InboxItem> queued) {
  spdlog::critical("engine {}: {}", config_.model_name, reason);
  const std::string error = "the engine stopped: " + reason.substr(std::string_view(kDeathPrefix).size());
  for (auto& [id, request] : active_) {
    if (request->done) continue;
    // One request's finish failing (an observer that throws) must not leave the
    // others waiting for theirs.
    try {
      for (auto& choice : request->choices) {
        choice->has_pending = false;
        choice->pending = {};
        finish_choice(*request, *choice, FinishReason::error, error);
      }
    } catch (...) {
      spdlog::error("engine {}: finishing request {} failed", config_.model_name, id);
    }
  }
  dirty_.clear();
  active_.clear();
  for (InboxItem& item : queued) {
    for (int32_t i = 0; i < item.stream->num_choices(); ++i) {
      ChoiceFinish finish;
      finish.index = i;
      finish.reason = FinishReason::error;
      finish.error = error;
      item.stream->push_finish(std::move(finish));
    }
    shell_.release(item.request.request_id);
  }
}

EngineHealth Engine::health(std::chrono::nanoseconds step_timeout) const { return shell_.health(step_timeout); }

std::future<int32_t> Engine::flush_prefix_cache() {
  // Shared: the shell destroys an unrun task, and with it the promise (broken_promise).
  auto promise = std::make_shared<std::promise<int32_t>>();
  std::future<int32_t> flushed = promise->get_future();
  shell_.post([this, promise] { promise->set_value(scheduler_->flush_prefix_cache()); });
  return flushed;  // refused (stopping): the promise is gone already, broken
}

bool Engine::drain_inbox() {
  auto drained = shell_.drain();
  for (auto& task : drained.tasks) task();
  for (InboxItem& item : drained.items) admit(std::move(item));
  for (const std::string& id : drained.aborts) {
    auto it = active_.find(id);
    if (it != active_.end() && !it->second->done) abort_request(*it->second, FinishReason::abort, "aborted");
  }
  return drained.go_on;
}

void Engine::shutdown() {
  for (auto& [id, request] : active_)
    if (!request->done) abort_request(*request, FinishReason::abort, "the server is shutting down");
  (void)scheduler_->schedule(Clock::now());  // reaps the aborted sequences and frees their blocks
  reap_done();
  publish_stats(nullptr);
}

}  // namespace sluice::engine
