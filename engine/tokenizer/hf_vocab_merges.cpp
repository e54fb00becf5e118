#include "engine/tokenizer/hf_vocab_merges.h"

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/loader/json_file.h"
#include "engine/loader/load_error.h"
#include "engine/tokenizer/hf_config_tokens.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/vocab_gguf.h"

namespace sluice::tokenizer {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr uint64_t kMaxVocabBytes = 64ull << 20;
constexpr uint64_t kMaxConfigBytes = 8ull << 20;

// Ids index a table sized by the largest one: ids are accepted up to a margin above
// the number of tokens the files list (Qwen's added tokens leave gaps), so a
// hostile id cannot allocate gigabytes.
constexpr size_t kIdMargin = 1 << 16;
size_t checked_id(int64_t id, size_t num_listed, const fs::path& file, const std::string& where) {
  if (id < 0 || static_cast<uint64_t>(id) >= num_listed + kIdMargin)
    throw loader::LoadError(file, where + ": id " + std::to_string(id) + " is far beyond the " +
                                      std::to_string(num_listed) + " tokens listed");
  return static_cast<size_t>(id);
}

std::vector<std::pair<std::string, std::string>> read_merges(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw loader::LoadError(file, "cannot open");
  std::vector<std::pair<std::string, std::string>> rules;
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.starts_with("#version"))) continue;
    const size_t space = line.size() > 1 ? line.find(' ', 1) : std::string::npos;
    if (space == std::string::npos)
      throw loader::LoadError(file, "line " + std::to_string(number) + ": '" + line + "' is not 'left right'");
    rules.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return rules;
}

}  // namespace

Vocab vocab_from_vocab_merges(const fs::path& dir) {
  const fs::path vocab_file = dir / "vocab.json";
  const fs::path config_file = dir / "tokenizer_config.json";
  const json tokens = loader::detail::parse_json_file(vocab_file, kMaxVocabBytes);
  if (!tokens.is_object()) throw loader::LoadError(vocab_file, "is not a JSON object of token -> id");
  json config = json::object();
  if (fs::exists(config_file)) config = loader::detail::parse_json_file(config_file, kMaxConfigBytes);
  if (!config.is_object()) throw loader::LoadError(config_file, "is not a JSON object");
  const json added = config.value("added_tokens_decoder", json::object());
  if (!added.is_object()) throw loader::LoadError(config_file, "added_tokens_decoder is not an object");

  Vocab vocab;
  vocab.source = vocab_file;
  vocab.kind = ModelKind::ByteLevelBpe;
  vocab.pre = "qwen2";
  vocab.pre_patterns = pre_tokenizer_patterns("qwen2", vocab_file);
  const size_t num_listed = tokens.size() + added.size();
  for (const auto& [text, id] : tokens.items()) {
    if (!id.is_number_integer()) throw loader::LoadError(vocab_file, "'" + text + "': id is not an integer");
    const size_t index = checked_id(id.get<int64_t>(), num_listed, vocab_file, "'" + text + "'");
    if (index >= vocab.tokens.size()) vocab.tokens.resize(index + 1);
    vocab.tokens[index] = text;
  }
  std::vector<std::pair<size_t, bool>> specials;  // (id, special)
  for (const auto& [key, entry] : added.items()) {
    const std::string where = "added_tokens_decoder['" + key + "']";
    int64_t id = -1;
    try {
      size_t used = 0;
      id = std::stoll(key, &used);
      if (used != key.size()) id = -1;
    } catch (const std::exception&) {
      id = -1;
    }
    const size_t index = checked_id(id, num_listed, config_file, where);
    const std::string content = detail::token_content(entry);
    if (content.empty()) throw loader::LoadError(config_file, where + ": content is missing");
    if (index >= vocab.tokens.size()) vocab.tokens.resize(index + 1);
    vocab.tokens[index] = content;
    specials.emplace_back(index, entry.is_object() && entry.value("special", false));
  }
  vocab.types.assign(vocab.tokens.size(), TokenType::Normal);
  for (size_t id = 0; id < vocab.tokens.size(); ++id)
    if (vocab.tokens[id].empty()) vocab.types[id] = TokenType::Unused;
  for (const auto& [id, special] : specials) vocab.types[id] = special ? TokenType::Control : TokenType::UserDefined;

  detail::resolve_named_tokens(config, vocab);
  vocab.add_bos = config.value("add_bos_token", false);
  vocab.add_eos = config.value("add_eos_token", false);
  vocab.finish();

  const fs::path merges_file = dir / "merges.txt";
  const auto owned = read_merges(merges_file);
  std::vector<std::pair<std::string_view, std::string_view>> rules(owned.begin(), owned.end());
  vocab.source = merges_file;  // so a bad rule's error names merges.txt
  parse_merges(vocab, "rule", rules);
  vocab.source = vocab_file;
  return vocab;
}

}  // namespace sluice::tokenizer
