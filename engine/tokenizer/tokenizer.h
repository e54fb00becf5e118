#pragma once
// Text <-> token ids for every model we serve: GPT-2 style byte-level BPE (SmolLM2,
// Llama 3, Qwen) and SentencePiece-style BPE (Gemma), from GGUF metadata or from a
// Hugging Face tokenizer.json.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/loader/gguf_file.h"
#include "engine/tokenizer/vocab.h"

namespace sluice::tokenizer {

class BpeModel;
class PreTokenizer;
class SpecialTokenMatcher;

// One model's tokenizer. Immutable after construction and cheap to copy (the tables are
// shared); any thread may call any method concurrently. Loading throws
// loader::LoadError; encode and decode never throw on any input (invalid UTF-8 is
// byte-encoded or byte-fallback encoded, unknown ids decode to nothing).
class Tokenizer {
 public:
  // Throws LoadError naming the file and the tokenizer.* key at fault.
  static Tokenizer from_gguf(const loader::GgufFile& file);
  // `dir` holds tokenizer.json and, optionally, tokenizer_config.json (chat template,
  // bos/eos tokens, add_bos_token); or, without tokenizer.json, vocab.json +
  // merges.txt + tokenizer_config.json (hf_vocab_merges.h). Throws LoadError naming
  // the file and the field.
  static Tokenizer from_hf_dir(const std::filesystem::path& dir);
  explicit Tokenizer(Vocab vocab);

  // add_special: add BOS (and EOS) when the model asks for it. parse_special: match
  // control tokens such as <|im_start|> in `text`; when false they are tokenized as
  // plain text (user-defined tokens are always matched, as llama.cpp and HF do).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes of the ids, concatenated. May end in (or, for arbitrary ids, contain) a
  // partial UTF-8 character; streaming callers use IncrementalDetokenizer instead.
  // skip_special drops control tokens (BOS, EOS, <|im_end|> ...).
  std::string decode(std::span<const int32_t> ids, bool skip_special) const;

  // The bytes one token stands for ("" for an id outside the vocabulary).
  const std::string& token_to_piece(int32_t id) const;
  // The token as the vocabulary spells it ("Ġhello", "▁hello", "<0x0A>").
  const std::string& token_text(int32_t id) const;
  int32_t token_id(std::string_view text) const { return vocab_->find(text); }

  int32_t vocab_size() const { return vocab_->size(); }
  int32_t bos_id() const { return vocab_->bos_id; }
  int32_t eos_id() const { return vocab_->eos_id; }
  int32_t pad_id() const { return vocab_->pad_id; }
  // Every id that ends generation: eos, eot, and end-of-turn tokens such as <|im_end|>
  // or <end_of_turn>.
  std::span<const int32_t> eos_ids() const { return vocab_->eog_ids; }
  bool is_eos(int32_t id) const;
  // Control tokens: the ones decode(skip_special=true) drops.
  bool is_special(int32_t id) const;
  bool add_bos() const { return vocab_->add_bos; }
  bool add_space_prefix() const { return vocab_->add_space_prefix; }
  ModelKind kind() const { return vocab_->kind; }
  const std::string& chat_template() const { return vocab_->chat_template; }
  const Vocab& vocab() const { return *vocab_; }

 private:
  void encode_text(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const;

  std::shared_ptr<const Vocab> vocab_;
  std::shared_ptr<const PreTokenizer> pre_;
  std::shared_ptr<const BpeModel> bpe_;
  std::shared_ptr<const SpecialTokenMatcher> specials_;
  std::shared_ptr<const std::vector<std::string>> pieces_;  // token_to_piece per id
};

}  // namespace sluice::tokenizer
