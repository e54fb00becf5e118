// Arrays: prefix positions (prefixItems, or items as an array in drafts 4-7), the
// rest (items, or additionalItems), and minItems/maxItems counted over both. A
// prefix position that no value can match ends the array there. uniqueItems has no
// grammar (unenforceable unless at most one item fits); contains only as true/false.
#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {

std::optional<uint32_t> Compiler::compile_array(const Node& node, const std::string& pointer, int depth) {
  const Nest inside(*this);
  std::vector<uint32_t> prefix;
  bool truncated = false;
  for (const SchemaList& list : node.prefix) {
    std::optional<uint32_t> rule = compile_list(list, depth + 1);
    if (!rule) {
      truncated = true;
      break;
    }
    prefix.push_back(*rule);
  }
  std::optional<uint32_t> rest;
  if (!truncated) rest = compile_list(node.rest, depth + 1);

  const auto limit = static_cast<uint64_t>(options_.limits.max_repeat);
  uint64_t min = node.min_items;
  std::optional<uint64_t> max = node.max_items;
  if (max && *max > limit) {
    unenforceable(node.max_items_pointer, "maxItems " + std::to_string(*max) + " (over max_repeat " + std::to_string(limit) + ")");
    max.reset();
  }
  if (min > limit) {
    unenforceable(node.min_items_pointer, "minItems " + std::to_string(min) + " (over max_repeat " + std::to_string(limit) + ")");
    min = 0;
  }
  if (!rest) max = std::min<uint64_t>(max.value_or(UINT64_MAX), prefix.size());
  if (max && min > *max) {
    note_empty("minItems is more than the items allowed", node.min_items_pointer.empty() ? pointer : node.min_items_pointer);
    return std::nullopt;
  }
  if (!node.unique_items_pointer.empty() && !(max && *max <= 1)) unenforceable(node.unique_items_pointer, "uniqueItems");

  const std::string base = pointer.empty() ? "root" : pointer;
  Alternative comma;
  ws(comma).push_back(builder_.byte(','));
  ws(comma);
  // after[i]: what may follow once i items are written (i >= 1).
  const auto after = [&](auto& self, size_t i) -> uint32_t {
    if (i >= prefix.size()) {
      // the rest: (, item) repeated between max(0, min - i) and max - i times
      if (max && *max <= i) return builder_.sequence({}, base + "-end");
      Alternative one = comma;
      one.push_back(GrammarBuilder::ref(*rest));
      const uint32_t item = builder_.sequence(std::move(one), base + "-more");
      const int lo = static_cast<int>(min > i ? min - i : 0);
      return builder_.repeat(GrammarBuilder::ref(item), lo, max ? static_cast<int>(*max - i) : -1, base + "-items");
    }
    const uint32_t rule = builder_.add_rule(base + "-after");
    std::vector<Alternative> alternatives;
    if (i >= min) alternatives.push_back({});
    if (!max || i < *max) {
      Alternative next = comma;
      next.push_back(GrammarBuilder::ref(prefix[i]));
      next.push_back(GrammarBuilder::ref(self(self, i + 1)));
      alternatives.push_back(std::move(next));
    }
    builder_.set_alternatives(rule, std::move(alternatives));
    return rule;
  };
  std::vector<Alternative> bodies;
  if (min == 0) bodies.push_back({});
  if (!max || *max >= 1) {
    const uint32_t first = prefix.empty() ? *rest : prefix[0];
    bodies.push_back({GrammarBuilder::ref(first), GrammarBuilder::ref(after(after, 1))});
  }
  const uint32_t body = builder_.add_rule(base + "-body");
  builder_.set_alternatives(body, std::move(bodies));
  Alternative array{builder_.byte('[')};
  ws(array).push_back(GrammarBuilder::ref(body));
  ws(array).push_back(builder_.byte(']'));
  return builder_.sequence(std::move(array), base + "-array");
}

}  // namespace sluice::grammar::schema
