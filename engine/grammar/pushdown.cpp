// Pushdown: flattening, interning of stacks and states, closures and byte rows.
#include "engine/grammar/pushdown.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

namespace sluice::grammar {
namespace {

constexpr uint32_t kNoPosition = UINT32_MAX;  // the empty stack's node

uint64_t hash_stacks(const uint32_t* stacks, size_t n) {
  uint64_t h = n;
  for (size_t i = 0; i < n; ++i) h = mix_hash(h ^ stacks[i]) + i;
  return h;
}

[[noreturn]] void over_limit(const char* what, size_t limit) {
  throw GrammarError(std::string("the grammar needs over ") + std::to_string(limit) + " " + what +
                     " (too ambiguous or too deeply nested)");
}

}  // namespace

Pushdown::Pushdown(const Grammar& grammar, PushdownLimits limits) : byte_sets_(grammar.byte_sets), limits_(limits) {
  alt_begin_.push_back(0);
  for (const Rule& rule : grammar.rules) {
    for (const Alternative& alternative : rule.alternatives) {
      alt_start_.push_back(static_cast<uint32_t>(flat_.size()));
      for (const Element& e : alternative)
        flat_.push_back({e.kind == Element::Kind::bytes ? kBytes : kRule, e.index});
      flat_.push_back({kEnd, 0});
    }
    alt_begin_.push_back(static_cast<uint32_t>(alt_start_.size()));
  }
  nodes_ = {{kNoPosition, 0}, {kNoPosition, 0}};  // the empty stack, the hole
  node_successor_ = {kUnknown, kUnknown};
  depth_ = {0, 0};
  state_begin_ = {0, 0};
  state_hash_.push_back(hash_stacks(nullptr, 0));
  flags_.push_back(0);
  state_index_.find_or_insert(
      state_hash_[0], [](uint32_t) { return false; }, [] { return kDead; }, [this](uint32_t s) { return state_hash_[s]; });

  std::vector<Node> seeds;
  for (uint32_t a = alt_begin_[grammar.root]; a < alt_begin_[grammar.root + 1]; ++a) seeds.push_back({alt_start_[a], 0});
  std::vector<uint32_t> stacks;
  closure(seeds, stacks);
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  start_ = intern_state(stacks);
}

uint32_t Pushdown::intern_node(uint32_t pos, uint32_t parent) {
  const auto hash_of = [this](uint32_t id) {
    return mix_hash((uint64_t{nodes_[id].pos} << 32) | nodes_[id].parent);
  };
  return node_index_.find_or_insert(
      mix_hash((uint64_t{pos} << 32) | parent),
      [&](uint32_t id) { return nodes_[id].pos == pos && nodes_[id].parent == parent; },
      [&] {
        if (nodes_.size() >= limits_.max_nodes) over_limit("parser stack nodes", limits_.max_nodes);
        nodes_.push_back({pos, parent});
        node_successor_.push_back(kUnknown);
        depth_.push_back(depth_[parent] + 1);
        return static_cast<uint32_t>(nodes_.size() - 1);
      },
      hash_of);
}

uint32_t Pushdown::intern_state(const std::vector<uint32_t>& stacks) {
  if (stacks.size() > limits_.max_stacks_per_state) over_limit("parser stacks at once", limits_.max_stacks_per_state);
  const uint64_t hash = hash_stacks(stacks.data(), stacks.size());
  return state_index_.find_or_insert(
      hash,
      [&](uint32_t s) {
        return state_hash_[s] == hash && state_begin_[s + 1] - state_begin_[s] == stacks.size() &&
               std::equal(stacks.begin(), stacks.end(), state_stacks_.begin() + state_begin_[s]);
      },
      [&] {
        if (num_states() >= limits_.max_states) over_limit("parser states", limits_.max_states);
        if (state_stacks_.size() + stacks.size() > limits_.max_state_stacks)
          over_limit("stacks in all parser states", limits_.max_state_stacks);
        state_stacks_.insert(state_stacks_.end(), stacks.begin(), stacks.end());
        state_begin_.push_back(static_cast<uint32_t>(state_stacks_.size()));
        state_hash_.push_back(hash);
        // The empty stack (0) sorts first, the hole (1) right after it.
        const bool complete = !stacks.empty() && stacks.front() == 0;
        const bool exit = std::binary_search(stacks.begin(), stacks.end(), kHole);
        flags_.push_back(static_cast<uint8_t>((complete ? kComplete : 0) |
                                              (complete && stacks.size() == 1 ? kTerminated : 0) |
                                              (exit ? kExit : 0)));
        return static_cast<uint32_t>(num_states() - 1);
      },
      [this](uint32_t s) { return state_hash_[s]; });
}

void Pushdown::closure(const std::vector<Node>& seeds, std::vector<uint32_t>& out) {
  work_.assign(seeds.begin(), seeds.end());
  visited_.clear();
  size_t steps = 0;
  while (!work_.empty()) {
    const Node item = work_.back();
    work_.pop_back();
    // (position, parent) decides everything reachable from it: expand each pair once,
    // which also keeps nullable rules that meet again (diamonds) from multiplying work.
    if (!visited_.insert((uint64_t{item.pos} << 32) | item.parent).second) continue;
    if (++steps > limits_.max_closure_steps) over_limit("closure steps", limits_.max_closure_steps);
    const Flat e = flat_[item.pos];
    if (e.kind == kBytes) {
      out.push_back(intern_node(item.pos, item.parent));
    } else if (e.kind == kEnd) {
      if (item.parent == 0 || item.parent == kHole) {
        out.push_back(item.parent);  // the root is done, or the top frames of a relative state
      } else {
        const Node parent = nodes_[item.parent];
        work_.push_back(parent);
      }
    } else {
      const uint32_t ret = item.pos + 1;
      const uint32_t parent = flat_[ret].kind == kEnd ? item.parent : intern_node(ret, item.parent);
      for (uint32_t a = alt_begin_[e.index]; a < alt_begin_[e.index + 1]; ++a) work_.push_back({alt_start_[a], parent});
    }
  }
}

uint32_t Pushdown::successor(uint32_t node) {
  if (node_successor_[node] != kUnknown) return node_successor_[node];
  std::vector<uint32_t> stacks;
  closure({{nodes_[node].pos + 1, nodes_[node].parent}}, stacks);
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  const uint32_t state = intern_state(stacks);
  node_successor_[node] = state;
  return state;
}

const uint32_t* Pushdown::compute_row(uint32_t state) {
  if (const uint32_t* existing = row(state)) return existing;
  const std::vector<uint32_t> stacks(state_stacks_.begin() + state_begin_[state],
                                     state_stacks_.begin() + state_begin_[state + 1]);
  // A stack's top byte class moves it to the same successor state whatever byte it
  // consumes, so a byte's next state is the union of the successors of the stacks
  // whose class holds it; bytes matched by the same stacks share one union.
  std::vector<const ByteSet*> sets(stacks.size(), nullptr);
  std::vector<uint32_t> next(stacks.size(), kDead);
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (stacks[i] == 0 || stacks[i] == kHole) continue;  // they consume nothing
    sets[i] = &byte_sets_[flat_[nodes_[stacks[i]].pos].index];
    next[i] = successor(stacks[i]);
  }
  auto out = std::make_unique<uint32_t[]>(256);
  std::map<std::vector<uint32_t>, uint32_t> by_matching;
  std::vector<uint32_t> matching, merged;
  for (size_t b = 0; b < 256; ++b) {
    matching.clear();
    for (size_t i = 0; i < stacks.size(); ++i)
      if (sets[i] != nullptr && sets[i]->test(b)) matching.push_back(static_cast<uint32_t>(i));
    if (matching.empty()) {
      out[b] = kDead;
    } else if (matching.size() == 1) {
      out[b] = next[matching[0]];
    } else if (auto it = by_matching.find(matching); it != by_matching.end()) {
      out[b] = it->second;
    } else {
      merged.clear();
      for (uint32_t i : matching)
        merged.insert(merged.end(), state_stacks_.begin() + state_begin_[next[i]],
                      state_stacks_.begin() + state_begin_[next[i] + 1]);
      std::sort(merged.begin(), merged.end());
      merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
      out[b] = intern_state(merged);
      by_matching.emplace(matching, out[b]);
    }
  }
  if (num_rows_ >= limits_.max_rows) {
    for (auto& r : rows_) r.reset();
    num_rows_ = 0;
  }
  if (rows_.size() < num_states()) rows_.resize(num_states());
  rows_[state] = std::move(out);
  ++num_rows_;
  return rows_[state].get();
}

