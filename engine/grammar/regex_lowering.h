#pragma once
// The second stage of the regex front end (regex.h): a RegexNode tree lowered into a
// GrammarBuilder, as plain text or as the content of a JSON string.
#include <map>
#include <optional>
#include <string>

#include "engine/grammar/codepoint_set.h"
#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/limits.h"
#include "engine/grammar/regex_parser.h"
#include "engine/grammar/repetition.h"

namespace sluice::grammar {

enum class RegexTarget : uint8_t {
  text,                 // each matched code point as its UTF-8 bytes
  json_string_content,  // as JSON writes it between quotes: " \ and controls escaped
};

// One per pattern: it owns the caches and the repetitions of that pattern's rules,
// which are named after `name`.
class RegexLowering {
 public:
  RegexLowering(GrammarBuilder& builder, RegexTarget target, std::string name, const GrammarLimits& limits);

  // The elements of a sequence matching what `node` matches.
  Alternative lower(const RegexNode& node);
  // Any string of the target (the free ends of a search): any code points as text;
  // any JSON string content.
  Element any_string();
  // Completes the repetitions (repetition.h) and checks the size limit. Call once,
  // after the last lower().
  void finish();

 private:
  Alternative lower_set(const CodepointSet& set, size_t offset);
  Alternative json_escape(uint32_t cp);
  Element as_element(Alternative alternative);
  void check_budget(size_t offset);

  GrammarBuilder& builder_;
  RegexTarget target_;
  std::string name_;
  const GrammarLimits& limits_;
  ElementBudget budget_;
  Repetitions repetitions_;
  CodepointSetElements sets_;
  std::map<CodepointSet, Element> json_sets_;
  std::optional<Element> any_string_;
};

}  // namespace sluice::grammar
