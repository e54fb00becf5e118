// ref_audio in a JSON body: base64 or a data URI carry the audio; a URL or a file
// path is refused, never fetched.
#include "proto/audio_payload.h"

#include <doctest/doctest.h>

#include "proto/speech.h"

namespace unit_proto_test_audio_payload {

using namespace sluice::proto;

namespace {

AudioPayload ok(std::string_view value) {
  auto r = decode_audio_payload(value, "ref_audio");
  if (auto* e = std::get_if<ApiError>(&r)) FAIL_CHECK("unexpected error: ", e->message);
  REQUIRE(std::holds_alternative<AudioPayload>(r));
  return std::get<AudioPayload>(r);
}

ApiError refused(std::string_view value) {
  auto r = decode_audio_payload(value, "ref_audio");
  REQUIRE(std::holds_alternative<ApiError>(r));
  const ApiError e = std::get<ApiError>(r);
  CHECK(e.status == 400);
  CHECK(e.param == "ref_audio");
  return e;
}

}  // namespace

TEST_CASE("base64: RFC 4648 with or without padding, line breaks skipped, anything else refused") {
  std::string out;
  CHECK(decode_base64("UklGRg==", out));
  CHECK(out == "RIFF");
  CHECK(decode_base64("UklGRg", out));
  CHECK(out == "RIFF");
  CHECK(decode_base64("UklG\r\nRg==", out));
  CHECK(out == "RIFF");
  CHECK(decode_base64("", out));
  CHECK(out.empty());
  CHECK(decode_base64("AP8=", out));
  CHECK(out == std::string("\x00\xff", 2));
  CHECK_FALSE(decode_base64("UklGR", out));      // a lone symbol in the last group
  CHECK_FALSE(decode_base64("Uk=lGRg==", out));  // data after padding
  CHECK_FALSE(decode_base64("UklGRg===", out));
  CHECK_FALSE(decode_base64("UklG Rg==", out));
  CHECK_FALSE(decode_base64("Ukl_Rg==", out));  // URL-safe alphabet: not this one
  CHECK_FALSE(decode_base64("U===", out));
}

TEST_CASE("ref_audio: plain base64 and data:audio URIs carry the audio") {
  CHECK(ok("UklGRg==").bytes == "RIFF");
  CHECK(ok("UklGRg==").mime_type.empty());
  const AudioPayload uri = ok("data:audio/wav;base64,UklGRg==");
  CHECK(uri.bytes == "RIFF");
  CHECK(uri.mime_type == "audio/wav");
  CHECK(ok("DATA:Audio/Flac;base64,UklGRg==").mime_type == "Audio/Flac");
  CHECK(ok("data:application/octet-stream;base64,UklGRg==").bytes == "RIFF");
}

TEST_CASE("ref_audio: URLs, paths and malformed values get 400 naming the field") {
  CHECK(refused("https://example.com/voice.wav").message.find("not fetched") != std::string::npos);
  CHECK(refused("http://127.0.0.1/x.wav").message.find("not fetched") != std::string::npos);
  CHECK(refused("file:///etc/passwd").message.find("not fetched") != std::string::npos);
  CHECK(refused("/etc/passwd").message.find("not fetched") != std::string::npos);
  CHECK(refused("../voice.wav").message.find("not fetched") != std::string::npos);
  CHECK(refused("data:text/plain;base64,UklGRg==").message.find("data URI") != std::string::npos);
  CHECK(refused("data:audio/wav,RIFF").message.find("data URI") != std::string::npos);  // not base64
  CHECK(refused("data:audio/wav;base64").message.find("data URI") != std::string::npos);
  CHECK(refused("data:audio/wav;base64,").message.find("base64") != std::string::npos);  // nothing in it
  CHECK(refused("voice.wav").message.find("base64") != std::string::npos);
  CHECK(refused("").message.find("empty") != std::string::npos);
}

TEST_CASE("speech request: the cloning fields parse, typed and bounded") {
  auto parse = [](const std::string& body) { return parse_speech_request(body); };
  auto r = parse(R"({"model":"m","input":"hi","ref_audio":"data:audio/wav;base64,UklGRg==","ref_text":"hello",)"
                 R"("x_vector_only_mode":true})");
  REQUIRE(std::holds_alternative<SpeechRequest>(r));
  const SpeechRequest& req = std::get<SpeechRequest>(r);
  REQUIRE(req.ref_audio);
  CHECK(req.ref_audio->bytes == "RIFF");
  CHECK(req.ref_text == "hello");
  CHECK(req.x_vector_only_mode);
  auto none = parse(R"({"model":"m","input":"hi"})");
  REQUIRE(std::holds_alternative<SpeechRequest>(none));
  CHECK_FALSE(std::get<SpeechRequest>(none).ref_audio);
  CHECK_FALSE(std::get<SpeechRequest>(none).x_vector_only_mode);
  auto param_of = [&](const std::string& body) {
    auto e = parse(body);
    REQUIRE(std::holds_alternative<ApiError>(e));
    return std::get<ApiError>(e).param;
  };
  CHECK(param_of(R"({"model":"m","input":"hi","ref_audio":"https://x/y.wav"})") == "ref_audio");
  CHECK(param_of(R"({"model":"m","input":"hi","ref_audio":7})") == "ref_audio");
  CHECK(param_of(R"({"model":"m","input":"hi","ref_text":["a"]})") == "ref_text");
  CHECK(param_of(R"({"model":"m","input":"hi","x_vector_only_mode":"yes"})") == "x_vector_only_mode");
  CHECK(param_of(R"({"model":"m","input":"hi","ref_text":")" + std::string(4097, 'a') + "\"}") == "ref_text");
}
}  // namespace unit_proto_test_audio_payload
