#pragma once
// The values a chat template computes with: Python's data model, as Jinja sees it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::chat {

class Value;
class ValueDict;
struct CallArgs;

using ValueList = std::vector<Value>;

// No string a template builds may grow past this (a hostile template doubling a
// string in a loop stops here, not at the end of memory).
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;
// Nor may a list have more items than this.
inline constexpr size_t kMaxListItems = size_t{1} << 20;
// A native function or a template macro. Throws TemplateError subclasses on misuse.
using NativeFunction = std::function<Value(const CallArgs&)>;

// One value of a template: Jinja's Undefined, None, bool, int, float, str, list, dict,
// a namespace() object, or something callable. Lists, dicts and namespaces are shared
// by reference like Python objects; only a namespace may change after it is made
// (`{% set ns.x = ... %}`), as in an immutable sandbox. Cheap to copy; not thread-safe
// when a namespace is shared, which never happens across renders.
class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() = default;  // Undefined
  Value(bool b) : kind_(Kind::Bool), int_(b) {}
  Value(int i) : kind_(Kind::Int), int_(i) {}
  Value(int64_t i) : kind_(Kind::Int), int_(i) {}
  Value(size_t i) : kind_(Kind::Int), int_(static_cast<int64_t>(i)) {}
  Value(double d) : kind_(Kind::Float), float_(d) {}
  Value(std::string s) : kind_(Kind::String), str_(std::make_shared<const std::string>(std::move(s))) {}
  Value(std::string_view s) : Value(std::string(s)) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(ValueList list);
  Value(ValueDict dict);

  // An Undefined that remembers why, for the error raised when it is used.
  static Value undefined(std::string hint);
  static Value none();
  // A list that prints as a Python tuple: (1, 2). Otherwise it is a list.
  static Value tuple(ValueList items);
  static Value namespace_of(ValueDict attrs);
  static Value function(std::string name, NativeFunction fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  // int, float or bool (Python's bool is an int).
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::List && is_tuple_; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }  // also for Bool
  double as_double() const { return kind_ == Kind::Float ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return str_ ? *str_ : empty_string(); }
  const ValueList& as_list() const { return *list_; }
  const ValueDict& as_dict() const { return *dict_; }  // Dict and Namespace
  ValueDict& namespace_attrs() const { return *dict_; }
  const std::string& callable_name() const { return as_string(); }
  Value call(const CallArgs& args) const { return (*fn_)(args); }
  // Why an Undefined is undefined ("'x' is undefined").
  const std::string& undefined_hint() const { return as_string(); }

  // Python truthiness; Undefined is false.
  bool truthy() const;
  // Python's `==` (1 == 1.0 == True); Undefined equals only Undefined.
  bool equals(const Value& other) const;
  // The type name Python would print: 'str', 'dict', 'NoneType', ...
  std::string type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool is_tuple_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  static const std::string& empty_string();

  // String; the hint of an Undefined; the name of a Callable. Shared, so that copying
  // a long message's content is cheap.
  std::shared_ptr<const std::string> str_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<const NativeFunction> fn_;
};

// An insertion-ordered dict, as Python's. Keys are usually strings; lookups are
// linear, which beats hashing for the handful of keys a chat message has.
class ValueDict {
 public:
  using Entry = std::pair<Value, Value>;

  const Value* find(std::string_view key) const;
  const Value* find(const std::string& key) const { return find(std::string_view(key)); }
  const Value* find(const char* key) const { return find(std::string_view(key)); }
  const Value* find(const Value& key) const;
  // Inserts at the end, or replaces the value in place (keeping the key's position).
  void set(Value key, Value value);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// The arguments of one call: positional, then keyword (in call order).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument named `name`, or else the positional one at `index`, or Undefined.
  Value get(size_t index, std::string_view name) const;
  const Value* keyword_arg(std::string_view name) const;
};

}  // namespace sluice::chat
