#pragma once
// How long a choice's next draft is, learnt from its verifications. Each drafted
// token costs a row of the model's step whether accepted or not: at one stream the
// rows are nearly free (the weights are read once for all of them), but drafts that
// keep failing are not. So a rejection shortens the next draft to what was accepted
// plus one (one token: a cheap probe), and a draft accepted whole lengthens the next
// by one, up to k; a draft with nothing accepted pauses drafting (see learn()).
#include <algorithm>
#include <cstdint>

namespace sluice::engine {

struct DraftPacing {
  int32_t length = 0;        // tokens to propose next; 0: not set yet (the config's k)
  int32_t pause = 0;         // steps to decode without drafts before drafting again
  int32_t num_misses = 0;    // verifications in a row that accepted nothing

  // After a verification of num_drafts drafts that accepted num_accepted, at most k.
  void learn(int32_t k, int32_t num_drafts, int32_t num_accepted) {
    length = num_accepted == num_drafts ? std::min(k, num_drafts + 1) : num_accepted + 1;
    // Nothing accepted: text that does not repeat itself here. Decode plainly for
    // 1, 2, 4 ... 32 steps before drafting again (a verifying step costs more than a
    // plain one).
    num_misses = num_accepted == 0 ? std::min(num_misses + 1, 6) : 0;
    pause = num_accepted == 0 ? (1 << (num_misses - 1)) : 0;
  }
};

}  // namespace sluice::engine
