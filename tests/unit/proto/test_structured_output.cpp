// The structured-output fields of every dialect (proto/structured_output.h), on both
// endpoints: what each becomes, key order kept, and every refusal's param.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/chat.h"
#include "proto/completions.h"

namespace unit_proto_test_structured_output {

using namespace sluice::proto;
using Kind = sluice::grammar::GrammarSpec::Kind;

namespace {

std::string chat_body(const std::string& extra_fields) {
  return R"({"model": "m", "messages": [{"role": "user", "content": "hi"}])" +
         (extra_fields.empty() ? std::string() : ", " + extra_fields) + "}";
}

StructuredOutput chat_constraint(const std::string& extra_fields) {
  auto parsed = parse_chat_request(chat_body(extra_fields));
  if (auto* e = std::get_if<ApiError>(&parsed)) FAIL("unexpected error: ", e->message, " param ", e->param);
  const auto& req = std::get<ChatRequest>(parsed);
  REQUIRE(req.structured_output.has_value());
  return *req.structured_output;
}

ApiError chat_error(const std::string& extra_fields) {
  auto parsed = parse_chat_request(chat_body(extra_fields));
  REQUIRE(std::holds_alternative<ApiError>(parsed));
  const ApiError e = std::get<ApiError>(parsed);
  CHECK(e.status == 400);
  return e;
}

}  // namespace

TEST_CASE("structured output: OpenAI response_format") {
  auto r = parse_chat_request(chat_body(R"("response_format": {"type": "text"})"));
  CHECK_FALSE(std::get<ChatRequest>(r).structured_output.has_value());

  StructuredOutput object = chat_constraint(R"("response_format": {"type": "json_object"})");
  CHECK(object.spec.kind == Kind::json_object);
  CHECK(object.param == "response_format");

  // The schema's text keeps the client's key order: "zeta" before "alpha".
  StructuredOutput schema = chat_constraint(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
         "schema": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}})");
  CHECK(schema.spec.kind == Kind::json_schema);
  CHECK(schema.spec.strict);
  CHECK(schema.spec.text ==
        R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}})");
  // strict defaults to false, as OpenAI's does.
  CHECK_FALSE(chat_constraint(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x",
                                 "schema": {"type": "string"}}})")
                  .spec.strict);

  CHECK(chat_error(R"("response_format": {"type": "json_schema"})").param == "response_format.json_schema");
  CHECK(chat_error(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})").param ==
        "response_format.json_schema.schema");
  CHECK(chat_error(R"("response_format": {"type": "json_schema", "json_schema": {"schema": 3}})").param ==
        "response_format.json_schema.schema");
  CHECK(chat_error(R"("response_format": {"type": "yaml"})").param == "response_format.type");
  // llama-server's json_object with a schema: that schema's constraint (key order kept).
  StructuredOutput llama = chat_constraint(
      R"("response_format": {"type": "json_object", "schema": {"type": "object", "properties": {"z": {}, "a": {}}}})");
  CHECK(llama.spec.kind == Kind::json_schema);
  CHECK(llama.spec.strict);
  CHECK(llama.param == "response_format");
  CHECK(llama.spec.text == R"({"type":"object","properties":{"z":{},"a":{}}})");
  CHECK(chat_constraint(R"("response_format": {"type": "json_object", "schema": null})").spec.kind == Kind::json_object);
  CHECK(chat_error(R"("response_format": {"type": "json_object", "schema": 3})").param == "response_format.schema");
  // Other keys: unknown, so ignored (and listed) unless strict; "schema" is no key of json_schema's.
  const std::string odd = chat_body(R"("response_format": {"type": "json_schema", "schema": {},
                                       "json_schema": {"name": "x", "schema": {}, "hint": 1}})");
  auto lenient = parse_chat_request(odd);
  REQUIRE(std::holds_alternative<ChatRequest>(lenient));
  CHECK(std::get<ChatRequest>(lenient).ignored_fields ==
        std::vector<std::string>{"response_format.schema", "response_format.json_schema.hint"});
  auto strict = parse_chat_request(odd, {.strict_fields = true});
  REQUIRE(std::holds_alternative<ApiError>(strict));
  CHECK(std::get<ApiError>(strict).param == "response_format.schema");
}

