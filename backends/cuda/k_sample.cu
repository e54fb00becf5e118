// Sampling on the device (Backend::sample): one thread block per row of logits,
// rows independent of each other (batch invariance).
//
// The raw row is never written (the caller may still download it). Every pass
// re-derives a token's processed value from it: the few tokens with adjust entries
// are found through a 2^17-bit filter in shared memory (bit token mod 2^17) and a
// binary search in the row's adjust list, which the host sorted by token.
//
// Per row:
//   1. One pass: the raw log-sum-exp (online per thread) and the argmax of the
//      processed logits. Greedy rows stop here.
//   2. top_k: radix select of the k-th largest scaled logit (count histograms),
//      over the tokens with a non-zero weight only (see draw()).
//   3. top_p: radix select, over the top_k set, of the value at which the mass of
//      the descending order reaches top_p of the set's mass (mass histograms).
//   4. min_p: a per-token test (weight >= min_p; the top weight is 1).
//   5. The draw: every thread sums the kept mass of a contiguous chunk of ids, an
//      exclusive scan over the threads places the chunks on the CDF in id order, and
//      the one thread whose chunk holds the target walks it.
//   6. Top logprobs (when asked): radix select of the N-th largest raw logit, ties
//      at the cut broken by lower id through a second select over the ids.
//
// Determinism: weights are fixed point (uint64, 2^40 = weight 1), so a histogram
// bin or a chunk sum is an integer sum, the same whatever order the atomics land
// in; the float and double reductions run in a fixed tree. The same inputs give the
// same token, whatever the other rows hold.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "backends/cuda/kernels.h"

namespace sluice::backends::cuda {
namespace {

using u64 = unsigned long long;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
static_assert(kWarps == 32, "the block reductions finish with one warp over the per-warp values");
constexpr unsigned kFullMask = 0xffffffffu;
// Radix digits, most significant first: 11 + 11 + 10 bits of a 32-bit key.
constexpr int kLevels = 3;
constexpr int kBins = 2048;
constexpr int kBinsPerThread = kBins / kThreads;
constexpr int kFilterWords = 4096;  // 2^17 bits
// Weight 1 in fixed point. A row's total is at most vocab * 2^40 < 2^64 for the
// vocabularies launch_sample accepts (kSampleMaxVocab = 2^23).
constexpr float kFixedOne = 1099511627776.0f;  // 2^40

__device__ __forceinline__ int digit_shift(int level) { return level == 0 ? 21 : level == 1 ? 10 : 0; }
__device__ __forceinline__ int digit_bits(int level) { return level == 2 ? 10 : 11; }

// Unsigned keys in the order of the floats (no NaN reaches here). -0 becomes +0
// first: the two compare equal, so they must tie, as on the host.
__device__ __forceinline__ uint32_t order_key(float v) {
  const uint32_t bits = __float_as_uint(__fadd_rn(v, 0.0f));
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

struct Best {
  float value;
  int id;
};

// Higher value first, lower id on ties: a strict total order, so the argmax is the
// same whatever order the candidates are compared in.
__device__ __forceinline__ bool better(Best a, Best b) {
  return a.value > b.value || (a.value == b.value && a.id < b.id);
}

struct RowShared {
  u64 scan[kWarps + 1];  // block scan: per-warp sums, then the total
  double dsum[kWarps];
  float fmax[kWarps];
  Best best[kWarps];
  // Radix select: the bin that holds the target, what lies above it, and its weight.
  uint32_t digit;
  u64 above;
  u64 at;
  int token;
  int num_candidates;
  int candidate_id[kSampleMaxLogprobs];
  float candidate_value[kSampleMaxLogprobs];
};

// --- block-wide reductions (blockDim.x == kThreads) -----------------------------------

__device__ float block_max(float v, RowShared& sh) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  __syncthreads();  // a previous use of sh.fmax may still be read
  if (lane == 0) sh.fmax[warp] = v;
  __syncthreads();
  v = sh.fmax[lane];
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// A butterfly: at every step both partners add the same two numbers, so all lanes
// hold bit-identical sums and the tree is fixed.
__device__ double block_sum(double v, RowShared& sh) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  __syncthreads();
  if (lane == 0) sh.dsum[warp] = v;
  __syncthreads();
  v = sh.dsum[lane];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ Best block_argmax(Best b, RowShared& sh) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Best other{__shfl_xor_sync(kFullMask, b.value, offset), __shfl_xor_sync(kFullMask, b.id, offset)};
    if (better(other, b)) b = other;
  }
  __syncthreads();
  if (lane == 0) sh.best[warp] = b;
  __syncthreads();
  b = sh.best[lane];
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Best other{__shfl_xor_sync(kFullMask, b.value, offset), __shfl_xor_sync(kFullMask, b.id, offset)};
    if (better(other, b)) b = other;
  }
  return b;
}

