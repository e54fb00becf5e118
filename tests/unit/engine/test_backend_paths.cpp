// The engine and model paths that a GPU backend takes, driven on the CPU through
// ForwardingBackend: decode steps recorded and padded to a bucket (CUDA graphs),
// sampling on the device, a KV cache that does not fit, an attention layout the
// backend cannot run. Each must give what the plain CPU path gives, or fail clearly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/errors.h"
#include "engine/loader/load_error.h"
#include "tests/unit/backends/forwarding_backend.h"
#include "tests/unit/engine/engine_harness.h"
#include "tests/unit/engine/models/model_fixture.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::testing::unit_engine_test_backend_paths {
namespace {

using backends::testing::ForwardingBackend;

// Records like the CUDA backend: decode steps padded up to a multiple of 4 rows.
class RecordingBackend : public ForwardingBackend {
 public:
  RecordingBackend() : ForwardingBackend(backends::make_cpu_backend(2)) {}
  int64_t recorded_step_rows(int64_t num_tokens) const override { return (num_tokens + 3) / 4 * 4; }
  void run_recorded(int64_t key, const std::function<void()>& ops) override {
    ++runs[key];
    ops();
  }
  void forget_recordings() override { ++forgets; }
  std::map<int64_t, int> runs;
  int forgets = 0;
};

// Samples "on the device" by the backend.h contract, on the host: adjust entries,
// then greedy argmax, and raw log-probabilities with the top alternatives.
// Backend::sample's draw: the inverse CDF over the tokens in id order, weights
// exp(x / T - max) in float as the host sampler computes them.
int32_t draw_in_id_order(std::vector<float> x, float temperature, double uniform) {
  for (float& v : x) v /= temperature;
  const float max = *std::max_element(x.begin(), x.end());
  std::vector<float> weight(x.size());
  double total = 0.0;
  for (size_t i = 0; i < x.size(); ++i) total += weight[i] = std::exp(x[i] - max);
  const double target = uniform * total;
  double before = 0.0;
  for (size_t i = 0; i < x.size(); ++i)
    if ((before += weight[i]) > target) return static_cast<int32_t>(i);
  return static_cast<int32_t>(x.size()) - 1;
}

class SamplingBackend : public ForwardingBackend {
 public:
  SamplingBackend() : ForwardingBackend(backends::make_cpu_backend(2)) {}
  bool supports_sampling() const override { return true; }
  void sample(const backends::Tensor& logits, std::span<const backends::RowSampling> rows,
              std::span<backends::SampledToken> out) override {
    ++calls;
    const auto vocab = static_cast<size_t>(logits.cols());
    std::vector<float> all(rows.size() * vocab);
    download(logits, std::as_writable_bytes(std::span(all)));
    for (size_t r = 0; r < rows.size(); ++r) {
      // Greedy, or a temperature alone (no top_k, top_p, min_p): the tests here.
      REQUIRE((rows[r].top_k <= 0 && rows[r].top_p >= 1.0f && rows[r].min_p <= 0.0f));
      const std::span<const float> raw(all.data() + r * vocab, vocab);
      std::vector<float> x(raw.begin(), raw.end());
      for (const auto& e : rows[r].adjust) {
        float& v = x[static_cast<size_t>(e.token)];
        v += e.bias;
        if (e.repetition != 1.0f) v = v > 0.0f ? v / e.repetition : v * e.repetition;
        v -= e.subtract;
      }
      out[r].token = rows[r].temperature < 1e-5f ? static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin())
                                                 : draw_in_id_order(x, rows[r].temperature, rows[r].uniform);
      const float max = *std::max_element(raw.begin(), raw.end());
      double sum = 0.0;
      for (float v : raw) sum += std::exp(static_cast<double>(v - max));
      const double log_z = max + std::log(sum);
      out[r].logprob = static_cast<float>(raw[static_cast<size_t>(out[r].token)] - log_z);
      std::vector<int32_t> ids(vocab);
      std::iota(ids.begin(), ids.end(), 0);
      std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return raw[a] > raw[b]; });
      out[r].num_top = rows[r].num_logprobs;
      for (int32_t i = 0; i < out[r].num_top; ++i) {
        out[r].top_tokens[i] = ids[static_cast<size_t>(i)];
        out[r].top_logprobs[i] = static_cast<float>(raw[static_cast<size_t>(ids[static_cast<size_t>(i)])] - log_z);
      }
    }
  }
  int calls = 0;
};

// Every allocation fails once `fail` is set, with a device of 2 MiB free.
class FullBackend : public ForwardingBackend {
 public:
  FullBackend() : ForwardingBackend(backends::make_cpu_backend(1)) {}
  std::string name() const override { return "fullgpu:0"; }
  backends::MemoryInfo memory_info() const override { return {8u << 20, 2u << 20}; }
  std::unique_ptr<backends::Buffer> allocate(size_t bytes) override {
    if (fail) throw backends::OutOfMemoryError("fullgpu:0: cudaMalloc of " + std::to_string(bytes) + " bytes");
    return ForwardingBackend::allocate(bytes);
  }
  bool fail = false;
};

