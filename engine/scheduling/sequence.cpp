#include "engine/scheduling/sequence.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "backends/check.h"

namespace sluice::engine {
namespace {

Rng make_rng(const SamplingParams& params, int32_t choice_index) {
  // From the seed alone: batch composition, arrival order and preemption never
  // change what a seeded choice draws.
  if (params.seed) return Rng(*params.seed, static_cast<uint64_t>(choice_index));
  return Rng::from_entropy();
}

}  // namespace

std::string_view to_string(SequenceStatus status) {
  switch (status) {
    case SequenceStatus::waiting: return "waiting";
    case SequenceStatus::running: return "running";
    case SequenceStatus::preempted: return "preempted";
    case SequenceStatus::finished: return "finished";
  }
  return "unknown";
}

std::string_view to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::none: return "";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
    case FinishReason::timeout: return "timeout";
    case FinishReason::error: return "error";
  }
  return "unknown";
}

Sequence::Sequence(std::string request_id, std::vector<int32_t> prompt_tokens,
                   std::shared_ptr<const SamplingParams> params, Clock::time_point arrival_time,
                   int32_t choice_index)
    : request_id_(std::move(request_id)),
      choice_index_(choice_index),
      tokens_(std::move(prompt_tokens)),
      num_prompt_tokens_(static_cast<int64_t>(tokens_.size())),
      arrival_time_(arrival_time),
      fair_group_(std::hash<std::string>{}(request_id_)),
      params_(std::move(params)),
      rng_(make_rng(*params_, choice_index)) {
  SLUICE_CHECK(params_ != nullptr, "a Sequence needs SamplingParams");
}

void Sequence::set_finished(FinishReason reason) {
  SLUICE_CHECK(reason != FinishReason::none, "finish needs a reason");
  status_ = SequenceStatus::finished;
  finish_reason_ = reason;
}

bool Sequence::can_share_leader_prompt() const {
  if (!leader_) return true;
  if (leader_->is_finished()) return true;  // nothing more to wait for
  return leader_->status() == SequenceStatus::running && leader_->is_prefill_done();
}

int64_t Sequence::max_output_tokens(int64_t max_model_len) const {
  if (embedding_) return 0;
  const int64_t room = max_model_len - num_prompt_tokens_;
  if (params_->max_tokens) return std::min<int64_t>(*params_->max_tokens, room);
  return room;
}

std::vector<SequencePtr> make_choices(const std::string& request_id, std::vector<int32_t> prompt_tokens,
                                      std::shared_ptr<const SamplingParams> params,
                                      Clock::time_point arrival_time, int32_t priority) {
  const int32_t n = std::max(1, params->n);
  std::vector<SequencePtr> choices;
  choices.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    auto seq = std::make_shared<Sequence>(request_id, i + 1 < n ? prompt_tokens : std::move(prompt_tokens),
                                          params, arrival_time, i);
    seq->set_priority(priority);
    if (i > 0) seq->set_leader(choices.front());
    choices.push_back(std::move(seq));
  }
  return choices;
}

}  // namespace sluice::engine
