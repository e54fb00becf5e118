#pragma once
// llama.cpp's GBNF grammar syntax, lowered to the byte grammar IR, so grammars
// written for llama-server work unchanged: `name ::= alternatives`, "literals" with
// escapes (\n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH), [character classes] with ranges and
// ^ negation, `.` (any code point), grouping ( ), `|`, and the postfix operators
// * + ? {m} {m,} {m,n}; # comments. The root rule is `root`.
#include <string_view>

#include "engine/grammar/grammar.h"
#include "engine/grammar/limits.h"

namespace sluice::grammar {

// Throws GrammarError whose where() is "line L, column C" (1-based) for a syntax
// error, an undefined rule (where it is first used), or a limit.
Grammar parse_gbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace sluice::grammar
