#include "server/api/generation/generation_job.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <variant>

#include "proto/sse.h"

namespace sluice::server {

GenerationJob::GenerationJob(JobSettings settings, std::unique_ptr<ResponseFormat> format, TokenPiece piece)
    : settings_(std::move(settings)), format_(std::move(format)), piece_(std::move(piece)) {}

void GenerationJob::add_part(std::shared_ptr<engine::RequestStream> stream, int64_t num_prompt_tokens) {
  const auto first_index = static_cast<int32_t>(choices_.size());
  choices_.resize(choices_.size() + static_cast<size_t>(stream->num_choices()));
  parts_.push_back(JobPart{std::move(stream), first_index, num_prompt_tokens, 0});
}

std::string GenerationJob::fold_waiting(bool streaming) {
  std::string out;
  for (size_t p = 0; p < parts_.size(); ++p) {
    while (auto event = parts_[p].stream->try_pop()) out += fold(p, *event, streaming);
  }
  return out;
}

std::string GenerationJob::fold(size_t part, engine::RequestEvent& event, bool streaming) {
  if (auto* delta = std::get_if<engine::ChoiceDelta>(&event)) return fold_delta(part, *delta, streaming);
  return fold_finish(part, std::get<engine::ChoiceFinish>(event), streaming);
}

std::string GenerationJob::fold_delta(size_t part, engine::ChoiceDelta& delta, bool streaming) {
  const int32_t index = parts_[part].first_index + delta.index;
  ChoiceTally& tally = choices_.at(static_cast<size_t>(index));
  std::string out;
  if (!delta.prompt_logprobs.empty()) out += format_->prompt_scored(*this, part, to_wire(delta.prompt_logprobs), streaming);
  if (settings_.score_only) return out;  // the token generated only to finish the request
  for (const auto& entry : delta.logprobs) tally.cumulative_logprob += entry.logprob;
  tally.text += delta.text;
  tally.num_tokens += static_cast<int64_t>(delta.token_ids.size());
  format_->text_folded(*this, index, delta.text, static_cast<int64_t>(delta.token_ids.size()));
  std::vector<proto::TokenLogprob> logprobs;
  if (settings_.want_logprobs) logprobs = to_wire(delta.logprobs);
  if (!streaming) {
    tally.logprobs.insert(tally.logprobs.end(), logprobs.begin(), logprobs.end());
    return out;
  }
  if (delta.text.empty() && logprobs.empty()) return out;
  out += format_->delta_event(*this, index, delta.text, std::move(logprobs));
  tally.num_chars_sent += proto::num_chars(delta.text);
  return out;
}

std::string GenerationJob::fold_finish(size_t part, const engine::ChoiceFinish& finish, bool streaming) {
  const int32_t index = parts_[part].first_index + finish.index;
  ChoiceTally& tally = choices_.at(static_cast<size_t>(index));
  tally.num_tokens = settings_.score_only ? 0 : finish.num_completion_tokens;
  tally.finish_reason = std::string(settings_.score_only ? "length" : finish.finish_reason());
  tally.matched_stop = finish.matched_stop;
  tally.error = finish.error;
  tally.queue_timeout = finish.queue_timeout;
  parts_[part].num_cached_tokens = std::max(parts_[part].num_cached_tokens, finish.num_cached_tokens);
  // A failed choice ends the whole response with an error instead. A deadline is
  // not a failure: the choice ends with what it generated, finish_reason "timeout".
  if (!streaming || finish.reason == engine::FinishReason::error) return {};
  return format_->finish_event(*this, index);
}

bool GenerationJob::is_done() const {
  return std::ranges::all_of(parts_, [](const JobPart& part) { return part.stream->is_done(); });
}

bool GenerationJob::has_failed() const {
  return std::ranges::any_of(choices_, [](const ChoiceTally& choice) { return choice.finish_reason == "error"; });
}

proto::ApiError GenerationJob::failure_error(const std::string& request_id) const {
  const auto failed =
      std::ranges::find_if(choices_, [](const ChoiceTally& choice) { return choice.finish_reason == "error"; });
  spdlog::error("request {}: generation failed: {}", request_id, failed == choices_.end() ? "" : failed->error);
  return proto::internal_error(request_id);
}

bool GenerationJob::is_timed_out_empty() const {
  for (const ChoiceTally& choice : choices_) {
    if (choice.finish_reason != "timeout" || choice.num_tokens > 0) return false;
  }
  return !choices_.empty();
}

bool GenerationJob::is_queue_timeout() const {
  return std::ranges::any_of(choices_, [](const ChoiceTally& choice) { return choice.queue_timeout; });
}

int32_t GenerationJob::num_choices_per_part() const {
  return parts_.empty() ? 0 : parts_.front().stream->num_choices();
}

proto::Usage GenerationJob::usage() const {
  proto::Usage usage;
  for (const JobPart& part : parts_) {
    usage.prompt_tokens += static_cast<int32_t>(part.num_prompt_tokens);
    usage.cached_tokens += static_cast<int32_t>(part.num_cached_tokens);
  }
  for (const ChoiceTally& choice : choices_) usage.completion_tokens += static_cast<int32_t>(choice.num_tokens);
  return usage;
}

std::string GenerationJob::chunk_event(nlohmann::ordered_json chunk) const {
  if (settings_.continuous_usage) chunk["usage"] = proto::usage_object(usage());
  return proto::sse_event(chunk);
}

std::optional<std::string> GenerationJob::chunk_usage_text() const {
  if (settings_.continuous_usage) return proto::dump_json(proto::usage_object(usage()));
  if (settings_.include_usage) return "null";
  return std::nullopt;
}

std::vector<proto::TokenLogprob> GenerationJob::to_wire(const std::vector<engine::TokenLogprobs>& entries) const {
  std::vector<proto::TokenLogprob> out;
  out.reserve(entries.size());
  for (const auto& entry : entries) {
    proto::TokenLogprob wire{piece_(entry.token), entry.logprob, {}};
    for (const auto& alt : entry.top) wire.top_logprobs.push_back({piece_(alt.token), alt.logprob});
    out.push_back(std::move(wire));
  }
  return out;
}

}  // namespace sluice::server
