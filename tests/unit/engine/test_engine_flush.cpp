// Engine::flush_prefix_cache (POST /flush_cache): runs on the engine thread between
// steps, drops what no request holds, and answers even when the engine is gone.
#include <doctest/doctest.h>

#include <chrono>
#include <future>

#include "tests/unit/engine/engine_harness.h"

namespace sluice::engine::testing::unit_engine_test_engine_flush {
namespace {

int64_t cached_tokens_of(Engine& engine, std::string id, const std::vector<int32_t>& prompt) {
  auto submitted = engine.submit(greedy_request(std::move(id), prompt, 2));
  REQUIRE(submitted.ok());
  auto result = collect(*submitted.stream);
  REQUIRE(result[0].finished);
  return result[0].finish.num_cached_tokens;
}

int32_t flush(Engine& engine) {
  std::future<int32_t> flushed = engine.flush_prefix_cache();
  REQUIRE(flushed.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  return flushed.get();
}

TEST_CASE("a flushed prefix cache serves no hit; the next run fills it again") {
  LoadedFixture f = load_engine_fixture("llama");
  Engine engine(*f.model, *f.tokenizer, small_config());
  engine.start();
  const std::vector<int32_t> prompt = make_prompt(11, 40);  // 2 full blocks of 16 + 8

  CHECK(cached_tokens_of(engine, "first", prompt) == 0);
  CHECK(cached_tokens_of(engine, "again", prompt) == 32);
  REQUIRE(wait_idle(engine));

  // The prompt's two full blocks and the generated ones behind them, all unheld.
  CHECK(flush(engine) >= 2);
  CHECK(cached_tokens_of(engine, "after flush", prompt) == 0);
  CHECK(cached_tokens_of(engine, "cached anew", prompt) == 32);
  REQUIRE(wait_idle(engine));
  CHECK(flush(engine) >= 2);
  CHECK(flush(engine) == 0);  // nothing left to drop

  engine.stop();
  std::future<int32_t> refused = engine.flush_prefix_cache();
  REQUIRE(refused.wait_for(std::chrono::seconds(1)) == std::future_status::ready);
  CHECK_THROWS_AS(refused.get(), std::future_error);
}

}  // namespace
}  // namespace sluice::engine::testing
