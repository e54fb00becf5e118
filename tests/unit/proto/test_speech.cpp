#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/speech.h"

namespace unit_proto_test_speech {

using namespace sluice::proto;
using Json = nlohmann::ordered_json;

namespace {

Json base() { return Json{{"model", "tts"}, {"input", "Hello there."}, {"voice", "ryan"}}; }

SpeechRequest ok(const Json& body, const ParseOptions& options = {}) {
  auto r = parse_speech_request(body.dump(), options);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL_CHECK("unexpected error: ", e->message);
  REQUIRE(std::holds_alternative<SpeechRequest>(r));
  return std::get<SpeechRequest>(r);
}

// The param of the 400 the body gets.
std::string err(const Json& body, const ParseOptions& options = {}) {
  auto r = parse_speech_request(body.dump(), options);
  REQUIRE(std::holds_alternative<ApiError>(r));
  CHECK(std::get<ApiError>(r).status == 400);
  CHECK(std::get<ApiError>(r).type == "invalid_request_error");
  return std::get<ApiError>(r).param;
}

Json with(Json body, const std::string& key, Json value) {
  body[key] = std::move(value);
  return body;
}

}  // namespace

TEST_CASE("speech request: OpenAI's defaults and every field read") {
  SpeechRequest r = ok(base());
  CHECK(r.model == "tts");
  CHECK(r.input == "Hello there.");
  CHECK(r.voice == "ryan");
  CHECK(r.response_format == AudioFormat::mp3);
  CHECK(r.speed == 1.0f);
  CHECK(r.stream_format == SpeechStreamFormat::none);
  CHECK_FALSE(r.language);

  Json full = base();
  full.update(Json{{"instructions", "Calm."}, {"response_format", "pcm"}, {"speed", 0.25}, {"stream_format", "sse"},
                   {"language", "english"}, {"max_new_tokens", 100}, {"seed", -1}, {"temperature", 0},
                   {"top_k", 50}, {"top_p", 0.9}, {"repetition_penalty", 1.05}, {"sample_rate", 16000},
                   {"initial_codec_chunk_frames", 1}, {"ignore_eos", true}});
  r = ok(full);
  CHECK(r.instructions == "Calm.");
  CHECK(r.response_format == AudioFormat::pcm);
  CHECK(r.speed == 0.25f);
  CHECK(r.stream_format == SpeechStreamFormat::sse);
  CHECK(*r.language == "english");
  CHECK(*r.max_new_tokens == 100);
  CHECK(*r.seed == ~uint64_t{0});
  CHECK(*r.temperature == 0.0f);
  CHECK(*r.top_k == 50);
  CHECK(*r.top_p == doctest::Approx(0.9));
  CHECK(*r.repetition_penalty == doctest::Approx(1.05));
  CHECK(*r.sample_rate == 16000);
  CHECK(*r.initial_codec_chunk_frames == 1);
  CHECK(r.ignore_eos);
  CHECK_FALSE(ok(base()).ignore_eos);
  for (const char* format : {"mp3", "opus", "aac", "flac", "wav", "pcm"})
    CHECK(audio_format_name(ok(with(base(), "response_format", format)).response_format) == format);
}

TEST_CASE("speech request: voice objects, nulls as defaults, stream as vLLM-Omni reads it") {
  CHECK(ok(with(base(), "voice", Json{{"id", "serena"}})).voice == "serena");
  CHECK(ok(with(base(), "voice", nullptr)).voice.empty());
  CHECK(ok(with(base(), "speed", nullptr)).speed == 1.0f);
  CHECK(ok(with(base(), "stream", true)).stream_format == SpeechStreamFormat::sse);
  CHECK(ok(with(with(base(), "stream", true), "stream_format", "audio")).stream_format == SpeechStreamFormat::audio);
  CHECK(ok(with(base(), "stream_format", "audio")).stream_format == SpeechStreamFormat::audio);
  CHECK(ok(with(base(), "stream", false)).stream_format == SpeechStreamFormat::none);
}

TEST_CASE("speech request: input is 1..4096 characters, counted as code points") {
  CHECK(err(with(base(), "input", "")) == "input");
  CHECK(ok(with(base(), "input", std::string(4096, 'a'))).input.size() == 4096);
  CHECK(err(with(base(), "input", std::string(4097, 'a'))) == "input");
  std::string chinese;
  for (int i = 0; i < 4096; ++i) chinese += "\xe4\xbd\xa0";  // 3 bytes, 1 character each
  CHECK(ok(with(base(), "input", chinese)).input.size() == 3 * 4096);
  CHECK(err(with(base(), "input", chinese + "a")) == "input");
}

TEST_CASE("speech request: every bad field is a 400 naming it") {
  Json no_model = base();
  no_model.erase("model");
  CHECK(err(no_model) == "model");
  Json no_input = base();
  no_input.erase("input");
  CHECK(err(no_input) == "input");
  CHECK(err(with(base(), "input", 3)) == "input");
  CHECK(err(with(base(), "voice", "")) == "voice");
  CHECK(err(with(base(), "voice", 7)) == "voice");
  CHECK(err(with(base(), "voice", Json{{"name", "x"}})) == "voice");
  CHECK(err(with(base(), "response_format", "ogg")) == "response_format");
  CHECK(err(with(base(), "response_format", 1)) == "response_format");
  CHECK(err(with(base(), "speed", 5)) == "speed");
  CHECK(err(with(base(), "speed", 0.2)) == "speed");
  CHECK(err(with(base(), "speed", "fast")) == "speed");
  CHECK(err(with(base(), "stream_format", "chunks")) == "stream_format");
  CHECK(err(with(with(base(), "stream", false), "stream_format", "sse")) == "stream");
  CHECK(err(with(base(), "max_new_tokens", 0)) == "max_new_tokens");
  CHECK(err(with(base(), "temperature", -0.1)) == "temperature");
  CHECK(err(with(base(), "top_p", 0)) == "top_p");
  CHECK(err(with(base(), "top_k", -1)) == "top_k");
  CHECK(err(with(base(), "repetition_penalty", 0)) == "repetition_penalty");
  CHECK(err(with(base(), "sample_rate", 4000)) == "sample_rate");
  CHECK(err(with(base(), "initial_codec_chunk_frames", 0)) == "initial_codec_chunk_frames");
  CHECK(err(with(base(), "instructions", std::string(4097, 'a'))) == "instructions");
  CHECK(err(with(base(), "language", 5)) == "language");
  CHECK(err(with(base(), "ignore_eos", "yes")) == "ignore_eos");
}

TEST_CASE("speech request: unknown keys are ignored and listed, or refused when strict") {
  const Json body = with(base(), "volume_multiplier", 2);
  CHECK(ok(body).ignored_fields == std::vector<std::string>{"volume_multiplier"});
  ParseOptions strict;
  strict.strict_fields = true;
  CHECK(err(body, strict) == "volume_multiplier");
  auto r = parse_speech_request("{not json");
  REQUIRE(std::holds_alternative<ApiError>(r));
  CHECK(std::get<ApiError>(r).status == 400);
}
}  // namespace unit_proto_test_speech
