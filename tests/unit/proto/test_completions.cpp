#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/completions.h"

namespace unit_proto_test_completions {

using namespace sluice::proto;

namespace {

// A valid body with `extra` merged over it (a null in extra stays null).
std::string body_with(const Json& extra) {
  Json body = {{"model", "m"}, {"prompt", "hi"}};
  for (const auto& [k, v] : extra.items()) body[k] = v;
  return body.dump();
}

CompletionRequest ok(const Json& extra, const ParseOptions& parse = {}) {
  auto result = parse_completion_request(body_with(extra), parse);
  if (auto* e = std::get_if<ApiError>(&result)) FAIL_CHECK("unexpected error: ", e->message, " param ", e->param);
  REQUIRE(std::holds_alternative<CompletionRequest>(result));
  return std::get<CompletionRequest>(result);
}

ApiError err(const std::string& raw, const ParseOptions& parse = {}) {
  auto result = parse_completion_request(raw, parse);
  REQUIRE(std::holds_alternative<ApiError>(result));
  auto e = std::get<ApiError>(result);
  CHECK(e.status == 400);
  CHECK(e.type == "invalid_request_error");
  CHECK_FALSE(e.message.empty());
  return e;
}

std::string err_param(const Json& extra, const ParseOptions& parse = {}) { return err(body_with(extra), parse).param; }

const ParseOptions kStrict{.strict_fields = true};

}  // namespace

TEST_CASE("completions: a minimal body gets OpenAI's defaults") {
  auto r = ok(Json::object());
  CHECK(r.model == "m");
  REQUIRE(r.prompts.size() == 1);
  CHECK(std::get<std::string>(r.prompts[0]) == "hi");
  CHECK(r.sampling.max_tokens == 16);
  CHECK(r.sampling.temperature == 1.0f);
  CHECK(r.sampling.top_p == 1.0f);
  CHECK(r.sampling.top_k == 0);
  CHECK(r.sampling.n == 1);
  CHECK_FALSE(r.sampling.logprobs.has_value());
  CHECK_FALSE(r.sampling.seed.has_value());
  CHECK_FALSE(r.stream);
  CHECK_FALSE(r.include_usage);
  CHECK_FALSE(r.echo);
  CHECK(r.stop.empty());
  CHECK(r.priority == 0);
  CHECK_FALSE(r.timeout_s.has_value());
}

TEST_CASE("completions: malformed JSON is a 400 with the parser's position and no param") {
  auto e = err(R"({"model": "m", "prompt": )");
  CHECK(e.param.empty());
  CHECK(e.message.find("byte") != std::string::npos);
  CHECK(e.message.find("column") != std::string::npos);
  CHECK(err("").param.empty());
  CHECK(err("{\"model\":\"m\",}").message.find("parse") != std::string::npos);
  CHECK(err("[1,2]").param.empty());
  CHECK(err("\"text\"").param.empty());
  CHECK(err("{\"model\":\"\xff\"}").param.empty());  // invalid UTF-8 inside a string
}

TEST_CASE("completions: model is a required non-empty string") {
  CHECK(err(R"({"prompt":"hi"})").param == "model");
  CHECK(err(R"({"model":null,"prompt":"hi"})").param == "model");
  CHECK(err(R"({"model":"","prompt":"hi"})").param == "model");
  CHECK(err(R"({"model":3,"prompt":"hi"})").param == "model");
}

TEST_CASE("completions: every prompt form") {
  auto r = ok({{"prompt", Json::array({"a", "b"})}});
  REQUIRE(r.prompts.size() == 2);
  CHECK(std::get<std::string>(r.prompts[1]) == "b");

  r = ok({{"prompt", Json::array({1, 2, 3})}});
  REQUIRE(r.prompts.size() == 1);
  CHECK(std::get<std::vector<int32_t>>(r.prompts[0]) == std::vector<int32_t>{1, 2, 3});

  r = ok({{"prompt", Json::array({Json::array({1, 2}), Json::array({3})})}});
  REQUIRE(r.prompts.size() == 2);
  CHECK(std::get<std::vector<int32_t>>(r.prompts[1]) == std::vector<int32_t>{3});

  // Items of one list may mix text and token ids, as in vLLM.
  r = ok({{"prompt", Json::array({"a", Json::array({5})})}});
  CHECK(r.prompts.size() == 2);
}

TEST_CASE("completions: bad prompts name the prompt") {
  CHECK(err(R"({"model":"m"})").param == "prompt");
  CHECK(err_param({{"prompt", nullptr}}) == "prompt");
  CHECK(err_param({{"prompt", ""}}) == "prompt");
  CHECK(err_param({{"prompt", Json::array()}}) == "prompt");
  CHECK(err_param({{"prompt", 5}}) == "prompt");
  CHECK(err_param({{"prompt", Json::object()}}) == "prompt");
  CHECK(err_param({{"prompt", Json::array({1, "a"})}}) == "prompt");
  CHECK(err_param({{"prompt", Json::array({1, -1})}}) == "prompt");
  CHECK(err_param({{"prompt", Json::array({1, 4294967296LL})}}) == "prompt");
  CHECK(err_param({{"prompt", Json::array({1, 1.5})}}) == "prompt");
  CHECK(err_param({{"prompt", Json::array({"a", ""})}}) == "prompt[1]");
  CHECK(err_param({{"prompt", Json::array({"a", 3})}}) == "prompt[1]");
  CHECK(err_param({{"prompt", Json::array({Json::array({1}), Json::array()})}}) == "prompt[1]");
  CHECK(err_param({{"prompt", Json::array({Json::array({1, "x"})})}}) == "prompt[0]");
  CHECK(err_param({{"prompt", Json::array({nullptr})}}) == "prompt[0]");
}

TEST_CASE("completions: max_tokens") {
  CHECK(ok({{"max_tokens", 1}}).sampling.max_tokens == 1);
  CHECK(ok({{"max_tokens", 100.0}}).sampling.max_tokens == 100);
  CHECK_FALSE(ok({{"max_tokens", nullptr}}).sampling.max_tokens.has_value());  // up to the context
  CHECK(err_param({{"max_tokens", 0}}) == "max_tokens");
  CHECK(err_param({{"max_tokens", -5}}) == "max_tokens");
  CHECK(err_param({{"max_tokens", 1.5}}) == "max_tokens");
  CHECK(err_param({{"max_tokens", "16"}}) == "max_tokens");
  CHECK(err_param({{"max_tokens", true}}) == "max_tokens");
  CHECK(err_param({{"max_tokens", 3000000000LL}}) == "max_tokens");
}

TEST_CASE("completions: float ranges") {
  CHECK(ok({{"temperature", 0}}).sampling.temperature == 0.0f);
  CHECK(ok({{"temperature", 2}}).sampling.temperature == 2.0f);
  CHECK(ok({{"temperature", 0.7}}).sampling.temperature == doctest::Approx(0.7));
  CHECK(ok({{"temperature", nullptr}}).sampling.temperature == 1.0f);
  CHECK(err_param({{"temperature", -0.1}}) == "temperature");
  CHECK(err_param({{"temperature", 2.01}}) == "temperature");
  CHECK(err_param({{"temperature", "hot"}}) == "temperature");
  // Out of double's range: the parser refuses it, so no param.
  CHECK(err(R"({"model":"m","prompt":"x","temperature":1e400})").param.empty());

  CHECK(ok({{"top_p", 1}}).sampling.top_p == 1.0f);
  CHECK(ok({{"top_p", 0.1}}).sampling.top_p == doctest::Approx(0.1));
  CHECK(err_param({{"top_p", 0}}) == "top_p");
  CHECK(err_param({{"top_p", 1.1}}) == "top_p");

  CHECK(ok({{"min_p", 0}}).sampling.min_p == 0.0f);
  CHECK(ok({{"min_p", 1}}).sampling.min_p == 1.0f);
  CHECK(err_param({{"min_p", -0.01}}) == "min_p");
  CHECK(err_param({{"min_p", 1.5}}) == "min_p");

  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    CAPTURE(name);
    CHECK(ok({{name, -2}}).sampling.presence_penalty + ok({{name, -2}}).sampling.frequency_penalty == -2.0f);
    CHECK(ok({{name, 2}}).sampling.presence_penalty + ok({{name, 2}}).sampling.frequency_penalty == 2.0f);
    CHECK(err_param({{name, 2.5}}) == name);
    CHECK(err_param({{name, -3}}) == name);
    CHECK(err_param({{name, Json::array()}}) == name);
  }

