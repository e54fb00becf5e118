// Strings: lengths (in characters: a code point, a two-character escape, \uXXXX, or a
// \uD8xx\uDCxx surrogate pair, each one), pattern (through the regex front end) and
// format (json_schema_formats.cpp). One pattern or one format per string: an
// intersection of two, or of one with a length, has no grammar here.
#include "engine/grammar/json_schema_compiler.h"
#include "engine/grammar/regex.h"

namespace sluice::grammar::schema {

std::optional<uint32_t> Compiler::compile_string(const Node& node, const std::string& pointer) {
  const std::string name = (pointer.empty() ? "root" : pointer) + "-string";
  std::optional<uint32_t> content;
  const bool has_length = node.min_length > 0 || node.max_length;
  if (!node.patterns.empty() || !node.formats.empty()) {
    // The first pattern (or format) shapes the string; anything more is unenforceable.
    bool shaped = false;
    for (const auto& [pattern, where] : node.patterns) {
      if (shaped) {
        if (pattern != node.patterns.front().first) unenforceable(where, "a second pattern");
        continue;
      }
      shaped = true;
      try {
        content = add_regex_json_string_content(builder_, pattern, true, name + "-pattern", options_.limits);
      } catch (const GrammarError& e) {
        unenforceable(where, "pattern (" + std::string(e.what()) + ")");
      }
    }
    for (const auto& [format, where] : node.formats) {
      if (shaped) {
        unenforceable(where, "format '" + format + "' beside a pattern or another format");
        continue;
      }
      shaped = true;
      content = format_rule(format);
      if (!content) unenforceable(where, "format '" + format + "'");
    }
    if (has_length) {
      const std::string& where = node.min_length > 0 ? node.min_length_pointer : node.max_length_pointer;
      unenforceable(where, "a length beside a pattern or format");
    }
  }
  if (!content) {
    uint64_t min = node.min_length;
    std::optional<uint64_t> max = node.max_length;
    if (node.patterns.empty() && node.formats.empty()) {
      const auto limit = static_cast<uint64_t>(options_.limits.max_repeat);
      if (max && *max > limit) {
        unenforceable(node.max_length_pointer,
                      "maxLength " + std::to_string(*max) + " (over max_repeat " + std::to_string(limit) + ")");
        max.reset();
      }
      if (min > limit) {
        unenforceable(node.min_length_pointer,
                      "minLength " + std::to_string(min) + " (over max_repeat " + std::to_string(limit) + ")");
        min = 0;
      }
      if (max && min > *max) {
        note_empty("minLength is over maxLength", node.min_length_pointer);
        return std::nullopt;
      }
    } else {
      min = 0;
      max.reset();
    }
    content = builder_.repeat(GrammarBuilder::ref(string_char()), static_cast<int>(min),
                              max ? static_cast<int>(*max) : -1, name + "-content");
  }
  return builder_.sequence({builder_.byte('"'), GrammarBuilder::ref(*content), builder_.byte('"')}, name);
}

}  // namespace sluice::grammar::schema
