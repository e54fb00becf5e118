#pragma once
// llama.cpp's GBNF grammar syntax, lowered to the byte grammar IR, so grammars
// written for llama-server work unchanged: `name ::= alternatives`, "literals" with
// escapes (\n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH), [character classes] with ranges and
// ^ negation, `.` (any code point), grouping ( ), `|`, and the postfix operators
// * + ? {m} {m,} {m,n}; # comments. The root rule is `root`.
// Where it differs from llama.cpp: a repetition whose body can match "" (("a"?)*) is
// accepted (llama.cpp calls it left recursion), {m,n} with m > n is an error (llama.cpp
// repeats m times), and token references (<think>, <[id]>) are refused: this grammar
// matches text. Invalid UTF-8 and surrogate escapes are errors.
#include <string_view>

#include "engine/grammar/grammar.h"
#include "engine/grammar/limits.h"

namespace sluice::grammar {

// Throws GrammarError whose where() is "line L, column C" (1-based, columns in code
// points) for a syntax error, an undefined rule (where it is first used), left
// recursion (where the rule is defined), or a limit; where() is empty for a missing
// root.
Grammar parse_gbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace sluice::grammar
