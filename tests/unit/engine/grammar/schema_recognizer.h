#pragma once
// Test-only: whether a byte grammar (engine/grammar/grammar.h) accepts a whole input,
// for the JSON Schema tests while the real matcher is built elsewhere. An Earley
// recognizer over the IR (item: rule, alternative, dot, origin) with the Aycock-
// Horspool rule for nullable rules. Simple and slow; small inputs only.
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/grammar/grammar.h"

namespace sluice::grammar::testing {

inline bool schema_accepts(const Grammar& g, std::string_view input) {
  using Kind = Element::Kind;
  std::vector<char> nullable(g.rules.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Alternative& alt : g.rules[r].alternatives) {
        bool all = true;
        for (const Element& e : alt) all = all && e.kind == Kind::rule && nullable[e.index];
        if (all) {
          nullable[r] = changed = 1;
          break;
        }
      }
    }
  }
  struct Item {
    uint32_t rule, alt, dot, origin;
  };
  const auto pack = [](const Item& it) {
    return (static_cast<uint64_t>(it.rule) << 40) ^ (static_cast<uint64_t>(it.alt) << 28) ^
           (static_cast<uint64_t>(it.dot) << 16) ^ it.origin;
  };
  struct Set {
    std::vector<Item> items;
    std::unordered_set<uint64_t> seen;  // packed items (exact when fields fit)
    std::unordered_map<uint32_t, std::vector<size_t>> waiting;  // rule -> items expecting it
  };
  std::vector<Set> sets(input.size() + 1);
  const auto add = [&](size_t k, const Item& it) {
    if (sets[k].seen.insert(pack(it)).second) sets[k].items.push_back(it);
  };
  for (uint32_t a = 0; a < g.rules[g.root].alternatives.size(); ++a) add(0, {g.root, a, 0, 0});
  for (size_t k = 0; k <= input.size(); ++k) {
    Set& set = sets[k];
    for (size_t i = 0; i < set.items.size(); ++i) {
      const Item it = set.items[i];
      const Alternative& alt = g.rules[it.rule].alternatives[it.alt];
      if (it.dot < alt.size()) {
        const Element& e = alt[it.dot];
        if (e.kind == Kind::bytes) {
          if (k < input.size() && g.byte_sets[e.index].test(static_cast<uint8_t>(input[k])))
            add(k + 1, {it.rule, it.alt, it.dot + 1, it.origin});
          continue;
        }
        set.waiting[e.index].push_back(i);
        for (uint32_t a = 0; a < g.rules[e.index].alternatives.size(); ++a)
          add(k, {e.index, a, 0, static_cast<uint32_t>(k)});
        if (nullable[e.index]) add(k, {it.rule, it.alt, it.dot + 1, it.origin});
        continue;
      }
      // Complete: advance every item of the origin set waiting for this rule.
      Set& origin = sets[it.origin];
      auto w = origin.waiting.find(it.rule);
      if (w == origin.waiting.end()) continue;
      for (size_t j = 0; j < w->second.size(); ++j) {  // may grow when origin == k
        const Item parent = origin.items[w->second[j]];
        add(k, {parent.rule, parent.alt, parent.dot + 1, parent.origin});
      }
    }
  }
  for (const Item& it : sets[input.size()].items)
    if (it.rule == g.root && it.origin == 0 && it.dot == g.rules[it.rule].alternatives[it.alt].size()) return true;
  return false;
}

}  // namespace sluice::grammar::testing
