#include "proto/embeddings.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "proto/fields.h"
#include "proto/sse.h"

namespace sluice::proto {

using fields::Error;
using fields::Json;

namespace {

// string | [string] | [token id] | [[token id]]; none of them empty.
Error read_input(const Json& v, EmbeddingsRequest& req) {
  const std::string param = "input";
  if (v.is_string()) {
    if (v.get_ref<const std::string&>().empty()) return invalid_request("'input' must not be an empty string.", param);
    req.texts.push_back(v.get<std::string>());
    return std::nullopt;
  }
  if (!v.is_array()) return fields::type_error(param, "a string or an array", v);
  if (v.empty()) return invalid_request("'input' must not be an empty array.", param);
  if (v.front().is_number()) {  // one input as token ids
    std::vector<int32_t> ids;
    if (auto e = fields::read_token_ids(v, param, ids)) return e;
    req.token_inputs.push_back(std::move(ids));
    return std::nullopt;
  }
  if (v.size() > kMaxEmbeddingInputs)
    return invalid_request("'input' may hold at most " + std::to_string(kMaxEmbeddingInputs) + " inputs.", param);
  const bool strings = v.front().is_string();
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& item = v[i];
    const std::string at = param + "[" + std::to_string(i) + "]";
    if (strings) {
      if (!item.is_string()) return fields::type_error(at, "a string (as the other inputs)", item);
      if (item.get_ref<const std::string&>().empty()) return invalid_request("'" + at + "' must not be empty.", param);
      req.texts.push_back(item.get<std::string>());
    } else {
      if (!item.is_array()) return fields::type_error(at, "an array of token ids (as the other inputs)", item);
      if (item.empty()) return invalid_request("'" + at + "' must not be empty.", param);
      std::vector<int32_t> ids;
      if (auto e = fields::read_token_ids(item, at, ids)) return e;
      req.token_inputs.push_back(std::move(ids));
    }
  }
  return std::nullopt;
}

char base64_digit(uint32_t six_bits) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  return kDigits[six_bits & 63u];
}

}  // namespace

EmbeddingsParse parse_embeddings_request(std::string_view body_text, bool strict_fields) {
  Json body;
  if (auto e = fields::parse_object(body_text, body)) return *e;
  EmbeddingsRequest req;
  const fields::FieldPolicy policy(strict_fields, req.ignored_fields);
  bool has_input = false;
  for (const auto& [key, value] : body.items()) {
    Error e;
    if (key == "model") {
      e = fields::read_opt_string(value, key, req.model);
    } else if (key == "input") {
      if (!value.is_null()) {
        e = read_input(value, req);
        has_input = true;
      }
    } else if (key == "encoding_format") {
      std::optional<std::string> format;
      e = fields::read_opt_string(value, key, format);
      if (!e && format && *format != "float" && *format != "base64")
        e = invalid_request("'encoding_format' must be 'float' or 'base64'.", key);
      req.base64 = format == "base64";
    } else if (key == "dimensions") {
      e = fields::read_opt_int32(value, key, 1, std::numeric_limits<int32_t>::max(), req.dimensions);
    } else if (key == "user") {
      std::optional<std::string> user;
      e = fields::read_opt_string(value, key, user);  // accepted, unused
    } else if (key == "truncate_prompt_tokens") {
      if (!value.is_null()) {
        int64_t n = 0;
        e = fields::read_int(value, key, -1, std::numeric_limits<int32_t>::max(), n);
        if (!e && n == 0) e = fields::range_error(key, value, "-1 or at least 1");
        req.truncate_prompt_tokens = n;
      }
    } else if (key == "add_special_tokens") {
      e = fields::read_bool(value, key, req.add_special_tokens);
    } else {
      e = policy.unknown(key);
    }
    if (e) return *e;
  }
  if (!has_input) return fields::missing_field("input");
  return req;
}

void keep_last_tokens(std::vector<int32_t>& tokens, int64_t n) {
  if (n < 0 || static_cast<int64_t>(tokens.size()) <= n) return;
  tokens.erase(tokens.begin(), tokens.end() - n);
}

std::string float32_base64(const std::vector<float>& values) {
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    for (size_t b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xffu);  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t b = 0; b < 3; ++b)
      group = (group << 8) | (b < n ? static_cast<uint8_t>(bytes[i + b]) : 0u);
    out += base64_digit(group >> 18);
    out += base64_digit(group >> 12);
    out += n > 1 ? base64_digit(group >> 6) : '=';
    out += n > 2 ? base64_digit(group) : '=';
  }
  return out;
}

std::string embeddings_response(const std::string& model, const std::vector<std::vector<float>>& vectors,
                                bool base64, int64_t prompt_tokens) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    nlohmann::ordered_json item = {{"object", "embedding"}, {"index", i}};
    if (base64) {
      item["embedding"] = float32_base64(vectors[i]);
    } else {
      item["embedding"] = vectors[i];
    }
    data.push_back(std::move(item));
  }
  const nlohmann::ordered_json body = {{"object", "list"},
                                       {"data", std::move(data)},
                                       {"model", model},
                                       {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return dump_json(body);
}

}  // namespace sluice::proto
