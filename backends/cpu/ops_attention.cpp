// Causal attention over the paged KV cache.
//
// One work item is (query row, head). Query i of a sequence sits at position
// p = num_cached + i and sees positions [lo, p], lo = max(0, p - window + 1) with a
// sliding window, else 0. Scores are F32 dots (dot.h order) times scale, then the
// optional softcap; softmax is max-subtracted with the sum in double; the output
// accumulates p_j * v_j in F32 in position order. Nothing depends on other rows,
// other sequences or the thread split.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/dot.h"
#include "backends/cpu/half.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"

namespace sluice::backends::cpu {
namespace {

struct QueryRow {
  int32_t sequence;
  int32_t index;  // within the sequence's queries
};

// Row `row` of a cache as F32: the row itself (F32 cache) or its conversion in buf.
const float* cache_row(const Tensor& cache, const Rows<const std::byte>& rows, int64_t row, float* buf,
                       int64_t n) {
  if (cache.dtype == DType::F32) return reinterpret_cast<const float*>(rows[row]);
  const uint16_t* h = reinterpret_cast<const uint16_t*>(rows[row]);
  for (int64_t i = 0; i < n; ++i) buf[i] = fp16_to_fp32(h[i]);
  return buf;
}

}  // namespace

void attention(ThreadPool& pool, const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
               const AttentionParams& params, const Tensor& out) {
  const Tensor& ck = cache.k;
  const Tensor& cv = cache.v;
  SLUICE_CHECK(q.dtype == DType::F32 && q.ndim == 3 && out.dtype == DType::F32 && same_shape(q, out),
               "attention: q and out must be [T, heads, head_dim] F32");
  SLUICE_CHECK(ck.ndim == 4 && same_shape(ck, cv) && ck.dtype == cv.dtype &&
                   (ck.dtype == DType::F32 || ck.dtype == DType::F16),
               "attention: cache must be [num_blocks, block_size, kv_heads, head_dim] F32 or F16");
  const int64_t num_heads = q.dim(1);
  const int64_t head_dim = q.dim(2);
  const int64_t num_blocks = ck.dim(0);
  const int64_t block_size = ck.dim(1);
  const int64_t kv_heads = ck.dim(2);
  SLUICE_CHECK(ck.dim(3) == head_dim, "attention: cache head_dim differs from q's");
  SLUICE_CHECK(kv_heads > 0 && num_heads % kv_heads == 0, "attention: heads must be a multiple of kv_heads");
  const int64_t group = num_heads / kv_heads;

  std::vector<QueryRow> rows;
  rows.reserve(static_cast<size_t>(q.dim(0)));
  for (size_t s = 0; s < sequences.size(); ++s) {
    const SequenceSlice& seq = sequences[s];
    const int64_t num_tokens = static_cast<int64_t>(seq.num_cached) + seq.num_queries;
    SLUICE_CHECK(seq.num_cached >= 0 && seq.num_queries >= 0 && seq.query_begin >= 0 &&
                     seq.query_begin + seq.num_queries <= q.dim(0),
                 "attention: sequence rows outside q");
    SLUICE_CHECK(static_cast<int64_t>(seq.block_table.size()) * block_size >= num_tokens,
                 "attention: block table does not cover the sequence");
    for (int32_t b : seq.block_table) SLUICE_CHECK(b >= 0 && b < num_blocks, "attention: block id out of range");
    for (int32_t i = 0; i < seq.num_queries; ++i) rows.push_back({static_cast<int32_t>(s), i});
  }

  const Rows<const float> qr(q);
  const Rows<float> outr(out);
  const Rows<const std::byte> kr(ck), vr(cv);
  const int64_t num_items = static_cast<int64_t>(rows.size()) * num_heads;

  pool.parallel_for(num_items, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scores, kbuf, vbuf, acc;
    kbuf.resize(static_cast<size_t>(head_dim));
    vbuf.resize(static_cast<size_t>(head_dim));
    acc.resize(static_cast<size_t>(head_dim));
    for (int64_t item = begin; item < end; ++item) {
      const QueryRow& row = rows[static_cast<size_t>(item / num_heads)];
      const int64_t h = item % num_heads;
      const int64_t kvh = h / group;
      const SequenceSlice& seq = sequences[static_cast<size_t>(row.sequence)];
      const int64_t t = seq.query_begin + row.index;
      const int64_t p = static_cast<int64_t>(seq.num_cached) + row.index;
      const int64_t lo = params.sliding_window > 0 ? std::max<int64_t>(0, p - params.sliding_window + 1) : 0;
      const int64_t n = p - lo + 1;
      if (static_cast<int64_t>(scores.size()) < n) scores.resize(static_cast<size_t>(n));
      const float* qi = qr[t * num_heads + h];
      auto cache_index = [&](int64_t pos) {
        const int64_t block = seq.block_table[static_cast<size_t>(pos / block_size)];
        return (block * block_size + pos % block_size) * kv_heads + kvh;
      };

      float max = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const float* kj = cache_row(ck, kr, cache_index(lo + j), kbuf.data(), head_dim);
        float s = dot(qi, kj, head_dim) * params.scale;
        if (params.softcap > 0.0f) s = params.softcap * std::tanh(s / params.softcap);
        scores[static_cast<size_t>(j)] = s;
        max = std::fmax(max, s);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        const float e = std::exp(scores[static_cast<size_t>(j)] - max);
        scores[static_cast<size_t>(j)] = e;
        sum += e;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float* vj = cache_row(cv, vr, cache_index(lo + j), vbuf.data(), head_dim);
        const float e = scores[static_cast<size_t>(j)];
        for (int64_t d = 0; d < head_dim; ++d) acc[static_cast<size_t>(d)] += e * vj[d];
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* o = outr[t * num_heads + h];
      for (int64_t d = 0; d < head_dim; ++d) o[d] = acc[static_cast<size_t>(d)] * inv;
    }
  });
}

}  // namespace sluice::backends::cpu
