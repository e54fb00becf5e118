#pragma once
// A request body parsed once into a DOM that keeps the client's key order (a tool's
// JSON schema and a response_format schema are compiled in the order they were
// written: the order of the generated object's keys follows it).
//
// nlohmann::ordered_json's own parser checks every new key against all the keys of
// its object one by one: an object of n keys costs O(n^2) (50,000 keys, 0.5 MB:
// 6 s of a prepare thread). This builder finds a repeated key through a hash index
// once an object is large, so any body parses in time linear in its size. A repeated
// key keeps its first place and takes the last value (as nlohmann::json's parser).
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sluice::proto {

using Json = nlohmann::ordered_json;

// Parses `text` into `out`. On malformed JSON returns false and sets `error` to the
// parser's message with its byte position.
bool parse_json_document(std::string_view text, Json& out, std::string& error);

}  // namespace sluice::proto
