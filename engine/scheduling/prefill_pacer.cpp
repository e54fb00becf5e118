#include "engine/scheduling/prefill_pacer.h"

#include <algorithm>
#include <cmath>

namespace sluice::engine {

namespace {
// Weight of the newest decode-only step in the running average: about the last ten
// steps count, so the average follows the number of streams within a second or so.
constexpr double kDecodeAverageWeight = 0.1;
}  // namespace

PrefillPacer::PrefillPacer(int64_t initial, int64_t min_cap, int64_t max_cap)
    : cap_(static_cast<double>(initial)),
      min_cap_(static_cast<double>(std::max<int64_t>(1, min_cap))),
      max_cap_(static_cast<double>(std::max(min_cap, max_cap))) {
  cap_ = std::clamp(cap_, min_cap_, max_cap_);
}

void PrefillPacer::observe(int64_t decode_rows, int64_t prompt_tokens, double seconds) {
  if (decode_rows <= 0 || seconds <= 0.0) return;  // nobody was waiting for a token
  if (prompt_tokens <= 0) {
    decode_seconds_ = decode_seconds_ == 0.0 ? seconds
                                             : decode_seconds_ + kDecodeAverageWeight * (seconds - decode_seconds_);
    return;
  }
  if (decode_seconds_ == 0.0) return;  // nothing to compare with yet
  // What the prompt tokens added. A step that came out faster than the average says
  // they were nearly free: grow as fast as allowed.
  const double extra = seconds - decode_seconds_;
  const double wanted = extra <= 0.0 ? max_cap_
                                     : decode_seconds_ / (extra / static_cast<double>(prompt_tokens));
  // The geometric mean of the old and the wanted cap damps noise; the factor-of-two
  // bound keeps one stalled step (the OS, another process) from collapsing it.
  const double next = std::clamp(std::sqrt(cap_ * std::max(wanted, 1.0)), cap_ / 2.0, cap_ * 2.0);
  cap_ = std::clamp(next, min_cap_, max_cap_);
}

}  // namespace sluice::engine
