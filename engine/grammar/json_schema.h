#pragma once
// JSON Schema (drafts 4 to 2020-12) lowered to the byte grammar IR: the output is one
// JSON document that the schema accepts, serialized compactly (no whitespace) or,
// with any_whitespace, with JSON whitespace allowed between tokens (vLLM's option).
//
// What the grammar enforces, what is only checked after generation and what is
// refused is the table in docs/structured-outputs.md ("JSON Schema coverage"). A keyword the grammar
// cannot enforce is refused with a GrammarError naming its schema path when
// `strict`, and otherwise accepted and listed in JsonSchemaResult::unenforced.
// The interface takes JSON text so that callers need no JSON library.
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/limits.h"

namespace sluice::grammar {

struct JsonSchemaOptions {
  bool any_whitespace = false;
  bool strict = true;
  // An object schema that lists properties and says nothing of additionalProperties
  // (or patternProperties) allows no other names, as if additionalProperties were
  // false: xgrammar's default strict mode (vLLM, SGLang), and what llama.cpp's schema
  // converter does. Open, a small model wanders off into invented (and repeated) keys
  // and never writes the listed ones. `additionalProperties: true` opens an object.
  bool closed_objects = true;
  GrammarLimits limits;
};

struct JsonSchemaResult {
  Grammar grammar;
  // "/properties/url/format: format 'uri'": constraints accepted but not enforced (strict false).
  std::vector<std::string> unenforced;
};

// Throws GrammarError with where() a JSON pointer into the schema ("" for the root)
// for invalid JSON, an invalid schema, an unsupported keyword (strict), an
// unsatisfiable schema, or a limit.
JsonSchemaResult compile_json_schema(std::string_view schema_json, const JsonSchemaOptions& options = {});

// Any JSON object (OpenAI's response_format json_object).
Grammar json_object_grammar(bool any_whitespace = false);

}  // namespace sluice::grammar
