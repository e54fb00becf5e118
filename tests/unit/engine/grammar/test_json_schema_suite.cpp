// The official JSON-Schema-Test-Suite (schema_suite.h: drafts 4, 6 and 7), byte by
// byte: every schema is compiled in strict mode; where the compiler accepts it, every
// valid instance (canonical compact serialization) must be accepted and every invalid
// one rejected, since strict means every keyword is enforced. Two independent
// implementations judge each instance and must agree: the real matcher
// (CompiledGrammar over a byte-level vocabulary: accept_bytes, then is_complete) and
// the test-only Earley recognizer (schema_recognizer.h). sluice closes objects by
// default (an object schema that lists properties allows no other names unless it
// says so); the suite follows JSON Schema, whose objects are open. A valid instance
// that the default grammar refuses is counted apart ("refused by the closed
// default") and must be accepted by the open grammar (closed_objects false), the one
// difference between the two. Counts per keyword (file name) are printed for
// docs/structured-outputs.md. Token by token with real tokenizers:
// test_json_schema_suite_tokens.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "engine/grammar/matcher.h"
#include "tests/unit/engine/grammar/schema_recognizer.h"
#include "tests/unit/engine/grammar/schema_suite.h"

namespace sluice::grammar::unit_engine_grammar_test_json_schema_suite {
namespace {

struct Counts {
  int schemas = 0, compiled = 0;
  int valid = 0, valid_accepted = 0;
  int closed_out = 0;  // of the valid ones: refused by the closed default, accepted by the open grammar
  int invalid = 0, invalid_rejected = 0;
  void add(const Counts& c) {
    schemas += c.schemas, compiled += c.compiled, valid += c.valid, valid_accepted += c.valid_accepted;
    closed_out += c.closed_out, invalid += c.invalid, invalid_rejected += c.invalid_rejected;
  }
};

// 256 one-byte tokens and an EOS (id 256): the matcher judges raw bytes.
std::shared_ptr<const TokenTable> byte_table() {
  std::vector<std::string> bytes(257);
  std::vector<bool> special(257, false);
  for (int b = 0; b < 256; ++b) bytes[static_cast<size_t>(b)] = std::string(1, static_cast<char>(b));
  special[256] = true;
  return std::make_shared<const TokenTable>(std::move(bytes), std::move(special), std::vector<int32_t>{256});
}

bool matcher_accepts(const std::shared_ptr<CompiledGrammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

std::string cell(int part, int whole) { return std::to_string(part) + "/" + std::to_string(whole); }

}  // namespace

TEST_CASE("json schema: the official test suite, drafts 4, 6 and 7, matcher and recognizer") {
  const auto& suite = testing::schema_suite();
  if (suite.empty()) {
    MESSAGE("json-schema-test-suite is not installed (scripts/install-deps.sh installs it): skipped");
    return;
  }
  const auto table = byte_table();
  std::map<std::string, Counts> by_keyword;
  std::map<std::string, Counts> by_draft;
  std::string refusals;
  for (const testing::SuiteCase& c : suite) {
    Counts counts;
    ++counts.schemas;
    if (!c.grammar) {
      refusals += c.where + " -> " + c.refusal + "\n";
    } else {
      ++counts.compiled;
      const auto compiled = CompiledGrammar::compile(*c.grammar, table);
      for (const testing::SuiteInstance& instance : c.instances) {
        INFO(c.where, " | ", instance.description, " | ", instance.text);
        bool by_matcher = matcher_accepts(compiled, instance.text);
        bool by_recognizer = testing::schema_accepts(*c.grammar, instance.text);
        CHECK(by_matcher == by_recognizer);
        if (instance.valid && !by_matcher) {
          REQUIRE(c.open_grammar);
          by_matcher = matcher_accepts(CompiledGrammar::compile(*c.open_grammar, table), instance.text);
          by_recognizer = testing::schema_accepts(*c.open_grammar, instance.text);
          CHECK(by_matcher);
          CHECK(by_recognizer);
          ++counts.valid;
          counts.closed_out += by_matcher && by_recognizer;
          continue;
        }
        CHECK(by_matcher == instance.valid);
        const bool agreed = by_matcher == instance.valid && by_recognizer == instance.valid;
        if (instance.valid) {
          ++counts.valid;
          counts.valid_accepted += agreed;
        } else {
          ++counts.invalid;
          counts.invalid_rejected += agreed;
        }
      }
    }
    by_keyword[c.keyword].add(counts);
    by_draft[c.draft].add(counts);
  }
  std::ostringstream out;
  out << "\n| keyword (suite file) | schemas compiled (strict) | valid instances accepted | valid, refused by the closed default "
         "(open: accepted) | invalid instances rejected |\n"
      << "|---|---|---|---|---|\n";
  Counts total;
  for (const auto& [keyword, c] : by_keyword) {
    out << "| " << keyword << " | " << cell(c.compiled, c.schemas) << " | " << cell(c.valid_accepted, c.valid) << " | " << c.closed_out
        << " | " << cell(c.invalid_rejected, c.invalid) << " |\n";
    total.add(c);
  }
  out << "| **all** | " << cell(total.compiled, total.schemas) << " | " << cell(total.valid_accepted, total.valid)
      << " | " << total.closed_out << " | " << cell(total.invalid_rejected, total.invalid) << " |\n";
  for (const auto& [draft, c] : by_draft)
    out << "| " << draft << " | " << cell(c.compiled, c.schemas) << " | " << cell(c.valid_accepted, c.valid) << " | " << c.closed_out
        << " | " << cell(c.invalid_rejected, c.invalid) << " |\n";
  MESSAGE(out.str());
  if (std::getenv("SLUICE_SUITE_VERBOSE")) MESSAGE("refused (strict):\n" << refusals);
  CHECK(total.compiled > 0);
}

}  // namespace sluice::grammar
