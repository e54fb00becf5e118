#include "engine/speculative/speculation.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "backends/errors.h"
#include "engine/choice_state.h"
#include "engine/models/kv_cache.h"

namespace sluice::engine {
namespace {

// The draft model's cache holds what the drafting sequences need: at most
// disable_by_batch_size of them (no more draft in one step), each up to the context
// and its drafts, and never more tokens than the target's pool plus their drafts.
std::unique_ptr<Drafter> start_draft_model(const SpeculativeConfig& spec, const Model& target,
                                           const SpeculationLimits& limits, const std::string& model_name) {
  if (spec.draft_model == nullptr) throw std::invalid_argument("speculative: draft_model needs its model");
  if (&spec.draft_model->backend() != &target.backend())
    throw std::invalid_argument("speculative: the draft model must run on the target's backend");
  const int64_t rows = std::min<int64_t>(spec.disable_by_batch_size, limits.max_num_seqs);
  const int64_t block = limits.block_size;
  const int64_t per_sequence = (limits.max_model_len + spec.num_speculative_tokens + block - 1) / block;
  const int64_t draft_slack = rows * ((spec.num_speculative_tokens + block - 1) / block + 1);
  const DraftModelSetup setup{.target_vocab_size = target.hparams().vocab_size,
                              .num_blocks = std::min(rows * per_sequence, limits.num_kv_blocks + draft_slack),
                              .block_size = block,
                              .kv_dtype = limits.kv_dtype,
                              .max_chunk_tokens = std::min<int64_t>(limits.max_num_batched_tokens, 512),
                              .max_rows = rows};
  std::unique_ptr<Drafter> drafter;
  try {
    drafter = make_drafter(spec, setup);
  } catch (const backends::OutOfMemoryError& e) {
    throw std::runtime_error(fmt::format("engine {}: the draft model's KV cache of {} blocks does not fit on {} ({})",
                                         model_name, setup.num_blocks, target.backend().name(), e.what()));
  }
  const uint64_t draft_kv = KvCache::bytes_per_block(spec.draft_model->hparams(), block, limits.kv_dtype) *
                            static_cast<uint64_t>(setup.num_blocks);
  spdlog::info("engine {}: speculative decoding: draft model ({} layers, vocabulary {}), {} tokens per step, off "
               "above {} decoding sequences; its KV cache {} blocks, {:.1f} MiB",
               model_name, spec.draft_model->hparams().num_layers, spec.draft_model->hparams().vocab_size,
               spec.num_speculative_tokens, spec.disable_by_batch_size, setup.num_blocks,
               static_cast<double>(draft_kv) / (1 << 20));
  return drafter;
}

// A lazy grammar may start inside the drafts, and the rows after its trigger would
// need masks that only the output processor knows how to begin.
bool may_draft(const Sequence& seq) {
  if (!seq.is_decoding() || seq.is_embedding()) return false;
  const ChoiceState* choice = seq.choice_state();
  return choice != nullptr && choice->may_speculate && !choice->finished && !choice->trigger;
}

}  // namespace

Speculation::Speculation(const SpeculativeConfig& config, const Model& target, const SpeculationLimits& limits,
                         const std::string& model_name)
    : config_(config), max_model_len_(limits.max_model_len) {
  if (config.prompt_lookup_min < 1 || config.prompt_lookup_max < config.prompt_lookup_min)
    throw std::invalid_argument("speculative: need 1 <= prompt_lookup_min <= prompt_lookup_max");
  stats_.num_accepted_tokens_per_pos.assign(static_cast<size_t>(config.num_speculative_tokens), 0);
  if (config.method == SpeculativeMethod::draft_model) {
    drafter_ = start_draft_model(config, target, limits, model_name);
    return;
  }
  drafter_ = make_drafter(config);
  spdlog::info("engine {}: speculative decoding: ngram, {} tokens per step (lookup {}..{}), off above {} "
               "decoding sequences",
               model_name, config.num_speculative_tokens, config.prompt_lookup_min, config.prompt_lookup_max,
               config.disable_by_batch_size);
}

void Speculation::propose(const std::vector<SequencePtr>& running) {
  for (const SequencePtr& seq : running) seq->clear_draft_tokens();
  // Many decoding rows already share each pass over the weights: drafts would
  // mostly add work there (speculative_config.h).
  const auto num_decoding = std::ranges::count_if(running, [](const SequencePtr& seq) { return seq->is_decoding(); });
  if (num_decoding == 0 || num_decoding > config_.disable_by_batch_size) return;
  requests_.clear();
  for (const SequencePtr& seq : running) {
    if (!may_draft(*seq)) continue;
    // Never more than the request may still emit (a verified step emits the drafts
    // it accepts and one token more), nor past the context.
    const int64_t room = std::min(seq->max_output_tokens(max_model_len_) - seq->num_output_tokens(),
                                  max_model_len_ - seq->num_tokens()) - 1;
    DraftPacing& pacing = seq->choice_state()->drafts;
    if (pacing.pause > 0) {
      --pacing.pause;
      continue;
    }
    const int32_t length = pacing.length > 0 ? pacing.length : config_.num_speculative_tokens;
    const auto max_tokens = static_cast<int32_t>(std::min<int64_t>(length, room));
    if (max_tokens <= 0) continue;
    requests_.push_back({.seq = seq.get(), .max_tokens = max_tokens, .draft = &seq->mutable_draft_tokens()});
  }
  if (!requests_.empty()) drafter_->propose(requests_);
}

void Speculation::learn(const Sequence& seq, size_t num_drafts, size_t num_emitted) {
  if (num_drafts == 0) return;
  const size_t num_accepted = num_emitted - 1;  // the last token is the target's own
  if (ChoiceState* choice = seq.choice_state())
    choice->drafts.learn(config_.num_speculative_tokens, static_cast<int32_t>(num_drafts),
                         static_cast<int32_t>(num_accepted));
  ++stats_.num_drafts;
  stats_.num_draft_tokens += num_drafts;
  stats_.num_accepted_tokens += num_accepted;
  auto& per_pos = stats_.num_accepted_tokens_per_pos;
  for (size_t pos = 0; pos < num_accepted && pos < per_pos.size(); ++pos) ++per_pos[pos];
}

}  // namespace sluice::engine