// Exclusive prefix sum of v over the threads in thread order; *total gets the sum.
__device__ u64 block_exclusive_scan(u64 v, RowShared& sh, u64* total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  u64 inclusive = v;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const u64 n = __shfl_up_sync(kFullMask, inclusive, offset);
    if (lane >= offset) inclusive += n;
  }
  __syncthreads();  // a previous scan's result may still be read
  if (lane == 31) sh.scan[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const u64 own = sh.scan[lane];
    u64 warp_inclusive = own;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const u64 n = __shfl_up_sync(kFullMask, warp_inclusive, offset);
      if (lane >= offset) warp_inclusive += n;
    }
    __syncwarp();
    sh.scan[lane] = warp_inclusive - own;
    if (lane == 31) sh.scan[kWarps] = warp_inclusive;
  }
  __syncthreads();
  *total = sh.scan[kWarps];
  return sh.scan[warp] + inclusive - v;
}

// --- one row's values ------------------------------------------------------------------

__device__ __forceinline__ float apply_adjust(float x, const SampleAdjust& a) {
  // The host's order and roundings: logit_bias, repetition, frequency/presence
  // (explicit _rn: no contraction into an FMA).
  x = __fadd_rn(x, a.bias);
  if (a.repetition != 1.0f && a.repetition > 0.0f)
    x = x > 0.0f ? __fdiv_rn(x, a.repetition) : __fmul_rn(x, a.repetition);
  return __fsub_rn(x, a.subtract);
}

struct RowView {
  const float* raw;
  int vocab;
  const SampleAdjust* adjust;  // sorted by token, ids in [0, vocab)
  int num_adjust;
  const uint32_t* filter;      // shared: bit (token mod 2^17) of every adjusted token
  float temperature;

  // NaN counts as -inf: it never wins and carries no weight.
  __device__ __forceinline__ float raw_at(int i) const {
    const float v = raw[i];
    return v == v ? v : -INFINITY;
  }

  __device__ __forceinline__ float processed(int i, float raw_value) const {
    if (num_adjust == 0 || !((filter[(i >> 5) & (kFilterWords - 1)] >> (i & 31)) & 1u)) return raw_value;
    int lo = 0, hi = num_adjust;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (adjust[mid].token < i) lo = mid + 1;
      else hi = mid;
    }
    if (lo == num_adjust || adjust[lo].token != i) return raw_value;  // a filter false positive
    const float x = apply_adjust(raw_value, adjust[lo]);
    return x == x ? x : -INFINITY;
  }

  __device__ __forceinline__ float scaled(int i) const {
    const float s = __fdiv_rn(processed(i, raw_at(i)), temperature);
    return s == s ? s : -INFINITY;
  }
};

// A token's softmax weight exp(s - max) as the host computes it (float), in fixed
// point, and its order key.
struct Weighted {
  uint32_t key;
  float weight;
  u64 fixed;
};

__device__ __forceinline__ Weighted weigh(float scaled, float max_scaled) {
  const float w = expf(__fsub_rn(scaled, max_scaled));
  return {order_key(scaled), w, __float2ull_rn(__fmul_rn(w, kFixedOne))};
}

// --- radix select ------------------------------------------------------------------------

struct Selection {
  bool cut;             // false: the eligible total is below the target, nothing is cut
  uint32_t threshold;   // keep keys >= threshold
  u64 above;            // weight of the eligible keys above the threshold's bin
  u64 at;               // weight of the threshold's bin (keys == threshold once exact)
};