  CHECK(ok({{"repetition_penalty", 2}}).sampling.repetition_penalty == 2.0f);
  CHECK(ok({{"repetition_penalty", 0.5}}).sampling.repetition_penalty == 0.5f);
  CHECK(err_param({{"repetition_penalty", 0}}) == "repetition_penalty");
  CHECK(err_param({{"repetition_penalty", 2.5}}) == "repetition_penalty");
}

TEST_CASE("completions: integer fields") {
  CHECK(ok({{"n", 1}}).sampling.n == 1);
  CHECK(ok({{"n", 16}}).sampling.n == 16);
  CHECK(ok({{"n", nullptr}}).sampling.n == 1);
  // One limit, said the same way whichever side of it the value falls.
  auto zero = err(body_with({{"n", 0}}));
  auto above = err(body_with({{"n", 17}}));
  CHECK(zero.param == "n");
  CHECK(above.param == "n");
  CHECK(zero.message.find("between 1 and 16") != std::string::npos);
  CHECK(above.message.find("between 1 and 16") != std::string::npos);
  CHECK(err_param({{"n", "2"}}) == "n");

  CHECK(ok({{"top_k", -1}}).sampling.top_k == -1);
  CHECK(ok({{"top_k", 1}}).sampling.top_k == 1);
  CHECK(ok({{"top_k", 50}}).sampling.top_k == 50);
  CHECK(err_param({{"top_k", 0}}) == "top_k");
  CHECK(err_param({{"top_k", -2}}) == "top_k");
  CHECK(err_param({{"top_k", 0.5}}) == "top_k");

  CHECK(ok({{"logprobs", 0}}).sampling.logprobs == 0);
  CHECK(ok({{"logprobs", 20}}).sampling.logprobs == 20);
  CHECK_FALSE(ok({{"logprobs", nullptr}}).sampling.logprobs.has_value());
  CHECK(err_param({{"logprobs", 21}}) == "logprobs");
  CHECK(err_param({{"logprobs", -1}}) == "logprobs");
  CHECK(err_param({{"logprobs", true}}) == "logprobs");

  CHECK(ok({{"seed", 42}}).sampling.seed == 42u);
  CHECK(ok({{"seed", -1}}).sampling.seed == UINT64_MAX);
  CHECK(ok({{"seed", UINT64_MAX}}).sampling.seed == UINT64_MAX);
  CHECK_FALSE(ok({{"seed", nullptr}}).sampling.seed.has_value());
  CHECK(err_param({{"seed", 1.5}}) == "seed");
  CHECK(err_param({{"seed", "1"}}) == "seed");

  // priority: ignored unless the operator allows it, then bounded.
  CHECK(ok({{"priority", -10}}).priority == 0);
  CHECK(ok({{"priority", -10}}).ignored_fields == std::vector<std::string>{"priority"});
  // Off, any integer is ignored, whatever its range; a non-integer is still an error.
  CHECK(ok({{"priority", 1LL << 40}}).priority == 0);
  CHECK(ok({{"priority", -1e300}}).priority == 0);
  CHECK(err_param({{"priority", 0.5}}) == "priority");
  CHECK(err_param({{"priority", "high"}}) == "priority");
  const ParseOptions allow{.allow_priority = true};
  CHECK(ok({{"priority", -10}}, allow).priority == -10);
  CHECK(ok({{"priority", 1000}}, allow).priority == 1000);
  CHECK(err_param({{"priority", 1001}}, allow) == "priority");
  CHECK(err_param({{"priority", -1001}}, allow) == "priority");
}

