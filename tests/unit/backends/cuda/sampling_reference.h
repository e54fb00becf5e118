#pragma once
// The host side of the CUDA sampling tests (test_cuda_sampling*.cpp): logits that
// look like an LLM's, the engine's logit adjustments for a history, a small
// reference of the device's sampling semantics (Reference: the kept set, in id
// order, and its CDF), and the judge that compares a device draw with it.
//
// Tolerances:
//   logprobs       1e-5 absolute: the device sums float expf terms in double, the
//                  host double exp terms; both are within ~1e-7 of log_z.
//   sampled token  the reference's token, except where the draw target lies within
//                  kBoundaryTolerance * (kept mass) of a boundary of the reference's
//                  CDF: weights are float expf(s - max) on both sides, but CUDA's expf
//                  is within 2 ulp and glibc's within 1, so a weight, and a cumulative
//                  mass, may differ by ~3 * 2^-24 relative (1e-9 would be tighter than
//                  the two libms agree). Such draws must stay rare (kMaxBoundaryShare),
//                  and a token outside the reference's kept set is accepted only where
//                  it sits on the top_p or min_p cut within the same tolerance.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "tests/unit/backends/backend_test_util.h"

namespace sluice::backends::test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr double kLogprobTolerance = 1e-5;
inline constexpr double kBoundaryTolerance = 1e-6;
inline constexpr double kMaxBoundaryShare = 0.01;

// --- inputs ---------------------------------------------------------------------------

// Roughly an LLM's logits: a normal bulk and a few strong candidates.
inline std::vector<float> llm_logits(std::mt19937& rng, int32_t vocab) {
  std::normal_distribution<float> bulk(-2.0f, 2.5f);
  std::uniform_real_distribution<float> peak(6.0f, 12.0f);
  std::vector<float> v(static_cast<size_t>(vocab));
  for (float& x : v) x = bulk(rng);
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  for (int i = 0; i < std::min(vocab, 8); ++i) v[static_cast<size_t>(id(rng))] = peak(rng);
  return v;
}

// Many tokens with comparable weights: the top_p and min_p cuts fall deep.
inline std::vector<float> flat_logits(std::mt19937& rng, int32_t vocab) { return random_floats(rng, size_t(vocab), -1.0f, 1.0f); }

// A step's history: prompt and output token ids, some repeated.
struct History {
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
};

inline History random_history(std::mt19937& rng, int32_t vocab, size_t prompt_len, size_t output_len) {
  // Draw from a small pool so that tokens repeat (frequency counts > 1).
  const std::vector<int32_t> pool = random_ints(rng, 24, 0, vocab - 1);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  History h;
  for (size_t i = 0; i < prompt_len; ++i) h.prompt.push_back(pool[pick(rng)]);
  for (size_t i = 0; i < output_len; ++i) h.output.push_back(pool[pick(rng)]);
  return h;
}

// The adjust entries Sampler::apply_logit_bias and apply_penalties amount to: each
// touched token once, with the same float expressions. Returned in a shuffled order
// (the backend sorts them).
inline std::vector<LogitAdjust> adjust_for(const engine::SamplingParams& p, const History& h, int32_t vocab,
                                    std::mt19937& rng) {
  std::map<int32_t, LogitAdjust> entries;
  const auto entry = [&](int32_t t) -> LogitAdjust& { return entries.try_emplace(t, LogitAdjust{.token = t}).first->second; };
  const auto in_vocab = [&](int32_t t) { return t >= 0 && t < vocab; };
  if (p.logit_bias)
    for (const auto& [token, bias] : *p.logit_bias)
      if (in_vocab(token)) entry(token).bias = bias;
  const float r = p.repetition_penalty;
  if (r != 1.0f && r > 0.0f)
    for (const auto* history : {&h.prompt, &h.output})
      for (int32_t t : *history)
        if (in_vocab(t)) entry(t).repetition = r;
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    std::map<int32_t, int> counts;
    for (int32_t t : h.output)
      if (in_vocab(t)) ++counts[t];
    for (const auto& [t, n] : counts) entry(t).subtract = p.frequency_penalty * static_cast<float>(n) + p.presence_penalty;
  }
  std::vector<LogitAdjust> out;
  for (const auto& [t, e] : entries) out.push_back(e);
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

// One sample() call: logits [rows, vocab] uploaded (rows `pad` elements apart beyond
// vocab), and the results.
inline std::vector<SampledToken> sample_on(Backend& backend, const std::vector<std::vector<float>>& logits,
                                    const std::vector<RowSampling>& rows, int64_t pad = 0) {
  REQUIRE(!logits.empty());
  REQUIRE(logits.size() == rows.size());
  const auto vocab = static_cast<int64_t>(logits[0].size());
  BackendTensor t(backend, DType::F32, {static_cast<int64_t>(logits.size()), vocab}, pad);
  std::vector<float> flat;
  for (const auto& row : logits) {
    REQUIRE(static_cast<int64_t>(row.size()) == vocab);
    flat.insert(flat.end(), row.begin(), row.end());
  }
  t.upload(flat);
  std::vector<SampledToken> out(rows.size());
  backend.sample(t.tensor, rows, out);
  CHECK(t.padding_intact());
  CHECK(bits_equal(t.download(), flat));  // the raw logits stay as they were
  return out;
}

