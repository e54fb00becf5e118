#pragma once
// The ECMAScript regular-expression subset that JSON Schema `pattern` and vLLM's
// `regex` use, lowered to the byte grammar IR: literals and escapes (\n \r \t \f \v \0,
// \xHH, \uHHHH, surrogate pairs, \u{...}, \cX, escaped punctuation), `.` (any code point
// but the line terminators \n \r U+2028 U+2029, as without the s flag), classes [...]
// with ranges, negation and \d \w \s \D \W \S (also inside classes; \s is ECMAScript's
// whitespace, Unicode spaces included), groups ( ) (?: ) and named (?<n> ), alternation
// |, quantifiers * + ? {m} {m,} {m,n} (lazy forms accepted: a grammar has no
// preference), anchors ^ at the very start and $ at the very end. Unicode-mode reading:
// text is code points, matched as their UTF-8 bytes.
// Refused with a GrammarError: backreferences (\1, \k<n>), lookaround, \b \B, \p{...},
// flags and inline modifiers, octal escapes, unknown letter escapes, ^ or $ anywhere
// else, a { that starts no quantifier, an empty class [].
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/limits.h"

namespace sluice::grammar {

// Adds a rule matching exactly the strings `pattern` matches WHOLE (vLLM's regex
// semantics: the output is one full match). Throws GrammarError with where()
// "offset N" (0-based, in bytes of `pattern`).
uint32_t add_regex(GrammarBuilder& builder, std::string_view pattern, std::string_view name,
                   const GrammarLimits& limits = {});

// A JSON Schema `pattern` is a search, not a full match: a rule matching every
// string that CONTAINS a match: a leading ^ anchors the start, else any prefix is
// allowed; a trailing $ anchors the end, else any suffix ("any": any code points).
// With top-level alternatives, ^ anchors the first and $ the last only, as in
// ECMAScript (^a|b$: starts with a, or ends with b).
uint32_t add_regex_search(GrammarBuilder& builder, std::string_view pattern, std::string_view name,
                          const GrammarLimits& limits = {});

// For a `pattern` inside a JSON string (the JSON Schema compiler): a rule matching the
// string's CONTENT, without the quotes, as JSON writes it, whose unescaped value
// matches `pattern` (whole, or as a search when `search`: JSON Schema's semantics,
// with the free ends matching any content). In the content, the characters JSON
// requires escaped appear only escaped: \" \\ \b \f \n \r \t, and \u00XX (hex letter
// in either case) for the other controls below U+0020; every other code point appears
// only literally, as UTF-8 (never \/ or \uXXXX). So the grammar accepts exactly the
// canonical JSON serialization (what json.dumps(ensure_ascii=False) and JSON.stringify
// write) of each matching value. Callers put the quotes around the rule.
uint32_t add_regex_json_string_content(GrammarBuilder& builder, std::string_view pattern, bool search,
                                       std::string_view name, const GrammarLimits& limits = {});

// A whole grammar for vLLM's `regex`.
Grammar compile_regex(std::string_view pattern, const GrammarLimits& limits = {});

// vLLM's `choice`: exactly one of the strings (their bytes, as given). Throws
// GrammarError when empty or over limits.max_input_bytes in all.
Grammar compile_choice(const std::vector<std::string>& choices, const GrammarLimits& limits = {});

}  // namespace sluice::grammar
