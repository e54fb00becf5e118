#include "server/cli/bench_engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine.h"
#include "engine/grammar/matcher.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"
#include "engine/request_stream.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/quiet_log.h"

namespace sluice::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int32_t kBlockSize = 16;  // the engine's default

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Distinct prompts, so the prefix cache serves none of them: ids spread over the
// vocabulary by fixed strides (any ids do for speed).
std::vector<int32_t> prompt_of(int stream, int length, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(length));
  for (int i = 0; i < length; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((7919ll * (stream + 1) + 104729ll * i) % vocab);
  return ids;
}

// Counts stream wake-ups so the consumer sleeps until some stream has events.
class WakeCounter {
 public:
  void bump() {
    { std::lock_guard lock(mutex_); ++count_; }
    cv_.notify_one();
  }
  void wait_past(uint64_t seen) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return count_ != seen; });
  }
  uint64_t count() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t count_ = 0;
};

}  // namespace

EngineLoadResult run_engine_load(engine::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineLoad& load) {
  const engine::ModelHparams& h = model.hparams();
  const int streams = load.streams;
  const int generate_tokens = load.generate_tokens;
  const std::shared_ptr<grammar::CompiledGrammar>& grammar = load.grammar;
  int64_t prompt_tokens = load.prompt_tokens;
  if (!load.prompts.empty()) {
    prompt_tokens = 0;
    for (const auto& prompt : load.prompts) prompt_tokens = std::max<int64_t>(prompt_tokens, std::ssize(prompt));
  }
  // + the last token's slot, + drafts verified past the end.
  const int64_t tokens_per_stream = prompt_tokens + generate_tokens + load.speculative.num_speculative_tokens;
  const int64_t blocks_per_stream = (tokens_per_stream + kBlockSize) / kBlockSize;
  engine::EngineConfig config;
  config.model_name = "bench";
  config.block_size = kBlockSize;
  config.max_num_seqs = std::max(config.max_num_seqs, streams);
  config.max_model_len = tokens_per_stream + 1;
  config.kv_cache_bytes =
      engine::KvCache::bytes_per_block(h, kBlockSize, config.kv_dtype) * static_cast<uint64_t>(blocks_per_stream * streams);
  config.stream_capacity = static_cast<size_t>(generate_tokens) + 16;  // never full, however slow this thread is
  config.speculative = load.speculative;

  const QuietLog quiet;  // the table is the report here
  engine::Engine engine(model, tokenizer, config);
  engine.start();
  WakeCounter wakes;
  std::vector<std::shared_ptr<engine::RequestStream>> live(static_cast<size_t>(streams));
  std::vector<Clock::time_point> first_token(static_cast<size_t>(streams));
  std::vector<bool> has_token(static_cast<size_t>(streams), false), finished(static_cast<size_t>(streams), false);
  EngineLoadResult result;
  result.streams = streams;

  const Clock::time_point start = Clock::now();
  for (int s = 0; s < streams; ++s) {
    engine::GenerationRequest request;
    request.request_id = "bench-" + std::to_string(s);
    request.prompt_tokens = load.prompts.empty() ? prompt_of(s, static_cast<int>(prompt_tokens), h.vocab_size)
                                                 : load.prompts[static_cast<size_t>(s) % load.prompts.size()];
    request.params.temperature = 0.0f;
    request.params.ignore_eos = load.ignore_eos;
    request.params.max_tokens = generate_tokens;
    request.grammar = grammar;
    engine::SubmitResult submitted = engine.submit(std::move(request));
    if (!submitted.ok()) throw std::runtime_error("bench: the engine refused stream " + std::to_string(s) + ": " + submitted.message);
    live[static_cast<size_t>(s)] = submitted.stream;
    submitted.stream->set_wakeup([&wakes] { wakes.bump(); });
  }

  std::vector<engine::RequestEvent> events;
  for (int remaining = streams; remaining > 0;) {
    const uint64_t seen = wakes.count();
    for (int s = 0; s < streams; ++s) {
      if (finished[static_cast<size_t>(s)]) continue;
      events.clear();
      live[static_cast<size_t>(s)]->poll(events);
      for (const engine::RequestEvent& event : events) {
        if (const auto* delta = std::get_if<engine::ChoiceDelta>(&event)) {
          if (!delta->token_ids.empty() && !has_token[static_cast<size_t>(s)]) {
            has_token[static_cast<size_t>(s)] = true;
            first_token[static_cast<size_t>(s)] = Clock::now();
          }
          continue;
        }
        const auto& finish = std::get<engine::ChoiceFinish>(event);
        const bool may_stop = grammar || !load.ignore_eos;
        if (finish.reason != engine::FinishReason::length && !(may_stop && finish.reason == engine::FinishReason::stop))
          throw std::runtime_error("bench: stream " + std::to_string(s) + " finished with '" +
                                   std::string(finish.finish_reason()) + "' " + finish.error);
        result.generated_tokens += finish.num_completion_tokens;
        if (finish.num_completion_tokens > 1) {
          result.decode_tokens += finish.num_completion_tokens - 1;
          result.decode_seconds += seconds_between(first_token[static_cast<size_t>(s)], Clock::now());
        }
        finished[static_cast<size_t>(s)] = true;
        --remaining;
      }
    }
    if (remaining > 0) wakes.wait_past(seen);
  }
  result.seconds = seconds_between(start, Clock::now());
  for (int s = 0; s < streams; ++s) {
    const double ttft = seconds_between(start, first_token[static_cast<size_t>(s)]);
    result.ttft_mean_seconds += ttft / streams;
    result.ttft_max_seconds = std::max(result.ttft_max_seconds, ttft);
  }
  const engine::EngineStats stats = engine.stats();
  result.steps = stats.num_steps;
  result.preemptions = stats.num_preemptions;
  result.num_drafts = stats.speculation.num_drafts;
  result.num_draft_tokens = stats.speculation.num_draft_tokens;
  result.num_accepted_tokens = stats.speculation.num_accepted_tokens;
  engine.stop();
  return result;
}

}  // namespace sluice::server
