#include "engine/chat/jinja/value.h"

namespace sluice::chat {

Value::Value(ValueList list)
    : kind_(Kind::List), list_(std::make_shared<const ValueList>(std::move(list))) {}

Value::Value(ValueDict dict) : kind_(Kind::Dict), dict_(std::make_shared<ValueDict>(std::move(dict))) {}

const std::string& Value::empty_string() {
  static const std::string empty;
  return empty;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.str_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::tuple(ValueList items) {
  Value v(std::move(items));
  v.is_tuple_ = true;
  return v;
}

Value Value::namespace_of(ValueDict attrs) {
  Value v(std::move(attrs));
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.str_ = std::make_shared<const std::string>(std::move(name));
  v.fn_ = std::make_shared<const NativeFunction>(std::move(fn));
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
    case Kind::Int:
      return int_ != 0;
    case Kind::Float:
      return float_ != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::List:
      return !list_->empty();
    case Kind::Dict:
      return !dict_->empty();
    case Kind::Namespace:
    case Kind::Callable:
      return true;
  }
  return false;
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ == Kind::Float || other.kind_ == Kind::Float) return as_double() == other.as_double();
    return int_ == other.int_;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return as_string() == other.as_string();
    case Kind::List: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals((*other.list_)[i])) return false;
      }
      return true;
    }
    case Kind::Dict: {
      if (dict_->size() != other.dict_->size()) return false;
      for (const auto& [key, value] : dict_->entries()) {
        const Value* theirs = other.dict_->find(key);
        if (theirs == nullptr || !value.equals(*theirs)) return false;
      }
      return true;
    }
    case Kind::Namespace:
      return dict_ == other.dict_;
    case Kind::Callable:
      return fn_ == other.fn_;
    default:
      return false;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "object";
}

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& entry : entries_) {
    if (entry.first.is_string() && entry.first.as_string() == key) return &entry.second;
  }
  return nullptr;
}

const Value* ValueDict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& entry : entries_) {
    if (entry.first.equals(key)) return &entry.second;
  }
  return nullptr;
}

void ValueDict::set(Value key, Value value) {
  for (auto& entry : entries_) {
    if (entry.first.equals(key)) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::keyword_arg(std::string_view name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

Value CallArgs::get(size_t index, std::string_view name) const {
  if (const Value* v = keyword_arg(name)) return *v;
  if (index < positional.size()) return positional[index];
  return Value();
}

}  // namespace sluice::chat