TEST_CASE("structured output: vLLM structured_outputs and guided_*") {
  CHECK(chat_constraint(R"("structured_outputs": {"regex": "[a-z]+"})").spec.kind == Kind::regex);
  StructuredOutput choice = chat_constraint(R"("structured_outputs": {"choice": ["yes", "no"]})");
  CHECK(choice.spec.kind == Kind::choice);
  CHECK(choice.spec.choices == std::vector<std::string>{"yes", "no"});
  CHECK(choice.param == "structured_outputs.choice");
  StructuredOutput gbnf = chat_constraint(R"("structured_outputs": {"grammar": "root ::= \"a\""})");
  CHECK(gbnf.spec.kind == Kind::gbnf);
  CHECK(gbnf.spec.text == "root ::= \"a\"");
  StructuredOutput json = chat_constraint(R"("structured_outputs": {"json": {"type": "object", "properties":
                                             {"b": {}, "a": {}}}, "disable_any_whitespace": false})");
  CHECK(json.spec.kind == Kind::json_schema);
  CHECK(json.spec.any_whitespace);
  CHECK(json.spec.text == R"({"type":"object","properties":{"b":{},"a":{}}})");
  // A schema sent as a JSON string is kept as the client wrote it.
  CHECK(chat_constraint(R"("guided_json": "{\"type\": \"integer\"}")").spec.text == R"({"type": "integer"})");
  CHECK(chat_constraint(R"("structured_outputs": {"json_object": true})").spec.kind == Kind::json_object);
  CHECK(chat_constraint(R"("guided_regex": "\\d+")").spec.text == "\\d+");
  CHECK(chat_constraint(R"("guided_choice": ["a"])").spec.kind == Kind::choice);
  CHECK(chat_constraint(R"("guided_grammar": "root ::= [0-9]")").spec.kind == Kind::gbnf);
  CHECK(chat_constraint(R"("guided_regex": "x", "guided_decoding_backend": "xgrammar")").spec.kind == Kind::regex);

  CHECK(chat_error(R"("structured_outputs": {"regex": "a", "choice": ["b"]})").param == "structured_outputs.choice");
  CHECK(chat_error(R"("structured_outputs": {})").param == "structured_outputs");
  CHECK(chat_error(R"("structured_outputs": {"structural_tag": "x"})").param ==
        "structured_outputs.structural_tag");
  CHECK(chat_error(R"("guided_choice": [])").param == "guided_choice");
  CHECK(chat_error(R"("guided_choice": ["a", 1])").param == "guided_choice[1]");
  CHECK(chat_error(R"("guided_regex": "")").param == "guided_regex");
  CHECK(chat_error(R"("guided_json": "{not json")").param == "guided_json");
  CHECK(chat_error(R"("guided_whitespace_pattern": " *", "guided_regex": "a")").param ==
        "guided_whitespace_pattern");
}

TEST_CASE("structured output: llama-server grammar and json_schema; one constraint only") {
  CHECK(chat_constraint(R"("grammar": "root ::= \"x\"")").spec.kind == Kind::gbnf);
  StructuredOutput schema = chat_constraint(R"("json_schema": {"type": "array"})");
  CHECK(schema.spec.kind == Kind::json_schema);
  CHECK(schema.param == "json_schema");

  // The second constraint (in the order the client wrote them) is the one named.
  const ApiError both = chat_error(R"("grammar": "root ::= \"x\"", "guided_regex": "y")");
  CHECK(both.param == "guided_regex");
  CHECK(both.message.find("'grammar'") != std::string::npos);
  CHECK(chat_error(R"("response_format": {"type": "json_object"}, "json_schema": {})").param == "json_schema");
  CHECK(chat_error(R"("json_schema": {}, "response_format": {"type": "json_object"})").param == "response_format");
}

TEST_CASE("structured output: the completions endpoint takes the same fields") {
  auto parsed = parse_completion_request(
      R"({"model": "m", "prompt": "p", "response_format": {"type": "json_schema", "json_schema": {"name": "n",
          "schema": {"properties": {"y": {}, "x": {}}}}}})");
  if (auto* e = std::get_if<ApiError>(&parsed)) FAIL("unexpected error: ", e->message);
  const auto& req = std::get<CompletionRequest>(parsed);
  REQUIRE(req.structured_output.has_value());
  CHECK(req.structured_output->spec.text == R"({"properties":{"y":{},"x":{}}})");
  auto regex = parse_completion_request(R"({"model": "m", "prompt": "p", "guided_regex": "[0-9]{3}"})");
  CHECK(std::get<CompletionRequest>(regex).structured_output->spec.kind == Kind::regex);
}
}  // namespace unit_proto_test_structured_output
