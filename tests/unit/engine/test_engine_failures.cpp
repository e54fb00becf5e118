// The engine when its backend fails or hangs: a step that throws ends only its own
// requests (with "error", blocks returned) and the engine serves the next ones; an
// exception outside a step stops the engine visibly; a step that never ends makes
// health() say so. Driven on the CPU through ForwardingBackend.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/errors.h"
#include "tests/unit/backends/forwarding_backend.h"
#include "tests/unit/engine/engine_harness.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::testing::unit_engine_test_engine_failures {
namespace {

using namespace std::chrono_literals;
using backends::testing::ForwardingBackend;

const std::string kLlama = std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-f32.gguf";

// Throws OutOfMemoryError from the attention of step number `fail_at` (1-based),
// after the step's embeddings ran and some K/V was written: mid-step, as a CUDA
// allocation or kernel failure would.
class FailingBackend : public ForwardingBackend {
 public:
  FailingBackend() : ForwardingBackend(backends::make_cpu_backend(2)) {}
  void begin_step(std::span<const backends::SequenceSlice> sequences, int64_t num_rows) override {
    ++num_steps;
    last_step_sequences = static_cast<int>(sequences.size());
    ForwardingBackend::begin_step(sequences, num_rows);
  }
  void attention(const backends::Tensor& q, const backends::KvLayer& cache,
                 std::span<const backends::SequenceSlice> sequences, const backends::AttentionParams& params,
                 const backends::Tensor& out) override {
    if (num_steps.load() == fail_at) {
      failed_sequences = last_step_sequences.load();
      throw backends::OutOfMemoryError("injected: out of device memory in attention");
    }
    ForwardingBackend::attention(q, cache, sequences, params, out);
  }
  int fail_at = -1;
  std::atomic<int> num_steps{0};
  std::atomic<int> last_step_sequences{0};
  std::atomic<int> failed_sequences{0};
};

// Blocks inside begin_step while `hold` is set, like a wedged kernel.
class BlockingBackend : public ForwardingBackend {
 public:
  BlockingBackend() : ForwardingBackend(backends::make_cpu_backend(2)) {}
  void begin_step(std::span<const backends::SequenceSlice> sequences, int64_t num_rows) override {
    std::unique_lock lock(mutex);
    if (hold) {
      is_blocked = true;
      cv.notify_all();
      cv.wait(lock, [&] { return !hold; });
      is_blocked = false;
    }
    lock.unlock();
    ForwardingBackend::begin_step(sequences, num_rows);
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      hold = false;
    }
    cv.notify_all();
  }
  bool wait_blocked(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, timeout, [&] { return is_blocked; });
  }
  std::mutex mutex;
  std::condition_variable cv;
  bool hold = true;
  bool is_blocked = false;
};

std::vector<int32_t> greedy_tokens(Engine& engine, const std::string& id, std::vector<int32_t> prompt) {
  auto submitted = engine.submit(greedy_request(id, std::move(prompt), 12));
  REQUIRE(submitted.ok());
  const ChoiceResult result = collect(*submitted.stream)[0];
  CHECK(result.finish.finish_reason() == "length");
  return result.tokens;
}

