// Sampling on the CUDA device (Backend::sample) against the host:
//   - greedy rows, with and without adjust entries, against engine::Sampler: the
//     same token, the chosen token's logprob and the top logprobs;
//   - sampled rows against a small host reference of the device's semantics
//     (reference() below), for many uniforms, on small and real-size vocabularies;
//   - the engine's host sampler in id order (DrawOrder::by_id) against the same
//     reference, and against the device for the same random stream;
//   - tokens outside top_k / top_p / min_p are never drawn;
//   - determinism, batch invariance, strided logits, NaN and fully masked rows.
// Only the public interface is used (backend_factory.h through backend_test_util.h),
// so this compiles with g++ in every build and each TEST_CASE skips with a MESSAGE
// where there is no CUDA device.
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
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kLogprobTolerance = 1e-5;
constexpr double kBoundaryTolerance = 1e-6;
constexpr double kMaxBoundaryShare = 0.01;

// --- inputs ---------------------------------------------------------------------------

// Roughly an LLM's logits: a normal bulk and a few strong candidates.
std::vector<float> llm_logits(std::mt19937& rng, int32_t vocab) {
  std::normal_distribution<float> bulk(-2.0f, 2.5f);
  std::uniform_real_distribution<float> peak(6.0f, 12.0f);
  std::vector<float> v(static_cast<size_t>(vocab));
  for (float& x : v) x = bulk(rng);
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  for (int i = 0; i < std::min(vocab, 8); ++i) v[static_cast<size_t>(id(rng))] = peak(rng);
  return v;
}

// Many tokens with comparable weights: the top_p and min_p cuts fall deep.
std::vector<float> flat_logits(std::mt19937& rng, int32_t vocab) { return random_floats(rng, size_t(vocab), -1.0f, 1.0f); }

// A step's history: prompt and output token ids, some repeated.
struct History {
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
};

