#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "backends/check.h"

namespace sluice::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Descending by logit, lower id first among equals: a strict total order, so the
// kept prefix and the draw never depend on the sort algorithm.
struct Descending {
  const float* logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

// log of sum(exp(x)) over finite-or-(-inf) values; NaN entries are skipped.
double log_sum_exp(std::span<const float> x, float* max_out) {
  float max = kNegInf;
  for (float v : x) {
    if (v > max) max = v;
  }
  *max_out = max;
  if (max == kNegInf) return kNegInf;
  double sum = 0.0;
  for (float v : x) {
    if (v == v) sum += std::exp(static_cast<double>(v) - max);
  }
  return max + std::log(sum);
}

}  // namespace

Rng::Rng(uint64_t seed, uint64_t stream) {
  uint64_t x = seed;
  if (stream != 0) {
    uint64_t s = stream;
    x ^= splitmix64(s);
  }
  for (uint64_t& word : s_) word = splitmix64(x);
}

Rng Rng::from_entropy() {
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  return Rng(seed, 0);
}

uint64_t Rng::next() {
  const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = std::rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

Sampler::Sampler(int32_t vocab_size, DrawOrder draw_order)
    : vocab_size_(vocab_size),
      draw_order_(draw_order),
      work_(vocab_size),
      weight_(vocab_size),
      ids_(vocab_size),
      counts_(vocab_size, 0),
      seen_(vocab_size, 0) {
  SLUICE_CHECK(vocab_size > 0, "Sampler needs a vocabulary");
}

void Sampler::apply_logit_bias(std::span<float> logits, const LogitBias* bias) {
  if (bias == nullptr) return;
  const auto vocab = static_cast<int64_t>(logits.size());
  for (const auto& [token, value] : *bias) {
    if (token >= 0 && token < vocab) logits[token] += value;
  }
}

void Sampler::apply_min_tokens(std::span<float> logits, const SamplingParams& params, size_t num_output) {
  if (num_output >= static_cast<size_t>(std::max(params.min_tokens, 0))) return;
  const auto vocab = static_cast<int64_t>(logits.size());
  for (int32_t token : params.min_tokens_banned)
    if (token >= 0 && token < vocab) logits[token] = kNegInf;
}

void Sampler::apply_penalties(std::span<float> logits, const SamplingParams& params,
                              std::span<const int32_t> prompt, std::span<const int32_t> output) {
  const auto in_vocab = [&](int32_t t) { return t >= 0 && t < vocab_size_; };
  const float r = params.repetition_penalty;
  if (r != 1.0f && r > 0.0f) {
    // Each distinct token once: seen_ marks, the second pass applies and clears.
    for (auto history : {prompt, output}) {
      for (int32_t t : history) {
        if (in_vocab(t)) seen_[t] = 1;
      }
    }
    for (auto history : {prompt, output}) {
      for (int32_t t : history) {
        if (!in_vocab(t) || !seen_[t]) continue;
        seen_[t] = 0;
        logits[t] = logits[t] > 0.0f ? logits[t] / r : logits[t] * r;
      }
    }
  }
  const float freq = params.frequency_penalty;
  const float presence = params.presence_penalty;
  if (freq != 0.0f || presence != 0.0f) {
    for (int32_t t : output) {
      if (in_vocab(t)) ++counts_[t];
    }
    for (int32_t t : output) {
      if (!in_vocab(t) || counts_[t] == 0) continue;
      logits[t] -= freq * static_cast<float>(counts_[t]) + presence;
      counts_[t] = 0;
    }
  }
}

void Sampler::apply_temperature(std::span<float> logits, float temperature) {
  if (temperature == 1.0f) return;
  for (float& v : logits) v /= temperature;
}

int32_t Sampler::argmax(std::span<const float> logits) {
  int32_t best = 0;
  float best_value = logits[0];
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > best_value) {  // strict: the lowest id wins ties
      best_value = logits[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

void Sampler::log_softmax(std::span<const float> logits, std::span<float> out) {
  float max = 0.0f;
  const double log_z = log_sum_exp(logits, &max);
  for (size_t i = 0; i < logits.size(); ++i) {
    out[i] = static_cast<float>(logits[i] - log_z);
  }
}

// select_by_mass's first split: ranges longer than this are first partitioned at
// weight kHeavyWeight (exp(logit - max) >= 2^-10, i.e. logits within ~6.9 of the max).
constexpr size_t kHeavySplitMin = 4096;
constexpr float kHeavyWeight = 1.0f / 1024;

Sampler::Cut Sampler::select_by_mass(std::span<const float> logits, size_t lo, size_t hi, double before,
                                     double target, bool inclusive) {
  // Quickselect on mass: partition around a pivot, sum what precedes it, and keep
  // only the side that holds the answer. Expected O(hi - lo); the answer is the same
  // token a walk over the fully sorted order would stop at.
  const Descending order{logits.data()};
  auto reached = [&](double mass) { return inclusive ? mass >= target : mass > target; };
  if (hi - lo > kHeavySplitMin) {
    // The first partition is at a weight, not a token: the few tokens within
    // kHeavyWeight of the most likely one usually hold the answer, so one pass over
    // the range leaves a handful to select among. weight_ grows with the logit, so
    // the heavy side is a prefix of the descending order, as a pivot's would be.
    const auto first = ids_.begin() + static_cast<ptrdiff_t>(lo);
    const auto last = ids_.begin() + static_cast<ptrdiff_t>(hi);
    const auto mid = std::partition(first, last, [&](int32_t id) { return weight_[id] >= kHeavyWeight; });
    double heavy = 0.0;
    for (auto it = first; it != mid; ++it) heavy += weight_[*it];
    const auto m = static_cast<size_t>(mid - ids_.begin());
    if (m > lo && reached(before + heavy)) {
      hi = m;
    } else {
      before += heavy;
      lo = m;
    }
  }
  while (hi - lo > 32) {
    int32_t a = ids_[lo], b = ids_[lo + (hi - lo) / 2], c = ids_[hi - 1];
    if (order(b, a)) std::swap(a, b);
    if (order(c, b)) std::swap(b, c);
    if (order(b, a)) std::swap(a, b);
    const int32_t pivot = b;  // median of three
    const auto first = ids_.begin() + static_cast<ptrdiff_t>(lo);
    const auto last = ids_.begin() + static_cast<ptrdiff_t>(hi);
    const auto mid = std::partition(first, last, [&](int32_t id) { return order(id, pivot); });
    std::iter_swap(mid, std::find(mid, last, pivot));
    double left = 0.0;
    for (auto it = first; it != mid; ++it) left += weight_[*it];
    const auto m = static_cast<size_t>(mid - ids_.begin());
    if (m > lo && reached(before + left)) {
      hi = m;  // the answer precedes the pivot
      continue;
    }
    before += left;
    if (reached(before + weight_[pivot])) return {m, before + weight_[pivot]};
    before += weight_[pivot];
    lo = m + 1;
  }
  std::sort(ids_.begin() + static_cast<ptrdiff_t>(lo), ids_.begin() + static_cast<ptrdiff_t>(hi), order);
  for (size_t i = lo; i < hi; ++i) {
    before += weight_[ids_[i]];
    if (reached(before)) return {i, before};
  }
  return {hi - 1, before};  // rounding left the target past the end: the last candidate
}

Sampler::Kept Sampler::keep_prefix(std::span<const float> logits, int32_t top_k, float top_p,
                                   float min_p) {
  // Every filter keeps a prefix of the descending order, so the kept set is the
  // shortest of the three prefixes. On return ids_[0, count) holds it, unsorted.
  const size_t vocab = logits.size();
  float max = kNegInf;
  for (float v : logits) max = std::max(max, v);
  double total = 0.0;
  for (size_t i = 0; i < vocab; ++i) {
    weight_[i] = max == kNegInf ? 0.0f : std::exp(logits[i] - max);
    total += weight_[i];
  }
  std::iota(ids_.begin(), ids_.end(), 0);

  Kept kept{vocab, total};
  if (top_k > 0 && static_cast<size_t>(top_k) < vocab) {
    std::nth_element(ids_.begin(), ids_.begin() + top_k, ids_.end(), Descending{logits.data()});
    kept.count = top_k;
    kept.weight = 0.0;
    for (size_t i = 0; i < kept.count; ++i) kept.weight += weight_[ids_[i]];
  }
  if (top_p < 1.0f && kept.count > 0) {
    // Nucleus over the top-k set renormalised: the shortest prefix reaching top_p.
    const Cut cut = select_by_mass(logits, 0, kept.count, 0.0, static_cast<double>(top_p) * kept.weight, true);
    kept = {cut.index + 1, cut.mass_through};
  }
  if (min_p > 0.0f) {
    // weight is p / p_max, so min_p keeps weight >= min_p: also a prefix of the order.
    const auto first = ids_.begin();
    const auto last = ids_.begin() + static_cast<ptrdiff_t>(kept.count);
    const auto end = std::partition(first, last, [&](int32_t id) { return weight_[id] >= min_p; });
    kept.count = static_cast<size_t>(end - first);
    kept.weight = 0.0;
    for (auto it = first; it != end; ++it) kept.weight += weight_[*it];
  }
  return kept;
}

int32_t Sampler::draw_by_id(const Kept& kept, double target) {
  for (size_t i = 0; i < kept.count; ++i) seen_[ids_[i]] = 1;
  int32_t token = -1, last_kept = -1;
  double before = 0.0;
  for (size_t id = 0; id < seen_.size(); ++id) {
    if (!seen_[id]) continue;
    seen_[id] = 0;  // seen_ is all zero between calls
    last_kept = static_cast<int32_t>(id);
    before += weight_[id];
    if (token < 0 && before > target) token = last_kept;
  }
  return token >= 0 ? token : last_kept;  // rounding left the target past the end: the last kept token
}

void Sampler::apply_top_k_top_p_min_p(std::span<float> logits, int32_t top_k, float top_p,
                                      float min_p) {
  const Kept kept = keep_prefix(logits, top_k, top_p, min_p);  // seen_ is all zero between calls
  for (size_t i = 0; i < kept.count; ++i) seen_[ids_[i]] = 1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!seen_[i]) logits[i] = kNegInf;
    seen_[i] = 0;
  }
}

void Sampler::top_logprobs(std::span<const float> raw, int32_t n, double log_z,
                           std::vector<TokenLogprob>& out) {
  const size_t count = std::min<size_t>(n, raw.size());
  std::iota(ids_.begin(), ids_.end(), 0);
  std::partial_sort(ids_.begin(), ids_.begin() + static_cast<ptrdiff_t>(count), ids_.end(),
                    Descending{raw.data()});
  out.clear();
  for (size_t i = 0; i < count; ++i) {
    out.push_back({ids_[i], static_cast<float>(raw[ids_[i]] - log_z)});
  }
}

backends::RowSampling Sampler::device_row(const SamplingParams& params, std::span<const int32_t> history_prompt,
                                         std::span<const int32_t> history_output, Rng& rng,
                                         std::vector<backends::LogitAdjust>& adjust) {
  if (adjust_index_.empty()) adjust_index_.assign(static_cast<size_t>(vocab_size_), -1);
  const size_t first = adjust.size();
  const auto entry = [&](int32_t token) -> backends::LogitAdjust& {
    int32_t& index = adjust_index_[static_cast<size_t>(token)];
    if (index < 0) {
      index = static_cast<int32_t>(adjust.size() - first);
      adjust.push_back({.token = token});
    }
    return adjust[first + static_cast<size_t>(index)];
  };
  const auto in_vocab = [&](int32_t t) { return t >= 0 && t < vocab_size_; };
  if (params.logit_bias)
    for (const auto& [token, value] : *params.logit_bias)
      if (in_vocab(token)) entry(token).bias += value;
  // -infinity as a bias masks the token on the device as it does on the host.
  if (history_output.size() < static_cast<size_t>(std::max(params.min_tokens, 0)))
    for (int32_t token : params.min_tokens_banned)
      if (in_vocab(token)) entry(token).bias = kNegInf;
  const float r = params.repetition_penalty;
  if (r != 1.0f && r > 0.0f)
    for (auto history : {history_prompt, history_output})
      for (int32_t t : history)
        if (in_vocab(t)) entry(t).repetition = r;
  const float freq = params.frequency_penalty;
  const float presence = params.presence_penalty;
  if (freq != 0.0f || presence != 0.0f) {
    // The same expression as apply_penalties, so both round alike.
    for (int32_t t : history_output)
      if (in_vocab(t)) ++counts_[static_cast<size_t>(t)];
    for (int32_t t : history_output) {
      if (!in_vocab(t) || counts_[static_cast<size_t>(t)] == 0) continue;
      entry(t).subtract = freq * static_cast<float>(counts_[static_cast<size_t>(t)]) + presence;
      counts_[static_cast<size_t>(t)] = 0;
    }
  }
  for (size_t i = first; i < adjust.size(); ++i) adjust_index_[static_cast<size_t>(adjust[i].token)] = -1;

  backends::RowSampling row;
  row.temperature = params.temperature;
  row.top_k = params.top_k;
  row.top_p = params.top_p;
  row.min_p = params.min_p;
  row.num_logprobs = params.logprobs ? std::clamp(*params.logprobs, 0, backends::kMaxSampledLogprobs) : 0;
  if (!params.is_greedy()) row.uniform = rng.uniform();  // sample() draws exactly once too
  return row;
}

SampleResult Sampler::from_device(const backends::SampledToken& token, const SamplingParams& params) {
  SampleResult result;
  result.token = token.token;
  if (!params.logprobs) return result;
  result.logprob = token.logprob;
  for (int32_t i = 0; i < token.num_top && i < *params.logprobs; ++i)
    result.top_logprobs.push_back({token.top_tokens[i], token.top_logprobs[i]});
  return result;
}

SampleResult Sampler::score(std::span<const float> logits, int32_t token, int32_t num_top) {
  SLUICE_CHECK(logits.size() == static_cast<size_t>(vocab_size_), "logits size != vocab size");
  SLUICE_CHECK(token >= 0 && token < vocab_size_, "scored token outside the vocabulary");
  const std::span<float> work(work_);
  for (size_t i = 0; i < logits.size(); ++i) work[i] = logits[i] == logits[i] ? logits[i] : kNegInf;
  float max = 0.0f;
  const double log_z = log_sum_exp(work, &max);
  SampleResult result;
  result.token = token;
  result.logprob = static_cast<float>(work[static_cast<size_t>(token)] - log_z);
  if (num_top > 0) top_logprobs(work, num_top, log_z, result.top_logprobs);
  return result;
}

SampleResult Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                             std::span<const int32_t> history_prompt,
                             std::span<const int32_t> history_output, Rng& rng,
                             std::span<const uint64_t> allowed) {
  SLUICE_CHECK(logits.size() == static_cast<size_t>(vocab_size_), "logits size != vocab size");
  SLUICE_CHECK(allowed.empty() || allowed.size() * 64 >= logits.size(), "mask shorter than the vocabulary");
  const std::span<float> work(work_);
  for (size_t i = 0; i < logits.size(); ++i) {
    work[i] = logits[i] == logits[i] ? logits[i] : kNegInf;  // a NaN never wins
  }
  if (!allowed.empty()) {
    for (size_t i = 0; i < logits.size(); ++i)
      if (!((allowed[i / 64] >> (i % 64)) & 1u)) work[i] = kNegInf;
  }
  // Raw-model log-probabilities, taken before any processor touches `work`.
  SampleResult result;
  double log_z = 0.0;
  if (params.logprobs) {
    float max = 0.0f;
    log_z = log_sum_exp(work, &max);
    if (*params.logprobs > 0) top_logprobs(work, *params.logprobs, log_z, result.top_logprobs);
  }

  apply_logit_bias(work, params.logit_bias.get());
  apply_min_tokens(work, params, history_output.size());
  apply_penalties(work, params, history_prompt, history_output);

  if (params.is_greedy()) {
    result.token = argmax(work);
  } else {
    apply_temperature(work, params.temperature);
    const Kept kept = keep_prefix(work, params.top_k, params.top_p, params.min_p);
    if (kept.count == 0 || !(kept.weight > 0.0)) {
      result.token = argmax(work);  // everything masked: stay deterministic, still draw
      rng.next();
    } else {
      const double target = rng.uniform() * kept.weight;
      if (draw_order_ == DrawOrder::by_id) {
        result.token = draw_by_id(kept, target);
      } else {
        // Inverse CDF over the kept set in descending order, without sorting it.
        result.token = ids_[select_by_mass(work, 0, kept.count, 0.0, target, false).index];
      }
    }
  }

  if (params.logprobs) {
    const bool masked_out = !allowed.empty() && !((allowed[static_cast<size_t>(result.token) / 64] >>
                                                   (static_cast<size_t>(result.token) % 64)) & 1u);
    const float raw = logits[result.token];
    result.logprob = raw == raw && !masked_out ? static_cast<float>(raw - log_z) : kNegInf;
  }
  return result;
}

}  // namespace sluice::engine