TEST_CASE("completions: booleans, strings and timeout") {
  CHECK(ok({{"echo", true}}).echo);
  CHECK_FALSE(ok({{"echo", nullptr}}).echo);
  CHECK(err_param({{"echo", 1}}) == "echo");
  CHECK(ok({{"ignore_eos", true}}).sampling.ignore_eos);
  CHECK(err_param({{"ignore_eos", "yes"}}) == "ignore_eos");
  CHECK(ok({{"stream", true}}).stream);
  CHECK(err_param({{"stream", "true"}}) == "stream");
  CHECK(ok({{"user", "u-1"}}).user == "u-1");
  CHECK(err_param({{"user", 5}}) == "user");

  CHECK(ok({{"timeout", 2.5}}).timeout_s == 2.5);
  CHECK(ok({{"timeout", 30}}).timeout_s == 30.0);
  CHECK(err_param({{"timeout", 0}}) == "timeout");
  CHECK(err_param({{"timeout", -1}}) == "timeout");
  CHECK(err_param({{"timeout", "5s"}}) == "timeout");
}

TEST_CASE("completions: stop") {
  CHECK(ok({{"stop", "\n"}}).stop == std::vector<std::string>{"\n"});
  CHECK(ok({{"stop", Json::array({"a", "b", "c", "d"})}}).stop.size() == 4);
  CHECK(ok({{"stop", Json::array()}}).stop.empty());
  CHECK(ok({{"stop", nullptr}}).stop.empty());
  CHECK(err_param({{"stop", Json::array({"a", "b", "c", "d", "e"})}}) == "stop");
  CHECK(err_param({{"stop", ""}}) == "stop");
  CHECK(err_param({{"stop", Json::array({"a", ""})}}) == "stop");
  CHECK(err_param({{"stop", Json::array({"a", 1})}}) == "stop");
  CHECK(err_param({{"stop", 3}}) == "stop");
}

