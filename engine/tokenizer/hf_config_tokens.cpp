#include "engine/tokenizer/hf_config_tokens.h"

namespace sluice::tokenizer::detail {

std::string token_content(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  return {};
}

TokenIndex resolve_named_tokens(const nlohmann::json& config, Vocab& vocab) {
  TokenIndex lookup;
  for (size_t id = 0; id < vocab.tokens.size(); ++id)
    if (!vocab.tokens[id].empty()) lookup.emplace(vocab.tokens[id], static_cast<int32_t>(id));
  const auto id_of = [&](const char* key) {
    if (!config.contains(key)) return -1;
    const auto it = lookup.find(token_content(config[key]));
    return it == lookup.end() ? -1 : it->second;
  };
  vocab.bos_id = id_of("bos_token");
  vocab.eos_id = id_of("eos_token");
  vocab.pad_id = id_of("pad_token");
  vocab.unk_id = id_of("unk_token");
  return lookup;
}

}  // namespace sluice::tokenizer::detail
