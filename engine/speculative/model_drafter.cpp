#include "engine/speculative/model_drafter.h"

#include <algorithm>

#include "engine/sampler.h"

namespace sluice::engine {

ModelDrafter::ModelDrafter(Model& draft, const DraftModelSetup& setup)
    : draft_(draft),
      target_vocab_size_(setup.target_vocab_size),
      max_chunk_tokens_(std::max<int64_t>(1, setup.max_chunk_tokens)),
      max_rows_(std::clamp<int64_t>(setup.max_rows, 1, max_chunk_tokens_)),
      cache_(draft.backend(), draft.hparams(),
             KvCacheConfig{.num_blocks = setup.num_blocks, .block_size = setup.block_size, .dtype = setup.kv_dtype}),
      builder_(setup.block_size) {
  draft_.reserve_workspace(max_chunk_tokens_, max_rows_);
  free_blocks_.reserve(static_cast<size_t>(setup.num_blocks));
  // Highest first, so pop_back() hands out block 0 first.
  for (auto block = static_cast<int32_t>(setup.num_blocks); block-- > 0;) free_blocks_.push_back(block);
}

void ModelDrafter::release(State& state) {
  free_blocks_.insert(free_blocks_.end(), state.blocks.begin(), state.blocks.end());
  state.blocks.clear();
  state.tokens.clear();
}

bool ModelDrafter::reserve(State& state, int64_t positions) {
  const auto needed = static_cast<size_t>((positions + builder_.block_size() - 1) / builder_.block_size());
  while (state.blocks.size() + free_blocks_.size() < needed) {
    // The least recently drafted state that is not drafting in this call.
    auto victim = states_.end();
    for (auto it = states_.begin(); it != states_.end(); ++it)
      if (it->second.last_used < calls_ && !it->second.blocks.empty() &&
          (victim == states_.end() || it->second.last_used < victim->second.last_used))
        victim = it;
    if (victim == states_.end()) {
      release(state);
      return false;
    }
    release(victim->second);
    states_.erase(victim);
  }
  while (state.blocks.size() < needed) {
    state.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  return true;
}

void ModelDrafter::propose(std::span<const DraftRequest> requests) {
  ++calls_;
  active_.clear();
  // Marked first: no sequence of this call evicts another one's state.
  for (const DraftRequest& request : requests) states_[request.seq->seq_id()].last_used = calls_;
  for (const DraftRequest& request : requests) {
    request.draft->clear();
    const std::span<const int32_t> tokens = request.seq->tokens();
    State& state = states_[request.seq->seq_id()];
    if (tokens.empty() || request.max_tokens <= 0) continue;
    // Keep the K/V of the common prefix, but always compute the last token again:
    // its logits propose the first draft.
    const auto same = std::ranges::mismatch(state.tokens, tokens).in1 - state.tokens.begin();
    state.tokens.resize(static_cast<size_t>(std::min<ptrdiff_t>(same, std::ssize(tokens) - 1)));
    // Positions for the tokens and every draft but the last (never fed).
    if (!reserve(state, std::ssize(tokens) + request.max_tokens - 1)) {
      states_.erase(request.seq->seq_id());
      continue;
    }
    active_.push_back({.state = &state, .request = &request, .tokens = tokens});
  }
  if (active_.empty()) return;
  feed_unseen(active_);
  while (true) {
    std::erase_if(active_, [](const Active& a) {
      return std::ssize(*a.request->draft) >= a.request->max_tokens;
    });
    if (active_.empty()) return;
    draft_next(active_);
  }
}

std::span<const float> ModelDrafter::run() {
  const auto vocab = static_cast<size_t>(draft_.hparams().vocab_size);
  logits_.resize(builder_.num_logit_rows() * vocab);
  draft_.forward(builder_.batch(), cache_, logits_);
  return logits_;
}

int32_t ModelDrafter::pick(size_t row) const {
  const int64_t vocab = draft_.hparams().vocab_size;
  const auto usable = static_cast<size_t>(std::min(vocab, target_vocab_size_));
  return Sampler::argmax(std::span(logits_).subspan(row * static_cast<size_t>(vocab), usable));
}

// Every unseen token of every sequence, in passes of at most max_chunk_tokens_
// tokens and max_rows_ sequences; a sequence whose last token a pass computes gets
// its first draft from that pass.
void ModelDrafter::feed_unseen(std::vector<Active>& active) {
  size_t next = 0;  // the first sequence with tokens left to feed
  while (next < active.size()) {
    builder_.clear();
    row_owner_.clear();
    int64_t budget = max_chunk_tokens_;
    size_t i = next;
    for (; i < active.size() && budget > 0 && std::ssize(row_owner_) < max_rows_; ++i) {
      State& state = *active[i].state;
      const std::span<const int32_t> tokens = active[i].tokens;
      const auto fed = static_cast<int64_t>(state.tokens.size());
      const int64_t take = std::min(std::ssize(tokens) - fed, budget);
      const size_t seq = builder_.add_sequence(tokens.subspan(static_cast<size_t>(fed), static_cast<size_t>(take)),
                                               fed, state.blocks);
      state.tokens.insert(state.tokens.end(), tokens.begin() + fed, tokens.begin() + fed + take);
      budget -= take;
      if (std::ssize(state.tokens) < std::ssize(tokens)) break;  // the budget ran out inside it
      builder_.add_last_logit_row(seq);
      row_owner_.push_back(i);
    }
    // Sequences fully fed in this pass are done; a partly fed one goes on next pass.
    const size_t done = row_owner_.empty() ? next : row_owner_.back() + 1;
    run();
    for (size_t row = 0; row < row_owner_.size(); ++row)
      active[row_owner_[row]].request->draft->push_back(pick(row));
    next = done;
  }
}

// One greedy step for every sequence: its latest draft in, the next one out.
void ModelDrafter::draft_next(std::vector<Active>& active) {
  for (size_t first = 0; first < active.size(); first += static_cast<size_t>(max_rows_)) {
    builder_.clear();
    const size_t end = std::min(active.size(), first + static_cast<size_t>(max_rows_));
    for (size_t i = first; i < end; ++i) {
      State& state = *active[i].state;
      const int32_t latest = active[i].request->draft->back();
      const size_t seq = builder_.add_sequence(std::span(&latest, 1), std::ssize(state.tokens), state.blocks);
      state.tokens.push_back(latest);
      builder_.add_last_logit_row(seq);
    }
    run();
    for (size_t i = first; i < end; ++i) active[i].request->draft->push_back(pick(i - first));
  }
}

}  // namespace sluice::engine
