#include "proto/template_kwargs.h"

#include <nlohmann/json.hpp>

namespace sluice::proto {
namespace {

chat::Value template_value(const nlohmann::json& v) {
  using Type = nlohmann::json::value_t;
  switch (v.type()) {
    case Type::boolean: return chat::Value(v.get<bool>());
    case Type::number_integer: return chat::Value(v.get<int64_t>());
    case Type::number_unsigned: return chat::Value(static_cast<int64_t>(v.get<uint64_t>()));
    case Type::number_float: return chat::Value(v.get<double>());
    case Type::string: return chat::Value(v.get<std::string>());
    case Type::array: {
      chat::ValueList list;
      for (const auto& item : v) list.push_back(template_value(item));
      return chat::Value(std::move(list));
    }
    case Type::object: {
      chat::ValueDict dict;
      for (const auto& [key, item] : v.items()) dict.set(chat::Value(key), template_value(item));
      return chat::Value(std::move(dict));
    }
    default: return chat::Value::none();  // null (and nothing else JSON has)
  }
}

}  // namespace

void add_template_variables(const nlohmann::json& kwargs, chat::RenderOptions& options) {
  for (const auto& [key, value] : kwargs.items()) {
    std::erase_if(options.variables, [&](const auto& entry) { return entry.first == key; });
    options.variables.emplace_back(key, template_value(value));
  }
}

}  // namespace sluice::proto
