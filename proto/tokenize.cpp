#include "proto/tokenize.h"

#include "proto/fields.h"
#include "proto/responses.h"

namespace sluice::proto {

using fields::Error;
using fields::Json;

TokenizeParse parse_tokenize_request(std::string_view body_text, const ParseOptions& parse) {
  Json body;
  if (auto e = fields::parse_object(body_text, body)) return *e;
  TokenizeRequest req;
  const fields::FieldPolicy policy(parse.strict_fields, req.ignored_fields);
  std::optional<bool> add_special_tokens;
  bool has_messages = false;
  std::optional<bool> add_generation_prompt;
  for (const auto& [key, value] : body.items()) {
    Error e;
    if (key == "model") {
      e = fields::read_opt_string(value, key, req.model);
    } else if (key == "prompt") {
      e = fields::read_opt_string(value, key, req.prompt);
    } else if (key == "messages") {
      if (!value.is_null()) {
        e = parse_chat_messages(value, key, req.messages, policy);
        has_messages = true;
      }
    } else if (key == "add_special_tokens") {
      bool b = false;
      e = fields::read_bool(value, key, b);
      if (!value.is_null()) add_special_tokens = b;
    } else if (key == "add_generation_prompt") {
      bool flag = true;
      e = fields::read_bool(value, key, flag);
      if (!value.is_null()) add_generation_prompt = flag;
    } else if (key == "continue_final_message") {
      e = fields::read_bool(value, key, req.continue_final_message);
    } else if (key == "chat_template_kwargs") {
      e = read_chat_template_kwargs(value, req.chat_template_kwargs);
    } else if (key == "chat_template") {
      // vLLM takes a template in the request only behind a trust flag; sluice never.
      if (!value.is_null()) e = fields::unsupported(key, "is not supported: the model's template is used.");
    } else if (key == "return_token_strs") {
      e = fields::read_bool(value, key, req.return_token_strs);
    } else {
      e = policy.unknown(key);
    }
    if (e) return *e;
  }
  if (req.prompt && has_messages) {
    return invalid_request("Send either 'prompt' or 'messages', not both.", "messages");
  }
  if (!req.prompt && !has_messages) return fields::missing_field("prompt");
  if (req.prompt) {
    for (const char* chat_only : {"add_generation_prompt", "continue_final_message", "chat_template_kwargs"}) {
      if (body.contains(chat_only) && !body[chat_only].is_null())
        return invalid_request(std::string("'") + chat_only + "' applies only to 'messages'.", chat_only);
    }
  } else if (auto e = resolve_continuation(req.messages, req.continue_final_message, add_generation_prompt,
                                           req.add_generation_prompt)) {
    return *e;
  }
  req.add_special_tokens = add_special_tokens.value_or(!has_messages);
  return req;
}

DetokenizeParse parse_detokenize_request(std::string_view body_text, const ParseOptions& parse) {
  Json body;
  if (auto e = fields::parse_object(body_text, body)) return *e;
  DetokenizeRequest req;
  const fields::FieldPolicy policy(parse.strict_fields, req.ignored_fields);
  bool has_tokens = false;
  for (const auto& [key, value] : body.items()) {
    Error e;
    if (key == "model") {
      e = fields::read_opt_string(value, key, req.model);
    } else if (key == "tokens") {
      if (!value.is_null()) {
        e = fields::read_token_ids(value, key, req.tokens);
        has_tokens = true;
      }
    } else {
      e = policy.unknown(key);
    }
    if (e) return *e;
  }
  if (!has_tokens) return fields::missing_field("tokens");
  return req;
}

nlohmann::ordered_json tokenize_response(const std::vector<int32_t>& tokens, int32_t max_model_len,
                                         const std::vector<std::string>* token_strs) {
  nlohmann::ordered_json out = {
      {"count", tokens.size()}, {"max_model_len", max_model_len}, {"tokens", tokens}};
  if (token_strs) {
    nlohmann::ordered_json strs = nlohmann::ordered_json::array();
    for (const auto& s : *token_strs) strs.push_back(token_text(s));
    out["token_strs"] = std::move(strs);
  }
  return out;
}

nlohmann::ordered_json detokenize_response(const std::string& prompt) {
  return {{"prompt", prompt}};
}

}  // namespace sluice::proto
