#pragma once
// The activation buffers of one model's forward pass, sized for the largest step
// seen so far: a step of T tokens producing R logit rows uses the first T (or R)
// rows of each. views() grows them when a larger step comes and does nothing
// otherwise, so the steady state allocates nothing. An engine reserve()s its
// largest step at start, so an out-of-memory shows at start and the KV budget's
// activation reserve matches what is allocated. Owned by a Model; used by its
// engine thread only.
#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "engine/models/hparams.h"

namespace sluice::engine {

class Workspace {
 public:
  // Shapes use d = embedding_length, q = num_heads * head_dim,
  // kv = num_kv_heads * head_dim, f = ffn_length.
  struct Views {
    backends::Tensor token_ids;    // [T] I32
    backends::Tensor positions;    // [T] I32
    backends::Tensor kv_slots;     // [T] I32
    backends::Tensor logit_rows;   // [R] I32: rows of `hidden` that produce logits
    backends::Tensor hidden;       // [T, d] F32: the residual stream
    backends::Tensor normed;       // [T, d] F32: a block's normed input
    backends::Tensor branch;       // [T, d] F32: attention / MLP output before the residual add
    backends::Tensor q;            // [T, q] F32: queries (normed and rotated in place)
    backends::Tensor k;            // [T, kv] F32
    backends::Tensor v;            // [T, kv] F32
    backends::Tensor attn;         // [T, q] F32: attention output, heads concatenated
    backends::Tensor gate;         // [T, f] F32: MLP gate, then the activated product in place
    backends::Tensor up;           // [T, f] F32
    backends::Tensor final_hidden; // [R, d] F32: gathered + normed rows that produce logits
    backends::Tensor logits;       // [R, vocab] F32
  };

  Workspace(backends::Backend& backend, const ModelHparams& hparams);

  // Views for a step of num_tokens tokens and num_logit_rows logit rows, growing
  // the buffers first when needed. The views stay valid until the next call.
  Views views(int64_t num_tokens, int64_t num_logit_rows);

  // Allocates room for steps of up to max_tokens tokens and max_logit_rows logit
  // rows now, and caps later geometric growth there (a larger step still gets what
  // it needs). Throws backends::OutOfMemoryError, leaving the workspace empty but
  // usable.
  void reserve(int64_t max_tokens, int64_t max_logit_rows);

  int64_t token_capacity() const { return token_capacity_; }
  int64_t logit_capacity() const { return logit_capacity_; }

 private:
  void grow_tokens(int64_t capacity);
  void grow_logits(int64_t capacity);

  backends::Backend& backend_;
  ModelHparams hparams_;
  int64_t token_capacity_ = 0;
  int64_t logit_capacity_ = 0;
  int64_t token_limit_ = 0;  // 0: grow without a cap
  int64_t logit_limit_ = 0;
  // Row-sized buffers are F32 [capacity, width]; index buffers I32 [capacity].
  std::unique_ptr<backends::Buffer> token_ids_, positions_, kv_slots_, logit_rows_;
  std::unique_ptr<backends::Buffer> hidden_, normed_, branch_, q_, k_, v_, attn_, gate_, up_;
  std::unique_ptr<backends::Buffer> final_hidden_, logits_;
};

}  // namespace sluice::engine