History random_history(std::mt19937& rng, int32_t vocab, size_t prompt_len, size_t output_len) {
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
std::vector<LogitAdjust> adjust_for(const engine::SamplingParams& p, const History& h, int32_t vocab,
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
std::vector<SampledToken> sample_on(Backend& backend, const std::vector<std::vector<float>>& logits,
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

bool same_result(const SampledToken& a, const SampledToken& b) {
  return a.token == b.token && std::memcmp(&a.logprob, &b.logprob, sizeof(float)) == 0 && a.num_top == b.num_top &&
         std::equal(a.top_tokens, a.top_tokens + a.num_top, b.top_tokens) &&
         std::memcmp(a.top_logprobs, b.top_logprobs, sizeof(float) * size_t(std::max(a.num_top, 0))) == 0;
}

void check_logprob(float got, float want, const std::string& what) {
  INFO(what << ": device " << got << ", host " << want);
  if (std::isnan(want)) CHECK(std::isnan(got));  // -inf - log_z of an all -inf row, on both
  else if (std::isinf(want) || std::isinf(got)) CHECK(got == want);
  else CHECK(std::fabs(double(got) - double(want)) <= kLogprobTolerance);
}

// --- the host reference of the device's semantics ------------------------------------------

float processed_value(float raw, const LogitAdjust* a) {
  float x = raw == raw ? raw : -kInf;
  if (a) {
    x += a->bias;
    if (a->repetition != 1.0f && a->repetition > 0.0f) x = x > 0.0f ? x / a->repetition : x * a->repetition;
    x -= a->subtract;
  }
  return x == x ? x : -kInf;
}

int32_t argmax_lowest(const std::vector<float>& v) {
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
Reference reference(const std::vector<float>& raw, const RowSampling& row) {
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
Verdict judge(const Reference& ref, double u, int32_t token) {
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

std::vector<double> spread_uniforms(size_t n) {
  std::vector<double> u{0.0, std::nextafter(1.0, 0.0)};
  for (size_t i = 0; i < n; ++i) u.push_back((static_cast<double>(i) + 0.5) / static_cast<double>(n));
  return u;
}

// Samples `logits` once per uniform (one row each, all in one call) and checks every
// token against the reference; returns the device tokens.
std::vector<int32_t> check_draws(Backend& backend, const std::vector<float>& logits, RowSampling row,
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

RowSampling sampled(float temperature, int32_t top_k, float top_p, float min_p) {
  RowSampling r;
  r.temperature = temperature;
  r.top_k = top_k;
  r.top_p = top_p;
  r.min_p = min_p;
  return r;
}

// --- tests ------------------------------------------------------------------------------------

TEST_CASE("cuda sampling: greedy rows and logprobs match the host Sampler") {
  auto backend = cuda_backend_or_skip("cuda sampling greedy");
  if (!backend) return;
  std::mt19937 rng(11);
  for (int32_t vocab : {1, 7, 5000, 262144}) {
    CAPTURE(vocab);
    // Per row: the request's params (greedy) and history, and its logits.
    std::vector<engine::SamplingParams> params;
    std::vector<History> histories;
    std::vector<std::vector<float>> logits;
    const auto add = [&](engine::SamplingParams p, History h, std::vector<float> v) {
      p.temperature = 0.0f;
      params.push_back(std::move(p));
      histories.push_back(std::move(h));
      logits.push_back(std::move(v));
    };
    engine::SamplingParams plain;
    plain.logprobs = 20;
    add(plain, {}, llm_logits(rng, vocab));
    {  // NaNs never win; ties at the max go to the lower id
      std::vector<float> v = llm_logits(rng, vocab);
      for (size_t i = 0; i < v.size(); i += 3) v[i] = std::numeric_limits<float>::quiet_NaN();
      if (vocab > 4) v[2] = v[4] = 50.0f;
      engine::SamplingParams p;
      p.logprobs = 5;
      add(p, {}, v);
    }
    {  // more equal logits at the top than logprobs asked for: the lowest ids
      std::vector<float> v = flat_logits(rng, vocab);
      for (size_t i = v.size() / 3; i < v.size(); i += std::max<size_t>(1, v.size() / 40)) v[i] = 7.5f;
      engine::SamplingParams p;
      p.logprobs = 20;
      add(p, {}, v);
    }
    {  // only a few finite logits: -inf alternatives, lowest ids first
      std::vector<float> v(size_t(vocab), -kInf);
      for (size_t i = 0; i < v.size(); i += std::max<size_t>(1, v.size() / 3)) v[i] = static_cast<float>(i % 5);
      engine::SamplingParams p;
      p.logprobs = 20;
      add(p, {}, v);
    }
    const std::vector<int32_t> ids = random_ints(rng, 6, 0, vocab - 1);
    engine::SamplingParams bias;
    bias.logit_bias = engine::make_logit_bias({{ids[0], 30.0f}, {ids[1], -100.0f}, {ids[2], 0.5f}});
    bias.logprobs = 3;
    add(bias, {}, llm_logits(rng, vocab));
    engine::SamplingParams repetition;
    repetition.repetition_penalty = 1.3f;
    add(repetition, random_history(rng, vocab, 40, 12), llm_logits(rng, vocab));
    engine::SamplingParams penalties;
    penalties.frequency_penalty = 0.7f;
    penalties.presence_penalty = 1.5f;
    penalties.logprobs = 0;
    add(penalties, random_history(rng, vocab, 10, 30), llm_logits(rng, vocab));
    engine::SamplingParams all;
    all.logit_bias = engine::make_logit_bias({{ids[3], 2.0f}, {ids[4], -3.0f}});
    all.repetition_penalty = 0.8f;
    all.frequency_penalty = -0.4f;
    all.presence_penalty = 0.25f;
    all.logprobs = 20;
    {  // strongly penalised candidates, so the processors decide the argmax
      History h = random_history(rng, vocab, 20, 20);
      std::vector<float> v = llm_logits(rng, vocab);
      for (int32_t t : h.output) v[size_t(t)] = 20.0f;
      add(all, h, v);
    }

    std::vector<RowSampling> rows(params.size());
    std::vector<std::vector<LogitAdjust>> adjust(params.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      adjust[r] = adjust_for(params[r], histories[r], vocab, rng);
      if (r == 1) adjust[r].push_back({.token = -1, .bias = 100.0f});  // outside the vocab: ignored
      if (r == 1) adjust[r].push_back({.token = vocab + 3, .bias = 100.0f});
      rows[r].temperature = 0.0f;
      rows[r].uniform = 0.5;
      rows[r].num_logprobs = params[r].logprobs.value_or(0);
      rows[r].adjust = adjust[r];
    }
    const std::vector<SampledToken> got = sample_on(*backend, logits, rows);

    engine::Sampler sampler(vocab);
    for (size_t r = 0; r < rows.size(); ++r) {
      CAPTURE(r);
      engine::Rng host_rng(1, 0);
      engine::SamplingParams p = params[r];
      p.logprobs = p.logprobs.value_or(0);  // the device always reports the chosen token's logprob
      const engine::SampleResult want = sampler.sample(logits[r], p, histories[r].prompt, histories[r].output, host_rng);
      CHECK(got[r].token == want.token);
      check_logprob(got[r].logprob, want.logprob, "chosen");
      REQUIRE(got[r].num_top == static_cast<int32_t>(want.top_logprobs.size()));
      for (size_t i = 0; i < want.top_logprobs.size(); ++i) {
        CAPTURE(i);
        CHECK(got[r].top_tokens[i] == want.top_logprobs[i].token);
        check_logprob(got[r].top_logprobs[i], want.top_logprobs[i].logprob, "top");
      }
    }
  }
}

TEST_CASE("cuda sampling: top_k = 1 is greedy") {
  auto backend = cuda_backend_or_skip("cuda sampling top_k = 1");
  if (!backend) return;
  std::mt19937 rng(12);
  for (int32_t vocab : {9, 32000}) {
    CAPTURE(vocab);
    const std::vector<float> logits = llm_logits(rng, vocab);
    engine::SamplingParams p;
    p.repetition_penalty = 1.2f;
    p.frequency_penalty = 0.5f;
    const History h = random_history(rng, vocab, 8, 8);
    const std::vector<LogitAdjust> adjust = adjust_for(p, h, vocab, rng);
    engine::Sampler sampler(vocab);
    engine::Rng host_rng(2, 0);
    p.temperature = 0.0f;
    const int32_t greedy = sampler.sample(logits, p, h.prompt, h.output, host_rng).token;
    RowSampling row = sampled(0.9f, 1, 1.0f, 0.0f);
    row.adjust = adjust;
    const std::vector<int32_t> tokens = check_draws(*backend, logits, row, spread_uniforms(64), "top_k 1");
    for (int32_t t : tokens) CHECK(t == greedy);
  }
}

TEST_CASE("cuda sampling: sampled rows match the host reference") {
  auto backend = cuda_backend_or_skip("cuda sampling draws");
  if (!backend) return;
  std::mt19937 rng(13);
  struct Setting {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
  };
  const Setting settings[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 0, 0.9f, 0.0f},  {1.3f, 40, 1.0f, 0.0f},
                              {0.8f, 50, 0.95f, 0.05f}, {1.0f, 0, 1.0f, 0.1f}, {2.0f, 5, 0.5f, 0.0f},
                              {0.5f, 0, 0.0f, 0.0f}};
  for (int32_t vocab : {50, 4096, 262144}) {
    for (bool flat : {false, true}) {
      const std::vector<float> logits = flat ? flat_logits(rng, vocab) : llm_logits(rng, vocab);
      for (const Setting& s : settings) {
        const std::string what = "vocab " + std::to_string(vocab) + (flat ? " flat" : " llm") + " T " +
                                 std::to_string(s.temperature) + " k " + std::to_string(s.top_k) + " p " +
                                 std::to_string(s.top_p) + " min_p " + std::to_string(s.min_p);
        RowSampling row = sampled(s.temperature, s.top_k, s.top_p, s.min_p);
        check_draws(*backend, logits, row, spread_uniforms(vocab > 10000 ? 48 : 200), what);
      }
      // With adjust entries.
      engine::SamplingParams p;
      p.logit_bias = engine::make_logit_bias({{vocab / 2, 4.0f}, {vocab - 1, -2.0f}});
      p.repetition_penalty = 1.25f;
      p.frequency_penalty = 0.3f;
      p.presence_penalty = 0.2f;
      const std::vector<LogitAdjust> adjust = adjust_for(p, random_history(rng, vocab, 30, 30), vocab, rng);
      RowSampling row = sampled(0.9f, 30, 0.9f, 0.01f);
      row.adjust = adjust;
      check_draws(*backend, logits, row, spread_uniforms(vocab > 10000 ? 48 : 200),
                  "vocab " + std::to_string(vocab) + " with adjust entries");
    }
  }
}

// The settings the draw tests run: temperature, top_k, top_p, min_p.
struct DrawSetting {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};
constexpr DrawSetting kDrawSettings[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 0, 0.9f, 0.0f},  {1.3f, 40, 1.0f, 0.0f},
                                         {0.8f, 50, 0.95f, 0.05f}, {1.0f, 0, 1.0f, 0.1f}, {2.0f, 5, 0.5f, 0.0f}};

engine::SamplingParams host_params(const DrawSetting& s) {
  engine::SamplingParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p = s.min_p;
  return p;
}

// Draws `seeds` tokens with an id-order host Sampler, each from its own seeded
// stream; uniforms[i] is the one draw that stream gave.
std::vector<int32_t> host_draws_by_id(const std::vector<float>& logits, const DrawSetting& s, uint64_t seeds,
                                      std::vector<double>& uniforms) {
  engine::Sampler sampler(static_cast<int32_t>(logits.size()), engine::DrawOrder::by_id);
  std::vector<int32_t> tokens;
  uniforms.clear();
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    engine::Rng rng(seed, 0);
    engine::Rng copy = rng;
    uniforms.push_back(copy.uniform());
    tokens.push_back(sampler.sample(logits, host_params(s), {}, {}, rng).token);
  }
  return tokens;
}

// Runs on every machine: the engine's host sampler in id order (what an engine whose
// backend samples on the device uses for the steps it samples on the host) has the
// device's semantics, so a seeded sequence's draws agree whichever side samples.
TEST_CASE("host sampler in id order: the device semantics' token for the same uniform") {
  std::mt19937 rng(15);
  for (int32_t vocab : {50, 4096}) {
    for (bool flat : {false, true}) {
      const std::vector<float> logits = flat ? flat_logits(rng, vocab) : llm_logits(rng, vocab);
      for (const DrawSetting& s : kDrawSettings) {
        CAPTURE(vocab);
        CAPTURE(flat);
        CAPTURE(s.temperature);
        CAPTURE(s.top_p);
        const Reference ref = reference(logits, sampled(s.temperature, s.top_k, s.top_p, s.min_p));
        std::vector<double> uniforms;
        const std::vector<int32_t> tokens = host_draws_by_id(logits, s, 300, uniforms);
        size_t boundary = 0;
        for (size_t i = 0; i < tokens.size(); ++i) {
          const Verdict v = judge(ref, uniforms[i], tokens[i]);
          CHECK(v != Verdict::wrong);
          boundary += v == Verdict::boundary ? 1 : 0;
        }
        CHECK(static_cast<double>(boundary) <= std::max(1.0, kMaxBoundaryShare * static_cast<double>(tokens.size())));
      }
    }
  }
}

TEST_CASE("cuda sampling: the host sampler in id order draws the device's token from the same stream") {
  auto backend = cuda_backend_or_skip("cuda sampling vs the id-order host sampler");
  if (!backend) return;
  std::mt19937 rng(16);
  for (int32_t vocab : {4096, 262144}) {
    const std::vector<float> logits = llm_logits(rng, vocab);
    for (const DrawSetting& s : kDrawSettings) {
      CAPTURE(vocab);
      CAPTURE(s.temperature);
      CAPTURE(s.top_p);
      std::vector<double> uniforms;
      const std::vector<int32_t> host = host_draws_by_id(logits, s, 64, uniforms);
      std::vector<RowSampling> rows;
      for (double u : uniforms) {
        RowSampling row = sampled(s.temperature, s.top_k, s.top_p, s.min_p);
        row.uniform = u;
        rows.push_back(row);
      }
      const std::vector<SampledToken> device =
          sample_on(*backend, std::vector<std::vector<float>>(rows.size(), logits), rows);
      const Reference ref = reference(logits, rows[0]);
      size_t differing = 0;
      for (size_t i = 0; i < host.size(); ++i) {
        if (device[i].token == host[i]) continue;
        ++differing;  // only where the two libms' weights put the target on a boundary
        CHECK(judge(ref, uniforms[i], host[i]) == Verdict::boundary);
        CHECK(judge(ref, uniforms[i], device[i].token) != Verdict::wrong);
      }
      CHECK(static_cast<double>(differing) <= std::max(1.0, kMaxBoundaryShare * static_cast<double>(host.size())));
    }
  }
}

TEST_CASE("cuda sampling: tokens outside top_k, top_p and min_p are never drawn") {
  auto backend = cuda_backend_or_skip("cuda sampling kept set");
  if (!backend) return;
  std::mt19937 rng(14);
  const int32_t vocab = 32000;
  const std::vector<float> logits = flat_logits(rng, vocab);
  const std::vector<double> uniforms = spread_uniforms(1000);
  for (const RowSampling& row : {sampled(1.0f, 10, 1.0f, 0.0f), sampled(0.05f, 0, 0.3f, 0.0f),
                                 sampled(0.02f, 0, 1.0f, 0.5f), sampled(1.0f, 100, 0.2f, 0.9f)}) {
    const Reference ref = reference(logits, row);
    size_t kept = 0;
    for (uint8_t k : ref.kept) kept += k;
    CAPTURE(kept);
    const std::vector<int32_t> tokens = check_draws(*backend, logits, row, uniforms, "kept set");
    std::vector<uint8_t> seen(size_t(vocab), 0);
    for (int32_t t : tokens) {
      REQUIRE(t >= 0);
      REQUIRE(t < vocab);
      CHECK((ref.kept[size_t(t)] || ref.borderline[size_t(t)]));
      seen[size_t(t)] = 1;
    }
    size_t distinct = 0;
    for (uint8_t s : seen) distinct += s;
    CHECK(distinct > std::min<size_t>(kept, 50) / 2);  // the draws spread over the kept set
  }

  // top_k keeps every token tied with the k-th value (the host keeps exactly k).
  std::vector<float> tied(64, 0.0f);
  tied[5] = tied[9] = tied[30] = 3.0f;
  const std::vector<int32_t> tokens = check_draws(*backend, tied, sampled(1.0f, 2, 1.0f, 0.0f), spread_uniforms(30), "ties");
  for (int32_t id : {5, 9, 30}) CHECK(std::count(tokens.begin(), tokens.end(), id) > 0);
  for (int32_t t : tokens) CHECK((t == 5 || t == 9 || t == 30));
}

TEST_CASE("cuda sampling: deterministic and batch invariant") {
  auto backend = cuda_backend_or_skip("cuda sampling batch invariance");
  if (!backend) return;
  std::mt19937 rng(15);
  const int32_t vocab = 151936;
  std::vector<std::vector<float>> logits;
  std::vector<RowSampling> rows;
  std::vector<std::vector<LogitAdjust>> adjust(7);
  const float settings[][4] = {{0.0f, 0, 1.0f, 0.0f}, {1.0f, 0, 1.0f, 0.0f}, {0.7f, 40, 0.9f, 0.0f},
                               {1.5f, 0, 0.8f, 0.05f}, {0.9f, 5, 1.0f, 0.0f}, {1.0f, 0, 0.95f, 0.0f},
                               {0.6f, 100, 0.7f, 0.02f}};
  for (size_t r = 0; r < 7; ++r) {
    logits.push_back(r % 2 ? flat_logits(rng, vocab) : llm_logits(rng, vocab));
    RowSampling row = sampled(settings[r][0], static_cast<int32_t>(settings[r][1]), settings[r][2], settings[r][3]);
    row.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    row.num_logprobs = static_cast<int32_t>(r * 3);
    if (r % 3 == 1) {
      engine::SamplingParams p;
      p.repetition_penalty = 1.1f;
      p.presence_penalty = 0.5f;
      adjust[r] = adjust_for(p, random_history(rng, vocab, 50, 20), vocab, rng);
    }
    row.adjust = adjust[r];
    rows.push_back(row);
  }
  const std::vector<SampledToken> batch = sample_on(*backend, logits, rows);
  const std::vector<SampledToken> again = sample_on(*backend, logits, rows);
  const std::vector<SampledToken> strided = sample_on(*backend, logits, rows, 5);
  for (size_t r = 0; r < rows.size(); ++r) {
    CAPTURE(r);
    CHECK(same_result(batch[r], again[r]));
    CHECK(same_result(batch[r], strided[r]));
    const std::vector<SampledToken> alone = sample_on(*backend, {logits[r]}, {rows[r]});
    CHECK(same_result(batch[r], alone[0]));
  }
}

TEST_CASE("cuda sampling: NaN and fully masked rows") {
  auto backend = cuda_backend_or_skip("cuda sampling masked rows");
  if (!backend) return;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> logits{
      {nan, 1.0f, 0.0f, nan}, {nan, 1.0f, 0.0f, nan}, {-kInf, -kInf, -kInf, -kInf},
      {-kInf, -kInf, -kInf, -kInf}, {nan, nan, nan, nan}, {0.5f, 2.0f, 1.0f, 2.0f}};
  std::vector<RowSampling> rows(logits.size());
  rows[0].temperature = 0.0f;
  rows[1].uniform = 0.5;
  rows[2].temperature = 0.0f;
  rows[3].uniform = 0.5;
  rows[4].uniform = 0.3;
  rows[5] = sampled(1.0f, 0, 1.0f, 1.5f);  // min_p > 1 keeps nothing: the argmax, lower id on ties
  rows[5].uniform = 0.7;
  const std::vector<SampledToken> got = sample_on(*backend, logits, rows);
  CHECK(got[0].token == 1);
  CHECK(got[1].token == 1);  // NaN carries no weight: the CDF is token 1 (1), token 2 (e^-1)
  CHECK(got[2].token == 0);
  CHECK(got[3].token == 0);
  CHECK(got[4].token == 0);
  CHECK(got[5].token == 1);
  CHECK(got[2].logprob != got[2].logprob);  // -inf - log_z(-inf), as on the host
  CHECK(got[4].logprob == -kInf);
}

}  // namespace
}  // namespace sluice::backends::test
