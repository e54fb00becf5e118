#pragma once
// Parses the tokens of a chat template into a syntax tree.
#include <vector>

#include "engine/chat/jinja/ast.h"
#include "engine/chat/jinja/lexer.h"

namespace sluice::chat {

// Throws TemplateSyntaxError with the line and column of the offending token, also for
// tags, filters and tests this interpreter does not support, and for nesting deeper
// than a fixed limit (so a hostile template cannot overflow the stack).
Body parse(const std::vector<Token>& tokens);

}  // namespace sluice::chat
