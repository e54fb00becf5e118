// Generation defaults: which source wins, what a request keeps, and what the model
// files declare (GGUF general.sampling.*, generation_config.json).
#include "engine/generation_defaults.h"

#include <doctest/doctest.h>

#include <fstream>

#include "engine/loader/generation_defaults_file.h"
#include "tests/unit/engine/loader/gguf_builder.h"

namespace sluice::engine::unit_engine_test_generation_defaults {
namespace {

using loader::testing::Bytes;
using loader::testing::GgufBuilder;
using loader::testing::TempFile;

TEST_CASE("generation defaults fill only the fields a request left out") {
  GenerationDefaults d;
  d.temperature = 0.2f;
  d.top_k = 40;
  d.repetition_penalty = 1.1f;
  SamplingParams request;
  request.temperature = 1.5f;
  request.top_k = 5;
  SamplingFieldsGiven given;
  given.temperature = true;
  const SamplingParams out = apply_generation_defaults(d, given, request, 10, 100);
  CHECK(out.temperature == 1.5f);       // the request's own
  CHECK(out.top_k == 40);               // not given: the default, over the parser's value
  CHECK(out.repetition_penalty == 1.1f);
  CHECK(out.top_p == 1.0f);             // no default: the API's
  CHECK_FALSE(out.max_tokens.has_value());
}

TEST_CASE("a default max_tokens is capped to the context's room; the request's is not") {
  GenerationDefaults d;
  d.unbounded_max_tokens = 256;
  SamplingParams chat;  // no max_tokens: would run to the end of the context
  CHECK(apply_generation_defaults(d, {}, chat, 10, 8192).max_tokens == 256);
  CHECK(apply_generation_defaults(d, {}, chat, 8000, 8192).max_tokens == 192);
  CHECK(apply_generation_defaults(d, {}, chat, 9000, 8192).max_tokens == 1);  // the engine rejects the prompt

  SamplingParams completion;
  completion.max_tokens = 16;  // the completions API's default when absent
  CHECK(apply_generation_defaults(d, {}, completion, 10, 8192).max_tokens == 16);
  d.max_tokens = 64;  // an explicit default replaces it
  CHECK(apply_generation_defaults(d, {}, completion, 10, 8192).max_tokens == 64);
  SamplingFieldsGiven given;
  given.max_tokens = true;
  completion.max_tokens = 5000;
  CHECK(apply_generation_defaults(d, given, completion, 8000, 8192).max_tokens == 5000);  // left to validation
  completion.max_tokens.reset();  // "max_tokens": null on /v1/completions: up to the context
  CHECK_FALSE(apply_generation_defaults(d, given, completion, 10, 8192).max_tokens.has_value());
}

TEST_CASE("overlay: the higher source wins field by field") {
  GenerationDefaults file;
  file.temperature = 0.6f;
  file.top_p = 0.9f;
  GenerationDefaults config;
  config.temperature = 0.0f;
  config.max_tokens = 32;
  const GenerationDefaults d = overlay(file, config);
  CHECK(d.temperature == 0.0f);
  CHECK(d.top_p == 0.9f);
  CHECK(d.max_tokens == 32);
  CHECK(d.describe() == "temperature=0 top_p=0.9 max_tokens=32");
  CHECK(GenerationDefaults{}.empty());
}

TEST_CASE("validate: the ranges a request may use") {
  GenerationDefaults d;
  CHECK(validate(d).empty());
  d.temperature = 2.5f;
  CHECK(validate(d).find("temperature must be in [0, 2]") != std::string::npos);
  d.temperature.reset();
  d.top_p = 0.0f;
  CHECK(validate(d).find("top_p") != std::string::npos);
  d.top_p.reset();
  d.top_k = 0;
  CHECK(validate(d).empty());  // off
  d.top_k = -2;
  CHECK(validate(d).find("top_k") != std::string::npos);
}

TEST_CASE("GGUF general.sampling.* keys become the model's defaults; impossible values are dropped") {
  GgufBuilder builder;
  builder.string("general.architecture", "llama");
  builder.f32("general.sampling.temp", 0.6f);
  builder.u32("general.sampling.top_k", 20);
  builder.f32("general.sampling.top_p", 0.95f);
  builder.f32("general.sampling.min_p", 7.0f);  // outside [0, 1]: ignored with a warning
  builder.f32("general.sampling.penalty_repeat", 1.05f);
  TempFile file(builder.build());
  const GenerationDefaults d = loader::read_generation_defaults(file.path().string());
  CHECK(d.temperature == 0.6f);
  CHECK(d.top_k == 20);
  CHECK(d.top_p == 0.95f);
  CHECK(d.repetition_penalty == 1.05f);
  CHECK_FALSE(d.min_p.has_value());
  CHECK_FALSE(d.max_tokens.has_value());

  GgufBuilder plain;
  plain.string("general.architecture", "llama");
  TempFile none(plain.build());
  CHECK(loader::read_generation_defaults(none.path().string()).empty());
}

TEST_CASE("a model folder's generation_config.json becomes its defaults") {
  TempFile marker(Bytes{}, "config.json");
  const auto dir = marker.dir();
  CHECK(loader::read_generation_defaults(dir.string()).empty());  // no generation_config.json
  std::ofstream(dir / "generation_config.json")
      << R"({"temperature": 0.7, "top_k": 50, "top_p": 0.8, "repetition_penalty": 1.2,
            "max_new_tokens": 300, "do_sample": true, "eos_token_id": 2})";
  const GenerationDefaults d = loader::read_generation_defaults(dir.string());
  CHECK(d.temperature == 0.7f);
  CHECK(d.top_k == 50);
  CHECK(d.top_p == 0.8f);
  CHECK(d.repetition_penalty == 1.2f);
  CHECK(d.max_tokens == 300);
}

}  // namespace
}  // namespace sluice::engine
