#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/special_tokens.h"
#include "engine/tokenizer/utf8.h"
#include "engine/tokenizer/vocab_gguf.h"

namespace sluice::tokenizer {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// The byte of a "<0xAB>" token; none when the text is not exactly that (a hostile
// vocabulary may mark any text as a byte token).
std::optional<char> byte_token_value(std::string_view text) {
  if (text.size() != 6 || !text.starts_with("<0x") || text.back() != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int high = hex(text[3]);
  const int low = hex(text[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<char>(high * 16 + low);
}

// What a token stands for in decoded text.
std::string make_piece(const Vocab& vocab, size_t id) {
  const std::string& text = vocab.tokens[id];
  switch (vocab.types[id]) {
    case TokenType::Control:
    case TokenType::UserDefined:
      return text;  // added tokens are stored as plain text in both styles
    case TokenType::Byte:
      if (const auto byte = byte_token_value(text)) return std::string(1, *byte);
      return text;
    default:
      break;
  }
  std::string piece;
  if (vocab.kind == ModelKind::ByteLevelBpe) {
    for (size_t pos = 0; pos < text.size();) {
      const size_t start = pos;
      const int byte = utf8::unicode_to_byte(utf8::next_codepoint(text, pos));
      if (byte >= 0) {
        piece += static_cast<char>(byte);
      } else {
        piece.append(text, start, pos - start);  // not from the byte alphabet: keep as is
      }
    }
    return piece;
  }
  for (size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
      piece += ' ';
      pos += kSpaceMark.size();
    } else {
      piece += text[pos++];
    }
  }
  return piece;
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const loader::GgufFile& file) { return Tokenizer(vocab_from_gguf(file)); }

Tokenizer::Tokenizer(Vocab vocab) {
  auto owned = std::make_shared<Vocab>(std::move(vocab));
  if (owned->token_to_id.empty()) owned->finish();
  pre_ = std::make_shared<PreTokenizer>(owned->pre_patterns, owned->source);
  bpe_ = std::make_shared<BpeModel>(*owned);
  specials_ = std::make_shared<SpecialTokenMatcher>(*owned);
  auto pieces = std::make_shared<std::vector<std::string>>();
  pieces->reserve(owned->tokens.size());
  for (size_t id = 0; id < owned->tokens.size(); ++id) pieces->push_back(make_piece(*owned, id));
  pieces_ = std::move(pieces);
  vocab_ = std::move(owned);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && vocab_->add_bos && vocab_->bos_id >= 0) out.push_back(vocab_->bos_id);
  std::vector<Fragment> fragments;
  specials_->split(text, parse_special, fragments);
  // SentencePiece prefixes a space to text that starts the input or follows a token
  // found whole (llama.cpp's rule).
  bool after_token = true;
  for (const Fragment& fragment : fragments) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_token = true;
    } else {
      encode_text(fragment.text, vocab_->add_space_prefix && after_token, out);
      after_token = false;
    }
  }
  if (add_special && vocab_->add_eos && vocab_->eos_id >= 0) out.push_back(vocab_->eos_id);
  return out;
}

void Tokenizer::encode_text(std::string_view text, bool space_prefix,
                            std::vector<int32_t>& out) const {
  std::string word;
  std::vector<std::string_view> pieces;
  if (vocab_->kind == ModelKind::ByteLevelBpe) {
    pre_->split(text, pieces);
    const auto& alphabet = utf8::byte_to_unicode();
    for (std::string_view piece : pieces) {
      word.clear();
      for (char c : piece) word += alphabet[static_cast<uint8_t>(c)];
      bpe_->encode_word(word, out);
    }
    return;
  }
  std::string escaped;
  escaped.reserve(text.size() + 8);
  if (space_prefix) escaped += kSpaceMark;
  for (char c : text) {
    if (c == ' ') {
      escaped += kSpaceMark;
    } else {
      escaped += c;
    }
  }
  if (vocab_->pre_patterns.empty()) {
    bpe_->encode_word(escaped, out);
    return;
  }
  pre_->split(escaped, pieces);
  for (std::string_view piece : pieces) bpe_->encode_word(piece, out);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string text;
  bool first_text = true;
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (skip_special && is_special(id)) continue;
    std::string_view piece = token_to_piece(id);
    if (first_text && !is_special(id)) {
      // The space SentencePiece prefixed when encoding is not part of the text.
      if (vocab_->add_space_prefix && piece.starts_with(' ')) piece.remove_prefix(1);
      first_text = false;
    }
    text += piece;
  }
  return text;
}

const std::string& Tokenizer::token_to_piece(int32_t id) const {
  static const std::string empty;
  return id >= 0 && id < vocab_size() ? (*pieces_)[static_cast<size_t>(id)] : empty;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string empty;
  return id >= 0 && id < vocab_size() ? vocab_->tokens[static_cast<size_t>(id)] : empty;
}

bool Tokenizer::is_eos(int32_t id) const {
  return std::find(vocab_->eog_ids.begin(), vocab_->eog_ids.end(), id) != vocab_->eog_ids.end();
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() &&
         vocab_->types[static_cast<size_t>(id)] == TokenType::Control;
}

}  // namespace sluice::tokenizer
