#pragma once
// Test helper: JSON fixtures as template values (ordered_json keeps the key order that
// tojson must reproduce).
#include <nlohmann/json.hpp>

#include "engine/chat/jinja/value.h"

namespace sluice::chat::testing {

inline Value to_value(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList list;
      for (const auto& item : j) list.push_back(to_value(item));
      return Value(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict dict;
      for (const auto& [key, item] : j.items()) dict.set(Value(key), to_value(item));
      return Value(std::move(dict));
    }
    default: return Value();
  }
}

}  // namespace sluice::chat::testing
