#include "engine/stop_checker.h"

#include <algorithm>
#include <utility>

namespace sluice::engine {

StopChecker::StopChecker(StopOptions options)
    : eos_ids_(std::move(options.eos_ids)),
      ignore_eos_(options.ignore_eos),
      stop_token_ids_(std::move(options.token_ids)),
      min_tokens_(options.min_tokens),
      include_stop_str_(options.include_stop_str) {
  for (auto& stop : options.strings)
    if (!stop.empty()) stops_.push_back(std::move(stop));
}

StopChecker::StopChecker(std::vector<std::string> stop_strings, std::vector<int32_t> eos_ids, bool ignore_eos)
    : StopChecker(StopOptions{.strings = std::move(stop_strings), .eos_ids = std::move(eos_ids), .ignore_eos = ignore_eos, .token_ids = {}, .min_tokens = 0, .include_stop_str = false}) {}

bool StopChecker::is_stop_token(int32_t token) const {
  if (num_tokens_ < min_tokens_) return false;
  if (!ignore_eos_ && std::ranges::find(eos_ids_, token) != eos_ids_.end()) return true;
  return std::ranges::find(stop_token_ids_, token) != stop_token_ids_.end();
}

StopChecker::Result StopChecker::push(int32_t token, std::string_view text) {
  if (stopped_) return {};
  ++num_tokens_;
  if (is_stop_token(token)) {
    // Nothing more comes, so no held text can become a stop string. The stop
    // token's own text is cut like a stop string (vLLM), unless asked to keep it.
    if (include_stop_str_) held_.append(text);
    Result result = scan(true);
    result.stopped = true;
    stopped_ = true;
    return result;
  }
  held_.append(text);
  return scan(false);
}

StopChecker::Result StopChecker::finish(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  return scan(true);
}

StopChecker::Result StopChecker::scan(bool at_end) {
  Result result;
  if (num_tokens_ < min_tokens_) {  // too early to stop: nothing to hold back for
    result.text = std::move(held_);
    held_.clear();
    return result;
  }
  // The earliest complete stop string wins; at one position, the longest.
  size_t best = std::string::npos;
  const std::string* matched = nullptr;
  for (const auto& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at == std::string::npos) continue;
    if (at < best || (at == best && stop.size() > matched->size())) {
      best = at;
      matched = &stop;
    }
  }
  if (matched != nullptr) {
    result.text = held_.substr(0, best + (include_stop_str_ ? matched->size() : 0));
    result.stopped = true;
    result.matched_stop = *matched;
    stopped_ = true;
    held_.clear();
    return result;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string. A stop
  // string starts on a character boundary, so the cut never splits a character.
  size_t hold = 0;
  if (!at_end) {
    for (const auto& stop : stops_) {
      const size_t longest = std::min(stop.size() - 1, held_.size());
      for (size_t len = longest; len > hold; --len) {
        if (std::string_view(held_).substr(held_.size() - len) == std::string_view(stop).substr(0, len)) {
          hold = len;
          break;
        }
      }
    }
  }
  result.text = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return result;
}

}  // namespace sluice::engine
