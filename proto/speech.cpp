#include "proto/speech.h"

#include <array>
#include <utility>

#include "proto/fields.h"

namespace sluice::proto {
namespace {

using fields::Error;
using fields::Json;

constexpr std::array<std::pair<std::string_view, AudioFormat>, 6> kFormats = {{
    {"mp3", AudioFormat::mp3},
    {"opus", AudioFormat::opus},
    {"aac", AudioFormat::aac},
    {"flac", AudioFormat::flac},
    {"wav", AudioFormat::wav},
    {"pcm", AudioFormat::pcm},
}};

// Code points of valid UTF-8 (continuation bytes do not count); the JSON parser has
// already rejected invalid UTF-8.
int64_t count_chars(std::string_view text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

Error read_format(const Json& v, const std::string& param, AudioFormat& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return fields::type_error(param, "a string", v);
  for (const auto& [name, format] : kFormats) {
    if (v.get<std::string>() == name) {
      out = format;
      return std::nullopt;
    }
  }
  return invalid_request("'" + param + "' must be one of mp3, opus, aac, flac, wav, pcm.", param);
}

Error read_stream_format(const Json& v, const std::string& param, SpeechStreamFormat& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return fields::type_error(param, "a string", v);
  const std::string s = v.get<std::string>();
  if (s == "audio") {
    out = SpeechStreamFormat::audio;
  } else if (s == "sse") {
    out = SpeechStreamFormat::sse;
  } else {
    return invalid_request("'" + param + "' must be 'audio' or 'sse'.", param);
  }
  return std::nullopt;
}

// A voice name, or OpenAI's custom voice object {"id": "..."}.
Error read_voice(const Json& v, const std::string& param, std::string& out) {
  if (v.is_null()) return std::nullopt;
  if (v.is_object()) {
    if (!v.contains("id") || !v["id"].is_string() || v.size() != 1)
      return invalid_request("'" + param + "' must be a voice name or an object {\"id\": \"<voice>\"}.", param);
    out = v["id"].get<std::string>();
  } else if (v.is_string()) {
    out = v.get<std::string>();
  } else {
    return fields::type_error(param, "a string or an object", v);
  }
  if (out.empty()) return invalid_request("'" + param + "' must not be empty.", param);
  return std::nullopt;
}

template <class T>
Error read_opt_float(const Json& v, const std::string& param, double lo, double hi, std::optional<T>& out,
                     bool lo_open = false) {
  if (v.is_null()) return std::nullopt;
  float value = 0;
  if (auto e = fields::read_float(v, param, lo, hi, value, lo_open)) return e;
  out = value;
  return std::nullopt;
}

Error read_ref_audio(const Json& v, const std::string& param, std::optional<AudioPayload>& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return fields::type_error(param, "a string (base64 audio or a data: URI)", v);
  auto decoded = decode_audio_payload(v.get_ref<const std::string&>(), param);
  if (auto* error = std::get_if<ApiError>(&decoded)) return *error;
  out = std::move(std::get<AudioPayload>(decoded));
  return std::nullopt;
}

}  // namespace

std::string_view audio_format_name(AudioFormat format) {
  for (const auto& [name, f] : kFormats)
    if (f == format) return name;
  return "mp3";
}

SpeechParse parse_speech_request(std::string_view body_text, const ParseOptions& parse) {
  Json body;
  if (auto e = fields::parse_object(body_text, body)) return *e;
  SpeechRequest req;
  const fields::FieldPolicy policy(parse.strict_fields, req.ignored_fields);
  bool has_model = false, has_input = false;
  std::optional<bool> stream;
  for (const auto& [key, value] : body.items()) {
    Error e;
    if (key == "model") {
      e = fields::read_string(value, key, req.model);
      has_model = !value.is_null();
    } else if (key == "input") {
      e = fields::read_string(value, key, req.input);
      has_input = !value.is_null();
    } else if (key == "voice") {
      e = read_voice(value, key, req.voice);
    } else if (key == "instructions") {
      e = fields::read_string(value, key, req.instructions);
      if (!e && count_chars(req.instructions) > kMaxSpeechInputChars)
        e = invalid_request("'instructions' is longer than 4096 characters.", key);
    } else if (key == "response_format") {
      e = read_format(value, key, req.response_format);
    } else if (key == "speed") {
      e = fields::read_float(value, key, 0.25, 4.0, req.speed);
    } else if (key == "stream_format") {
      e = read_stream_format(value, key, req.stream_format);
    } else if (key == "stream") {
      bool b = false;
      e = fields::read_bool(value, key, b);
      if (!value.is_null()) stream = b;
    } else if (key == "language") {
      e = fields::read_opt_string(value, key, req.language);
    } else if (key == "max_new_tokens") {
      e = fields::read_opt_int32(value, key, 1, 8192, req.max_new_tokens);
    } else if (key == "seed") {
      e = fields::read_seed(value, key, req.seed);
    } else if (key == "temperature") {
      e = read_opt_float(value, key, 0.0, 2.0, req.temperature);
    } else if (key == "top_k") {
      e = fields::read_opt_int32(value, key, 0, 1 << 20, req.top_k);
    } else if (key == "top_p") {
      e = read_opt_float(value, key, 0.0, 1.0, req.top_p, /*lo_open=*/true);
    } else if (key == "repetition_penalty") {
      e = read_opt_float(value, key, 0.0, 2.0, req.repetition_penalty, /*lo_open=*/true);
    } else if (key == "sample_rate") {
      e = fields::read_opt_int32(value, key, 8000, 48000, req.sample_rate);
    } else if (key == "initial_codec_chunk_frames") {
      e = fields::read_opt_int32(value, key, 1, 64, req.initial_codec_chunk_frames);
    } else if (key == "ignore_eos") {
      e = fields::read_bool(value, key, req.ignore_eos);
    } else if (key == "ref_audio") {
      e = read_ref_audio(value, key, req.ref_audio);
    } else if (key == "ref_text") {
      e = fields::read_opt_string(value, key, req.ref_text);
      if (!e && req.ref_text && count_chars(*req.ref_text) > kMaxSpeechInputChars)
        e = invalid_request("'ref_text' is longer than 4096 characters.", key);
    } else if (key == "x_vector_only_mode") {
      e = fields::read_bool(value, key, req.x_vector_only_mode);
    } else {
      e = policy.unknown(key);
    }
    if (e) return *e;
  }
  if (!has_model) return fields::missing_field("model");
  if (!has_input) return fields::missing_field("input");
  const int64_t chars = count_chars(req.input);
  if (chars == 0) return invalid_request("'input' must not be empty.", "input");
  if (chars > kMaxSpeechInputChars)
    return invalid_request("'input' is " + std::to_string(chars) + " characters; the limit is 4096.", "input");
  // vLLM-Omni: stream=true without a stream_format streams SSE events.
  if (stream.value_or(false) && req.stream_format == SpeechStreamFormat::none) req.stream_format = SpeechStreamFormat::sse;
  if (stream.has_value() && !*stream && req.stream_format != SpeechStreamFormat::none)
    return invalid_request("'stream' is false but 'stream_format' asks for a stream.", "stream");
  return req;
}

}  // namespace sluice::proto