TEST_CASE("a step that throws ends its requests with error, frees their blocks, and later requests succeed") {
  LoadedFixture f = load_engine_fixture("llama");
  FailingBackend backend;
  auto model = Model::load(loader::open_weights(kLlama), backend);
  // What the same prompt gives on an engine that never failed.
  std::vector<int32_t> expected;
  {
    Engine clean(*f.model, *f.tokenizer, small_config());
    clean.start();
    expected = greedy_tokens(clean, "clean", make_prompt(11, 20));
  }

  Engine engine(*model, *f.tokenizer, small_config());
  engine.start();
  // Three requests decode together; the third step (decode) fails under all of them.
  backend.fail_at = 3;
  std::vector<std::shared_ptr<RequestStream>> streams;
  {
    // Submitted before the engine wakes so they share the first steps.
    for (int i = 0; i < 3; ++i) {
      auto submitted = engine.submit(greedy_request("doomed-" + std::to_string(i), make_prompt(20 + i, 30), 40));
      REQUIRE(submitted.ok());
      streams.push_back(submitted.stream);
    }
  }
  int num_errors = 0;
  for (auto& stream : streams) {
    const ChoiceResult result = collect(*stream)[0];
    REQUIRE(result.finished);
    if (result.finish.finish_reason() == "error") {
      ++num_errors;
      CHECK(result.finish.error.find("injected: out of device memory") != std::string::npos);
      CHECK(result.tokens.size() < 40);
    } else {
      CHECK(result.finish.finish_reason() == "length");  // was not in the failed step
    }
  }
  CHECK(backend.failed_sequences.load() > 0);
  CHECK(num_errors == backend.failed_sequences.load());
  CHECK(wait_idle(engine));
  CHECK(engine.stats().kv_cache_usage == 0.0);
  CHECK(engine.health(1s).ok);

  // The engine goes on, with the same output as one that never failed.
  CHECK(greedy_tokens(engine, "after", make_prompt(11, 20)) == expected);
  CHECK(wait_idle(engine));
}

TEST_CASE("an exception outside a step stops the engine: requests end with error, submit refuses, health says why") {
  struct ThrowingObserver : EngineObserver {
    void on_step(const StepMetrics&) override { throw std::runtime_error("injected: observer broke"); }
  } observer;
  LoadedFixture f = load_engine_fixture("llama");
  Engine engine(*f.model, *f.tokenizer, small_config(), &observer);
  CHECK(engine.health(1s).ok);
  engine.start();
  auto submitted = engine.submit(greedy_request("victim", make_prompt(3, 10), 50));
  REQUIRE(submitted.ok());
  const ChoiceResult result = collect(*submitted.stream)[0];
  REQUIRE(result.finished);
  CHECK(result.finish.finish_reason() == "error");
  CHECK(result.finish.error.find("injected: observer broke") != std::string::npos);
  const EngineHealth health = engine.health(1s);
  CHECK_FALSE(health.ok);
  CHECK(health.reason.find("engine thread stopped") != std::string::npos);
  CHECK(health.reason.find("injected: observer broke") != std::string::npos);
  auto refused = engine.submit(greedy_request("later", make_prompt(4, 10), 5));
  CHECK(refused.status == SubmitStatus::shutting_down);
  CHECK(refused.message.find("injected: observer broke") != std::string::npos);
  engine.stop();  // joins the stopped thread without hanging
}

TEST_CASE("an exception of any type while the engine stops is caught: every request still gets its finish") {
  // The stop path (shutdown) runs outside the loop's steps; an observer that throws
  // there, with no std::exception, used to leave the thread and end the process.
  struct ThrowingObserver : EngineObserver {
    void on_request_finished(const RequestMetrics& m) override {
      if (m.finish_reasons.front() == FinishReason::abort) throw 42;
    }
  } observer;
  LoadedFixture f = load_engine_fixture("llama");
  BlockingBackend backend;
  auto model = Model::load(loader::open_weights(kLlama), backend);
  Engine engine(*model, *f.tokenizer, small_config(), &observer);
  engine.start();
  const auto room = static_cast<int32_t>(engine.max_model_len()) - 20;  // cannot finish before the stop
  auto first = engine.submit(greedy_request("first", make_prompt(3, 10), room));
  auto second = engine.submit(greedy_request("second", make_prompt(4, 10), room));
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  REQUIRE(backend.wait_blocked(10s));  // running
  std::thread stopper([&] { engine.stop(); });
  backend.release();
  stopper.join();
  for (auto* stream : {first.stream.get(), second.stream.get()}) {
    const ChoiceResult result = collect(*stream)[0];
    REQUIRE(result.finished);
    CHECK((result.finish.finish_reason() == "abort" || result.finish.finish_reason() == "error"));
  }
  CHECK_FALSE(engine.health(1s).ok);  // the failure is reported, not hidden
}

