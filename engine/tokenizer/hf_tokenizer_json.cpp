#include "engine/tokenizer/hf_tokenizer_json.h"
#include "engine/tokenizer/hf_vocab_merges.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/loader/load_error.h"
#include "engine/tokenizer/hf_config_tokens.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab_gguf.h"

namespace sluice::tokenizer {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw loader::LoadError(path, "cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw loader::LoadError(path, std::string("not valid JSON: ") + e.what());
  }
}

// Regex-quotes a literal for PCRE2.
std::string quote(const std::string& literal) { return "\\Q" + literal + "\\E"; }

// Walks a pre_tokenizer node; collects split patterns and what it says about spaces.
struct PreTokenizerInfo {
  std::vector<std::string> patterns;
  bool byte_level = false;
  bool space_prefix = false;
};

void walk_pre_tokenizer(const json& node, const fs::path& file, PreTokenizerInfo& info) {
  if (!node.is_object()) return;
  const std::string type = node.value("type", "");
  if (type == "Sequence") {
    for (const json& step : node.at("pretokenizers")) walk_pre_tokenizer(step, file, info);
  } else if (type == "ByteLevel") {
    info.byte_level = true;
    if (node.value("use_regex", true)) info.patterns.push_back(kGpt2Pattern);
    if (node.value("add_prefix_space", false)) {
      spdlog::warn("{}: ByteLevel add_prefix_space is not supported; ignored", file.string());
    }
  } else if (type == "Digits") {
    info.patterns.push_back(node.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
  } else if (type == "Split") {
    const json& pattern = node.at("pattern");
    if (node.value("behavior", "Isolated") != "Isolated" || node.value("invert", false)) {
      throw loader::LoadError(file, "pre_tokenizer: only Split with behavior Isolated is supported");
    }
    info.patterns.push_back(pattern.contains("Regex") ? pattern["Regex"].get<std::string>()
                                                      : quote(pattern.at("String").get<std::string>()));
  } else if (type == "Metaspace") {
    const std::string scheme = node.value("prepend_scheme", node.value("add_prefix_space", true) ? "always" : "never");
    info.space_prefix = scheme != "never";
    if (node.value("split", true)) info.patterns.push_back("\xE2\x96\x81[^\xE2\x96\x81]*");
  } else {
    throw loader::LoadError(file, "pre_tokenizer: unsupported type '" + type + "'");
  }
}

void walk_normalizer(const json& node, const fs::path& file, bool& space_prefix) {
  if (!node.is_object()) return;
  const std::string type = node.value("type", "");
  if (type == "Sequence") {
    for (const json& step : node.at("normalizers")) walk_normalizer(step, file, space_prefix);
  } else if (type == "Prepend") {
    space_prefix = true;
  } else if (type != "Replace") {  // Replace " " -> "▁" is what SentencePiece style does anyway
    spdlog::warn("{}: normalizer '{}' is not applied", file.string(), type);
  }
}

// A token id from the file. Ids index a table sized by the largest one, so an id is
// only accepted below the number of tokens the file lists (vocab plus added tokens):
// a hostile id such as 2^31 would otherwise allocate gigabytes.
size_t checked_id(const json& id, size_t num_listed, const fs::path& file, const std::string& where) {
  if (!id.is_number_integer() || id.get<int64_t>() < 0 || static_cast<uint64_t>(id.get<int64_t>()) >= num_listed) {
    throw loader::LoadError(file, where + ": id " + id.dump() + " is outside the " + std::to_string(num_listed) +
                                      " tokens listed");
  }
  return static_cast<size_t>(id.get<int64_t>());
}

void read_model(const json& model, size_t num_listed, const fs::path& file, Vocab& vocab) {
  if (model.value("type", "BPE") != "BPE") {
    throw loader::LoadError(file, "model.type: only BPE is supported, not '" +
                                      model.value("type", "") + "'");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    throw loader::LoadError(file, "model.vocab: missing");
  }
  for (const auto& [text, id] : model["vocab"].items()) {
    const size_t index = checked_id(id, num_listed, file, "model.vocab['" + text + "']");
    if (index >= vocab.tokens.size()) vocab.tokens.resize(index + 1);
    vocab.tokens[index] = text;
  }
  vocab.byte_fallback = model.value("byte_fallback", false);
  vocab.ignore_merges = model.value("ignore_merges", false);
}

}  // namespace

