#pragma once
// The order in which the scheduler serves sequences: priority first, then round
// robin across clients and, within a client, across API requests, instead of first
// come first served by sequence. Without it one request of 256 prompts queued ahead
// of everyone holds the queue until its last prompt is admitted, and a 5-token
// request sent a moment later waits for all of them.
//
// A sequence's turn is how many sequences its client (fair_client; 0: the request
// stands for itself) already holds ahead of it: those running (`held`) and its own
// that come earlier in the list. Equal turns go to the client served least recently
// (FairHistory), so a newcomer goes before the next prompt of a request that just
// had one finish; then the same within the client, across its requests; then the
// earlier arrival. Engine thread only.
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/scheduling/sequence.h"

namespace sluice::engine {

// When each client and request last had a sequence admitted.
class FairHistory {
 public:
  void record_admission(const Sequence& seq);
  uint64_t last_group_admission(uint64_t group) const;    // 0: never
  uint64_t last_client_admission(uint64_t client) const;  // 0: never
  // Forgets requests and clients with no sequence left once the history has
  // grown well past them (an amortized sweep).
  void prune(const std::vector<SequencePtr>& running, const std::deque<SequencePtr>& waiting);

 private:
  uint64_t tick_ = 0;
  std::unordered_map<uint64_t, uint64_t> groups_, clients_;
};

// Sorts `seqs` into service order; `held` are the sequences that already run (each
// counts against its client and request).
void fair_sort(std::vector<SequencePtr>& seqs, std::span<const SequencePtr> held = {},
               const FairHistory* history = nullptr);

}  // namespace sluice::engine
