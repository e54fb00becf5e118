#pragma once
// The ECMAScript regular-expression subset that JSON Schema `pattern` and vLLM's
// `regex` use, lowered to the byte grammar IR: literals and escapes, `.`, classes
// [...] with ranges, negation and \d \w \s \D \W \S (also inside classes), groups
// ( ) (?: ) and named (?<n> ), alternation |, quantifiers * + ? {m} {m,} {m,n} (lazy
// forms accepted: a grammar has no preference), anchors ^ and $ at the ends only,
// \uHHHH and \u{...}. Refused with a GrammarError: backreferences, lookaround,
// anchors inside, flags.
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
// string that CONTAINS a match (unanchored ends become .*).
uint32_t add_regex_search(GrammarBuilder& builder, std::string_view pattern, std::string_view name,
                          const GrammarLimits& limits = {});

// The content of a JSON string (what lies between its quotes: any characters,
// escapes included) whose unescaped value matches `pattern`: a search (contains a
// match, JSON Schema's `pattern`) when `search`, else a whole match. Throws
// GrammarError as add_regex does.
uint32_t add_regex_json_string_content(GrammarBuilder& builder, std::string_view pattern, bool search,
                                       std::string_view name, const GrammarLimits& limits);

// A whole grammar for vLLM's `regex`.
Grammar compile_regex(std::string_view pattern, const GrammarLimits& limits = {});

// vLLM's `choice`: exactly one of the strings. Throws GrammarError when empty.
Grammar compile_choice(const std::vector<std::string>& choices, const GrammarLimits& limits = {});

}  // namespace sluice::grammar
