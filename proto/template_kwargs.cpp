#include "proto/template_kwargs.h"

#include <nlohmann/json.hpp>

namespace sluice::proto {
namespace {

template <class Json>
chat::Value to_value(const Json& v) {
  using Type = nlohmann::json::value_t;
  switch (v.type()) {
    case Type::boolean: return chat::Value(v.template get<bool>());
    case Type::number_integer: return chat::Value(v.template get<int64_t>());
    case Type::number_unsigned: return chat::Value(static_cast<int64_t>(v.template get<uint64_t>()));
    case Type::number_float: return chat::Value(v.template get<double>());
    case Type::string: return chat::Value(v.template get<std::string>());
    case Type::array: {
      chat::ValueList list;
      for (const auto& item : v) list.push_back(to_value(item));
      return chat::Value(std::move(list));
    }
    case Type::object: {
      chat::ValueDict dict;
      for (const auto& [key, item] : v.items()) dict.set(chat::Value(key), to_value(item));
      return chat::Value(std::move(dict));
    }
    default: return chat::Value::none();  // null (and nothing else JSON has)
  }
}

}  // namespace

chat::Value template_value(const nlohmann::json& value) { return to_value(value); }
chat::Value template_value(const nlohmann::ordered_json& value) { return to_value(value); }

void add_template_variables(const nlohmann::ordered_json& kwargs, chat::RenderOptions& options) {
  for (const auto& [key, value] : kwargs.items()) {
    std::erase_if(options.variables, [&](const auto& entry) { return entry.first == key; });
    options.variables.emplace_back(key, template_value(value));
  }
}

}  // namespace sluice::proto
