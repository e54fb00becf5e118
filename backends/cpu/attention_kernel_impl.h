#pragma once
// attention_kernel.h's item loop, included by one translation unit per ISA. Its
// functions have internal linkage so the per-ISA copies never merge at link time.
#include <bit>
#include <cmath>
#include <cstdint>

#include "backends/cpu/attention_kernel.h"
#include "backends/cpu/dot.h"
#include "backends/cpu/half.h"

namespace sluice::backends::cpu {
namespace {

// e^x for x <= 0 (softmax arguments), to about 2 ulp: x = n ln2 + r with
// |r| <= ln2 / 2, e^r by a degree-6 Taylor polynomial, 2^n by building the
// exponent. Plain float operations only, so every ISA vectorizes it to the same bits.
inline float exp_nonpositive(float x) {
  if (!(x > -87.0f)) return 0.0f;  // also maps NaN to 0
  const float n = std::nearbyint(x * 1.44269504f);
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

// Rows [first, first + count) of a cache as F32 into dst (count rows of hd).
inline void load_rows(const AttentionArgs& a, const std::byte* cache, const int64_t* rows, int count, float* dst) {
  const int64_t hd = a.head_dim;
  for (int j = 0; j < count; ++j) {
    const std::byte* src = cache + rows[j] * a.kv_row_bytes;
    float* d = dst + j * hd;
    if (a.kv_f16) {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < hd; ++i) d[i] = fp16_to_fp32(h[i]);
    } else {
      const float* f = reinterpret_cast<const float*>(src);
      for (int64_t i = 0; i < hd; ++i) d[i] = f[i];
    }
  }
}

void attend(const AttentionArgs& a, const AttentionItem& item, float* scratch) {
  const int64_t hd = a.head_dim;
  const int64_t group = a.num_heads / a.kv_heads;
  const int64_t kvh = item.head / group;
  const int rows = item.num_rows;
  float* kt = scratch;                        // [keys, hd]
  float* vt = kt + kAttentionKeys * hd;       // [keys, hd]
  float* acc = vt + kAttentionKeys * hd;      // [rows, hd]
  float* max = acc + kAttentionRows * hd;     // [rows]
  float* sum = max + kAttentionRows;          // [rows]
  float* s = sum + kAttentionRows;            // [keys]
  for (int r = 0; r < rows; ++r) {
    max[r] = -INFINITY;
    sum[r] = 0.0f;
    for (int64_t i = 0; i < hd; ++i) acc[r * hd + i] = 0.0f;
  }
  auto lowest = [&](int64_t p) { return a.sliding_window > 0 && p >= a.sliding_window ? p - a.sliding_window + 1 : 0; };
  const int64_t first = lowest(item.first_position);
  const int64_t last = item.first_position + rows - 1;
  for (int64_t jb = first / kAttentionKeys * kAttentionKeys; jb <= last; jb += kAttentionKeys) {
    const int64_t j0 = jb > first ? jb : first;
    const int64_t j1 = jb + kAttentionKeys <= last + 1 ? jb + kAttentionKeys : last + 1;  // [j0, j1)
    int64_t cache_rows[kAttentionKeys];
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t block = item.block_table[j / a.block_size];
      cache_rows[j - j0] = (block * a.block_size + j % a.block_size) * a.kv_heads + kvh;
    }
    const int count = static_cast<int>(j1 - j0);
    load_rows(a, a.k, cache_rows, count, kt);
    load_rows(a, a.v, cache_rows, count, vt);
    for (int r = 0; r < rows; ++r) {
      const int64_t p = item.first_position + r;
      const int64_t lo = lowest(p) > j0 ? lowest(p) : j0;
      const int64_t hi = p + 1 < j1 ? p + 1 : j1;
      if (lo >= hi) continue;
      const float* q = a.q + ((item.first_row + r) * a.num_heads + item.head) * a.q_row_stride;
      float block_max = -INFINITY;
      for (int64_t j = lo; j < hi; ++j) {
        float score = dot(q, kt + (j - j0) * hd, hd) * a.scale;
        if (a.softcap > 0.0f) score = a.softcap * std::tanh(score / a.softcap);
        s[j - j0] = score;
        block_max = score > block_max ? score : block_max;
      }
      float* o = acc + r * hd;
      if (block_max > max[r]) {
        const float correction = exp_nonpositive(max[r] - block_max);
        sum[r] *= correction;
        for (int64_t i = 0; i < hd; ++i) o[i] *= correction;
        max[r] = block_max;
      }
      for (int64_t j = lo; j < hi; ++j) {
        const float e = exp_nonpositive(s[j - j0] - max[r]);
        sum[r] += e;
        const float* vj = vt + (j - j0) * hd;
        for (int64_t i = 0; i < hd; ++i) o[i] += e * vj[i];
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    const float inv = 1.0f / sum[r];
    float* out = a.out + ((item.first_row + r) * a.num_heads + item.head) * a.out_row_stride;
    for (int64_t i = 0; i < hd; ++i) out[i] = acc[r * hd + i] * inv;
  }
}

}  // namespace
}  // namespace sluice::backends::cpu