TEST_CASE("completions: logit_bias") {
  auto r = ok({{"logit_bias", {{"50256", -100}, {"7", 2.5}, {"0", 100}}}});
  CHECK(r.sampling.logit_bias->size() == 3);
  CHECK(r.sampling.logit_bias->at(50256) == -100.0f);
  CHECK(r.sampling.logit_bias->at(7) == 2.5f);
  CHECK_FALSE(ok({{"logit_bias", nullptr}}).sampling.logit_bias);
  CHECK_FALSE(ok({{"logit_bias", Json::object()}}).sampling.logit_bias);
  CHECK(err_param({{"logit_bias", {{"7", 101}}}}) == "logit_bias");
  CHECK(err_param({{"logit_bias", {{"7", -100.5}}}}) == "logit_bias");
  CHECK(err_param({{"logit_bias", {{"abc", 1}}}}) == "logit_bias");
  CHECK(err_param({{"logit_bias", {{"-3", 1}}}}) == "logit_bias");
  CHECK(err_param({{"logit_bias", {{"1.5", 1}}}}) == "logit_bias");
  CHECK(err_param({{"logit_bias", {{"99999999999", 1}}}}) == "logit_bias");
  CHECK(err_param({{"logit_bias", {{"7", "1"}}}}) == "logit_bias");
  CHECK(err_param({{"logit_bias", Json::array({1})}}) == "logit_bias");
}

