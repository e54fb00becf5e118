// engine/grammar_trigger: where a lazy grammar (tool_choice auto) starts in a choice's
// output, piece by piece: anywhere triggers, the at-start trigger, and reasoning
// (quiet) spans in which nothing starts it.
#include "engine/grammar_trigger.h"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

namespace sluice::engine::unit_engine_test_grammar_trigger {
namespace {

GrammarTrigger hermes(bool thinking = false, bool starts_quiet = false) {
  GrammarTrigger trigger;
  trigger.anywhere = {"<tool_call>"};
  if (thinking) {
    trigger.quiet_open = "<think>";
    trigger.quiet_close = "</think>";
    trigger.starts_quiet = starts_quiet;
  }
  return trigger;
}

// Pushes `pieces` in order; returns the index of the piece that started the grammar
// and what it returned, or -1.
std::pair<int, std::string> run(TriggerWatch watch, const std::vector<std::string>& pieces) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (std::optional<std::string> started = watch.push(pieces[i])) return {static_cast<int>(i), *started};
  }
  return {-1, ""};
}

}  // namespace

TEST_CASE("grammar trigger: a trigger split over tokens starts the grammar at its first byte") {
  CHECK(run(TriggerWatch(hermes()), {"Let me check.", "\n<", "tool", "_call", ">\n{"}) ==
        std::pair<int, std::string>{4, "<tool_call>\n{"});
  CHECK(run(TriggerWatch(hermes()), {"<tool_call>"}) == std::pair<int, std::string>{0, "<tool_call>"});
  // Every split of one output finds the same start.
  const std::string output = "a <tool <tool_call>{\"name\"";
  for (size_t cut = 1; cut < output.size(); ++cut) {
    INFO("cut " << cut);
    auto [piece, started] = run(TriggerWatch(hermes()), {output.substr(0, cut), output.substr(cut)});
    // From the trigger's first byte to the end of the piece that completed it.
    const size_t at = output.find("<tool_call>");
    const size_t pushed = cut >= at + 11 ? cut : output.size();
    CHECK(piece == (cut >= at + 11 ? 0 : 1));
    CHECK(started == output.substr(at, pushed - at));
  }
}

TEST_CASE("grammar trigger: nothing starts it in free text or once it has started") {
  CHECK(run(TriggerWatch(hermes()), {"<tool", "call>", "tool_call", "<tool_cal"}).first == -1);
  TriggerWatch watch(hermes());
  CHECK(watch.push("<tool_call>").has_value());
  CHECK_FALSE(watch.push("<tool_call>").has_value());
}

TEST_CASE("grammar trigger: a call inside reasoning is reasoning; after it, a call starts the grammar") {
  const std::vector<std::string> thinking = {"<think>", "maybe <tool_call>{}</tool_call>", "</think>", "\n\n",
                                             "<tool_call>", "\n"};
  CHECK(run(TriggerWatch(hermes(true)), thinking) == std::pair<int, std::string>{4, "<tool_call>"});
  // The prompt opened the reasoning: the output starts inside it.
  CHECK(run(TriggerWatch(hermes(true, true)), {"hmm <tool_call>", "</thi", "nk>", "<tool_call>"}) ==
        std::pair<int, std::string>{3, "<tool_call>"});
  // Unclosed reasoning never starts it.
  CHECK(run(TriggerWatch(hermes(true)), {"<think>", "<tool_call>", "more"}).first == -1);
  // <think> after answer text is text, not reasoning: the call after it counts.
  CHECK(run(TriggerWatch(hermes(true)), {"Answer <think>", " <tool_call>"}).first == 1);
}

TEST_CASE("grammar trigger: at_start takes only the first non-whitespace text") {
  GrammarTrigger trigger;
  trigger.at_start = "{";
  CHECK(run(TriggerWatch(trigger), {" \n", " {\"na", "me\""}) == std::pair<int, std::string>{1, "{\"na"});
  CHECK(run(TriggerWatch(trigger), {"The answer is {\"x\": 1}"}).first == -1);
  CHECK(run(TriggerWatch(trigger), {"x", "{"}).first == -1);
}

}  // namespace sluice::engine
