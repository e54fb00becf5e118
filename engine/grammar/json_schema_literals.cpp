// enum / const: the grammar is the list of members, serialized. The other keywords
// of the schema are applied by checking each member against them here (a small
// validator over Node), so {"type": "string", "enum": [1, "a"]} emits only "a".
// A keyword this validator cannot check (pattern, format, ...) is unenforceable.
#include <cmath>

#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {
namespace {

uint8_t type_of(const Json& v) {
  if (v.is_null()) return types::null;
  if (v.is_boolean()) return types::boolean;
  if (v.is_string()) return types::string;
  if (v.is_object()) return types::object;
  if (v.is_array()) return types::array;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && std::floor(d) == d ? types::integer : types::fraction;
  }
  return types::integer;
}

class LiteralChecker {
 public:
  explicit LiteralChecker(Compiler& compiler) : compiler_(compiler) {}

  // Whether `v` satisfies `node`; keywords it cannot check go to `unchecked`.
  bool fits(const Json& v, const Node& node, int depth) {
    if (depth > compiler_.options().limits.max_depth) compiler_.fail("", "enum/const nested too deep");
    const uint8_t type = type_of(v);
    if (!(type & node.types)) return false;
    if (node.literals && std::none_of(node.literals->begin(), node.literals->end(),
                                      [&](const Json& u) { return json_equal(u, v); }))
      return false;
    for (const Unsupported& u : node.unsupported)
      if (u.types & type) unchecked.push_back(u.pointer);
    for (const Group& group : node.groups) {
      size_t matches = 0;
      for (const SchemaAt& branch : group.branches) {
        Node merged = node;
        merged.groups.clear();
        std::vector<std::string> inlining;
        compiler_.merge_schema(merged, branch, depth + 1, inlining);
        if (fits(v, merged, depth + 1)) ++matches;
      }
      if (matches == 0 || (group.one_of && matches > 1)) return false;
    }
    if (v.is_string()) {
      const uint64_t n = count_code_points(v.get_ref<const std::string&>());
      if (n < node.min_length || (node.max_length && n > *node.max_length)) return false;
      for (const auto& [pattern, pointer] : node.patterns) unchecked.push_back(pointer);
      for (const auto& [format, pointer] : node.formats) unchecked.push_back(pointer);
    } else if (v.is_number()) {
      const long double x = v.get<long double>();
      if (node.lower && (x < node.lower->value || (node.lower->exclusive && x == node.lower->value))) return false;
      if (node.upper && (x > node.upper->value || (node.upper->exclusive && x == node.upper->value))) return false;
      for (const auto& [m, pointer] : node.multiple_of) {
        const long double q = x / m;
        if (std::fabs(q - std::round(q)) > 1e-9L * std::max(1.0L, std::fabs(q))) return false;
      }
    } else if (v.is_object()) {
      return object_fits(v, node, depth);
    } else if (v.is_array()) {
      return array_fits(v, node, depth);
    }
    return true;
  }

  std::vector<std::string> unchecked;

 private:
  bool list_fits(const Json& v, const SchemaList& list, int depth) {
    return fits(v, compiler_.read_list(list, depth + 1), depth + 1);
  }

  bool object_fits(const Json& v, const Node& node, int depth) {
    if (v.size() < node.min_properties || (node.max_properties && v.size() > *node.max_properties)) return false;
    for (const std::string& name : node.required)
      if (!v.contains(name)) return false;
    for (const auto& item : v.items()) {
      const SchemaList* list = &node.additional;
      for (const auto& [name, schemas] : node.properties)
        if (name == item.key()) list = &schemas;
      if (!list_fits(item.value(), *list, depth)) return false;
    }
    return true;
  }

  bool array_fits(const Json& v, const Node& node, int depth) {
    if (v.size() < node.min_items || (node.max_items && v.size() > *node.max_items)) return false;
    for (size_t i = 0; i < v.size(); ++i)
      if (!list_fits(v[i], i < node.prefix.size() ? node.prefix[i] : node.rest, depth)) return false;
    if (!node.unique_items_pointer.empty())
      for (size_t i = 0; i < v.size(); ++i)
        for (size_t j = i + 1; j < v.size(); ++j)
          if (json_equal(v[i], v[j])) return false;
    return true;
  }

  Compiler& compiler_;
};

}  // namespace

std::optional<uint32_t> Compiler::compile_literals(const Node& node, const std::string& pointer, int depth) {
  LiteralChecker checker(*this);
  std::vector<Alternative> alternatives;
  std::vector<const Json*> kept;
  for (const Json& value : *node.literals) {
    if (!checker.fits(value, node, depth)) continue;
    if (std::any_of(kept.begin(), kept.end(), [&](const Json* k) { return json_equal(*k, value); })) continue;
    kept.push_back(&value);
    Alternative alternative;
    append_literal(value, alternative);
    alternatives.push_back(std::move(alternative));
  }
  for (const std::string& where : checker.unchecked) unenforceable(where, "a keyword checked against enum/const members");
  if (alternatives.empty()) {
    note_empty("no enum/const member satisfies the other keywords", node.literals_pointer);
    return std::nullopt;
  }
  const uint32_t rule = builder_.add_rule((pointer.empty() ? "root" : pointer) + "-literal");
  builder_.set_alternatives(rule, std::move(alternatives));
  return rule;
}

}  // namespace sluice::grammar::schema
