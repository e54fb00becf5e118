// The regex front end: parse (regex_parser.h), lower (regex_lowering.h); and choice.
#include "engine/grammar/regex.h"

#include "engine/grammar/regex_lowering.h"
#include "engine/grammar/regex_parser.h"

namespace sluice::grammar {
namespace {

uint32_t add_pattern(GrammarBuilder& builder, std::string_view pattern, std::string_view name,
                     const GrammarLimits& limits, RegexTarget target, bool search) {
  const ParsedRegex parsed = parse_regex(pattern, limits);
  RegexLowering lowering(builder, target, std::string(name), limits);
  std::vector<Alternative> alternatives;
  const size_t last = parsed.alternatives.size() - 1;
  for (size_t i = 0; i < parsed.alternatives.size(); ++i) {
    Alternative alternative;
    if (search && !(i == 0 && parsed.anchored_start)) alternative.push_back(lowering.any_string());
    const Alternative body = lowering.lower(parsed.alternatives[i]);
    alternative.insert(alternative.end(), body.begin(), body.end());
    if (search && !(i == last && parsed.anchored_end)) alternative.push_back(lowering.any_string());
    alternatives.push_back(std::move(alternative));
  }
  const uint32_t rule = builder.add_rule(name);
  builder.set_alternatives(rule, std::move(alternatives));
  lowering.finish();
  return rule;
}

}  // namespace

uint32_t add_regex(GrammarBuilder& builder, std::string_view pattern, std::string_view name,
                   const GrammarLimits& limits) {
  return add_pattern(builder, pattern, name, limits, RegexTarget::text, false);
}

uint32_t add_regex_search(GrammarBuilder& builder, std::string_view pattern, std::string_view name,
                          const GrammarLimits& limits) {
  return add_pattern(builder, pattern, name, limits, RegexTarget::text, true);
}

uint32_t add_regex_json_string_content(GrammarBuilder& builder, std::string_view pattern, bool search,
                                       std::string_view name, const GrammarLimits& limits) {
  return add_pattern(builder, pattern, name, limits, RegexTarget::json_string_content, search);
}

Grammar compile_regex(std::string_view pattern, const GrammarLimits& limits) {
  GrammarBuilder builder;
  const uint32_t root = add_regex(builder, pattern, "root", limits);
  return std::move(builder).build(root, limits.max_elements);
}

Grammar compile_choice(const std::vector<std::string>& choices, const GrammarLimits& limits) {
  if (choices.empty()) throw GrammarError("choice needs at least one string");
  size_t total = 0;
  for (const std::string& choice : choices) total += choice.size();
  if (total > limits.max_input_bytes)
    throw GrammarError("the choices are over the limit of " + std::to_string(limits.max_input_bytes) + " bytes");
  GrammarBuilder builder;
  const uint32_t root = builder.add_rule("root");
  std::vector<Alternative> alternatives;
  for (const std::string& choice : choices) alternatives.push_back(builder.literal(choice));
  builder.set_alternatives(root, std::move(alternatives));
  return std::move(builder).build(root, limits.max_elements);
}

}  // namespace sluice::grammar
