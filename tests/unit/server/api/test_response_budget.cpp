// server/response_budget: the log-probability entries a response could hold are
// estimated before any work, and too many is a 400 naming the field.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/api/generation/response_budget.h"

namespace sluice::server::unit_server_api_test_response_budget {
namespace {

// One prompt of `num_tokens`, n choices, logprobs; echo scores the prompt too.
engine::GenerationRequest scored(int64_t num_tokens, int32_t n, int32_t logprobs, bool echo, int32_t max_tokens) {
  engine::GenerationRequest request;
  request.prompt_tokens.assign(static_cast<size_t>(num_tokens), 5);
  request.params.n = n;
  request.params.logprobs = logprobs;
  if (echo) request.params.prompt_logprobs = logprobs;
  request.params.max_tokens = max_tokens;
  return request;
}

}  // namespace

TEST_CASE("response budget: echoed prompt scores count once per returned choice") {
  // The hostile request: 2 prompts x 6,000 tokens, n 16, echo, logprobs 20, max_tokens 0.
  const std::vector<engine::GenerationRequest> requests = {scored(6000, 16, 20, true, 1),
                                                           scored(6000, 16, 20, true, 1)};
  const ResponseShape score_only{.want_logprobs = true, .score_only = true, .num_returned = 16};
  CHECK(estimate_response_logprobs(requests, score_only, 8192) == 2 * 16 * 6000 * 21);
  const auto error = check_response_logprobs(requests, score_only, 8192, 1'000'000);
  REQUIRE(error);
  CHECK(error->status == 400);
  CHECK(error->param == "logprobs");
  CHECK(error->message.find("4032000") != std::string::npos);
  CHECK(error->message.find("max_response_logprobs") != std::string::npos);
  // The same prompts scored once each fit.
  const std::vector<engine::GenerationRequest> single = {scored(6000, 1, 20, true, 1), scored(6000, 1, 20, true, 1)};
  CHECK_FALSE(check_response_logprobs(single, {.want_logprobs = true, .score_only = true}, 8192, 1'000'000));
}

TEST_CASE("response budget: generated entries count unless streamed; max_tokens unset means the context") {
  std::vector<engine::GenerationRequest> requests = {scored(10, 4, 5, false, 100)};
  CHECK(estimate_response_logprobs(requests, {.want_logprobs = true, .num_returned = 4}, 1000) == 4 * 100 * 6);
  CHECK(estimate_response_logprobs(requests, {.streaming = true, .want_logprobs = true, .num_returned = 4}, 1000) ==
        0);
  CHECK(estimate_response_logprobs(requests, {.want_logprobs = false, .num_returned = 4}, 1000) == 0);  // best_of
  requests[0].params.max_tokens.reset();
  CHECK(estimate_response_logprobs(requests, {.want_logprobs = true, .num_returned = 4}, 1000) == 4 * 990 * 6);
  const auto error = check_response_logprobs(requests, {.chat = true, .want_logprobs = true, .num_returned = 4}, 1000,
                                             100);
  REQUIRE(error);
  CHECK(error->param == "top_logprobs");
}

}  // namespace sluice::server
