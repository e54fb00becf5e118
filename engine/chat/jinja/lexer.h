#pragma once
// Splits a chat template into text and tag tokens, applying Jinja's whitespace control
// the way Hugging Face configures it (trim_blocks and lstrip_blocks on).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja/template_error.h"

namespace sluice::chat {

struct Token {
  enum class Type {
    Text,        // literal output between tags
    BlockBegin,  // {%
    BlockEnd,    // %}
    VarBegin,    // {{
    VarEnd,      // }}
    Name,
    String,  // text holds the unescaped value
    Int,
    Float,
    Operator,  // text holds the operator: "+", "//", "==", "(", ...
    End,
  };
  Type type;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  SourcePos pos;
};

struct LexerOptions {
  bool trim_blocks = true;   // drop the first newline after a block or comment tag
  bool lstrip_blocks = true; // drop spaces and tabs before a block or comment tag at a line's start
};

// Throws TemplateSyntaxError (unclosed tags, comments, strings; bad characters).
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options = {});

}  // namespace sluice::chat
