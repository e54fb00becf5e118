// Repetitions (nullable bodies under an unbounded repetition) and ElementBudget; see
// repetition.h.
#include "engine/grammar/repetition.h"

#include <deque>
#include <optional>
#include <unordered_map>

namespace sluice::grammar {
namespace {

size_t rule_size(const Rule& rule) {
  size_t n = 0;
  for (const Alternative& alternative : rule.alternatives) n += alternative.size() + 1;
  return n;
}

// Rules that can match a non-empty string, assuming every rule matches something: those
// that reach a byte element through references.
std::vector<char> non_empty_capable(const GrammarBuilder& builder) {
  const size_t n = builder.num_rules();
  std::vector<std::vector<uint32_t>> referrers(n);
  std::vector<char> capable(n, 0);
  std::deque<uint32_t> queue;
  for (uint32_t r = 0; r < n; ++r)
    for (const Alternative& alternative : builder.rule(r).alternatives)
      for (const Element& e : alternative) {
        if (e.kind == Element::Kind::rule) {
          referrers[e.index].push_back(r);
        } else if (!capable[r]) {
          capable[r] = 1;
          queue.push_back(r);
        }
      }
  while (!queue.empty()) {
    const uint32_t r = queue.front();
    queue.pop_front();
    for (uint32_t referrer : referrers[r])
      if (!capable[referrer]) {
        capable[referrer] = 1;
        queue.push_back(referrer);
      }
  }
  return capable;
}

// X' for an element X: the strings of X but "". Rules are made on demand and shared.
class NonEmptyPart {
 public:
  NonEmptyPart(GrammarBuilder& builder, const std::unordered_map<uint32_t, Element>& star_bodies)
      : builder_(builder),
        star_bodies_(star_bodies),
        nullable_(nullable_rules(builder.rules())),
        capable_(non_empty_capable(builder)) {}

  bool is_nullable(const Element& e) const {
    return e.kind == Element::Kind::rule && e.index < nullable_.size() && nullable_[e.index];
  }
  bool is_capable(const Element& e) const {
    return e.kind == Element::Kind::bytes || e.index >= capable_.size() || capable_[e.index];
  }

  // nullopt when X matches only "".
  std::optional<Element> of(const Element& e) {
    if (!is_capable(e)) return std::nullopt;
    if (!is_nullable(e)) return e;
    if (auto it = made_.find(e.index); it != made_.end()) return GrammarBuilder::ref(it->second);
    const uint32_t made = builder_.add_rule(builder_.rule(e.index).name + "_nonempty");
    made_.emplace(e.index, made);
    std::vector<Alternative> alternatives;
    if (auto star = star_bodies_.find(e.index); star != star_bodies_.end()) {
      // (X*)' = X' X*
      if (auto body = of(star->second)) alternatives.push_back({*body, GrammarBuilder::ref(e.index)});
    } else {
      // (e0 e1 ... ek)' = the union over i, where e0..e(i-1) can all be "", of ei' e(i+1)..ek
      const std::vector<Alternative> original = builder_.rule(e.index).alternatives;  // a copy: add_rule reallocates
      for (const Alternative& alternative : original)
        for (size_t i = 0; i < alternative.size(); ++i) {
          if (auto first = of(alternative[i])) {
            Alternative part{*first};
            part.insert(part.end(), alternative.begin() + static_cast<std::ptrdiff_t>(i) + 1, alternative.end());
            if (part != Alternative{GrammarBuilder::ref(made)}) alternatives.push_back(std::move(part));
          }
          if (!is_nullable(alternative[i])) break;
        }
    }
    // Empty only when the grammar is left-recursive through this rule: keep the cycle
    // so that validate() reports it.
    if (alternatives.empty()) alternatives.push_back({GrammarBuilder::ref(made)});
    builder_.set_alternatives(made, std::move(alternatives));
    return GrammarBuilder::ref(made);
  }

 private:
  GrammarBuilder& builder_;
  const std::unordered_map<uint32_t, Element>& star_bodies_;
  std::vector<char> nullable_;
  std::vector<char> capable_;
  std::unordered_map<uint32_t, uint32_t> made_;
};

}  // namespace

void ElementBudget::sync(const GrammarBuilder& builder) {
  for (; seen_ < builder.num_rules(); ++seen_) {
    const size_t n = rule_size(builder.rule(static_cast<uint32_t>(seen_)));
    counted_.push_back(n);
    used_ += n;
  }
}

void ElementBudget::recount(const GrammarBuilder& builder, uint32_t rule) {
  sync(builder);
  if (rule < first_) return;
  size_t& counted = counted_[rule - first_];
  const size_t n = rule_size(builder.rule(rule));
  used_ = used_ - counted + n;
  counted = n;
}

size_t ElementBudget::repeat_cost(int min, int max) {
  const size_t body = static_cast<size_t>(min) + 2;
  return body + (max < 0 ? 4 : 4 * static_cast<size_t>(max - min));
}

uint32_t Repetitions::repeat(GrammarBuilder& builder, Element element, int min, int max, std::string_view name,
                             size_t offset) {
  const uint32_t rule = builder.repeat(element, min, max, name);
  if (max >= 0) return rule;  // a bounded chain cannot loop
  // GrammarBuilder::repeat ends the body with the star: X^min star.
  const Alternative& body = builder.rule(rule).alternatives.front();
  const uint32_t star = body.back().index;
  stars_.push_back({star, element, offset});
  return rule;
}

void Repetitions::finish(GrammarBuilder& builder, ElementBudget& budget,
                         const std::function<std::string(size_t)>& where) {
  if (stars_.empty()) return;
  std::unordered_map<uint32_t, Element> bodies;
  for (const Star& star : stars_) bodies.emplace(star.rule, star.element);
  NonEmptyPart non_empty(builder, bodies);
  for (const Star& star : stars_) {
    if (!non_empty.is_nullable(star.element)) continue;
    std::vector<Alternative> alternatives;
    if (auto part = non_empty.of(star.element)) alternatives.push_back({*part, GrammarBuilder::ref(star.rule)});
    alternatives.push_back({});
    builder.set_alternatives(star.rule, std::move(alternatives));
    budget.recount(builder, star.rule);
    if (budget.is_over())
      throw GrammarError("the grammar is over the limit of " + std::to_string(budget.limit()) + " elements",
                         where(star.offset));
  }
}

}  // namespace sluice::grammar