Vocab vocab_from_hf_dir(const fs::path& dir) {
  const fs::path file = dir / "tokenizer.json";
  const json root = read_json(file);
  Vocab vocab;
  vocab.source = file;
  vocab.pre = "hf";
  try {
    const json added_tokens = root.value("added_tokens", json::array());
    const json& model = root.at("model");
    const size_t num_listed = (model.contains("vocab") ? model["vocab"].size() : 0) + added_tokens.size();
    read_model(model, num_listed, file, vocab);
    std::vector<std::pair<size_t, bool>> added;  // (id, special)
    for (const json& token : added_tokens) {
      const size_t id = checked_id(token.at("id"), num_listed, file, "added_tokens");
      if (id >= vocab.tokens.size()) vocab.tokens.resize(id + 1);
      vocab.tokens[id] = token.at("content").get<std::string>();
      added.emplace_back(id, token.value("special", false));
    }
    vocab.types.assign(vocab.tokens.size(), TokenType::Normal);
    for (const auto& [id, special] : added) {
      vocab.types[id] = special ? TokenType::Control : TokenType::UserDefined;
    }
    for (size_t id = 0; id < vocab.tokens.size(); ++id) {
      const std::string& t = vocab.tokens[id];
      if (t.empty()) vocab.types[id] = TokenType::Unused;
      // Byte-fallback tokens are often listed as added tokens too; they are bytes.
      if (vocab.byte_fallback && t.size() == 6 && t.starts_with("<0x") && t.back() == '>') {
        vocab.types[id] = TokenType::Byte;
      }
    }

    PreTokenizerInfo pre;
    walk_pre_tokenizer(root.value("pre_tokenizer", json()), file, pre);
    bool space_prefix = pre.space_prefix;
    walk_normalizer(root.value("normalizer", json()), file, space_prefix);
    const json decoder = root.value("decoder", json());
    const bool byte_level = pre.byte_level || (decoder.is_object() && decoder.value("type", "") == "ByteLevel");
    vocab.kind = byte_level ? ModelKind::ByteLevelBpe : ModelKind::SentencePieceBpe;
    vocab.pre_patterns = std::move(pre.patterns);
    vocab.add_space_prefix = !byte_level && space_prefix;
    // tokenizer_config.json: special tokens, BOS policy, chat template.
    json config = json::object();
    if (fs::exists(dir / "tokenizer_config.json")) config = read_json(dir / "tokenizer_config.json");
    vocab.add_bos = config.value("add_bos_token", false);
    vocab.add_eos = config.value("add_eos_token", false);
    if (config.contains("chat_template")) {
      const json& tpl = config["chat_template"];
      if (tpl.is_string()) {
        vocab.chat_template = tpl.get<std::string>();
      } else if (tpl.is_array()) {
        for (const json& named : tpl) {
          if (named.value("name", "") == "default") vocab.chat_template = named.value("template", "");
        }
      }
    }
    const TokenIndex lookup = detail::resolve_named_tokens(config, vocab);
    if (vocab.unk_id < 0 && root["model"].value("unk_token", json()).is_string()) {
      const auto it = lookup.find(root["model"]["unk_token"].get<std::string>());
      if (it != lookup.end()) vocab.unk_id = it->second;
    }
    if (fs::exists(dir / "generation_config.json")) {
      const json generation = read_json(dir / "generation_config.json");
      const json eos = generation.value("eos_token_id", json());
      for (const json& id : eos.is_array() ? eos : json::array({eos})) {
        if (id.is_number_integer()) vocab.eog_ids.push_back(id.get<int32_t>());
      }
    }
    vocab.finish();

    std::vector<std::pair<std::string, std::string>> owned;
    const json merges = root["model"].value("merges", json::array());
    owned.reserve(merges.size());
    for (const json& rule : merges) {
      if (rule.is_array() && rule.size() == 2) {
        owned.emplace_back(rule[0].get<std::string>(), rule[1].get<std::string>());
        continue;
      }
      const std::string text = rule.get<std::string>();
      const size_t space = text.size() > 1 ? text.find(' ', 1) : std::string::npos;
      if (space == std::string::npos) throw loader::LoadError(file, "model.merges: '" + text + "' is not 'left right'");
      owned.emplace_back(text.substr(0, space), text.substr(space + 1));
    }
    std::vector<std::pair<std::string_view, std::string_view>> rules(owned.begin(), owned.end());
    parse_merges(vocab, "model.merges", rules);
  } catch (const json::exception& e) {
    throw loader::LoadError(file, std::string("unexpected structure: ") + e.what());
  }
  return vocab;
}

Tokenizer Tokenizer::from_hf_dir(const fs::path& dir) {
  // Qwen3-TTS folders publish vocab.json + merges.txt and no tokenizer.json.
  if (!fs::exists(dir / "tokenizer.json") && fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt"))
    return Tokenizer(vocab_from_vocab_merges(dir));
  return Tokenizer(vocab_from_hf_dir(dir));
}

}  // namespace sluice::tokenizer
