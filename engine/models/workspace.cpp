#include "engine/models/workspace.h"

#include <algorithm>

namespace sluice::engine {
namespace {

using backends::DType;
using backends::Tensor;

constexpr size_t kF32 = 4;
constexpr size_t kI32 = 4;

// Grow geometrically so a ramp of step sizes reallocates O(log) times, but never
// past the reserved limit: doubling 1500 tokens to 3000 when no step can exceed
// 2048 would allocate memory the KV budget gave to the cache.
int64_t grown(int64_t current, int64_t needed, int64_t limit) {
  const int64_t doubled = current * 2;
  return std::max(needed, limit > 0 ? std::min(doubled, limit) : doubled);
}

}  // namespace

Workspace::Workspace(backends::Backend& backend, const ModelHparams& hparams)
    : backend_(backend), hparams_(hparams) {}

void Workspace::grow_tokens(int64_t capacity) {
  const auto n = static_cast<size_t>(capacity);
  const auto d = static_cast<size_t>(hparams_.embedding_length);
  const auto q = static_cast<size_t>(hparams_.num_heads * hparams_.head_dim);
  const auto kv = static_cast<size_t>(hparams_.num_kv_heads * hparams_.head_dim);
  const auto f = static_cast<size_t>(hparams_.ffn_length);
  // Free first so peak memory is the new set, not old + new. Capacity 0 until all
  // are allocated: an allocation that throws leaves an empty, consistent workspace.
  token_capacity_ = 0;
  token_ids_.reset(); positions_.reset(); kv_slots_.reset();
  hidden_.reset(); normed_.reset(); branch_.reset();
  q_.reset(); k_.reset(); v_.reset(); attn_.reset(); gate_.reset(); up_.reset();
  token_ids_ = backend_.allocate(n * kI32);
  positions_ = backend_.allocate(n * kI32);
  kv_slots_ = backend_.allocate(n * kI32);
  hidden_ = backend_.allocate(n * d * kF32);
  normed_ = backend_.allocate(n * d * kF32);
  branch_ = backend_.allocate(n * d * kF32);
  q_ = backend_.allocate(n * q * kF32);
  k_ = backend_.allocate(n * kv * kF32);
  v_ = backend_.allocate(n * kv * kF32);
  attn_ = backend_.allocate(n * q * kF32);
  gate_ = backend_.allocate(n * f * kF32);
  up_ = backend_.allocate(n * f * kF32);
  token_capacity_ = capacity;
}

void Workspace::grow_logits(int64_t capacity) {
  const auto n = static_cast<size_t>(capacity);
  logit_capacity_ = 0;
  logit_rows_.reset(); final_hidden_.reset(); logits_.reset();
  logit_rows_ = backend_.allocate(n * kI32);
  final_hidden_ = backend_.allocate(n * static_cast<size_t>(hparams_.embedding_length) * kF32);
  logits_ = backend_.allocate(n * static_cast<size_t>(hparams_.vocab_size) * kF32);
  logit_capacity_ = capacity;
}

void Workspace::reserve(int64_t max_tokens, int64_t max_logit_rows) {
  token_limit_ = max_tokens;
  logit_limit_ = max_logit_rows;
  if (max_tokens > token_capacity_) grow_tokens(max_tokens);
  if (max_logit_rows > logit_capacity_) grow_logits(max_logit_rows);
}

Workspace::Views Workspace::views(int64_t num_tokens, int64_t num_logit_rows) {
  if (num_tokens > token_capacity_) grow_tokens(grown(token_capacity_, num_tokens, token_limit_));
  if (num_logit_rows > logit_capacity_) grow_logits(grown(logit_capacity_, num_logit_rows, logit_limit_));
  const int64_t t = num_tokens;
  const int64_t r = num_logit_rows;
  const int64_t d = hparams_.embedding_length;
  const int64_t q = hparams_.num_heads * hparams_.head_dim;
  const int64_t kv = hparams_.num_kv_heads * hparams_.head_dim;
  const int64_t f = hparams_.ffn_length;
  Views v;
  v.token_ids = Tensor::make(token_ids_.get(), 0, DType::I32, {t});
  v.positions = Tensor::make(positions_.get(), 0, DType::I32, {t});
  v.kv_slots = Tensor::make(kv_slots_.get(), 0, DType::I32, {t});
  v.hidden = Tensor::make(hidden_.get(), 0, DType::F32, {t, d});
  v.normed = Tensor::make(normed_.get(), 0, DType::F32, {t, d});
  v.branch = Tensor::make(branch_.get(), 0, DType::F32, {t, d});
  v.q = Tensor::make(q_.get(), 0, DType::F32, {t, q});
  v.k = Tensor::make(k_.get(), 0, DType::F32, {t, kv});
  v.v = Tensor::make(v_.get(), 0, DType::F32, {t, kv});
  v.attn = Tensor::make(attn_.get(), 0, DType::F32, {t, q});
  v.gate = Tensor::make(gate_.get(), 0, DType::F32, {t, f});
  v.up = Tensor::make(up_.get(), 0, DType::F32, {t, f});
  if (r > 0) {
    v.logit_rows = Tensor::make(logit_rows_.get(), 0, DType::I32, {r});
    v.final_hidden = Tensor::make(final_hidden_.get(), 0, DType::F32, {r, d});
    v.logits = Tensor::make(logits_.get(), 0, DType::F32, {r, hparams_.vocab_size});
  }
  return v;
}

}  // namespace sluice::engine
