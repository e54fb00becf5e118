#include "proto/completions.h"

#include <algorithm>
#include <limits>

#include "engine/request.h"

namespace sluice::proto {

using fields::Error;
using fields::Json;

namespace {

constexpr int32_t kDefaultMaxTokens = 16;  // OpenAI's default for /v1/completions
constexpr int32_t kMaxLogprobs = 20;

Error read_prompt(const Json& v, std::vector<Prompt>& out) {
  const char* kExpected = "a string, an array of strings, an array of token ids or an array of token id arrays";
  if (v.is_null()) return std::nullopt;  // reported as missing afterwards
  std::vector<Prompt> prompts;
  if (v.is_string()) {
    prompts.emplace_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.empty()) return invalid_request("'prompt' must not be empty.", "prompt");
    if (!v[0].is_number() && v.size() > kMaxPrompts) {
      return invalid_request("'prompt' may hold at most " + std::to_string(kMaxPrompts) + " prompts, got " +
                                 std::to_string(v.size()) + ".",
                             "prompt");
    }
    if (v[0].is_number()) {  // one prompt of token ids
      std::vector<int32_t> ids;
      if (auto e = fields::read_token_ids(v, "prompt", ids)) return e;
      prompts.emplace_back(std::move(ids));
    } else {
      for (size_t i = 0; i < v.size(); ++i) {
        const Json& item = v[i];
        std::string param = "prompt[" + std::to_string(i) + "]";
        if (item.is_string()) {
          prompts.emplace_back(item.get<std::string>());
        } else if (item.is_array()) {
          std::vector<int32_t> ids;
          if (auto e = fields::read_token_ids(item, param, ids)) return e;
          prompts.emplace_back(std::move(ids));
        } else {
          return fields::type_error(param, "a string or an array of token ids", item);
        }
      }
    }
  } else {
    return fields::type_error("prompt", kExpected, v);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (std::visit([](const auto& p) { return p.empty(); }, prompts[i])) {
      // Only items of an array of prompts can be empty here: [] and [id...] were checked.
      std::string param = v.is_string() ? "prompt" : "prompt[" + std::to_string(i) + "]";
      return invalid_request("'" + param + "' must not be empty.", param);
    }
  }
  out = std::move(prompts);
  return std::nullopt;
}

// "suffix" is accepted only when it asks for nothing.
Error read_suffix(const Json& v) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return fields::type_error("suffix", "a string", v);
  if (!v.get<std::string>().empty()) return fields::unsupported("suffix", "is not supported.");
  return std::nullopt;
}

}  // namespace

CompletionParse parse_completion_json(const Json& body, const ParseOptions& parse) {
  if (!body.is_object()) return invalid_request("The request body must be a JSON object.");
  CompletionRequest req;
  req.sampling.max_tokens = kDefaultMaxTokens;
  for (const auto& [key, value] : body.items()) {
    bool handled = false;
    if (auto e = apply_generation_field(key, value, req, handled, parse)) return *e;
    if (handled) continue;
    Error e;
    if (key == "prompt") {
      e = read_prompt(value, req.prompts);
    } else if (key == "max_tokens") {
      req.given.max_tokens = true;  // null too: up to the context, no default
      if (value.is_null()) {
        req.sampling.max_tokens.reset();
      } else {
        e = fields::read_opt_int32(value, key, 0, std::numeric_limits<int32_t>::max(), req.sampling.max_tokens);
      }
    } else if (key == "logprobs") {
      e = fields::read_opt_int32(value, key, 0, kMaxLogprobs, req.sampling.logprobs);
    } else if (key == "echo") {
      e = fields::read_bool(value, key, req.echo);
    } else if (key == "best_of") {
      e = fields::read_int32(value, key, 1, engine::kMaxChoices, req.best_of);
    } else if (key == "suffix") {
      e = read_suffix(value);
    } else {
      e = unknown_key(key, req, parse);
    }
    if (e) return *e;
  }
  if (auto e = check_generation_options(body, req)) return *e;
  if (req.prompts.empty()) return fields::missing_field("prompt");
  const auto num_choices = static_cast<int64_t>(req.prompts.size()) * std::max(req.sampling.n, req.best_of);
  if (num_choices > kMaxChoicesPerRequest) {
    return invalid_request("The request asks for " + std::to_string(num_choices) + " choices (" +
                               std::to_string(req.prompts.size()) + " prompts x n = " +
                               std::to_string(req.sampling.n) + "); at most " +
                               std::to_string(kMaxChoicesPerRequest) + " are allowed.",
                           "n");
  }
  if (req.best_of != 0 && req.best_of < req.sampling.n) {
    return invalid_request("'best_of' (" + std::to_string(req.best_of) + ") must be at least 'n' (" +
                               std::to_string(req.sampling.n) + ").",
                           "best_of");
  }
  if (req.best_of > req.sampling.n && req.stream) {
    return invalid_request("'best_of' greater than 'n' cannot be streamed.", "best_of");
  }
  if (req.sampling.max_tokens == 0 && !req.echo) {
    return invalid_request("'max_tokens' may be 0 only with 'echo' (to score the prompt).", "max_tokens");
  }
  return req;
}

CompletionParse parse_completion_request(std::string_view body, const ParseOptions& parse) {
  Json json;
  if (auto e = fields::parse_object(body, json)) return *e;
  return parse_completion_json(json, parse);
}

}  // namespace sluice::proto
