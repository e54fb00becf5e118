#pragma once
// The request fields that constrain the output's shape, from every API dialect that
// clients send, into one grammar::GrammarSpec:
//   OpenAI      response_format: {type: json_object} | {type: json_schema,
//               json_schema: {name, schema, strict, description}} ({type: text}: none);
//               llama-server's {type: json_object, schema} is that schema's constraint
//   vLLM        structured_outputs: {json | regex | choice | grammar | json_object,
//               disable_any_whitespace}, and the older guided_json / guided_regex /
//               guided_choice / guided_grammar (guided_decoding_backend is ignored)
//   llama.cpp   grammar (GBNF text), json_schema (a schema object)
// At most one constraint per request: a second is refused naming it.
#include <optional>
#include <string>
#include <vector>

#include "engine/grammar/grammar_spec.h"
#include "proto/fields.h"

namespace sluice::proto {

struct StructuredOutput {
  grammar::GrammarSpec spec;
  std::string param;  // the field it came from, for errors ("response_format", "guided_regex", ...)
};

// Applies one body key if it is a structured-output field; sets `handled` when it
// was one. `out` holds what an earlier key asked for. Unknown keys inside
// response_format go to `policy`.
fields::Error apply_structured_output_field(const std::string& key, const fields::Json& value,
                                            std::optional<StructuredOutput>& out, bool& handled,
                                            const fields::FieldPolicy& policy);

}  // namespace sluice::proto