// The largest threshold such that the eligible weight of keys >= threshold reaches
// the target: elem(i, key, weight) says whether token i is eligible and gives its
// key and weight (1 for counts); target(total) turns the eligible total into the
// target. Three passes of 11/11/10-bit digits over the keys matching the prefix
// chosen so far; with counts it stops early once a whole bin is needed (then the
// threshold is that bin's smallest possible key and selects exactly the target).
template <bool kCount, class Elem, class Target>
__device__ Selection radix_select(int vocab, Elem elem, Target target_of, u64* hist, RowShared& sh) {
  auto* counts = reinterpret_cast<unsigned*>(hist);
  uint32_t prefix = 0;
  u64 above = 0, target = 0;
  for (int level = 0; level < kLevels; ++level) {
    const int shift = digit_shift(level);
    const int num_bins = 1 << digit_bits(level);
    const uint32_t high_mask = level == 0 ? 0u : ~0u << (shift + digit_bits(level));
    for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      uint32_t key;
      u64 weight;
      if (!elem(i, key, weight) || (key & high_mask) != prefix || weight == 0) continue;
      const uint32_t digit = (key >> shift) & static_cast<uint32_t>(num_bins - 1);
      if (kCount) atomicAdd(&counts[digit], 1u);
      else atomicAdd(&hist[digit], weight);
    }
    __syncthreads();

    // Bins in descending digit order, kBinsPerThread consecutive ones per thread.
    u64 h[kBinsPerThread];
    u64 local = 0;
    for (int q = 0; q < kBinsPerThread; ++q) {
      const int d = num_bins - 1 - (static_cast<int>(threadIdx.x) * kBinsPerThread + q);
      h[q] = d >= 0 ? (kCount ? counts[d] : hist[d]) : 0;
      local += h[q];
    }
    u64 total;
    const u64 before = block_exclusive_scan(local, sh, &total);
    if (level == 0) {
      target = target_of(total);
      if (total < target) return {false, 0u, 0, total};  // the same on every thread
    }
    // The first bin where the running weight reaches the target: one thread finds it.
    u64 acc = above + before;
    for (int q = 0; q < kBinsPerThread; ++q) {
      if (acc < target && acc + h[q] >= target) {
        sh.digit = static_cast<uint32_t>(num_bins - 1 - (static_cast<int>(threadIdx.x) * kBinsPerThread + q));
        sh.above = acc;
        sh.at = h[q];
      }
      acc += h[q];
    }
    __syncthreads();
    prefix |= sh.digit << shift;
    above = sh.above;
    const u64 at = sh.at;
    if ((kCount && at == target - above) || level == kLevels - 1) return {true, prefix, above, at};
    // The next level's writes to sh come after its own __syncthreads.
  }
  return {true, prefix, above, 0};  // not reached
}

// --- the draw --------------------------------------------------------------------------

__device__ int scaled_argmax(const RowView& row, RowShared& sh) {
  Best best{-INFINITY, INT_MAX};
  for (int i = threadIdx.x; i < row.vocab; i += kThreads) {
    const Best c{row.scaled(i), i};
    if (better(c, best)) best = c;
  }
  return block_argmax(best, sh).id;
}