TEST_CASE("recorded decode steps, padded to the bucket, give the plain path's logits bit for bit") {
  for (const std::string& name : kFixtureNames) {
    CAPTURE(name);
    const ModelFixture fixture = load_fixture(name);
    RecordingBackend recording;
    ModelRunner plain(open_fixture_weights(fixture, "q8_0"));
    ModelRunner recorded(open_fixture_weights(fixture, "q8_0"), recording);
    // Three prompts in one step (not recorded), then decode steps of 3 and 1 rows.
    const std::vector<std::vector<int32_t>> prompts{{5, 9, 2, 7, 1}, {3, 3, 8}, {11, 4, 6, 6, 2, 9, 10}};
    CHECK(recorded.step(prompts, {0, 0, 0}, {0, 1, 2}) == plain.step(prompts, {0, 0, 0}, {0, 1, 2}));
    CHECK(recording.runs.empty());
    std::vector<int32_t> cached{5, 3, 7};
    for (int i = 0; i < 6; ++i) {
      const std::vector<std::vector<int32_t>> next{{12 + i}, {1 + i}, {20 - i}};
      CHECK(recorded.step(next, cached, {0, 1, 2}) == plain.step(next, cached, {0, 1, 2}));
      for (auto& c : cached) ++c;
    }
    CHECK(recording.runs[4] == 6);  // 3 rows padded to 4
    CHECK(recorded.step({{7}}, {cached[0]}, {0}) == plain.step({{7}}, {cached[0]}, {0}));
    CHECK(recording.runs[4] == 7);  // 1 row padded to 4: the same recording
    CHECK(recording.runs.size() == 1);
    // A step that asks for fewer logit rows than it has is not a plain decode.
    recorded.step({{1}, {2}}, {cached[1], cached[2]}, {1, 2}, {1});
    CHECK(recording.runs[4] == 7);
  }
}

std::vector<ChoiceResult> run_requests(Model& model, const tokenizer::Tokenizer& tok) {
  Engine engine(model, tok, small_config());
  engine.start();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 4; ++i) {
    GenerationRequest r = greedy_request("r" + std::to_string(i), make_prompt(30 + i, 9 + 4 * i), 12);
    r.params.logprobs = 3;
    if (i == 1) r.params.repetition_penalty = 1.3f;
    if (i == 2) {
      r.params.frequency_penalty = 0.5f;
      r.params.presence_penalty = 0.25f;
    }
    if (i == 3) r.params.logit_bias = make_logit_bias({{17, 2.5f}, {40, -100.0f}});
    auto submitted = engine.submit(std::move(r));
    REQUIRE(submitted.ok());
    streams.push_back(submitted.stream);
  }
  std::vector<ChoiceResult> results;
  for (auto& stream : streams) results.push_back(collect(*stream)[0]);
  return results;
}

TEST_CASE("the engine's device-sampling path gives the host sampler's tokens and logprobs") {
  LoadedFixture f = load_engine_fixture("llama");
  const std::string path = std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-f32.gguf";
  SamplingBackend device;
  auto device_model = Model::load(loader::open_weights(path), device);
  const auto host = run_requests(*f.model, *f.tokenizer);
  const auto on_device = run_requests(*device_model, *f.tokenizer);
  CHECK(device.calls > 0);
  REQUIRE(host.size() == on_device.size());
  for (size_t i = 0; i < host.size(); ++i) {
    CAPTURE(i);
    REQUIRE(host[i].finished);
    CHECK(on_device[i].tokens == host[i].tokens);
    REQUIRE(on_device[i].logprobs.size() == host[i].logprobs.size());
    for (size_t t = 0; t < host[i].logprobs.size(); ++t) {
      CHECK(on_device[i].logprobs[t].logprob == doctest::Approx(host[i].logprobs[t].logprob).epsilon(1e-5));
      REQUIRE(on_device[i].logprobs[t].top.size() == host[i].logprobs[t].top.size());
      for (size_t k = 0; k < host[i].logprobs[t].top.size(); ++k)
        CHECK(on_device[i].logprobs[t].top[k].token == host[i].logprobs[t].top[k].token);
    }
  }
}