TEST_CASE("health() reports a step that runs past the timeout, and recovers when it ends") {
  LoadedFixture f = load_engine_fixture("llama");
  BlockingBackend backend;
  auto model = Model::load(loader::open_weights(kLlama), backend);
  Engine engine(*model, *f.tokenizer, small_config());
  engine.start();
  CHECK(engine.health(50ms).ok);  // idle is healthy
  auto submitted = engine.submit(greedy_request("stuck", make_prompt(6, 10), 4));
  REQUIRE(submitted.ok());
  REQUIRE(backend.wait_blocked(10s));
  std::this_thread::sleep_for(120ms);
  const EngineHealth wedged = engine.health(50ms);
  CHECK_FALSE(wedged.ok);
  CHECK(wedged.reason.find("a step has been running for") != std::string::npos);
  CHECK(engine.health(0ms).ok);  // no timeout: never wedged
  CHECK(engine.health(1h).ok);
  backend.release();
  CHECK(collect(*submitted.stream)[0].finish.finish_reason() == "length");
  CHECK(wait_idle(engine));
  CHECK(engine.health(50ms).ok);
}

TEST_CASE("the workspace is allocated at start for the largest step and never grows past it") {
  LoadedFixture f = load_engine_fixture("llama");
  EngineConfig config = small_config();
  config.max_num_batched_tokens = 96;
  config.max_num_seqs = 8;
  Engine engine(*f.model, *f.tokenizer, config);
  CHECK(f.model->workspace_token_capacity() == 96);
  CHECK(f.model->workspace_logit_capacity() == 8);
  engine.start();
  // A 200-token prompt runs in chunks of at most 96; eight decoding sequences sample 8 rows.
  std::vector<std::shared_ptr<RequestStream>> streams;
  auto longest = engine.submit(greedy_request("long", make_prompt(1, 200), 4));
  REQUIRE(longest.ok());
  streams.push_back(longest.stream);
  for (int i = 0; i < 7; ++i) {
    auto submitted = engine.submit(greedy_request("s" + std::to_string(i), make_prompt(30 + i, 5), 6));
    REQUIRE(submitted.ok());
    streams.push_back(submitted.stream);
  }
  for (auto& stream : streams) CHECK(collect(*stream)[0].finish.finish_reason() == "length");
  CHECK(f.model->workspace_token_capacity() == 96);
  CHECK(f.model->workspace_logit_capacity() == 8);
}

// Fails every allocation once armed, to interrupt a workspace that is growing.
class FailingAllocations : public ForwardingBackend {
 public:
  FailingAllocations() : ForwardingBackend(backends::make_cpu_backend(1)) {}
  std::unique_ptr<backends::Buffer> allocate(size_t bytes) override {
    if (fail) throw backends::OutOfMemoryError("injected: allocation refused");
    return ForwardingBackend::allocate(bytes);
  }
  bool fail = false;
};

TEST_CASE("a workspace whose growth fails is left empty and usable; growth stops at the reserved size") {
  FailingAllocations backend;
  auto model = Model::load(loader::open_weights(kLlama), backend);
  Workspace workspace(backend, model->hparams());
  workspace.reserve(100, 10);
  CHECK(workspace.token_capacity() == 100);
  (void)workspace.views(101, 11);  // doubling would give 200 and 20; the cap keeps them at what is needed
  CHECK(workspace.token_capacity() == 101);
  CHECK(workspace.logit_capacity() == 11);
  backend.fail = true;
  CHECK_THROWS_AS((void)workspace.views(150, 1), backends::OutOfMemoryError);
  CHECK(workspace.token_capacity() == 0);  // not 101 with freed buffers behind it
  backend.fail = false;
  const Workspace::Views views = workspace.views(150, 1);
  CHECK(workspace.token_capacity() == 150);
  CHECK(views.hidden.dim(0) == 150);
}

}  // namespace
}  // namespace sluice::engine::testing
