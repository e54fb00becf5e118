// One construct per template (tests/fixtures/chat/snippets.json, rendered by jinja2 in
// Hugging Face's environment): output, whitespace control, statements, expressions,
// tests, filters, methods and globals must match Jinja exactly.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/jinja/evaluator.h"
#include "engine/chat/jinja/lexer.h"
#include "engine/chat/jinja/parser.h"
#include "tests/unit/engine/chat/json_to_value.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::chat::unit_engine_chat_test_chat_snippets {
namespace {

TEST_CASE("interpreter constructs match jinja2 (snippets.json)") {
  const auto path = std::filesystem::path(SLUICE_FIXTURES_DIR) / "chat" / "snippets.json";
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const auto fixture = nlohmann::ordered_json::parse(ss.str());

  ValueDict globals = global_functions();
  for (const auto& [key, value] : fixture.at("context").items()) globals.set(Value(key), testing::to_value(value));

  size_t num_cases = 0;
  for (const auto& c : fixture.at("cases")) {
    const std::string source = c.at("template").get<std::string>();
    INFO("template: " << source);
    ++num_cases;
    const Body body = parse(tokenize(source));
    if (c.contains("error")) {
      CHECK_THROWS_WITH_AS(Evaluator(globals, RenderLimits{}).render(body), c.at("error").get<std::string>().c_str(),
                           TemplateRaisedError);
      continue;
    }
    std::string rendered;
    try {
      rendered = Evaluator(globals, RenderLimits{}).render(body);
    } catch (const TemplateError& e) {
      FAIL_CHECK("render threw: " << e.what());
      continue;
    }
    CHECK(rendered == c.at("output").get<std::string>());
  }
  CHECK(num_cases >= 50);
}

}  // namespace
}  // namespace sluice::chat
