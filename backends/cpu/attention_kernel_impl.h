#pragma once
// attention_kernel.h's item loop, included by one translation unit per ISA. Its
// functions have internal linkage so the per-ISA copies never merge at link time.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backends/cpu/attention_kernel.h"
#include "backends/cpu/dot.h"
#include "backends/cpu/half.h"
#include "backends/cpu/vector_load.h"

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

// 16 floats (16 dimensions of an accumulator row): a GCC/Clang vector that each ISA
// lowers to its own registers (4 SSE, 2 AVX or 1 AVX-512), lane by lane the same
// operations. It never
// crosses a non-inlined call, so the ABI note GCC gives for wide vectors is moot.
#pragma GCC diagnostic ignored "-Wpsabi"
using Lanes16 = float __attribute__((vector_size(kAttentionKeys * sizeof(float))));

inline Lanes16 load_lanes(const float* p) { return load_vector<Lanes16>(p); }

// Cache rows `rows[0, count)` as F32 into dst (count rows of hd).
inline void load_rows(const AttentionArgs& a, const std::byte* cache, const int64_t* rows, int count, float* dst) {
  const int64_t hd = a.head_dim;
  for (int j = 0; j < count; ++j) {
    const std::byte* src = cache + rows[j] * a.kv_row_bytes;
    if (a.kv_f16) {
      f16_row_to_f32(reinterpret_cast<const uint16_t*>(src), dst + j * hd, hd);
    } else {
      std::memcpy(dst + j * hd, src, static_cast<size_t>(hd) * sizeof(float));
    }
  }
}

void attend(const AttentionArgs& a, const AttentionItem& item, float* scratch) {
  const int64_t hd = a.head_dim;
  const int64_t group = a.num_heads / a.kv_heads;
  const int64_t kvh = item.first_head / group;
  const int rows = item.num_rows;
  const int heads = item.num_heads;
  const int queries = rows * heads;             // query (r, h) is index r * heads + h
  float* kt = scratch;                          // [keys, hd]
  float* vt = kt + kAttentionKeys * hd;         // [keys, hd]
  float* acc = vt + kAttentionKeys * hd;        // [queries, hd]
  float* max = acc + queries * hd;              // [queries]
  float* sum = max + queries;                   // [queries]
  float* s = sum + queries;                     // [keys]
  for (int qi = 0; qi < queries; ++qi) {
    max[qi] = -INFINITY;
    sum[qi] = 0.0f;
    for (int64_t i = 0; i < hd; ++i) acc[qi * hd + i] = 0.0f;
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
      for (int h = 0; h < heads; ++h) {
        const int qi = r * heads + h;
        const float* q = a.q + ((item.first_row + r) * a.num_heads + item.first_head + h) * a.q_row_stride;
        float block_max = -INFINITY;
        for (int64_t j = lo - j0; j < hi - j0; ++j) {
          float score = dot(q, kt + j * hd, hd) * a.scale;
          if (a.softcap > 0.0f) score = a.softcap * std::tanh(score / a.softcap);
          s[j] = score;
          block_max = score > block_max ? score : block_max;
        }
        float* o = acc + qi * hd;
        if (block_max > max[qi]) {
          const float correction = exp_nonpositive(max[qi] - block_max);
          sum[qi] *= correction;
          for (int64_t i = 0; i < hd; ++i) o[i] *= correction;
          max[qi] = block_max;
        }
        // The block's weights first (a loop the compiler vectorizes), then the sum
        // and the accumulator in key order.
        const float m = max[qi];
        for (int64_t j = lo - j0; j < hi - j0; ++j) s[j] = exp_nonpositive(s[j] - m);
        for (int64_t j = lo - j0; j < hi - j0; ++j) sum[qi] += s[j];
        // o += e_j v_j over the keys in order, 64 dimensions at a time held in
        // registers across the keys (per element the same operations in the same order).
        int64_t c = 0;
        for (; c + 4 * kAttentionKeys <= hd; c += 4 * kAttentionKeys) {
          Lanes16 oc[4];
          for (int u = 0; u < 4; ++u) oc[u] = load_lanes(o + c + u * kAttentionKeys);
          for (int64_t j = lo - j0; j < hi - j0; ++j)
            for (int u = 0; u < 4; ++u) oc[u] += s[j] * load_lanes(vt + j * hd + c + u * kAttentionKeys);
          std::memcpy(o + c, oc, sizeof(oc));
        }
        for (; c < hd; ++c)
          for (int64_t j = lo - j0; j < hi - j0; ++j) o[c] += s[j] * vt[j * hd + c];
      }
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      const int qi = r * heads + h;
      const float inv = 1.0f / sum[qi];
      float* out = a.out + ((item.first_row + r) * a.num_heads + item.first_head + h) * a.out_row_stride;
      for (int64_t i = 0; i < hd; ++i) out[i] = acc[qi * hd + i] * inv;
    }
}

}  // namespace
}  // namespace sluice::backends::cpu
