// The engine's setup: the KV pool sized from the budget (automatic on a GPU), the
// runner, scheduler, sampler, output side and speculation built, the step workspace
// reserved; engine.cpp runs the loop.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "backends/errors.h"
#include "engine/engine.h"
#include "engine/output_processor.h"
#include "engine/speculative/speculation.h"
#include "engine/step_sampler.h"

namespace sluice::engine {

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
  sampler_ = std::make_unique<StepSampler>(
      model_.backend(), static_cast<int32_t>(hp.vocab_size), model_.backend().host_threads(),
      runner_->samples_on_device() ? DrawOrder::by_id : DrawOrder::descending);
  output_ = std::make_unique<OutputProcessor>(tokenizer_, *scheduler_, observer_, config_.model_name,
                                              [this](const std::string& id) { shell_.release(id); });
  if (config_.speculative.enabled())
    speculation_ = std::make_unique<Speculation>(
        config_.speculative, model_,
        SpeculationLimits{.max_model_len = max_model_len_, .max_num_seqs = config_.max_num_seqs,
                          .num_kv_blocks = num_blocks_, .block_size = config_.block_size,
                          .max_num_batched_tokens = config_.max_num_batched_tokens, .kv_dtype = config_.kv_dtype},
        config_.model_name);

  spdlog::info("engine {}: KV cache {} blocks x {} tokens = {} tokens, {:.1f} MiB ({} bytes/block, {}), "
               "max_model_len {}, max_num_seqs {}, max_num_batched_tokens {}",
               config_.model_name, num_blocks_, config_.block_size,
               static_cast<int64_t>(num_blocks_) * config_.block_size, static_cast<double>(kv_bytes_) / (1 << 20),
               per_block, config_.kv_dtype == backends::DType::F32 ? "f32" : "f16", max_model_len_,
               config_.max_num_seqs, config_.max_num_batched_tokens);
  publish_stats(nullptr);
}

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

}  // namespace sluice::engine