TEST_CASE("completions: stream_options only with stream") {
  auto r = ok({{"stream", true}, {"stream_options", {{"include_usage", true}}}});
  CHECK(r.include_usage);
  CHECK_FALSE(ok({{"stream", true}, {"stream_options", nullptr}}).include_usage);
  CHECK_FALSE(ok({{"stream_options", nullptr}}).include_usage);
  CHECK(err_param({{"stream_options", {{"include_usage", true}}}}) == "stream_options");
  CHECK(err_param({{"stream", false}, {"stream_options", {{"include_usage", true}}}}) == "stream_options");
  CHECK(err_param({{"stream", true}, {"stream_options", {{"include_usage", 1}}}}) ==
        "stream_options.include_usage");
  CHECK(err_param({{"stream", true}, {"stream_options", {{"bogus", true}}}}, kStrict) == "stream_options.bogus");
  CHECK(ok({{"stream", true}, {"stream_options", {{"bogus", true}}}}).ignored_fields ==
        std::vector<std::string>{"stream_options.bogus"});
  CHECK(ok({{"stream", true}, {"stream_options", {{"continuous_usage_stats", true}}}}).continuous_usage_stats);
  CHECK(ok({{"stream", true}, {"stream_options", {{"include_obfuscation", false}}}}).ignored_fields.size() == 1);
  CHECK(err_param({{"stream", true}, {"stream_options", {{"include_obfuscation", 1}}}}) ==
        "stream_options.include_obfuscation");
  CHECK(err_param({{"stream", true}, {"stream_options", true}}) == "stream_options");
}

TEST_CASE("completions: best_of at least n, at most 16, never streamed when above n") {
  CHECK(ok({{"best_of", 1}}).sampling.n == 1);
  CHECK(ok({{"best_of", 3}, {"n", 3}}).best_of == 3);
  CHECK(ok({{"best_of", nullptr}, {"n", 2}}).best_of == 0);
  CHECK(ok({{"best_of", 4}, {"n", 2}}).best_of == 4);
  CHECK(ok({{"best_of", 2}, {"n", 2}, {"stream", true}}).best_of == 2);
  CHECK(err_param({{"best_of", 2}, {"n", 3}}) == "best_of");
  CHECK(err_param({{"best_of", 17}}) == "best_of");
  CHECK(err_param({{"best_of", 3}, {"stream", true}}) == "best_of");
  CHECK(err_param({{"best_of", "2"}}) == "best_of");
  // prompts x best_of is what the engine generates, so that is what is capped.
  Json prompts = Json::array();
  for (int i = 0; i < 17; ++i) prompts.push_back("p");
  CHECK(err_param({{"prompt", prompts}, {"best_of", 16}}) == "n");
}

TEST_CASE("completions: max_tokens 0 only with echo") {
  CHECK(ok({{"max_tokens", 0}, {"echo", true}}).sampling.max_tokens == 0);
  CHECK(err_param({{"max_tokens", 0}}) == "max_tokens");
}

TEST_CASE("completions: suffix only when empty") {
  ok({{"suffix", nullptr}});
  ok({{"suffix", ""}});
  CHECK(err_param({{"suffix", "end"}}) == "suffix");
  CHECK(err_param({{"suffix", 1}}) == "suffix");
}

TEST_CASE("completions: unknown fields are ignored by default and refused by name when strict") {
  auto r = ok({{"frobnicate", 1}, {"prompt_embeds", nullptr}});
  CHECK(r.ignored_fields == std::vector<std::string>{"frobnicate", "prompt_embeds"});
  auto e = err(body_with({{"frobnicate", 1}}), kStrict);
  CHECK(e.param == "frobnicate");
  CHECK(e.message.find("frobnicate") != std::string::npos);
  CHECK(err_param({{"messages", Json::array()}}, kStrict) == "messages");
  CHECK(err_param({{"top_logprobs", 2}}, kStrict) == "top_logprobs");
  CHECK(err_param({{"prompt_embeds", nullptr}}, kStrict) == "prompt_embeds");
}

