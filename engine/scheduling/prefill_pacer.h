#pragma once
// How many prompt tokens a step may take while sequences decode in it, in time rather
// than in tokens: a chunk should cost about as much as one decode step, so a long
// prompt arriving at most doubles the gap between two tokens of every stream.
//
// A fixed token cap cannot do that across machines and contexts: a prompt token's cost
// is dominated by attention over the tokens before it (at 1,000 cached tokens it costs
// several times what it does at 0), and a decode step's cost depends on how many
// sequences decode and on the machine. So the pacer measures: the time of steps that
// only decode (an average), and the extra time steps with prompt tokens take over
// that, per prompt token. It moves the cap towards "one decode step's worth of prompt
// tokens", at most halving or doubling it per step so one noisy step cannot swing it.
//
// Engine thread only.
#include <cmath>
#include <cstdint>

namespace sluice::engine {

class PrefillPacer {
 public:
  // initial: the cap until the first measurements; [min_cap, max_cap] bounds it.
  PrefillPacer(int64_t initial, int64_t min_cap, int64_t max_cap);

  int64_t cap() const { return static_cast<int64_t>(std::lround(cap_)); }

  // One computed step: rows that decoded (drafts included), prompt tokens (prefill
  // chunks and recomputes), and the step's wall time.
  void observe(int64_t decode_rows, int64_t prompt_tokens, double seconds);

  // The average time of a step that only decodes (0 until one was seen).
  double decode_step_seconds() const { return decode_seconds_; }

 private:
  double cap_;
  double min_cap_;
  double max_cap_;
  double decode_seconds_ = 0.0;
};

}  // namespace sluice::engine
