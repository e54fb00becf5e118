// The official JSON-Schema-Test-Suite (Debian json-schema-test-suite 2.0.0, drafts 4,
// 6 and 7, every file including optional/, except refRemote.json whose schemas need
// a server on localhost:1234): every schema is compiled in strict mode; where the
// compiler accepts it, every valid instance (canonical compact serialization, see
// schema_test_support.h) must be accepted by the grammar and every invalid one
// rejected, since strict means every keyword is enforced. Counts per keyword (file
// name) are printed for the README.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/grammar/json_schema.h"
#include "tests/unit/engine/grammar/schema_recognizer.h"
#include "tests/unit/engine/grammar/schema_test_support.h"

namespace sluice::grammar {
namespace {

namespace fs = std::filesystem;
using testing::OrderedJson;

const fs::path kSuite = "/usr/share/json-schema-test-suite/tests";

struct Counts {
  int schemas = 0, compiled = 0;
  int valid = 0, valid_accepted = 0;
  int invalid = 0, invalid_rejected = 0;
  void add(const Counts& c) {
    schemas += c.schemas, compiled += c.compiled, valid += c.valid, valid_accepted += c.valid_accepted;
    invalid += c.invalid, invalid_rejected += c.invalid_rejected;
  }
};

std::string draft_uri(const std::string& draft) {
  return "http://json-schema.org/" + std::string(draft == "draft4" ? "draft-04" : draft == "draft6" ? "draft-06" : "draft-07") +
         "/schema#";
}

Counts run_file(const fs::path& file, const std::string& draft, std::vector<std::string>& refusals) {
  std::ifstream in(file);
  const OrderedJson groups = OrderedJson::parse(in);
  Counts counts;
  for (const OrderedJson& group : groups) {
    OrderedJson schema = group.at("schema");
    // The compiler learns the draft from $schema ($ref siblings are ignored before 2019).
    if (schema.is_object() && !schema.contains("$schema")) schema["$schema"] = draft_uri(draft);
    ++counts.schemas;
    const std::string where = draft + "/" + file.filename().string() + ": " + group.at("description").get<std::string>();
    std::optional<JsonSchemaResult> result;
    try {
      result = compile_json_schema(schema.dump());
    } catch (const GrammarError& e) {
      refusals.push_back(where + " -> " + e.what());
      continue;
    }
    ++counts.compiled;
    const testing::CanonicalOrder order(schema, draft != "draft4");
    for (const OrderedJson& test : group.at("tests")) {
      const std::string instance = order.dump(test.at("data"));
      const bool valid = test.at("valid").get<bool>();
      const bool accepted = testing::schema_accepts(result->grammar, instance);
      INFO(where, " | ", test.at("description").get<std::string>(), " | ", instance);
      if (valid) {
        ++counts.valid;
        counts.valid_accepted += accepted;
        CHECK(accepted);
      } else {
        ++counts.invalid;
        counts.invalid_rejected += !accepted;
        CHECK_FALSE(accepted);
      }
    }
  }
  return counts;
}

std::string cell(int part, int whole) { return std::to_string(part) + "/" + std::to_string(whole); }

}  // namespace

TEST_CASE("json schema: the official test suite, drafts 4, 6 and 7") {
  if (!fs::exists(kSuite)) {
    MESSAGE("json-schema-test-suite is not installed (scripts/install-deps.sh installs it): skipped");
    return;
  }
  std::map<std::string, Counts> by_keyword;  // file stem, optional/ files prefixed
  std::map<std::string, Counts> by_draft;
  std::vector<std::string> refusals;
  for (const std::string draft : {"draft4", "draft6", "draft7"}) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(kSuite / draft))
      if (entry.path().extension() == ".json" && entry.path().filename() != "refRemote.json") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::string keyword = fs::relative(file, kSuite / draft).replace_extension().string();
      const Counts counts = run_file(file, draft, refusals);
      by_keyword[keyword].add(counts);
      by_draft[draft].add(counts);
    }
  }
  std::ostringstream table;
  table << "\n| keyword (suite file) | schemas compiled (strict) | valid instances accepted | invalid instances rejected |\n"
        << "|---|---|---|---|\n";
  Counts total;
  for (const auto& [keyword, c] : by_keyword) {
    table << "| " << keyword << " | " << cell(c.compiled, c.schemas) << " | " << cell(c.valid_accepted, c.valid) << " | "
          << cell(c.invalid_rejected, c.invalid) << " |\n";
    total.add(c);
  }
  table << "| **all** | " << cell(total.compiled, total.schemas) << " | " << cell(total.valid_accepted, total.valid)
        << " | " << cell(total.invalid_rejected, total.invalid) << " |\n";
  for (const auto& [draft, c] : by_draft)
    table << "| " << draft << " | " << cell(c.compiled, c.schemas) << " | " << cell(c.valid_accepted, c.valid) << " | "
          << cell(c.invalid_rejected, c.invalid) << " |\n";
  MESSAGE(table.str());
  if (std::getenv("SLUICE_SUITE_VERBOSE")) {
    std::string all;
    for (const std::string& r : refusals) all += r + "\n";
    MESSAGE("refused (strict):\n" << all);
  }
  CHECK(total.compiled > 0);
}

}  // namespace sluice::grammar
