#pragma once
// The filters, tests, methods and global functions templates can call.
#include <string_view>

#include "engine/chat/jinja/value.h"

namespace sluice::chat {

// A filter gets the value before `|` and its arguments; throws BuiltinError on misuse.
using FilterFn = Value (*)(const Value& subject, const CallArgs& args);
// A test gets the value before `is` and its arguments.
using TestFn = bool (*)(const Value& subject, const CallArgs& args);

// nullptr when the name is not a supported filter / test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// `object.name` for a str or dict method (startswith, split, items, get, ...): the
// method bound to `object`, or Undefined when there is no such method. Methods that
// would change a list or dict are refused (BuiltinError), as in Jinja's immutable
// sandbox.
Value find_method(const Value& object, std::string_view name);

// The global functions of Hugging Face's template environment: range, namespace, dict,
// raise_exception, strftime_now.
ValueDict global_functions();

// Shared with the evaluator: Python's `a < b` (and friends) for numbers, strings and
// lists; throws BuiltinError for other types.
int compare_values(const Value& a, const Value& b);
// Iterating a value as Jinja's for loop does: list items, dict keys, str characters;
// Undefined iterates as empty. Throws BuiltinError for other types.
ValueList iterate(const Value& v);
// len() / the length filter.
int64_t length_of(const Value& v);

}  // namespace sluice::chat
