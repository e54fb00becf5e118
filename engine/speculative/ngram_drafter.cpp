#include "engine/speculative/ngram_drafter.h"

#include <algorithm>

#include "backends/check.h"

namespace sluice::engine {

void propose_ngram(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t max_tokens,
                   std::vector<int32_t>& draft) {
  draft.clear();
  const auto length = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min<int64_t>(max_n, length - 1); n >= std::max<int32_t>(min_n, 1); --n) {
    const auto suffix = tokens.subspan(static_cast<size_t>(length - n));
    // The latest match first: the nearest repetition is the likeliest to go on the
    // same way. But in a periodic tail the latest match is followed only by the
    // period, so take the latest one followed by a whole draft, else the earliest
    // (the longest continuation). A match ends before the suffix itself.
    int64_t best = -1;
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      best = start;
      if (length - (start + n) >= max_tokens) break;
    }
    if (best < 0) continue;
    const int64_t follow = best + n;
    const int64_t count = std::min<int64_t>(max_tokens, length - follow);
    draft.assign(tokens.begin() + follow, tokens.begin() + follow + count);
    return;
  }
}

void NgramDrafter::propose(std::span<const DraftRequest> requests) {
  for (const DraftRequest& request : requests) {
    SLUICE_CHECK(request.max_tokens > 0 && request.draft != nullptr, "a draft request without room");
    propose_ngram(request.seq->tokens(), min_n_, max_n_, request.max_tokens, *request.draft);
  }
}

}  // namespace sluice::engine
