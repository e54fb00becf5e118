#pragma once
// Regex pre-tokenization for byte-level BPE: splits text into the pieces BPE runs on.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::tokenizer {

// The split regexes of the GGUF pre-tokenizer `name` ("gpt2", "llama3", "llama-bpe",
// "qwen2", "smollm", "default", ...). Throws LoadError naming `source` and the key
// tokenizer.ggml.pre for a name we do not know: guessing would silently mis-tokenize.
std::vector<std::string> pre_tokenizer_patterns(std::string_view name,
                                                const std::filesystem::path& source);

// The GPT-2 split regex that HF's ByteLevel(use_regex=true) applies.
extern const char* const kGpt2Pattern;

// A sequence of compiled PCRE2 patterns (UTF + UCP, JIT when available). Each pattern
// splits every piece the previous one produced, keeping both the matches and the text
// between them (HF's Split behavior "Isolated"), so a pattern's lookahead never sees
// past its piece, exactly as in HF tokenizers and llama.cpp. Immutable after
// construction; any thread may call split() (each call owns its match data).
class PreTokenizer {
 public:
  PreTokenizer() = default;  // no patterns: the whole text is one piece
  // Throws LoadError naming `source` when a pattern does not compile.
  PreTokenizer(const std::vector<std::string>& patterns, const std::filesystem::path& source);

  // Appends the pieces of `text`, in order, as views into `text`; they cover it exactly.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Pattern;
  void split_valid(std::string_view text, std::vector<std::string_view>& pieces) const;
  void split_one(const Pattern& pattern, std::string_view text,
                 std::vector<std::string_view>& out) const;
  std::vector<std::shared_ptr<const Pattern>> patterns_;
};

}  // namespace sluice::tokenizer
