// proto/completion_body: the /v1/completions body written as text, with the echoed
// prompt's entries rendered once, reads back exactly as the JSON-tree version.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

#include "proto/completion_body.h"
#include "proto/responses.h"
#include "proto/sse.h"

namespace unit_proto_test_completion_body {

using namespace sluice::proto;
using Json = nlohmann::ordered_json;

namespace {

const ResponseHeader kHeader{"cmpl-1", 1700000000, "smol \"model\""};

// Pieces that need escapes, partial characters, duplicates among the alternatives,
// -inf, and the first echoed token's null.
std::vector<TokenLogprob> prompt_entries() {
  return {{"Hello", std::nullopt, {}},
          {" \"wor\\ld\"\n", -0.25f, {{"x", -0.5f}, {" \"wor\\ld\"\n", -0.25f}}},
          {"\xe2\x80", -1.0e-7f, {{"\xe2\x80", -1.0e-7f}, {"\xe2\x80", -2.0f}}},
          {"\xc3\xa9t\x01", -INFINITY, {}}};
}

std::vector<TokenLogprob> generated_entries() {
  return {{" end", -12345.678f, {{" end", -12345.678f}, {"!", -3.0f}}}, {"!", 0.0f, {{"a", -1.5e-5f}}}};
}

}  // namespace

TEST_CASE("completion_body reads back as completion_object, with shared prompt entries") {
  const std::vector<TokenLogprob> prompt = prompt_entries();
  const std::vector<TokenLogprob> own = generated_entries();
  const LogprobsText shared = render_logprobs(prompt, 0);
  CHECK(shared.num_entries == 4);

  std::vector<CompletionChoice> tree;
  std::vector<CompletionChoiceText> text;
  const std::vector<std::string> outputs = {" end!", ""};
  for (int k = 0; k < 2; ++k) {
    std::vector<TokenLogprob> all = prompt;
    if (k == 0) all.insert(all.end(), own.begin(), own.end());
    tree.push_back({k, "Hello \"wor\\ld\"\n\xe2\x80" + outputs[k], all, 0, k == 0 ? "length" : "stop"});
    text.push_back({.index = k, .echo = "Hello \"wor\\ld\"\n\xe2\x80", .text = outputs[k], .has_logprobs = true,
                    .shared = &shared, .entries = k == 0 ? std::span<const TokenLogprob>(own) : std::span<const TokenLogprob>(),
                    .finish_reason = k == 0 ? "length" : "stop"});
  }
  tree.push_back({2, "plain", std::nullopt, 0, std::nullopt});
  text.push_back({.index = 2, .text = "plain"});
  const Usage usage{12, 3, 4};

  const std::string expected = dump_json(completion_object(kHeader, tree, usage));
  const std::string body = completion_body(kHeader, text, usage);
  CHECK(Json::parse(body) == Json::parse(expected));
  CHECK(body == expected);  // byte for byte, numbers included
}

TEST_CASE("completion_body: generated entries alone start at offset 0, and without a shared part") {
  const std::vector<TokenLogprob> own = generated_entries();
  const LogprobsText empty = render_logprobs({}, 0);
  const std::vector<CompletionChoice> tree = {{0, " end!", own, 0, "length"}};
  const std::vector<CompletionChoiceText> with_empty = {
      {.index = 0, .text = " end!", .has_logprobs = true, .shared = &empty, .entries = own, .finish_reason = "length"}};
  const std::vector<CompletionChoiceText> without = {
      {.index = 0, .text = " end!", .has_logprobs = true, .entries = own, .finish_reason = "length"}};
  const std::string expected = dump_json(completion_object(kHeader, tree, {}));
  CHECK(completion_body(kHeader, with_empty, {}) == expected);
  CHECK(completion_body(kHeader, without, {}) == expected);
}

TEST_CASE("completion_chunk_text is completion_chunk, with or without usage") {
  const std::vector<TokenLogprob> prompt = prompt_entries();
  const LogprobsText shared = render_logprobs(prompt, 0);
  const CompletionChoice tree{1, "Hello", prompt, 0, std::nullopt};
  const CompletionChoiceText text{.index = 1, .text = "Hello", .has_logprobs = true, .shared = &shared};
  CHECK(completion_chunk_text(kHeader, text, std::nullopt) == dump_json(completion_chunk(kHeader, tree, false)));
  CHECK(completion_chunk_text(kHeader, text, "null") == dump_json(completion_chunk(kHeader, tree, true)));
  Json with_usage = completion_chunk(kHeader, tree, true);
  with_usage["usage"] = usage_object({5, 0, 0});
  CHECK(completion_chunk_text(kHeader, text, dump_json(usage_object({5, 0, 0}))) == dump_json(with_usage));
}

TEST_CASE("completion_body writes numbers as nlohmann does") {
  std::vector<TokenLogprob> entries;
  for (float value : {0.0f, -0.0f, -1.0f, -0.5f, -1e-4f, -1.5e-5f, -123456.0f, -1e20f, -3.4e38f, -0.1f,
                      -9999.0f, -2.3025851f, -1e-30f, -65504.0f})
    entries.push_back({"t", value, {}});
  const std::vector<CompletionChoice> tree = {{0, "", entries, 0, std::nullopt}};
  const std::vector<CompletionChoiceText> text = {{.index = 0, .has_logprobs = true, .entries = entries}};
  CHECK(completion_body(kHeader, text, {}) == dump_json(completion_object(kHeader, tree, {})));
}
}  // namespace unit_proto_test_completion_body
