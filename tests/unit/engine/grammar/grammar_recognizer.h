#pragma once
// A test-only recognizer for the grammar IR: does the root rule match ALL of `bytes`?
// Earley's algorithm, with Aycock and Horspool's step for rules that match "": simple,
// exhaustive, independent of the matcher (engine/grammar/matcher.h), so the front ends
// can be tested on their own. Slow on long inputs; tests keep them short.
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "engine/grammar/grammar.h"

namespace sluice::grammar::testing {

inline std::vector<char> nullable_rules_of(const Grammar& grammar) {
  std::vector<char> nullable(grammar.rules.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < grammar.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Alternative& alternative : grammar.rules[r].alternatives) {
        bool all = true;
        for (const Element& e : alternative) all = all && e.kind == Element::Kind::rule && nullable[e.index];
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

inline bool accepts(const Grammar& grammar, std::string_view bytes) {
  struct Item {
    uint32_t rule, alternative, dot, origin;
    bool operator==(const Item&) const = default;
  };
  struct ItemHash {
    size_t operator()(const Item& i) const {
      size_t h = i.rule;
      for (uint32_t v : {i.alternative, i.dot, i.origin}) h = h * 1000003u ^ v;
      return h;
    }
  };
  struct ItemSet {
    std::vector<Item> items;
    std::unordered_set<Item, ItemHash> seen;
    void add(const Item& item) {
      if (seen.insert(item).second) items.push_back(item);
    }
  };
  const std::vector<char> nullable = nullable_rules_of(grammar);
  auto body = [&](const Item& i) -> const Alternative& { return grammar.rules[i.rule].alternatives[i.alternative]; };

  std::vector<ItemSet> sets(bytes.size() + 1);
  for (uint32_t a = 0; a < grammar.rules[grammar.root].alternatives.size(); ++a) sets[0].add({grammar.root, a, 0, 0});
  for (size_t i = 0; i <= bytes.size(); ++i) {
    for (size_t k = 0; k < sets[i].items.size(); ++k) {
      const Item item = sets[i].items[k];
      const Alternative& alternative = body(item);
      if (item.dot < alternative.size()) {
        const Element& next = alternative[item.dot];
        const Item advanced{item.rule, item.alternative, item.dot + 1, item.origin};
        if (next.kind == Element::Kind::bytes) {
          if (i < bytes.size() && grammar.byte_sets[next.index].test(static_cast<uint8_t>(bytes[i])))
            sets[i + 1].add(advanced);
          continue;
        }
        const auto& predicted = grammar.rules[next.index].alternatives;
        for (uint32_t a = 0; a < predicted.size(); ++a) sets[i].add({next.index, a, 0, static_cast<uint32_t>(i)});
        if (nullable[next.index]) sets[i].add(advanced);
        continue;
      }
      // Complete: advance every item of the origin set that waited for this rule.
      ItemSet& origin = sets[item.origin];
      for (size_t w = 0; w < origin.items.size(); ++w) {
        const Item waiting = origin.items[w];
        const Alternative& waiting_body = body(waiting);
        if (waiting.dot < waiting_body.size() && waiting_body[waiting.dot].kind == Element::Kind::rule &&
            waiting_body[waiting.dot].index == item.rule)
          sets[i].add({waiting.rule, waiting.alternative, waiting.dot + 1, waiting.origin});
      }
    }
    if (sets[i].items.empty()) return false;
  }
  for (const Item& item : sets[bytes.size()].items)
    if (item.rule == grammar.root && item.origin == 0 && item.dot == body(item).size()) return true;
  return false;
}

}  // namespace sluice::grammar::testing