// A seeded sequence's steps are sampled on the device, except those that verify
// drafts (on the host): the host must draw as the device does for the output to be
// the plain one. (On CUDA the host's descending-order draw made them differ.)
TEST_CASE("seeded sampling with speculation on a backend that samples: the plain output, token for token") {
  const std::string path = std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-f32.gguf";
  SamplingBackend device;
  auto model = Model::load(loader::open_weights(path), device);
  const auto tok = tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(path));
  EngineConfig speculative = small_config();
  speculative.speculative.method = SpeculativeMethod::ngram;
  speculative.speculative.num_speculative_tokens = 4;
  speculative.speculative.prompt_lookup_min = 1;
  speculative.speculative.prompt_lookup_max = 3;
  speculative.speculative.disable_by_batch_size = 1000;  // all five choices draft
  const auto run = [&](const EngineConfig& config) {
    Engine engine(*model, tok, config);
    engine.start();
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      std::vector<int32_t> piece = make_prompt(seed, 6), prompt;
      for (int i = 0; i < 4; ++i) prompt.insert(prompt.end(), piece.begin(), piece.end());
      GenerationRequest r = greedy_request("s" + std::to_string(seed), prompt, 64);
      r.params.temperature = 0.3f;
      r.params.seed = seed;
      r.params.n = seed == 2 ? 2 : 1;
      auto submitted = engine.submit(std::move(r));
      REQUIRE(submitted.ok());
      streams.push_back(submitted.stream);
    }
    std::vector<std::vector<int32_t>> tokens;
    for (auto& stream : streams)
      for (const ChoiceResult& choice : collect(*stream)) tokens.push_back(choice.tokens);
    return std::pair(tokens, engine.stats());
  };
  const auto [plain, plain_stats] = run(small_config());
  const int device_calls = device.calls;
  const auto [with_drafts, stats] = run(speculative);
  CHECK(with_drafts == plain);
  MESSAGE("accepted " << stats.speculation.num_accepted_tokens << " of " << stats.speculation.num_draft_tokens
                      << " drafted tokens; device sample calls " << device_calls << " plain, "
                      << device.calls - device_calls << " speculative");
  CHECK(stats.speculation.num_accepted_tokens > 0);  // host-verified steps were there
  CHECK(device.calls > device_calls);                // and device-sampled ones
}

TEST_CASE("a KV cache that does not fit says how many blocks would") {
  const std::string path = std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-f32.gguf";
  LoadedFixture f = load_engine_fixture("llama");
  FullBackend full;
  auto model = Model::load(loader::open_weights(path), full);
  full.fail = true;
  try {
    Engine engine(*model, *f.tokenizer, small_config());
    FAIL("the engine started without its KV cache");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.find("does not fit on fullgpu:0") != std::string::npos);
    CHECK(message.find("cudaMalloc of") != std::string::npos);
    CHECK(message.find("blocks") != std::string::npos);
    CHECK(message.find("would fit: set kv_cache_bytes to at most") != std::string::npos);
  }
}

TEST_CASE("a model whose attention layout the backend cannot run fails at load, naming it") {
  class NarrowBackend : public ForwardingBackend {
   public:
    NarrowBackend() : ForwardingBackend(backends::make_cpu_backend(1)) {}
    bool supports_attention(int64_t, int64_t, int64_t) const override { return false; }
  } narrow;
  const std::string path = std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-f32.gguf";
  try {
    Model::load(loader::open_weights(path), narrow);
    FAIL("loaded");
  } catch (const loader::LoadError& e) {
    const std::string message = e.what();
    CHECK(message.find("llama-f32.gguf") != std::string::npos);
    CHECK(message.find("beyond the forwarding(cpu) backend's attention") != std::string::npos);
  }
}

}  // namespace
}  // namespace sluice::engine::testing

namespace sluice::engine::testing::unit_engine_test_backend_paths {
namespace {

// Claims to be a GPU with `free` bytes free of 16 GiB; allocates on the CPU.
class ClaimedGpu : public ForwardingBackend {
 public:
  ClaimedGpu() : ForwardingBackend(backends::make_cpu_backend(1)) {}
  backends::DeviceKind device() const override { return backends::DeviceKind::cuda; }
  backends::MemoryInfo memory_info() const override { return {16ull << 30, free}; }
  uint64_t free = 0;
};

TEST_CASE("kv_cache_bytes 0 sizes the pool automatically: 256 MiB on the CPU, what a GPU has left") {
  const std::string path = std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-f32.gguf";
  LoadedFixture f = load_engine_fixture("llama");
  EngineConfig config = small_config();
  config.kv_cache_bytes = 0;
  const ModelHparams& hp = f.model->hparams();
  const uint64_t per_block = KvCache::bytes_per_block(hp, config.block_size, config.kv_dtype);
  {
    Engine engine(*f.model, *f.tokenizer, config);
    CHECK(engine.num_kv_blocks() == static_cast<int32_t>((256ull << 20) / per_block));
  }
  // On a GPU the budget follows the free memory one for one, above what is held back.
  const auto gpu_budget = [&](uint64_t free) {
    return automatic_kv_budget(hp, config, backends::DeviceKind::cuda, {16ull << 30, free});
  };
  CHECK(gpu_budget(1ull << 30) == 0);  // less than 10% of the device
  const uint64_t held_back = (8ull << 30) - gpu_budget(8ull << 30);
  CHECK(held_back > (16ull << 30) / 10 + (1ull << 30));
  CHECK(gpu_budget(held_back + (64ull << 20)) == 64ull << 20);

  ClaimedGpu gpu;
  auto model = Model::load(loader::open_weights(path), gpu);
  gpu.free = held_back + 100 * per_block;
  Engine engine(*model, *f.tokenizer, config);
  CHECK(engine.num_kv_blocks() == 100);
  gpu.free = held_back / 2;
  try {
    Engine none(*model, *f.tokenizer, config);
    FAIL("started without a KV block");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("automatic") != std::string::npos);
  }
}

}  // namespace
}  // namespace sluice::engine::testing
