// Prompt lookup: the longest suffix found earlier proposes what followed it.
#include "engine/speculative/ngram_drafter.h"

#include <doctest/doctest.h>

#include <vector>

namespace sluice::engine::unit_engine_test_ngram_drafter {
namespace {

std::vector<int32_t> propose(const std::vector<int32_t>& tokens, int32_t min_n, int32_t max_n, int32_t k) {
  std::vector<int32_t> draft = {-1};  // proposals replace whatever was there
  propose_ngram(tokens, min_n, max_n, k, draft);
  return draft;
}

TEST_CASE("ngram: the tokens after the earlier occurrence of the suffix") {
  //                          0  1  2  3  4  5  6  7  8
  const std::vector<int32_t> t = {5, 6, 7, 8, 9, 1, 2, 6, 7};
  CHECK(propose(t, 2, 4, 3) == std::vector<int32_t>{8, 9, 1});
  CHECK(propose(t, 2, 4, 1) == std::vector<int32_t>{8});
  CHECK(propose(t, 2, 4, 10) == std::vector<int32_t>{8, 9, 1, 2, 6, 7});  // up to the end
  CHECK(propose(t, 3, 4, 3).empty());  // no 3-gram (2, 6, 7) earlier
}

TEST_CASE("ngram: longer matches win over later shorter ones; the latest of equal length with room") {
  // Suffix (1, 2, 3): a 3-gram match at 0 (followed by 40), and the 2-gram (2, 3)
  // also at 5 (followed by 50): the longer one wins.
  const std::vector<int32_t> a = {1, 2, 3, 40, 9, 2, 3, 50, 1, 2, 3};
  CHECK(propose(a, 2, 3, 1) == std::vector<int32_t>{40});
  CHECK(propose(a, 2, 2, 1) == std::vector<int32_t>{50});  // only 2-grams: the latest
  // Two equal matches: the latest.
  const std::vector<int32_t> b = {7, 8, 1, 7, 8, 2, 7, 8};
  CHECK(propose(b, 2, 2, 1) == std::vector<int32_t>{2});
}

TEST_CASE("ngram: a periodic tail proposes its continuation, overlapping itself") {
  const std::vector<int32_t> t = {4, 4, 4, 4};
  CHECK(propose(t, 2, 3, 5) == std::vector<int32_t>{4});  // match at 0 (3-gram): one token follows
  // The latest match (at 2) has only the period after it; an earlier one a whole draft.
  const std::vector<int32_t> u = {1, 2, 1, 2, 1, 2};
  CHECK(propose(u, 2, 2, 2) == std::vector<int32_t>{1, 2});
  CHECK(propose(u, 2, 2, 3) == std::vector<int32_t>{1, 2, 1});
  CHECK(propose(u, 2, 2, 9) == std::vector<int32_t>{1, 2, 1, 2});  // none has 9: the earliest
}

TEST_CASE("ngram: nothing for short or unmatched sequences") {
  CHECK(propose({}, 1, 3, 4).empty());
  CHECK(propose({3}, 1, 3, 4).empty());
  CHECK(propose({1, 2, 3, 4}, 1, 3, 4).empty());
  CHECK(propose({1, 2, 3, 1}, 1, 3, 4) == std::vector<int32_t>{2, 3, 1});
}

}  // namespace
}  // namespace sluice::engine
