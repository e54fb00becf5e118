#pragma once
// Python's str operations on UTF-8 text, as chat templates call them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::chat::text {

// Python's str.isspace() for one code point (Unicode White_Space plus \x1c-\x1f).
bool is_space(char32_t c);
// The code points of `s` as slices of it; invalid bytes count as one character each.
std::vector<std::string_view> chars(std::string_view s);
// len() in code points.
size_t length(std::string_view s);

// str.strip / lstrip / rstrip; `chars` absent means whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / rsplit; `sep` absent splits on whitespace runs; maxsplit < 0 means all.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right);
// str.replace; count < 0 means all.
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);

// Case mappings cover ASCII only; other letters are kept as they are.
std::string lower(std::string_view s);
std::string upper(std::string_view s);
// str.capitalize: first letter upper, the rest lower.
std::string capitalize(std::string_view s);
// Jinja's title filter: each word (split at whitespace, '-', '(', '{', '[', '<') capitalized.
std::string title(std::string_view s);
// Jinja's escape filter: & < > " ' as HTML entities.
std::string html_escape(std::string_view s);

// Python's repr() of a str: single quotes unless the text has ' and no ".
std::string repr(std::string_view s);
// Python's repr() of a float: shortest round-trip digits, "1.0", "1e-05", "inf", "nan".
std::string float_repr(double d);

}  // namespace sluice::chat::text