inline bool same_result(const SampledToken& a, const SampledToken& b) {
  return a.token == b.token && std::memcmp(&a.logprob, &b.logprob, sizeof(float)) == 0 && a.num_top == b.num_top &&
         std::equal(a.top_tokens, a.top_tokens + a.num_top, b.top_tokens) &&
         std::memcmp(a.top_logprobs, b.top_logprobs, sizeof(float) * size_t(std::max(a.num_top, 0))) == 0;
}

inline void check_logprob(float got, float want, const std::string& what) {
  INFO(what << ": device " << got << ", host " << want);
  if (std::isnan(want)) CHECK(std::isnan(got));  // -inf - log_z of an all -inf row, on both
  else if (std::isinf(want) || std::isinf(got)) CHECK(got == want);
  else CHECK(std::fabs(double(got) - double(want)) <= kLogprobTolerance);
}

// --- the host reference of the device's semantics ------------------------------------------

inline float processed_value(float raw, const LogitAdjust* a) {
  float x = raw == raw ? raw : -kInf;
  if (a) {
    x += a->bias;
    if (a->repetition != 1.0f && a->repetition > 0.0f) x = x > 0.0f ? x / a->repetition : x * a->repetition;
    x -= a->subtract;
  }
  return x == x ? x : -kInf;
}

inline int32_t argmax_lowest(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());  // first of the maxima
}

// A row's processors and kept set, prepared once; draw(u) then walks the CDF.
struct Reference {
  int32_t fallback = 0;             // the token when nothing is drawn (greedy, or nothing kept)
  bool draws = false;
  std::vector<float> scaled;
  std::vector<double> weight;       // float expf(scaled - max)
  std::vector<uint8_t> kept;
  std::vector<uint8_t> borderline;  // outside the kept set, but on the top_p / min_p cut within tolerance
  std::vector<double> cdf;          // inclusive cumulative kept weight in id order
  double kept_mass = 0.0;

  int32_t draw(double u) const {
    if (!draws) return fallback;
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), u * kept_mass);  // first with cdf > target
    return it == cdf.end() ? static_cast<int32_t>(cdf.size()) - 1 : static_cast<int32_t>(it - cdf.begin());
  }
};

// Processed logits (adjust entries as the host orders them), temperature, top_k
// (ties at the k-th value kept), top_p over the top_k set (ties at the cut kept),
// min_p, all in float like the host, masses in double.
inline Reference reference(const std::vector<float>& raw, const RowSampling& row) {
  const auto vocab = static_cast<int32_t>(raw.size());
  std::map<int32_t, const LogitAdjust*> adjust;
  for (const LogitAdjust& a : row.adjust)
    if (a.token >= 0 && a.token < vocab) adjust[a.token] = &a;
  std::vector<float> x(raw.size());
  for (int32_t i = 0; i < vocab; ++i) {
    const auto it = adjust.find(i);
    x[size_t(i)] = processed_value(raw[size_t(i)], it == adjust.end() ? nullptr : it->second);
  }
  Reference ref;
  if (row.temperature < 1e-5f) {
    ref.fallback = argmax_lowest(x);
    return ref;
  }
  ref.scaled.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float s = x[i] / row.temperature;
    ref.scaled[i] = s == s ? s : -kInf;
  }
  const std::vector<float>& s = ref.scaled;
  ref.fallback = argmax_lowest(s);
  const float max = *std::max_element(s.begin(), s.end());
  if (!std::isfinite(max)) return ref;
  std::vector<float> wf(s.size());
  ref.weight.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    wf[i] = std::exp(s[i] - max);
    ref.weight[i] = wf[i];
  }
  ref.kept.assign(s.size(), 1);
  ref.borderline.assign(s.size(), 0);
  std::vector<int32_t> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[size_t(a)] > s[size_t(b)]; });
  if (row.top_k > 0 && row.top_k < vocab) {
    const float kth = s[size_t(order[size_t(row.top_k - 1)])];
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] < kth) ref.kept[i] = 0;
  }
  if (row.top_p < 1.0f) {
    double mass = 0.0;
    for (size_t i = 0; i < s.size(); ++i)
      if (ref.kept[i]) mass += ref.weight[i];
    const double target = double(row.top_p) * mass;
    const double tolerance = kBoundaryTolerance * mass;
    double above = 0.0;  // mass of the values strictly above the current one
    float cut = max;
    for (size_t j = 0; j < order.size();) {
      size_t k = j;  // [j, k): one value
      double same = 0.0;
      for (; k < order.size() && s[size_t(order[k])] == s[size_t(order[j])]; ++k)
        if (ref.kept[size_t(order[k])]) same += ref.weight[size_t(order[k])];
      if (above + same >= target) {
        cut = s[size_t(order[j])];
        // The values below the cut whose mass above lies within tolerance of the target.
        for (double before = above + same; k < order.size() && before - target <= tolerance; ++k) {
          if (ref.kept[size_t(order[k])]) ref.borderline[size_t(order[k])] = 1;
          before += ref.kept[size_t(order[k])] ? ref.weight[size_t(order[k])] : 0.0;
        }
        break;
      }
      above += same;
      j = k;
    }
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] < cut) ref.kept[i] = 0;
  }
  if (row.min_p > 0.0f) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (wf[i] >= row.min_p) continue;
      if (ref.kept[i] && std::fabs(double(wf[i]) - row.min_p) <= kBoundaryTolerance * row.min_p) ref.borderline[i] = 1;
      ref.kept[i] = 0;
    }
  }
  ref.cdf.resize(s.size());
  double cumulative = 0.0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (ref.kept[i]) cumulative += ref.weight[i];
    ref.cdf[i] = cumulative;
  }
  ref.kept_mass = cumulative;
  ref.draws = cumulative > 0.0;
  for (size_t i = 0; i < s.size(); ++i)  // a token with no kept neighbour on the cut is no borderline
    if (ref.kept[i]) ref.borderline[i] = 0;
  return ref;
}

