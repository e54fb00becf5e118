// Speculative decoding end to end on the fixture models (CPU backend; one case on CUDA): the output is
// the plain decoder's, token for token (greedy and seeded), drafts do get accepted,
// every KV block comes back, and unseeded sampling keeps its distribution.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/engine/speculative_harness.h"

namespace sluice::engine::testing::unit_engine_test_engine_speculative {
namespace {

EngineConfig spec_config(int32_t k = 4, int32_t disable_by_batch_size = 1000) {
  EngineConfig config = small_config();
  config.speculative.method = SpeculativeMethod::ngram;
  config.speculative.num_speculative_tokens = k;
  config.speculative.prompt_lookup_min = 1;
  config.speculative.prompt_lookup_max = 3;
  config.speculative.disable_by_batch_size = disable_by_batch_size;
  return config;
}

TEST_CASE("speculative greedy output == plain greedy output, token for token, and drafts are accepted") {
  for (const char* variant : {"f32", "q8_0"}) {
    CAPTURE(variant);
    LoadedFixture f = load_engine_fixture("llama", variant);
    const std::vector<GenerationRequest> requests = greedy_set(40);
    const Run plain = run_all(f, small_config(), requests);
    const Run speculative = run_all(f, spec_config(), requests);
    check_same_output(plain, speculative);
    const SpeculationStats& s = speculative.stats.speculation;
    MESSAGE(std::string(variant) << ": drafts " << s.num_drafts << ", draft tokens " << s.num_draft_tokens << ", accepted "
                    << s.num_accepted_tokens);
    CHECK(s.num_drafts > 0);
    CHECK(s.num_accepted_tokens > 0);
    CHECK(s.num_accepted_tokens <= s.num_draft_tokens);
    REQUIRE(s.num_accepted_tokens_per_pos.size() == 4);
    CHECK(s.num_accepted_tokens_per_pos[0] >= s.num_accepted_tokens_per_pos[3]);
    CHECK(s.num_accepted_tokens_per_pos[1] > 0);  // drafts of several tokens are accepted whole
    // Fewer steps: accepted drafts are tokens that took no step of their own.
    CHECK(speculative.stats.num_steps < plain.stats.num_steps);
    CHECK(plain.stats.speculation.num_drafts == 0);
  }
}

TEST_CASE("speculative greedy output on CUDA == plain greedy output on CUDA, token for token") {
  if (!backends::test::cuda_backend_or_skip("speculative decoding on CUDA")) return;
  for (const char* variant : {"f32", "q8_0"}) {
    CAPTURE(variant);
    LoadedFixture f = load_engine_fixture_on(backends::make_backend(backends::resolve_backend("cuda:0")), "llama",
                                             variant);
    const std::vector<GenerationRequest> requests = greedy_set(40);
    const Run plain = run_all(f, small_config(), requests);
    const Run speculative = run_all(f, spec_config(), requests);
    const double worst = check_same_output(plain, speculative, 1e-4);
    const SpeculationStats& s = speculative.stats.speculation;
    MESSAGE(std::string(variant) << " on CUDA: drafts " << s.num_drafts << ", accepted " << s.num_accepted_tokens
                                 << " of " << s.num_draft_tokens << "; largest logprob difference " << worst);
    CHECK(s.num_accepted_tokens > 0);
    CHECK(speculative.stats.num_steps < plain.stats.num_steps);
  }
}

TEST_CASE("speculative decoding, one request at a time, and opted out per request") {
  LoadedFixture f = load_engine_fixture("llama");
  std::vector<GenerationRequest> requests = greedy_set(30);
  for (GenerationRequest& r : requests) {
    const Run plain = run_all(f, small_config(), {r});
    const Run speculative = run_all(f, spec_config(3, 1), {r});
    check_same_output(plain, speculative);
    r.speculative = false;
    const Run opted_out = run_all(f, spec_config(3, 1), {r});
    check_same_output(plain, opted_out);
    CHECK(opted_out.stats.speculation.num_drafts == 0);
  }
}

TEST_CASE("speculation turns itself off above disable_by_batch_size decoding sequences") {
  LoadedFixture f = load_engine_fixture("llama");
  std::vector<GenerationRequest> requests = greedy_set(20);  // 6 at once
  const Run plain = run_all(f, small_config(), requests);
  const Run capped = run_all(f, spec_config(4, 2), requests);
  check_same_output(plain, capped);
  const Run open = run_all(f, spec_config(4, 8), requests);
  check_same_output(plain, open);
  // With 6 decoding at once the cap of 2 leaves only the tail, when most have finished.
  CHECK(capped.stats.speculation.num_drafts < open.stats.speculation.num_drafts);
}

TEST_CASE("speculative decoding keeps seeded sampling, n > 1 and penalties exactly") {
  LoadedFixture f = load_engine_fixture("llama");
  std::vector<GenerationRequest> requests;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    GenerationRequest r = greedy_request("s" + std::to_string(seed), repetitive_prompt(seed + 10), 40);
    r.params.temperature = 0.7f;
    r.params.top_k = 20;
    r.params.top_p = 0.95f;
    r.params.seed = seed;
    r.params.n = seed == 2 ? 3 : 1;
    r.params.logprobs = 1;
    if (seed == 3) {
      r.params.repetition_penalty = 1.1f;
      r.params.frequency_penalty = 0.2f;
      r.params.presence_penalty = 0.1f;
      r.params.min_p = 0.05f;
    }
    if (seed == 4) r.params.logit_bias = make_logit_bias({{5, 2.0f}, {17, -1.5f}});
    requests.push_back(std::move(r));
  }
  const Run plain = run_all(f, small_config(), requests);
  const Run speculative = run_all(f, spec_config(), requests);
  check_same_output(plain, speculative);
  CHECK(speculative.stats.speculation.num_accepted_tokens > 0);
}

TEST_CASE("speculative decoding stops exactly at max_tokens, stop strings and stop tokens") {
  LoadedFixture f = load_engine_fixture("llama");
  // The plain output tells where to stop: a stop token and a stop string from its middle.
  GenerationRequest base = greedy_request("base", repetitive_prompt(1), 40);
  const Run reference = run_all(f, small_config(), {base});
  const ChoiceResult& out = reference.choices[0];
  REQUIRE(out.tokens.size() == 40);
  std::vector<GenerationRequest> requests;
  for (int32_t max_tokens : {1, 2, 3, 5, 7}) {
    GenerationRequest r = base;
    r.request_id = "max" + std::to_string(max_tokens);
    r.params.max_tokens = max_tokens;
    requests.push_back(r);
  }
  {
    GenerationRequest r = base;
    r.request_id = "stop-token";
    r.stop_token_ids = {out.tokens[13]};
    requests.push_back(r);
  }
  const std::string piece = out.text.size() > 30 ? out.text.substr(20, 3) : std::string();
  if (!piece.empty()) {
    GenerationRequest r = base;
    r.request_id = "stop-string";
    r.stop = {piece};
    requests.push_back(r);
    r.request_id = "stop-string-kept";
    r.include_stop_str_in_output = true;
    requests.push_back(r);
  }
  const Run plain = run_all(f, small_config(), requests);
  const Run speculative = run_all(f, spec_config(), requests);
  check_same_output(plain, speculative);
  for (size_t i = 0; i < 5; ++i) CHECK(speculative.choices[i].tokens.size() == std::vector<size_t>{1, 2, 3, 5, 7}[i]);
  CHECK(speculative.stats.speculation.num_accepted_tokens > 0);
}

// Two-sample chi-square over the tokens sampled at each output position (bins with
// few counts pooled): are speculative and plain draws from one distribution?
double chi_square(const std::map<int32_t, int64_t>& a, const std::map<int32_t, int64_t>& b, int64_t na, int64_t nb,
                  int* dof) {
  std::map<int32_t, std::pair<int64_t, int64_t>> bins;
  for (const auto& [k, v] : a) bins[k].first += v;
  for (const auto& [k, v] : b) bins[k].second += v;
  std::vector<std::pair<int64_t, int64_t>> pooled;
  std::pair<int64_t, int64_t> rest{0, 0};
  for (const auto& [k, v] : bins) {
    if (v.first + v.second >= 10) {
      pooled.push_back(v);
    } else {
      rest.first += v.first;
      rest.second += v.second;
    }
  }
  if (rest.first + rest.second > 0) pooled.push_back(rest);
  const double ka = std::sqrt(static_cast<double>(nb) / static_cast<double>(na));
  const double kb = std::sqrt(static_cast<double>(na) / static_cast<double>(nb));
  double x = 0;
  for (const auto& [ca, cb] : pooled) {
    const double d = ka * static_cast<double>(ca) - kb * static_cast<double>(cb);
    x += d * d / static_cast<double>(ca + cb);
  }
  *dof = static_cast<int>(pooled.size()) - 1;
  return x;
}

// The chi-square value that a true null exceeds with probability 0.001
// (Wilson-Hilferty: close enough for dof >= 2).
double critical_value(int dof) {
  const double z = 3.0902;  // the normal's 0.999 quantile
  const double k = dof;
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

TEST_CASE("unseeded sampling with speculation (either drafter) has the plain distribution (chi-square)") {
  LoadedFixture f = load_engine_fixture("llama");
  constexpr int kRequests = 200;
  constexpr int32_t kTokens = 8;
  auto requests = [&] {
    std::vector<GenerationRequest> out;
    for (int i = 0; i < kRequests; ++i) {
      GenerationRequest r = greedy_request("c" + std::to_string(i), repetitive_prompt(3), kTokens);
      r.params.temperature = 0.9f;
      r.params.top_k = 12;
      out.push_back(std::move(r));
    }
    return out;
  }();
  const Run plain = run_all(f, small_config(), requests);
  // Both drafters: prompt lookup, and a draft model (the q8_0 fixture) whose greedy
  // drafts the sampled target accepts only as often as it draws them.
  std::unique_ptr<Model> draft = load_draft(f, "q8_0");
  for (const bool with_model : {false, true}) {
    CAPTURE(with_model);
    const Run speculative = run_all(f, with_model ? draft_config(*draft) : spec_config(), requests);
    CHECK(speculative.stats.speculation.num_accepted_tokens > 0);
    for (int32_t pos : {1, 3, 7}) {
      CAPTURE(pos);
      std::map<int32_t, int64_t> a, b;
      for (const ChoiceResult& c : plain.choices) ++a[c.tokens.at(static_cast<size_t>(pos))];
      for (const ChoiceResult& c : speculative.choices) ++b[c.tokens.at(static_cast<size_t>(pos))];
      int dof = 0;
      const double x = chi_square(a, b, kRequests, kRequests, &dof);
      MESSAGE(std::string(with_model ? "draft model" : "ngram") << ", position " << pos << ": chi-square " << x << " on "
                                                    << dof << " degrees of freedom");
      if (dof >= 2) CHECK(x < critical_value(dof));
    }
  }
}

// Welch's z of two samples' means (large samples: normal).
double welch_z(const std::vector<double>& a, const std::vector<double>& b) {
  auto mean_var = [](const std::vector<double>& v) {
    double mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    return std::pair{mean, var / static_cast<double>(v.size() - 1)};
  };
  const auto [ma, va] = mean_var(a);
  const auto [mb, vb] = mean_var(b);
  const double se = std::sqrt(va / static_cast<double>(a.size()) + vb / static_cast<double>(b.size()));
  return se > 0 ? (ma - mb) / se : 0.0;
}

TEST_CASE("drafts the model finds unlikely are accepted only as often as it samples them") {
  // The prompt repeats one piece, so every draft is a piece token; the logit bias
  // makes those unlikely. Accepting drafts too often shows as piece tokens in excess.
  // The tokens of one request are not independent (a piece token sampled makes the
  // next likelier), so the test compares the requests' piece-token counts, which
  // are: a pooled chi-square over all tokens failed a true null about 1 run in 30.
  LoadedFixture f = load_engine_fixture("llama");
  constexpr int kRequests = 200;
  constexpr int32_t kTokens = 8;
  const std::vector<int32_t> piece = make_prompt(5, 7);
  LogitBias bias;
  for (int32_t token : piece) bias[token] = -1.0f;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 4; ++i) prompt.insert(prompt.end(), piece.begin(), piece.end());
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < kRequests; ++i) {
    GenerationRequest r = greedy_request("u" + std::to_string(i), prompt, kTokens);
    r.params.temperature = 1.0f;
    r.params.logit_bias = make_logit_bias(bias);
    requests.push_back(std::move(r));
  }
  const Run plain = run_all(f, small_config(), requests);
  const Run speculative = run_all(f, spec_config(), requests);
  CHECK(speculative.stats.speculation.num_draft_tokens > 0);
  auto piece_counts = [&](const Run& run) {
    std::vector<double> counts;  // per request
    for (const ChoiceResult& c : run.choices)
      counts.push_back(static_cast<double>(
          std::ranges::count_if(c.tokens, [&](int32_t t) { return std::ranges::find(piece, t) != piece.end(); })));
    return counts;
  };
  const std::vector<double> a = piece_counts(plain), b = piece_counts(speculative);
  REQUIRE(a.size() == static_cast<size_t>(kRequests));
  REQUIRE(b.size() == static_cast<size_t>(kRequests));
  const double z = welch_z(a, b);
  MESSAGE("piece tokens per request: plain " << std::accumulate(a.begin(), a.end(), 0.0) / kRequests
                                             << ", speculative " << std::accumulate(b.begin(), b.end(), 0.0) / kRequests
                                             << " of " << kTokens << "; Welch z " << z);
  CHECK(std::fabs(z) < 3.29);  // a true null exceeds it with probability 0.001
}

}  // namespace
}  // namespace sluice::engine::testing