// Temperature, top_k, top_p, min_p, then the inverse-CDF draw in id order.
//
// Only tokens with a non-zero fixed-point weight (w > 2^-41) can be drawn, and they
// are a prefix of the descending order, so the top_k select counts only them: when
// fewer than k have weight, top_k cuts nothing that could be drawn.
//
// Ties: top_k keeps every token equal to the k-th largest value (the host keeps
// exactly k, lower ids first); top_p keeps every token equal to the value at the
// cut. Both only differ from the host where values tie exactly at the cut.
__device__ int draw(const RowView& row, const SampleRowArgs& a, float max_processed, RowShared& sh, u64* hist) {
  // Division by a positive temperature is monotone, so this is the max scaled logit.
  const float max_scaled = __fdiv_rn(max_processed, a.temperature);
  // Everything -inf, or an infinite logit: no finite weights; the host's fallback.
  if (!isfinite(max_scaled)) return scaled_argmax(row, sh);

  uint32_t threshold = 0;  // keep keys >= threshold
  if (a.top_k > 0 && a.top_k < row.vocab) {
    const Selection s = radix_select<true>(
        row.vocab,
        [&](int i, uint32_t& key, u64& weight) {
          const Weighted t = weigh(row.scaled(i), max_scaled);
          key = t.key;
          weight = 1;
          return t.fixed != 0;
        },
        [&](u64) { return static_cast<u64>(a.top_k); }, hist, sh);
    if (s.cut) threshold = s.threshold;
  }
  if (a.top_p < 1.0f) {
    // The shortest descending prefix of the top_k set whose mass reaches
    // top_p * its mass (at least the top token).
    const Selection s = radix_select<false>(
        row.vocab,
        [&](int i, uint32_t& key, u64& weight) {
          const Weighted t = weigh(row.scaled(i), max_scaled);
          key = t.key;
          weight = t.fixed;
          return t.key >= threshold;
        },
        [&](u64 total) {
          const double t = ceil(static_cast<double>(a.top_p) * static_cast<double>(total));
          return !(t > 1.0) ? u64{1} : t >= static_cast<double>(total) ? total : static_cast<u64>(t);
        },
        hist, sh);
    if (s.cut) threshold = s.threshold;
  }
  const bool min_p = a.min_p > 0.0f;
  const auto kept_weight = [&](int i) -> u64 {
    const Weighted t = weigh(row.scaled(i), max_scaled);
    if (t.key < threshold || (min_p && !(t.weight >= a.min_p))) return 0;
    return t.fixed;
  };

  // Contiguous id chunks, one per thread, placed on the CDF by an exclusive scan.
  const int chunk = (row.vocab + kThreads - 1) / kThreads;
  const int begin = min(row.vocab, static_cast<int>(threadIdx.x) * chunk);
  const int end = min(row.vocab, begin + chunk);
  u64 local = 0;
  for (int i = begin; i < end; ++i) local += kept_weight(i);
  u64 total;
  const u64 before = block_exclusive_scan(local, sh, &total);
  if (total == 0) return scaled_argmax(row, sh);  // min_p > 1 keeps nothing: the host's fallback

  u64 target = a.uniform > 0.0 ? static_cast<u64>(a.uniform * static_cast<double>(total)) : 0;
  if (target >= total) target = total - 1;
  if (before <= target && target - before < local) {  // exactly one thread
    u64 mass = before;
    for (int i = begin; i < end; ++i) {
      mass += kept_weight(i);
      if (mass > target) {
        sh.token = i;
        break;
      }
    }
  }
  __syncthreads();
  return sh.token;
}

// --- top logprobs ------------------------------------------------------------------------

// The n highest raw logits, best first (lower id on ties), with their log-probabilities.
__device__ void top_logprobs(const RowView& row, int n, double log_z, RowShared& sh, u64* hist, SampleOut& out) {
  const auto raw_key = [&](int i) { return order_key(row.raw_at(i)); };
  const Selection s = radix_select<true>(
      row.vocab,
      [&](int i, uint32_t& key, u64& weight) {
        key = raw_key(i);
        weight = 1;
        return true;
      },
      [&](u64) { return static_cast<u64>(n); }, hist, sh);
  // More tokens equal to the cut value than still wanted: the lowest ids among them,
  // by a second select over ~id (larger for lower ids).
  const u64 wanted = static_cast<u64>(n) - s.above;
  const bool split_ties = s.at > wanted;
  uint32_t id_cut = 0;
  if (split_ties) {
    id_cut = radix_select<true>(
                 row.vocab,
                 [&](int i, uint32_t& key, u64& weight) {
                   key = ~static_cast<uint32_t>(i);
                   weight = 1;
                   return raw_key(i) == s.threshold;
                 },
                 [&](u64) { return wanted; }, hist, sh)
                 .threshold;
  }
  if (threadIdx.x == 0) sh.num_candidates = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < row.vocab; i += kThreads) {
    const uint32_t key = raw_key(i);
    const bool take = split_ties ? key > s.threshold || (key == s.threshold && ~static_cast<uint32_t>(i) >= id_cut)
                                 : key >= s.threshold;
    if (!take) continue;
    const int slot = atomicAdd(&sh.num_candidates, 1);  // exactly n take a slot
    if (slot < kSampleMaxLogprobs) {
      sh.candidate_id[slot] = i;
      sh.candidate_value[slot] = row.raw_at(i);
    }
  }
  __syncthreads();
  // The slots' order depends on timing; each candidate's rank does not.
  const int j = threadIdx.x;
  if (j < n) {
    const Best own{sh.candidate_value[j], sh.candidate_id[j]};
    int rank = 0;
    for (int c = 0; c < n; ++c) rank += better({sh.candidate_value[c], sh.candidate_id[c]}, own) ? 1 : 0;
    out.top_tokens[rank] = own.id;
    out.top_logprobs[rank] = static_cast<float>(static_cast<double>(own.value) - log_z);
  } else if (j < kSampleMaxLogprobs) {
    out.top_tokens[j] = 0;
    out.top_logprobs[j] = 0.0f;
  }
}

