#include "engine/scheduling/fair_order.h"

#include <algorithm>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace sluice::engine {
namespace {

struct Ranked {
  SequencePtr seq;
  int64_t group_turn = 0;   // sequences of its request ahead of it
  uint64_t group_last = 0;  // its request's last admission
  int64_t client_turn = 0;  // sequences of its client ahead of it (no client: the request's)
  uint64_t client_last = 0;
};

uint64_t find_or_zero(const std::unordered_map<uint64_t, uint64_t>& map, uint64_t key) {
  const auto it = map.find(key);
  return it == map.end() ? 0 : it->second;
}

}  // namespace

void FairHistory::record_admission(const Sequence& seq) {
  ++tick_;
  groups_[seq.fair_group()] = tick_;
  if (seq.fair_client() != 0) clients_[seq.fair_client()] = tick_;
}

uint64_t FairHistory::last_group_admission(uint64_t group) const { return find_or_zero(groups_, group); }
uint64_t FairHistory::last_client_admission(uint64_t client) const { return find_or_zero(clients_, client); }

void FairHistory::prune(const std::vector<SequencePtr>& running, const std::deque<SequencePtr>& waiting) {
  const size_t live = running.size() + waiting.size();
  if (groups_.size() + clients_.size() <= 2 * live + 64) return;
  std::unordered_set<uint64_t> groups, clients;
  auto keep = [&](const SequencePtr& seq) {
    groups.insert(seq->fair_group());
    clients.insert(seq->fair_client());
  };
  std::ranges::for_each(running, keep);
  std::ranges::for_each(waiting, keep);
  std::erase_if(groups_, [&](const auto& entry) { return !groups.contains(entry.first); });
  std::erase_if(clients_, [&](const auto& entry) { return !clients.contains(entry.first); });
}

void fair_sort(std::vector<SequencePtr>& seqs, std::span<const SequencePtr> held, const FairHistory* history) {
  if (seqs.size() < 2) return;
  std::unordered_map<uint64_t, int64_t> group_count, client_count;
  for (const SequencePtr& seq : held) {
    ++group_count[seq->fair_group()];
    if (seq->fair_client() != 0) ++client_count[seq->fair_client()];
  }
  std::vector<Ranked> ranked;
  ranked.reserve(seqs.size());
  for (SequencePtr& seq : seqs) ranked.push_back(Ranked{.seq = std::move(seq)});
  // First come, first served within a request.
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::make_tuple(a.seq->priority(), a.seq->arrival_time(), a.seq->seq_id()) <
           std::make_tuple(b.seq->priority(), b.seq->arrival_time(), b.seq->seq_id());
  });
  for (Ranked& r : ranked) {
    r.group_turn = group_count[r.seq->fair_group()]++;
    if (history != nullptr) r.group_last = history->last_group_admission(r.seq->fair_group());
  }
  // Within a client its requests take turns: its k-th turn goes to the k-th in
  // (request turn, request served least recently) order.
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::make_tuple(a.seq->priority(), a.group_turn, a.group_last) <
           std::make_tuple(b.seq->priority(), b.group_turn, b.group_last);
  });
  for (Ranked& r : ranked) {
    const uint64_t client = r.seq->fair_client();
    if (client == 0) {
      r.client_turn = r.group_turn;
      r.client_last = r.group_last;
    } else {
      r.client_turn = client_count[client]++;
      if (history != nullptr) r.client_last = history->last_client_admission(client);
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::make_tuple(a.seq->priority(), a.client_turn, a.client_last, a.group_turn, a.group_last) <
           std::make_tuple(b.seq->priority(), b.client_turn, b.client_last, b.group_turn, b.group_last);
  });
  for (size_t i = 0; i < ranked.size(); ++i) seqs[i] = std::move(ranked[i].seq);
}

}  // namespace sluice::engine
