// StopChecker: stop strings across token boundaries, hold-back, EOS, unicode.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/stop_checker.h"

namespace sluice::engine::unit_engine_test_stop_checker {
namespace {

constexpr int32_t kEos = 2;

// Feeds pieces as tokens 10, 11, ...; returns everything shown and whether it stopped.
struct Fed {
  std::string shown;
  bool stopped = false;
  std::string matched;
};

Fed feed(StopChecker& checker, const std::vector<std::string>& pieces) {
  Fed fed;
  int32_t token = 10;
  for (const auto& piece : pieces) {
    auto r = checker.push(token++, piece);
    fed.shown += r.text;
    if (r.stopped) {
      fed.stopped = true;
      fed.matched = r.matched_stop;
      break;
    }
  }
  return fed;
}

TEST_CASE("a stop string split over three tokens is held back and never shown") {
  StopChecker checker({"STOP"}, {kEos}, false);
  auto r = checker.push(10, "ab S");
  CHECK(r.text == "ab ");
  CHECK_FALSE(r.stopped);
  CHECK(checker.num_held() == 1);
  r = checker.push(11, "TO");
  CHECK(r.text.empty());
  CHECK(checker.num_held() == 3);
  r = checker.push(12, "Pxyz");
  CHECK(r.stopped);
  CHECK(r.text.empty());
  CHECK(r.matched_stop == "STOP");
  CHECK(checker.is_stopped());
  CHECK(checker.push(13, "more").text.empty());  // nothing after a stop
}

TEST_CASE("a false start is released once it cannot be a stop string") {
  StopChecker checker({"abc"}, {kEos}, false);
  CHECK(checker.push(10, "xab").text == "x");
  CHECK(checker.push(11, "d").text == "abd");
  CHECK(checker.num_held() == 0);
}

TEST_CASE("text after the stop string inside the same token is dropped") {
  StopChecker checker({"\n\n"}, {kEos}, false);
  const Fed fed = feed(checker, {"Hello", " world.\n", "\nNext paragraph"});
  CHECK(fed.stopped);
  CHECK(fed.shown == "Hello world.");
  CHECK(fed.matched == "\n\n");
}

TEST_CASE("overlapping candidates: the earliest match wins, then the longest") {
  {
    StopChecker checker({"abcd", "bc"}, {kEos}, false);
    const Fed fed = feed(checker, {"a", "b", "c"});
    CHECK(fed.stopped);
    CHECK(fed.shown == "a");
    CHECK(fed.matched == "bc");
  }
  {
    StopChecker checker({"yz", "xyz"}, {kEos}, false);
    const Fed fed = feed(checker, {"wx", "yz"});
    CHECK(fed.matched == "xyz");
    CHECK(fed.shown == "w");
  }
  {
    StopChecker checker({"ab", "abc"}, {kEos}, false);
    const Fed fed = feed(checker, {"zabc"});
    CHECK(fed.matched == "abc");
    CHECK(fed.shown == "z");
  }
  {
    // A repeated first character: "aaab" must stop at the last "aab", showing "a".
    StopChecker checker({"aab"}, {kEos}, false);
    const Fed fed = feed(checker, {"aa", "a", "b"});
    CHECK(fed.stopped);
    CHECK(fed.shown == "a");
  }
}

TEST_CASE("the hold-back keeps the longest suffix any stop string could start with") {
  StopChecker checker({"xyz", "yzw"}, {kEos}, false);
  auto r = checker.push(10, "axy");
  CHECK(r.text == "a");
  CHECK(checker.num_held() == 2);
  r = checker.push(11, "z");  // "xyz" complete
  CHECK(r.stopped);
  CHECK(r.matched_stop == "xyz");
}

TEST_CASE("unicode stop strings and held text stay whole characters") {
  {
    StopChecker checker({"é!"}, {kEos}, false);
    auto r = checker.push(10, "café");
    CHECK(r.text == "caf");  // "é" (2 bytes) is held whole
    CHECK(checker.num_held() == 2);
    r = checker.push(11, "!");
    CHECK(r.stopped);
    CHECK(r.text.empty());
  }
  {
    StopChecker checker({"日本語"}, {kEos}, false);
    const Fed fed = feed(checker, {"日", "日本", "語です"});
    CHECK(fed.stopped);
    CHECK(fed.shown == "日");
  }
  {
    StopChecker checker({"😀x"}, {kEos}, false);
    CHECK(checker.push(10, "ab😀").text == "ab");
    CHECK(checker.push(11, "😀").text == "😀");  // the first emoji cannot start a match any more
    CHECK(checker.finish().text == "😀");
  }
}

TEST_CASE("EOS stops with no matched string and releases held text") {
  StopChecker checker({"ST"}, {kEos, 7}, false);
  CHECK(checker.push(10, "a S").text == "a ");
  auto r = checker.push(7, "");
  CHECK(r.stopped);
  CHECK(r.matched_stop.empty());
  CHECK(r.text == "S");
}

TEST_CASE("ignore_eos keeps going past EOS ids") {
  StopChecker checker({}, {kEos}, true);
  auto r = checker.push(kEos, "x");
  CHECK_FALSE(r.stopped);
  CHECK(r.text == "x");
}

TEST_CASE("finish releases held text, and still cuts at a stop completed by the last text") {
  {
    StopChecker checker({"END"}, {kEos}, false);
    CHECK(checker.push(10, "the EN").text == "the ");
    auto r = checker.finish();
    CHECK_FALSE(r.stopped);
    CHECK(r.text == "EN");
  }
  {
    StopChecker checker({"END"}, {kEos}, false);
    CHECK(checker.push(10, "the EN").text == "the ");
    auto r = checker.finish("D!");
    CHECK(r.stopped);
    CHECK(r.text.empty());
  }
}

TEST_CASE("empty stop strings are ignored") {
  StopChecker checker({"", ""}, {kEos}, false);
  auto r = checker.push(10, "abc");
  CHECK(r.text == "abc");
  CHECK_FALSE(r.stopped);
}

TEST_CASE("stop_token_ids stop even with ignore_eos, and their text is cut") {
  StopChecker checker(StopOptions{.strings = {}, .eos_ids = {kEos}, .ignore_eos = true, .token_ids = {42}, .min_tokens = 0, .include_stop_str = false});
  CHECK_FALSE(checker.push(kEos, "e").stopped);
  auto r = checker.push(42, "<x>");
  CHECK(r.stopped);
  CHECK(r.matched_stop.empty());
  CHECK(r.text.empty());
}

TEST_CASE("include_stop_str keeps the matched stop string and the stop token's text") {
  {
    StopChecker checker(StopOptions{.strings = {"END"}, .eos_ids = {}, .ignore_eos = false, .token_ids = {}, .min_tokens = 0, .include_stop_str = true});
    auto fed = feed(checker, {"the E", "ND and more"});
    CHECK(fed.stopped);
    CHECK(fed.matched == "END");
    CHECK(fed.shown == "the END");
  }
  {
    StopChecker checker(StopOptions{.strings = {}, .eos_ids = {kEos}, .ignore_eos = false, .token_ids = {}, .min_tokens = 0, .include_stop_str = true});
    auto r = checker.push(kEos, "</s>");
    CHECK(r.stopped);
    CHECK(r.text == "</s>");
  }
}

TEST_CASE("min_tokens: neither EOS, stop tokens nor stop strings stop before that many tokens") {
  StopChecker checker(StopOptions{.strings = {"X"}, .eos_ids = {kEos}, .ignore_eos = false, .token_ids = {42}, .min_tokens = 3, .include_stop_str = false});
  auto r = checker.push(kEos, "");
  CHECK_FALSE(r.stopped);
  r = checker.push(10, "aXb");  // token 2: a stop string, still too early
  CHECK_FALSE(r.stopped);
  CHECK(r.text == "aXb");
  r = checker.push(42, "");     // token 3: stop tokens count again
  CHECK(r.stopped);
}

}  // namespace
}  // namespace sluice::engine
