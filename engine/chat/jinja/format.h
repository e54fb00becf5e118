#pragma once
// Values as text: Python's str() and repr(), and json.dumps as Hugging Face's tojson calls it.
#include <optional>
#include <string>

#include "engine/chat/jinja/value.h"

namespace sluice::chat {

// What `{{ value }}` prints: Python's str(); Undefined prints nothing.
std::string to_str(const Value& value);
// Python's repr(): strings quoted, as inside a printed list.
std::string to_repr(const Value& value);

struct JsonOptions {
  // Spaces per level; absent prints on one line with ", " and ": " between items.
  std::optional<int> indent;
  std::optional<std::string> indent_text;  // a string indent ("\t") instead of spaces
  std::string item_separator;              // empty: the default for the indent mode
  std::string key_separator;               // empty: ": "
  bool sort_keys = false;
};

// json.dumps(value, ensure_ascii=False, ...): non-ASCII text as is, floats as Python's
// repr. Throws BuiltinError on Undefined or a callable (not serializable).
std::string to_json(const Value& value, const JsonOptions& options = {});

}  // namespace sluice::chat
