#pragma once
// The tokenizer's model-independent data: tokens, their kinds, merges and special ids,
// filled from GGUF metadata (vocab_gguf.cpp) or a Hugging Face tokenizer.json
// (hf_tokenizer_json.cpp). Everything after loading works on this one representation.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::tokenizer {

// llama.cpp's token types, as stored in `tokenizer.ggml.token_type`.
enum class TokenType : uint8_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,      // <|im_start|>, <bos>: matched in text only when parsing specials
  UserDefined = 4,  // added tokens: always matched whole in text, never split
  Unused = 5,
  Byte = 6,  // SentencePiece byte fallback, spelled <0xAB>
};

enum class ModelKind : uint8_t {
  ByteLevelBpe,      // GPT-2 style: bytes mapped to printable characters, merges by rank
  SentencePieceBpe,  // spaces as U+2581, merges by rank or by score, byte fallback
};

// Transparent hashing so lookups by string_view allocate nothing.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Plain data, built once at load time and immutable afterwards; any thread may read it.
struct Vocab {
  std::filesystem::path source;  // the file it came from, for error messages
  ModelKind kind = ModelKind::ByteLevelBpe;
  std::string pre;                        // GGUF pre-tokenizer name ("smollm", "llama3", ...)
  std::vector<std::string> pre_patterns;  // split regexes, applied in order (byte-level only)

  std::vector<std::string> tokens;  // as the model spells them (byte-level alphabet, ▁ ...)
  std::vector<float> scores;        // SentencePiece scores; empty when absent
  std::vector<TokenType> types;
  TokenIndex token_to_id;
  // Merge rules in rank order, as token ids: (left, right). Empty for SentencePiece
  // GGUF vocabularies, which merge by the score of the merged token instead.
  std::vector<std::pair<int32_t, int32_t>> merges;
  bool ignore_merges = false;  // a pre-token that is already a token is emitted whole
  bool byte_fallback = false;  // unknown characters become <0xAB> tokens

  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  std::vector<int32_t> eog_ids;  // every token that ends generation (eos, eot, <|im_end|> ...)
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SentencePiece: prepend "▁" to the text
  std::string chat_template;

  int32_t find(std::string_view text) const {
    const auto it = token_to_id.find(text);
    return it == token_to_id.end() ? -1 : it->second;
  }
  int32_t size() const { return static_cast<int32_t>(tokens.size()); }

  // Fills token_to_id, the <0xAB> byte table, eog_ids (from eos/eot plus the end-of-turn
  // token names llama.cpp recognises) and checks ids; throws LoadError naming `source`.
  void finish();

  // <0xAB> token for each byte (SentencePiece byte fallback); -1 where missing.
  std::vector<int32_t> byte_tokens;
};

}  // namespace sluice::tokenizer