// --- the kernel ------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* logits, long long stride, int vocab, const SampleRowArgs* rows,
                  const SampleAdjust* adjust, SampleOut* out) {
  __shared__ uint32_t filter[kFilterWords];
  __shared__ u64 hist[kBins];
  __shared__ RowShared sh;
  const SampleRowArgs a = rows[blockIdx.x];
  const RowView row{logits + blockIdx.x * stride, vocab, adjust + a.adjust_begin, a.adjust_count, filter,
                    a.temperature};
  if (a.adjust_count > 0) {
    for (int w = threadIdx.x; w < kFilterWords; w += kThreads) filter[w] = 0;
    __syncthreads();
    for (int j = threadIdx.x; j < a.adjust_count; j += kThreads) {
      const int t = row.adjust[j].token;
      atomicOr(&filter[(t >> 5) & (kFilterWords - 1)], 1u << (t & 31));
    }
    __syncthreads();
  }

  // Pass 1: raw log-sum-exp, online per thread (sum of exp(v - running max), rescaled
  // when the max grows), and the argmax of the processed logits.
  float raw_max = -INFINITY;
  double raw_sum = 0.0;
  Best best{-INFINITY, INT_MAX};
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float v = row.raw_at(i);
    if (v > raw_max) {
      raw_sum = raw_sum * exp(static_cast<double>(raw_max) - static_cast<double>(v)) + 1.0;
      raw_max = v;
    } else if (v != -INFINITY) {
      raw_sum += static_cast<double>(expf(v - raw_max));
    }
    const Best c{row.processed(i, v), i};
    if (better(c, best)) best = c;
  }
  const float max_all = block_max(raw_max, sh);
  const double share =
      raw_max == -INFINITY ? 0.0 : raw_sum * exp(static_cast<double>(raw_max) - static_cast<double>(max_all));
  const double sum_all = block_sum(share, sh);
  const double log_z = max_all == -INFINITY ? -INFINITY : static_cast<double>(max_all) + log(sum_all);
  best = block_argmax(best, sh);

  const int token = a.temperature < 1e-5f ? best.id : draw(row, a, best.value, sh, hist);

  SampleOut& o = out[blockIdx.x];
  const int n = min(a.num_logprobs, min(vocab, kSampleMaxLogprobs));
  if (threadIdx.x == 0) {
    const float raw = row.raw[token];
    o.token = token;
    o.logprob = raw == raw ? static_cast<float>(static_cast<double>(raw) - log_z) : -INFINITY;
    o.num_top = max(n, 0);
  }
  if (n > 0) {
    top_logprobs(row, n, log_z, sh, hist, o);
  } else if (threadIdx.x < kSampleMaxLogprobs) {
    o.top_tokens[threadIdx.x] = 0;
    o.top_logprobs[threadIdx.x] = 0.0f;
  }
}

}  // namespace

void launch_sample(const float* logits, int64_t row_stride, int64_t rows, int64_t vocab, const SampleRowArgs* args,
                   const SampleAdjust* adjust, SampleOut* out, cudaStream_t stream) {
  if (rows == 0) return;
  sample_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, row_stride, static_cast<int>(vocab),
                                                                     args, adjust, out);
}

}  // namespace sluice::backends::cuda