uint32_t Pushdown::common_ancestor(uint32_t a, uint32_t b) const {
  while (depth_[a] > depth_[b]) a = nodes_[a].parent;
  while (depth_[b] > depth_[a]) b = nodes_[b].parent;
  while (a != b) {
    a = nodes_[a].parent;
    b = nodes_[b].parent;
  }
  return a;
}

Pushdown::Split Pushdown::split(uint32_t state) {
  if (state < split_.size() && split_[state].relative != kUnknown) return split_[state];
  const std::vector<uint32_t> stacks(state_stacks_.begin() + state_begin_[state],
                                     state_stacks_.begin() + state_begin_[state + 1]);
  uint32_t context = kUnknown;
  for (uint32_t s : stacks) {
    if (s == 0 || s == kHole) {
      context = 0;
      break;
    }
    context = context == kUnknown ? nodes_[s].parent : common_ancestor(context, nodes_[s].parent);
  }
  Split out;
  if (context != 0 && context != kUnknown && context != kHole) {
    // Rebuild each stack's nodes above the context on the hole instead, sharing the
    // nodes that stacks have in common.
    std::unordered_map<uint32_t, uint32_t> rebased{{context, kHole}};
    std::vector<uint32_t> relative, chain;
    for (uint32_t s : stacks) {
      chain.clear();
      for (uint32_t n = s; !rebased.contains(n); n = nodes_[n].parent) chain.push_back(n);
      uint32_t below = rebased.at(chain.empty() ? s : nodes_[chain.back()].parent);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        below = intern_node(nodes_[*it].pos, below);
        rebased.emplace(*it, below);
      }
      relative.push_back(rebased.at(s));
    }
    std::sort(relative.begin(), relative.end());
    relative.erase(std::unique(relative.begin(), relative.end()), relative.end());
    out.relative = intern_state(relative);
    std::vector<uint32_t> exit;
    closure({nodes_[context]}, exit);
    std::sort(exit.begin(), exit.end());
    exit.erase(std::unique(exit.begin(), exit.end()), exit.end());
    out.exit = intern_state(exit);
  }
  if (split_.size() < num_states()) split_.resize(num_states(), Split{kUnknown, kUnknown});
  split_[state] = out;
  return out;
}

}  // namespace sluice::grammar
