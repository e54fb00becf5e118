#include "engine/grammar_trigger.h"

#include <algorithm>
#include <utility>

namespace sluice::engine {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

TriggerWatch::TriggerWatch(GrammarTrigger trigger) : trigger_(std::move(trigger)) {
  quiet_ = trigger_.starts_quiet && !trigger_.quiet_close.empty();
}

std::optional<std::string> TriggerWatch::push(std::string_view piece) {
  if (done_) return std::nullopt;
  output_ += piece;
  // Scan from the first position not yet ruled out. A position is ruled out only once
  // every string that could start there is known to be absent, so a trigger split over
  // several tokens is found when its last byte arrives.
  while (scanned_ < output_.size()) {
    const std::string_view rest = std::string_view(output_).substr(scanned_);
    if (quiet_) {
      const size_t close = rest.find(trigger_.quiet_close);
      if (close == std::string_view::npos) {
        // Keep the bytes that may begin the closing tag.
        const size_t keep = std::min(rest.size(), trigger_.quiet_close.size() - 1);
        scanned_ = output_.size() - keep;
        return std::nullopt;
      }
      scanned_ += close + trigger_.quiet_close.size();
      quiet_ = false;
      continue;
    }
    // The earliest place where reasoning opens or a trigger starts, and whether the
    // text before it may still be the beginning of one (then wait for more bytes).
    size_t best = std::string_view::npos;
    bool best_is_quiet = false;
    size_t best_length = 0;
    auto consider = [&](std::string_view needle, bool is_quiet) {
      if (needle.empty()) return;
      const size_t at = rest.find(needle);
      if (at != std::string_view::npos && at < best) {
        best = at;
        best_is_quiet = is_quiet;
        best_length = needle.size();
      }
    };
    // Reasoning opens only before any answer text (<think> first, as models write it).
    size_t first_text = 0;
    while (first_text < rest.size() && is_space(rest[first_text])) ++first_text;
    if (!seen_text_ && !trigger_.quiet_open.empty() && rest.substr(first_text).starts_with(trigger_.quiet_open))
      consider(trigger_.quiet_open, true);
    for (const std::string& text : trigger_.anywhere) consider(text, false);
    // at_start: the first non-whitespace text of the answer.
    if (!seen_text_ && !trigger_.at_start.empty()) {
      size_t first = 0;
      while (first < rest.size() && is_space(rest[first])) ++first;
      if (first < rest.size() && first <= best) {
        const std::string_view head = rest.substr(first, trigger_.at_start.size());
        const std::string_view start = trigger_.at_start;
        if (head == start) {
          done_ = true;
          return output_.substr(scanned_ + first);
        }
        if (head.size() < start.size() && start.starts_with(head)) return std::nullopt;  // may still be it
      }
    }
    if (best != std::string_view::npos) {
      if (!best_is_quiet) {
        done_ = true;
        return output_.substr(scanned_ + best);
      }
      scanned_ += best + best_length;
      quiet_ = true;
      continue;
    }
    // Nothing found: every position is ruled out except a tail that may begin one.
    size_t longest = trigger_.quiet_open.size();
    for (const std::string& text : trigger_.anywhere) longest = std::max(longest, text.size());
    const size_t keep = std::min(rest.size(), longest > 0 ? longest - 1 : 0);
    for (size_t i = 0; i + keep < rest.size(); ++i)
      if (!is_space(rest[i])) seen_text_ = true;
    scanned_ = output_.size() - keep;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace sluice::engine