enum class Verdict { same, boundary, wrong };

// The device's token for uniform u against the reference.
inline Verdict judge(const Reference& ref, double u, int32_t token) {
  const int32_t want = ref.draw(u);
  if (token == want) return Verdict::same;
  if (!ref.draws || token < 0 || token >= static_cast<int32_t>(ref.cdf.size())) return Verdict::wrong;
  const auto t = size_t(token);
  if (!ref.kept[t]) return ref.borderline[t] ? Verdict::boundary : Verdict::wrong;
  const double target = u * ref.kept_mass;
  const double tolerance = kBoundaryTolerance * ref.kept_mass;
  const double lo = ref.cdf[t] - ref.weight[t], hi = ref.cdf[t];
  return target >= lo - tolerance && target <= hi + tolerance ? Verdict::boundary : Verdict::wrong;
}

inline std::vector<double> spread_uniforms(size_t n) {
  std::vector<double> u{0.0, std::nextafter(1.0, 0.0)};
  for (size_t i = 0; i < n; ++i) u.push_back((static_cast<double>(i) + 0.5) / static_cast<double>(n));
  return u;
}

// Samples `logits` once per uniform (one row each, all in one call) and checks every
// token against the reference; returns the device tokens.
inline std::vector<int32_t> check_draws(Backend& backend, const std::vector<float>& logits, RowSampling row,
                                 const std::vector<double>& uniforms, const std::string& what) {
  const Reference ref = reference(logits, row);
  std::vector<RowSampling> rows;
  for (double u : uniforms) {
    row.uniform = u;
    rows.push_back(row);
  }
  const std::vector<SampledToken> got = sample_on(backend, std::vector<std::vector<float>>(rows.size(), logits), rows);
  std::vector<float> log_softmax(logits.size());
  std::vector<float> clean(logits);
  for (float& v : clean) v = v == v ? v : -kInf;
  engine::Sampler::log_softmax(clean, log_softmax);
  size_t boundary = 0;
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < uniforms.size(); ++i) {
    const Verdict v = judge(ref, uniforms[i], got[i].token);
    INFO(what << ": uniform " << uniforms[i] << " device token " << got[i].token << ", reference "
              << ref.draw(uniforms[i]));
    CHECK(v != Verdict::wrong);
    boundary += v == Verdict::boundary ? 1 : 0;
    tokens.push_back(got[i].token);
    if (got[i].token >= 0 && got[i].token < static_cast<int32_t>(logits.size()))
      check_logprob(got[i].logprob, log_softmax[size_t(got[i].token)], what + " logprob");
  }
  if (boundary > 0) MESSAGE(what << ": " << boundary << " of " << uniforms.size() << " draws on a CDF boundary");
  CHECK(static_cast<double>(boundary) <= std::max(1.0, kMaxBoundaryShare * static_cast<double>(uniforms.size())));
  return tokens;
}

inline RowSampling sampled(float temperature, int32_t top_k, float top_p, float min_p) {
  RowSampling r;
  r.temperature = temperature;
  r.top_k = top_k;
  r.top_p = top_p;
  r.min_p = min_p;
  return r;
}

}  // namespace sluice::backends::test
