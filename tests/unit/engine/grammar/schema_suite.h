#pragma once
// Test-only: the official JSON-Schema-Test-Suite (Debian json-schema-test-suite 2.0.0,
// drafts 4, 6 and 7, every file including optional/, except refRemote.json whose
// schemas need a server on localhost:1234), read once per test run: each schema
// compiled in strict mode, with objects closed by default (sluice's default) and
// open (JSON Schema's: closed_objects false), each instance in canonical compact form (see
// schema_test_support.h). The suite tests (test_json_schema_suite*.cpp) run these
// cases through the recognizer and the matcher.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/grammar/json_schema.h"
#include "tests/unit/engine/grammar/schema_test_support.h"

namespace sluice::grammar::testing {

struct SuiteInstance {
  std::string text;         // canonical compact serialization
  std::string description;  // the suite's description of the test
  bool valid = false;
};

struct SuiteCase {
  std::string keyword;  // the suite file's stem, optional/ files prefixed ("optional/format/date")
  std::string draft;    // "draft4", "draft6" or "draft7"
  std::string where;    // "draft7/items.json: a schema given for items"
  std::optional<Grammar> grammar;       // empty: the compiler refused the schema (strict)
  std::optional<Grammar> open_grammar;  // the same with JSON Schema's open objects
  std::string refusal;             // the refusal's message when refused
  std::vector<SuiteInstance> instances;
};

inline const std::filesystem::path kSchemaSuiteDir = "/usr/share/json-schema-test-suite/tests";

inline std::string suite_draft_uri(const std::string& draft) {
  return "http://json-schema.org/" +
         std::string(draft == "draft4" ? "draft-04" : draft == "draft6" ? "draft-06" : "draft-07") + "/schema#";
}

inline void read_suite_file(const std::filesystem::path& file, const std::string& keyword, const std::string& draft,
                            std::vector<SuiteCase>& out) {
  std::ifstream in(file);
  const OrderedJson groups = OrderedJson::parse(in);
  for (const OrderedJson& group : groups) {
    SuiteCase c;
    c.keyword = keyword;
    c.draft = draft;
    c.where = draft + "/" + file.filename().string() + ": " + group.at("description").get<std::string>();
    OrderedJson schema = group.at("schema");
    // The compiler learns the draft from $schema ($ref siblings are ignored before 2019).
    if (schema.is_object() && !schema.contains("$schema")) schema["$schema"] = suite_draft_uri(draft);
    try {
      c.grammar = compile_json_schema(schema.dump()).grammar;
      JsonSchemaOptions open;
      open.closed_objects = false;
      c.open_grammar = compile_json_schema(schema.dump(), open).grammar;
    } catch (const GrammarError& e) {
      c.refusal = e.what();
    }
    const CanonicalOrder order(schema, draft != "draft4");
    for (const OrderedJson& test : group.at("tests"))
      c.instances.push_back(
          {order.dump(test.at("data")), test.at("description").get<std::string>(), test.at("valid").get<bool>()});
    out.push_back(std::move(c));
  }
}

// Every case of the suite, in draft then file order; empty when the suite is not
// installed. Read and compiled once.
inline const std::vector<SuiteCase>& schema_suite() {
  static const std::vector<SuiteCase> cases = [] {
    namespace fs = std::filesystem;
    std::vector<SuiteCase> out;
    if (!fs::exists(kSchemaSuiteDir)) return out;
    for (const std::string draft : {"draft4", "draft6", "draft7"}) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::recursive_directory_iterator(kSchemaSuiteDir / draft))
        if (entry.path().extension() == ".json" && entry.path().filename() != "refRemote.json")
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const fs::path& file : files)
        read_suite_file(file, fs::relative(file, kSchemaSuiteDir / draft).replace_extension().string(), draft, out);
    }
    return out;
  }();
  return cases;
}

}  // namespace sluice::grammar::testing
