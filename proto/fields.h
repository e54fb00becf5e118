#pragma once
// Typed readers for request fields, shared by the completions, chat and tokenize
// parsers. Each reader checks one JSON value against its wire type and range and
// either stores it or returns the ApiError naming the field (`param`). An explicit
// null leaves the destination untouched: optional fields keep their default.
// Nothing here throws.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/errors.h"
#include "proto/json_document.h"

namespace sluice::proto::fields {

using Json = proto::Json;  // the client's key order kept (json_document.h)
using Error = std::optional<ApiError>;  // empty: the field was fine

// Deepest nesting of arrays and objects a request body may have: far beyond any real
// request (a tool's JSON schema nests a few dozen levels at most).
inline constexpr std::size_t kMaxJsonDepth = 256;

// Parses a request body that must be one JSON object. Malformed JSON: 400 with the
// parser's message and byte position, param null. Nesting deeper than kMaxJsonDepth:
// 400 before any parsing.
Error parse_object(std::string_view body, Json& out);

// Messages in one wording for every parser.
ApiError type_error(const std::string& param, std::string_view expected, const Json& got);
ApiError range_error(const std::string& param, const Json& got, std::string_view range);
ApiError unknown_field(const std::string& param);
ApiError missing_field(const std::string& param);
ApiError unsupported(const std::string& param, std::string_view what);

// What a parser does with an object key it does not know, at any depth of any API
// (the body's own keys, a message's, a content block's, a tool's, ...): with `strict`
// (the server's strict_request_fields) a 400 naming the key's full path
// ("messages[1].content[0].caller"); else the key is skipped and that path recorded in
// `ignored` (the server logs it at debug). Keys a current SDK sends that change nothing
// here are known by name: ignore() records them, strict or not. One policy serves a
// whole request; the readers of nested objects take it by reference.
class FieldPolicy {
 public:
  FieldPolicy(bool strict, std::vector<std::string>& ignored) : strict_(strict), ignored_(&ignored) {}

  bool strict() const { return strict_; }
  // An unknown key at `param`: the 400 when strict, else recorded and nullopt.
  Error unknown(const std::string& param) const;
  // A key known to ask for nothing: recorded (unless null) and never an error.
  template <class J>
  void ignore(const std::string& param, const J& value) const {
    if (!value.is_null()) ignored_->push_back(param);
  }
  // Every key of `object` (which sits at `param`): those in `known` are the caller's to
  // read; those in `ignored_by_name` are ignore()d; any other is unknown().
  template <class J>
  Error check_keys(const J& object, const std::string& param, std::initializer_list<std::string_view> known,
                   std::initializer_list<std::string_view> ignored_by_name = {}) const {
    for (const auto& item : object.items()) {
      // (items(), not a structured binding: clang 14, the fuzz build's, cannot capture one.)
      const std::string& key = item.key();
      const auto is = [&key](std::string_view k) { return key == k; };
      if (std::any_of(known.begin(), known.end(), is)) continue;
      if (std::any_of(ignored_by_name.begin(), ignored_by_name.end(), is)) {
        ignore(param + "." + key, item.value());
      } else if (auto e = unknown(param + "." + key)) {
        return e;
      }
    }
    return std::nullopt;
  }

 private:
  bool strict_;
  std::vector<std::string>* ignored_;
};

// Integers accept JSON integers and floats with no fractional part (16.0), as
// pydantic does for vLLM; range is inclusive.
Error read_int(const Json& v, const std::string& param, int64_t lo, int64_t hi, int64_t& out);
Error read_int32(const Json& v, const std::string& param, int64_t lo, int64_t hi, int32_t& out);
Error read_opt_int32(const Json& v, const std::string& param, int64_t lo, int64_t hi,
                     std::optional<int32_t>& out);
// A float in [lo, hi]; lo_open / hi_open exclude that end.
Error read_float(const Json& v, const std::string& param, double lo, double hi, float& out,
                 bool lo_open = false, bool hi_open = false);
Error read_bool(const Json& v, const std::string& param, bool& out);
Error read_string(const Json& v, const std::string& param, std::string& out);
Error read_opt_string(const Json& v, const std::string& param, std::optional<std::string>& out);
// Any 64-bit integer, signed or not; negative seeds wrap as in two's complement.
Error read_seed(const Json& v, const std::string& param, std::optional<uint64_t>& out);
// A stop string's length bound: the stop checker holds back that much text of
// every choice, so 64 streams with four 2 MB stop strings held 1.76 GiB.
inline constexpr size_t kMaxStopStringBytes = 1024;
// string | array of at most 4 strings; none may be empty or longer than kMaxStopStringBytes.
Error read_stop(const Json& v, const std::string& param, std::vector<std::string>& out);
// {"<token id>": bias in [-100, 100], ...}, at most max_entries of them (checked
// before any is read). Whether the ids are in the vocabulary is the engine's check.
Error read_logit_bias(const Json& v, const std::string& param, size_t max_entries,
                      std::shared_ptr<const std::map<int32_t, float>>& out);
// An array of token ids in [0, 2^31).
Error read_token_ids(const Json& v, const std::string& param, std::vector<int32_t>& out);

}  // namespace sluice::proto::fields
