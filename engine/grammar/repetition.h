#pragma once
// Repetition for the text front ends (GBNF, regex): GrammarBuilder::repeat plus the
// two things a front end must add around it.
//
// 1. A body that can match "" under an unbounded repetition ((a?)*, (a|)+, (b*)* in
//    a regex; ("x"?)* in GBNF). GrammarBuilder::repeat lowers X* to
//    star ::= X star | "", which is left-recursive when X is nullable, and
//    Grammar::validate refuses it (llama.cpp refuses such grammars too). A string of
//    X's is also a string of non-empty X's, so finish() rewrites such a star to repeat
//    X's non-empty part: star ::= X' star | "". It runs once every rule is defined,
//    because GBNF refers to rules before defining them.
// 2. A bound on the size of what is built (ElementBudget), so that nested bounded
//    repetitions cannot build past GrammarLimits::max_elements before validate() sees.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar_builder.h"

namespace sluice::grammar {

// Counts the elements a front end has added to a builder without rescanning the whole
// grammar each time. A rule is counted when first seen by sync(); a rule whose
// alternatives are set later (a GBNF rule referred to before its definition) is
// recounted with recount().
class ElementBudget {
 public:
  ElementBudget(const GrammarBuilder& builder, size_t limit)
      : first_(builder.num_rules()), seen_(first_), limit_(limit) {}

  void sync(const GrammarBuilder& builder);
  void recount(const GrammarBuilder& builder, uint32_t rule);
  bool is_over() const { return used_ > limit_; }
  bool can_add(size_t more) const { return used_ + more <= limit_; }
  size_t limit() const { return limit_; }
  // An upper bound on what GrammarBuilder::repeat(element, min, max) adds.
  static size_t repeat_cost(int min, int max);

 private:
  size_t first_;                 // rules before this one are not ours to count
  size_t seen_;                  // rules before this one are counted
  size_t limit_;
  size_t used_ = 0;
  std::vector<size_t> counted_;  // elements counted per rule, from first_
};

class Repetitions {
 public:
  // GrammarBuilder::repeat, remembering an unbounded repetition for finish(). `offset`
  // is where the repetition is in the input, for an error finish() throws about it.
  uint32_t repeat(GrammarBuilder& builder, Element element, int min, int max, std::string_view name,
                  size_t offset);

  // Rewrites the unbounded repetitions whose body can match "" (see above). Throws
  // GrammarError, with where() from `where(offset)`, when the rewriting would take the
  // grammar past budget's limit.
  void finish(GrammarBuilder& builder, ElementBudget& budget, const std::function<std::string(size_t)>& where);

 private:
  struct Star {
    uint32_t rule;  // star ::= element star | ""
    Element element;
    size_t offset;
  };
  std::vector<Star> stars_;
};

}  // namespace sluice::grammar
