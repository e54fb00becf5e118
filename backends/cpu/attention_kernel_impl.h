#pragma once
// attention_kernel.h's item loop, included by one translation unit per ISA. Its
// functions have internal linkage so the per-ISA copies never merge at link time.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backends/cpu/attention_kernel.h"
#include "backends/cpu/dot.h"
#include "backends/cpu/exp_approx.h"
#include "backends/cpu/half.h"
#include "backends/cpu/vector_load.h"
#if defined(__AVX512F__)
#include "backends/cpu/reduce16_avx512.h"
#endif

namespace sluice::backends::cpu {
namespace {

// GCC/Clang vectors of the ISA's width (PvLanes: 4 SSE, 8 AVX, 16 AVX-512 floats),
// lane by lane the same operations on every ISA. They never cross a non-inlined
// call, so the ABI note GCC gives for wide vectors is moot.
#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(__AVX512F__)
inline constexpr int kPvLanes = 16;
#elif defined(__AVX__)
inline constexpr int kPvLanes = 8;
#else
inline constexpr int kPvLanes = 4;
#endif
using PvLanes = float __attribute__((vector_size(kPvLanes * sizeof(float))));

// dot(q, k, n) (dot.h) for n a multiple of 16, its 16 partial sums held in two
// 8-lane vectors (lanes 0-7 and 8-15): element i goes to partial i % 16 in element
// order, then reduce_lanes's tree (l + 8, + 4, + 2, + 1) by halving, so the bits
// are dot()'s. dot() itself builds its partials in a stack array that is read back
// as vectors: every score stalled on store forwarding.
using Lanes8 = float __attribute__((vector_size(8 * sizeof(float))));
using Lanes4 = float __attribute__((vector_size(4 * sizeof(float))));
inline float dot_lanes16(const float* q, const float* k, int64_t n) {
  Lanes8 lo = {}, hi = {};
  for (int64_t i = 0; i < n; i += 16) {
    lo += load_vector<Lanes8>(q + i) * load_vector<Lanes8>(k + i);
    hi += load_vector<Lanes8>(q + i + 8) * load_vector<Lanes8>(k + i + 8);
  }
  const Lanes8 s8 = lo + hi;
  const Lanes4 s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

#if defined(__AVX512F__)
// out[j] = dot_lanes16(q, kt + j * hd, hd) for the 16 keys of a full block: the same
// partials (a multiply, then an add, lane by lane in element order) and the same
// tree (reduce16_avx512.h), for all 16 keys at once.
inline void scores16(const float* q, const float* kt, int64_t hd, float* out) {
  __m512 acc[kAttentionKeys];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  for (int64_t i = 0; i < hd; i += 16) {
    const __m512 qv = _mm512_loadu_ps(q + i);
    for (int j = 0; j < kAttentionKeys; ++j)
      acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(qv, _mm512_loadu_ps(kt + j * hd + i)));
  }
  // reduce16 puts key j in lane 4 * (j % 4) + j / 4: back to key order.
  const __m512i key_order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_ps(out, _mm512_permutexvar_ps(key_order, reduce16(acc)));
}
#endif

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
        bool dotted = false;  // s[] holds the block's dot products already
#if defined(__AVX512F__)
        if (hd % kAttentionKeys == 0 && hi - lo == kAttentionKeys) {
          scores16(q, kt, hd, s);
          dotted = true;
        }
#endif
        for (int64_t j = lo - j0; j < hi - j0; ++j) {
          const float dotted_qk = dotted ? s[j]
                                  : hd % kAttentionKeys == 0 ? dot_lanes16(q, kt + j * hd, hd)
                                                              : dot(q, kt + j * hd, hd);
          float score = dotted_qk * a.scale;
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
        // registers across the keys (per element the same operations in the same
        // order). Vectors of the ISA's width: a scalar times a wider GCC vector is
        // broadcast through the stack (a store-forwarding stall per key).
        int64_t c = 0;
        for (; c + 64 <= hd; c += 64) {
          PvLanes oc[64 / kPvLanes];
          for (int u = 0; u < 64 / kPvLanes; ++u) oc[u] = load_vector<PvLanes>(o + c + u * kPvLanes);
          for (int64_t j = lo - j0; j < hi - j0; ++j) {
            const PvLanes e = PvLanes{} + s[j];
            for (int u = 0; u < 64 / kPvLanes; ++u) oc[u] += e * load_vector<PvLanes>(vt + j * hd + c + u * kPvLanes);
          }
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
