#pragma once
// The grammar's pushdown automaton over bytes, built lazily as matchers reach new
// parser states.
//
// The rules' alternatives are flattened into one element array, each alternative
// ended by an END element; a position is an index into it. A parser stack is a
// persistent linked list of nodes {position, parent}, interned so that equal stacks
// share one id; node 0 is the empty stack (the root fully matched). A stack is kept
// normalized: its top is at a byte class (or it is the empty stack). Its parent nodes
// hold return positions; a call in tail position pushes no return node, so right
// recursion (every repetition) keeps the stack depth constant and the states repeat.
// A parser state is the sorted set of stacks the input so far can be in, interned as
// well; state 0 is the dead state (no stack). Each state's transitions on the 256
// byte values are computed at once and kept as a row (the transition memo).
//
// A state whose stacks all lie on one context node F (their deepest common ancestor)
// splits into a relative state, the same stacks with F replaced by the hole node, and
// the exit state, where the input is once the top frames are done and F resumes. Token
// masks use the split: the tokens a relative state allows without reaching the hole do
// not depend on F, so one mask serves every context (a JSON string is a string at any
// depth, as key or value), and only the tokens that reach the hole and go on need a
// walk from the exit state.
//
// Interned stacks and states are never dropped (matchers hold state ids); past a hard
// limit a new one is a GrammarError. Rows are dropped all together when there are too
// many, and computed again on demand.
//
// Not thread-safe: CompiledGrammar::Impl guards it with a shared mutex (const methods
// under a shared lock, the others under an exclusive one).
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/id_index.h"

namespace sluice::grammar {

struct PushdownLimits {
  size_t max_nodes = size_t{1} << 21;
  size_t max_states = size_t{1} << 20;
  size_t max_state_stacks = size_t{1} << 23;   // stack ids over all states
  size_t max_stacks_per_state = size_t{1} << 12;
  size_t max_closure_steps = size_t{1} << 16;  // work items of one closure
  size_t max_rows = size_t{1} << 13;           // rows of 1 KiB each
};

class Pushdown {
 public:
  static constexpr uint32_t kDead = 0;
  static constexpr uint32_t kHole = 1;  // the stack node standing for a context left out

  struct Split {
    uint32_t relative = kDead;  // kDead: the state has no context to leave out
    uint32_t exit = kDead;
  };

  // Throws GrammarError when even the start state passes a limit.
  explicit Pushdown(const Grammar& grammar, PushdownLimits limits = {});

  uint32_t start() const { return start_; }
  bool is_complete(uint32_t state) const { return (flags_[state] & kComplete) != 0; }
  bool is_terminated(uint32_t state) const { return (flags_[state] & kTerminated) != 0; }
  // A relative state holds the hole when some stack has popped into it: the top
  // frames are done and the context would go on.
  bool has_exit(uint32_t state) const { return (flags_[state] & kExit) != 0; }
  // The split of a state (see above). Throws GrammarError past a limit.
  Split split(uint32_t state);
  // The next state for each byte value (kDead: the byte is not allowed), or nullptr
  // when the row is not computed yet or was dropped.
  const uint32_t* row(uint32_t state) const { return state < rows_.size() ? rows_[state].get() : nullptr; }
  // Computes (or returns) the row. Throws GrammarError past a limit.
  const uint32_t* compute_row(uint32_t state);

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_states() const { return state_begin_.size() - 1; }

 private:
  enum Kind : uint8_t { kBytes, kRule, kEnd };
  struct Flat {
    Kind kind;
    uint32_t index;  // Grammar::byte_sets (kBytes) or Grammar::rules (kRule)
  };
  struct Node {
    uint32_t pos;
    uint32_t parent;
  };
  static constexpr uint8_t kComplete = 1, kTerminated = 2, kExit = 4;
  static constexpr uint32_t kUnknown = UINT32_MAX;

  uint32_t intern_node(uint32_t pos, uint32_t parent);
  // `stacks` sorted and unique.
  uint32_t intern_state(const std::vector<uint32_t>& stacks);
  // Appends to `out` the normalized stacks reachable from each {position, parent} of
  // `seeds` without consuming a byte.
  void closure(const std::vector<Node>& seeds, std::vector<uint32_t>& out);
  // The state after a normalized stack's top byte class has consumed a byte.
  uint32_t successor(uint32_t node);
  // The deepest node that is `a` or an ancestor of it and `b` or an ancestor of it.
  uint32_t common_ancestor(uint32_t a, uint32_t b) const;

  std::vector<Flat> flat_;
  std::vector<uint32_t> alt_begin_;    // rule r's alternatives start at flat_[alt_start_[alt_begin_[r] ..]]
  std::vector<uint32_t> alt_start_;
  std::vector<ByteSet> byte_sets_;
  PushdownLimits limits_;

  std::vector<Node> nodes_;
  std::vector<uint32_t> node_successor_;  // per node; kUnknown until computed
  std::vector<uint32_t> depth_;           // per node: nodes below it (0 for the empty stack and the hole)
  IdIndex node_index_;

  std::vector<uint32_t> state_begin_;  // state s's stacks: state_stacks_[state_begin_[s] .. state_begin_[s + 1])
  std::vector<uint32_t> state_stacks_;
  std::vector<uint64_t> state_hash_;
  std::vector<uint8_t> flags_;
  IdIndex state_index_;
  std::vector<Split> split_;           // per state; relative == kUnknown until computed
  uint32_t start_ = kDead;

  std::vector<std::unique_ptr<uint32_t[]>> rows_;  // by state; (256) each
  size_t num_rows_ = 0;

  // Scratch of closure(), kept to avoid allocating per call.
  std::vector<Node> work_;
  std::unordered_set<uint64_t> visited_;
};

}  // namespace sluice::grammar
