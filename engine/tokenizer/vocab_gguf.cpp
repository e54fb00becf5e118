#include "engine/tokenizer/vocab_gguf.h"

#include <string>

#include "engine/loader/load_error.h"
#include "engine/tokenizer/pretokenizer.h"

namespace sluice::tokenizer {

namespace {

// Pre-tokenizers whose HF tokenizer.json sets ignore_merges (Llama 3's family).
bool ignores_merges(std::string_view pre) {
  return pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
         pre == "pixtral";
}

int32_t optional_id(const loader::GgufFile& file, std::string_view key) {
  const auto value = file.get_uint(key);
  if (!value) return -1;
  if (*value > INT32_MAX) {
    throw loader::LoadError(file.path(), std::string(key) + ": id " + std::to_string(*value) +
                                             " is out of range");
  }
  return static_cast<int32_t>(*value);
}

}  // namespace

void parse_merges(Vocab& vocab, std::string_view what,
                  const std::vector<std::pair<std::string_view, std::string_view>>& rules) {
  vocab.merges.reserve(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) {
    // Named members, not a structured binding: clang 14 (the fuzz build) cannot
    // capture bindings in a lambda.
    const std::string_view left_text = rules[i].first;
    const std::string_view right_text = rules[i].second;
    auto fail = [&](const std::string& why) {
      throw loader::LoadError(vocab.source, std::string(what) + "[" + std::to_string(i) + "] '" +
                                                std::string(left_text) + " " +
                                                std::string(right_text) + "': " + why);
    };
    const int32_t left = vocab.find(left_text);
    const int32_t right = vocab.find(right_text);
    if (left < 0) fail("unknown token '" + std::string(left_text) + "'");
    if (right < 0) fail("unknown token '" + std::string(right_text) + "'");
    std::string merged(left_text);
    merged += right_text;
    if (vocab.find(merged) < 0) fail("the merged token '" + merged + "' is not in the vocabulary");
    vocab.merges.emplace_back(left, right);
  }
}

Vocab vocab_from_gguf(const loader::GgufFile& file) {
  Vocab vocab;
  vocab.source = file.path();
  const std::string model(file.get_string("tokenizer.ggml.model").value_or(""));
  if (model == "gpt2") {
    vocab.kind = ModelKind::ByteLevelBpe;
  } else if (model == "llama") {
    vocab.kind = ModelKind::SentencePieceBpe;
  } else if (model.empty()) {
    throw loader::LoadError(file.path(), "tokenizer.ggml.model: missing");
  } else {
    throw loader::LoadError(file.path(), "tokenizer.ggml.model: unsupported tokenizer '" + model +
                                             "' (supported: gpt2, llama)");
  }
  const bool spm = vocab.kind == ModelKind::SentencePieceBpe;

  const auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty()) {
    throw loader::LoadError(file.path(), "tokenizer.ggml.tokens: missing or empty");
  }
  vocab.tokens.assign(tokens->begin(), tokens->end());
  if (auto scores = file.get_float_array("tokenizer.ggml.scores")) vocab.scores = std::move(*scores);
  if (auto types = file.get_int_array("tokenizer.ggml.token_type")) {
    vocab.types.reserve(types->size());
    for (size_t i = 0; i < types->size(); ++i) {
      const int64_t t = (*types)[i];
      if (t < 0 || t > static_cast<int64_t>(TokenType::Byte)) {
        throw loader::LoadError(file.path(), "tokenizer.ggml.token_type[" + std::to_string(i) +
                                                 "]: unknown type " + std::to_string(t));
      }
      vocab.types.push_back(static_cast<TokenType>(t));
    }
  }

  vocab.bos_id = optional_id(file, "tokenizer.ggml.bos_token_id");
  vocab.eos_id = optional_id(file, "tokenizer.ggml.eos_token_id");
  vocab.eot_id = optional_id(file, "tokenizer.ggml.eot_token_id");
  vocab.unk_id = optional_id(file, "tokenizer.ggml.unknown_token_id");
  vocab.pad_id = optional_id(file, "tokenizer.ggml.padding_token_id");
  if (const int32_t eom = optional_id(file, "tokenizer.ggml.eom_token_id"); eom >= 0) {
    vocab.eog_ids.push_back(eom);
  }
  // llama.cpp's defaults: SentencePiece vocabularies add BOS and a leading space unless
  // the file says otherwise; byte-level ones do neither.
  vocab.add_bos = file.get_bool("tokenizer.ggml.add_bos_token").value_or(spm);
  vocab.add_eos = file.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  vocab.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
  vocab.chat_template = std::string(file.get_string("tokenizer.chat_template").value_or(""));
  vocab.pre = std::string(file.get_string("tokenizer.ggml.pre").value_or("default"));
  vocab.finish();

  if (spm) {
    vocab.byte_fallback = true;  // merges come from the scores; merges in the file are unused
    return vocab;
  }
  vocab.pre_patterns = pre_tokenizer_patterns(vocab.pre, file.path());
  vocab.ignore_merges = ignores_merges(vocab.pre);
  const auto merges = file.get_string_array("tokenizer.ggml.merges");
  if (!merges) throw loader::LoadError(file.path(), "tokenizer.ggml.merges: missing");
  std::vector<std::pair<std::string_view, std::string_view>> rules;
  rules.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string_view rule = (*merges)[i];
    const size_t space = rule.size() > 1 ? rule.find(' ', 1) : std::string_view::npos;
    if (space == std::string_view::npos) {
      throw loader::LoadError(file.path(), "tokenizer.ggml.merges[" + std::to_string(i) +
                                               "]: '" + std::string(rule) + "' is not 'left right'");
    }
    rules.emplace_back(rule.substr(0, space), rule.substr(space + 1));
  }
  parse_merges(vocab, "tokenizer.ggml.merges", rules);
  return vocab;
}

}  // namespace sluice::tokenizer