TEST_CASE("completions: vLLM's extras parse and are checked") {
  auto r = ok({{"min_tokens", 3}, {"stop_token_ids", {5, 9}}, {"include_stop_str_in_output", true},
               {"skip_special_tokens", false}, {"add_special_tokens", false}});
  CHECK(r.sampling.min_tokens == 3);
  CHECK(r.stop_token_ids == std::vector<int32_t>{5, 9});
  CHECK(r.include_stop_str_in_output);
  CHECK_FALSE(r.skip_special_tokens);
  CHECK(r.add_special_tokens == false);
  CHECK(r.ignored_fields.empty());
  CHECK_FALSE(ok({}).add_special_tokens.has_value());
  CHECK(ok({}).skip_special_tokens);
  CHECK(err_param({{"min_tokens", -1}}) == "min_tokens");
  CHECK(err_param({{"min_tokens", 17}, {"max_tokens", 16}}) == "min_tokens");
  CHECK(err_param({{"stop_token_ids", {-1}}}) == "stop_token_ids");
  CHECK(err_param({{"stop_token_ids", Json(std::vector<int>(65, 1))}}) == "stop_token_ids");
  CHECK(err_param({{"include_stop_str_in_output", "yes"}}) == "include_stop_str_in_output");
  CHECK(err_param({{"skip_special_tokens", 0}}) == "skip_special_tokens");
  CHECK(err_param({{"add_special_tokens", 1}}) == "add_special_tokens");
}

TEST_CASE("completions: prompts and prompts x n are capped before anything is built from them") {
  Json many = Json::array();
  for (size_t i = 0; i < kMaxPrompts + 1; ++i) many.push_back("p");
  auto e = err(body_with({{"prompt", many}}));
  CHECK(e.param == "prompt");
  CHECK(e.message.find(std::to_string(kMaxPrompts)) != std::string::npos);
  Json fit = Json::array();
  for (int i = 0; i < 16; ++i) fit.push_back("p");
  CHECK(ok({{"prompt", fit}, {"n", 16}}).prompts.size() == 16);  // 256 choices
  fit.push_back("p");
  CHECK(err_param({{"prompt", fit}, {"n", 16}}) == "n");  // 272
  // A single prompt of many token ids is one prompt, not many.
  CHECK(ok({{"prompt", Json(std::vector<int>(1000, 1))}}).prompts.size() == 1);
}

TEST_CASE("completions: logit_bias holds at most 300 entries, shared by every copy of the params") {
  Json bias = Json::object();
  for (int i = 0; i < 300; ++i) bias[std::to_string(i)] = 1;
  auto r = ok({{"logit_bias", bias}});
  REQUIRE(r.sampling.logit_bias);
  CHECK(r.sampling.logit_bias->size() == 300);
  sluice::engine::SamplingParams copy = r.sampling;
  CHECK(copy.logit_bias.get() == r.sampling.logit_bias.get());
  bias["300"] = 1;
  auto e = err(body_with({{"logit_bias", bias}}));
  CHECK(e.param == "logit_bias");
  CHECK(e.message.find("300") != std::string::npos);
}

TEST_CASE("completions: a full vLLM-style body parses") {
  auto r = ok({{"max_tokens", 32},  {"temperature", 0.2}, {"top_p", 0.9},        {"n", 2},
               {"stream", true},    {"stream_options", {{"include_usage", true}}},
               {"stop", {"###"}},   {"logprobs", 5},      {"echo", true},        {"seed", 7},
               {"presence_penalty", 0.5}, {"frequency_penalty", -0.5}, {"logit_bias", {{"1", 1}}},
               {"user", "x"},       {"top_k", 40},        {"min_p", 0.05},       {"repetition_penalty", 1.1},
               {"ignore_eos", true}, {"priority", 3},     {"timeout", 10},       {"best_of", 2},
               {"min_tokens", 2},   {"stop_token_ids", {3}}, {"include_stop_str_in_output", false},
               {"suffix", nullptr}});
  CHECK(r.sampling.max_tokens == 32);
  CHECK(r.sampling.n == 2);
  CHECK(r.sampling.logprobs == 5);
  CHECK(r.sampling.top_k == 40);
  CHECK(r.sampling.repetition_penalty == doctest::Approx(1.1));
  CHECK(r.include_usage);
  CHECK(r.echo);
  CHECK(r.stop == std::vector<std::string>{"###"});
  CHECK(r.timeout_s == 10.0);
}
}  // namespace unit_proto_test_completions
