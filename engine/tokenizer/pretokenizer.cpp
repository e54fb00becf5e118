#include "engine/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <utility>

#include "engine/loader/load_error.h"
#include "engine/tokenizer/utf8.h"

namespace sluice::tokenizer {

// GPT-2 (HF ByteLevel pre-tokenizer, tokenizers/src/pre_tokenizers/byte_level.rs).
const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Llama 3 (tokenizer.json of Meta-Llama-3; llama.cpp "llama3"/"llama-bpe"). PCRE2
// supports the scoped (?i:...) directly, so no need for llama.cpp's spelled-out cases.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2 / Qwen2.5 / Qwen3 (tokenization_qwen2.py PRETOKENIZE_REGEX): Llama 3's with
// single digits.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// SmolLM / StarCoder: tokenizer.json says Sequence[Digits(individual_digits=true),
// ByteLevel(use_regex=true)] -- every digit alone, then GPT-2's regex on the rest.
constexpr const char* kDigitPattern = R"(\p{N})";

// llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT for byte-level vocabularies.
constexpr std::array<const char*, 4> kDefaultPatterns = {
    R"([\p{P}\$\+<=>\^~\|]+)",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
    R"(\p{N}+)",
    R"([0-9][0-9][0-9])",
};

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (name == n) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> pre_tokenizer_patterns(std::string_view name,
                                                const std::filesystem::path& source) {
  if (is_one_of(name, {"gpt2", "gpt-2", "mpt", "olmo", "jais"})) return {kGpt2Pattern};
  if (is_one_of(name, {"llama3", "llama-v3", "llama-bpe", "dbrx", "smaug-bpe", "falcon3",
                       "pixtral"})) {
    return {kLlama3Pattern};
  }
  if (is_one_of(name, {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"})) return {kQwen2Pattern};
  if (is_one_of(name, {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
                       "minerva"})) {
    return {kDigitPattern, kGpt2Pattern};
  }
  if (name.empty() || name == "default") return {kDefaultPatterns.begin(), kDefaultPatterns.end()};
  throw loader::LoadError(source, "tokenizer.ggml.pre: unsupported pre-tokenizer '" +
                                      std::string(name) + "'");
}

struct PreTokenizer::Pattern {
  pcre2_code* code = nullptr;
  ~Pattern() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns,
                           const std::filesystem::path& source) {
  for (const std::string& text : patterns) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto pattern = std::make_shared<Pattern>();
    pattern->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error,
                                  &error_offset, nullptr);
    if (pattern->code == nullptr) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(error, message.data(), message.size());
      throw loader::LoadError(source, "pre-tokenizer regex '" + text + "' at " +
                                          std::to_string(error_offset) + ": " +
                                          reinterpret_cast<const char*>(message.data()));
    }
    // JIT is an optimisation only: without it (or when it fails) matching interprets.
    pcre2_jit_compile(pattern->code, PCRE2_JIT_COMPLETE);
    patterns_.push_back(std::move(pattern));
  }
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  // Text from a client may hold invalid UTF-8, which PCRE2 in UTF mode refuses: split
  // the valid runs, and give each invalid byte a piece of its own.
  size_t run = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8::valid_sequence_at(text, pos);
    if (len > 0) {
      pos += len;
      continue;
    }
    split_valid(text.substr(run, pos - run), pieces);
    pieces.push_back(text.substr(pos, 1));
    run = ++pos;
  }
  split_valid(text.substr(run), pieces);
}

void PreTokenizer::split_valid(std::string_view text, std::vector<std::string_view>& pieces) const {
  if (text.empty()) return;
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (const auto& pattern : patterns_) {
    next.clear();
    for (std::string_view piece : current) split_one(*pattern, piece, next);
    std::swap(current, next);
  }
  pieces.insert(pieces.end(), current.begin(), current.end());
}

void PreTokenizer::split_one(const Pattern& pattern, std::string_view text,
                             std::vector<std::string_view>& out) const {
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(pattern.code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;   // where the unmatched gap begins
  size_t offset = 0;  // where to search from
  const uint32_t options = PCRE2_NO_UTF_CHECK;  // split() passes only valid UTF-8
  while (offset < text.size()) {
    int rc = pcre2_match(pattern.code, subject, text.size(), offset, options, match, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(pattern.code, subject, text.size(), offset, options | PCRE2_NO_JIT, match,
                       nullptr);
    }
    if (rc < 0) break;  // no more matches
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end == begin) {  // an empty match cannot split anything; step past one character
      ++offset;
      while (offset < text.size() && (static_cast<uint8_t>(text[offset]) & 0xC0) == 0x80) ++offset;
      continue;
    }
    if (begin > start) out.push_back(text.substr(start, begin - start));
    out.push_back(text.substr(begin, end - begin));
    start = offset = end;
  }
  if (start < text.size()) out.push_back(text.substr(start));
  pcre2_match_data_free(match);
}

}  // namespace sluice::tokenizer
