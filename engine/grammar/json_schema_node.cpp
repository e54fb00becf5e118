// Reading schema keywords into a Node, and merging (allOf, $ref) by intersecting
// what each keyword allows. Subschemas of properties and items are not read here:
// they stay lists of schemas that all apply, compiled later (json_schema.cpp).
#include <algorithm>
#include <cmath>

#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {
namespace {

std::string escape_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

uint8_t type_bits(const Compiler& compiler, const Json& type, const std::string& pointer) {
  const auto one = [&](const Json& name) -> uint8_t {
    if (!name.is_string()) compiler.fail(pointer, "type must be a string or an array of strings");
    const std::string& s = name.get_ref<const std::string&>();
    if (s == "null") return types::null;
    if (s == "boolean") return types::boolean;
    if (s == "object") return types::object;
    if (s == "array") return types::array;
    if (s == "string") return types::string;
    if (s == "integer") return types::integer;
    if (s == "number") return types::integer | types::fraction;
    compiler.fail(pointer, "unknown type '" + s + "'");
  };
  if (!type.is_array()) return one(type);
  uint8_t bits = 0;
  for (const Json& name : type) bits |= one(name);
  return bits;
}

uint64_t count_value(const Compiler& compiler, const Json& value, const std::string& pointer) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d >= 0 && std::floor(d) == d) return d >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(d);
  }
  compiler.fail(pointer, "must be a non-negative integer");
}

long double number_value(const Compiler& compiler, const Json& value, const std::string& pointer) {
  if (value.is_number_unsigned()) return static_cast<long double>(value.get<uint64_t>());
  if (value.is_number_integer()) return static_cast<long double>(value.get<int64_t>());
  if (value.is_number_float()) return static_cast<long double>(value.get<double>());
  compiler.fail(pointer, "must be a number");
}

void tighten_lower(std::optional<Bound>& bound, Bound b) {
  if (!bound || b.value > bound->value || (b.value == bound->value && b.exclusive)) bound = std::move(b);
}
void tighten_upper(std::optional<Bound>& bound, Bound b) {
  if (!bound || b.value < bound->value || (b.value == bound->value && b.exclusive)) bound = std::move(b);
}

void intersect_literals(Node& node, std::vector<Json> values, const std::string& pointer) {
  if (node.literals) {
    std::vector<Json> kept;
    for (Json& v : values)
      if (std::any_of(node.literals->begin(), node.literals->end(), [&](const Json& u) { return json_equal(u, v); }))
        kept.push_back(std::move(v));
    values = std::move(kept);
  }
  node.literals = std::move(values);
  node.literals_pointer = pointer;
  if (node.literals->empty()) node.make_empty("no value of enum/const is left", pointer);
}

SchemaList list_of(Compiler& compiler, const SchemaAt& at, const Json& schema, const std::string& suffix) {
  return {compiler.child(at, schema, suffix)};
}

SchemaList concat(SchemaList a, const SchemaList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool is_trivial(const Json& schema) { return (schema.is_boolean() && schema.get<bool>()) || (schema.is_object() && schema.empty()); }

// One schema object's keywords, each with its JSON pointer (for errors and notes).
struct Keywords {
  Compiler& compiler;
  const SchemaAt& at;
  const Json* find(const char* name) const {
    auto it = at.schema->find(name);
    return it == at.schema->end() ? nullptr : &*it;
  }
  std::string key(std::string_view name) const { return at.pointer + "/" + escape_token(name); }
};

// type (with OpenAPI's nullable), enum, const: intersected.
void merge_types_and_values(Node& node, const Keywords& kw) {
  if (const Json* type = kw.find("type")) {
    uint8_t bits = type_bits(kw.compiler, *type, kw.key("type"));
    if (const Json* nullable = kw.find("nullable"); nullable && nullable->is_boolean() && nullable->get<bool>())
      bits |= types::null;
    node.types &= bits;
    if (node.types == 0) node.make_empty("no type is left", kw.key("type"));
  }
  if (const Json* values = kw.find("enum")) {
    if (!values->is_array()) kw.compiler.fail(kw.key("enum"), "enum must be an array");
    intersect_literals(node, std::vector<Json>(values->begin(), values->end()), kw.key("enum"));
  }
  if (const Json* value = kw.find("const")) intersect_literals(node, {*value}, kw.key("const"));
}

// minLength, maxLength, pattern, format; content* noted as unsupported.
void merge_string_keywords(Node& node, const Keywords& kw) {
  if (const Json* v = kw.find("minLength")) {
    const uint64_t n = count_value(kw.compiler, *v, kw.key("minLength"));
    if (n > node.min_length) node.min_length = n, node.min_length_pointer = kw.key("minLength");
  }
  if (const Json* v = kw.find("maxLength")) {
    const uint64_t n = count_value(kw.compiler, *v, kw.key("maxLength"));
    if (!node.max_length || n < *node.max_length) node.max_length = n, node.max_length_pointer = kw.key("maxLength");
  }
  if (const Json* v = kw.find("pattern")) {
    if (!v->is_string()) kw.compiler.fail(kw.key("pattern"), "pattern must be a string");
    node.patterns.emplace_back(v->get<std::string>(), kw.key("pattern"));
  }
  if (const Json* v = kw.find("format")) {
    if (!v->is_string()) kw.compiler.fail(kw.key("format"), "format must be a string");
    node.formats.emplace_back(v->get<std::string>(), kw.key("format"));
  }
  for (const char* k : {"contentEncoding", "contentMediaType", "contentSchema"})
    if (kw.find(k)) node.unsupported.push_back({kw.key(k), k, types::string});
}

// Bounds (draft 4 writes exclusiveMinimum: true beside minimum, later drafts a
// number) and multipleOf.
void merge_number_keywords(Node& node, const Keywords& kw) {
  for (const bool lower : {true, false}) {
    const char* inclusive = lower ? "minimum" : "maximum";
    const char* exclusive = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    const Json* ex = kw.find(exclusive);
    if (ex && !ex->is_boolean() && !ex->is_number()) kw.compiler.fail(kw.key(exclusive), std::string(exclusive) + " must be a number");
    std::vector<Bound> bounds;
    if (const Json* v = kw.find(inclusive)) {
      const bool flag = ex && ex->is_boolean() && ex->get<bool>();
      bounds.push_back({number_value(kw.compiler, *v, kw.key(inclusive)), flag, kw.key(flag ? exclusive : inclusive)});
    }
    if (ex && ex->is_number()) bounds.push_back({number_value(kw.compiler, *ex, kw.key(exclusive)), true, kw.key(exclusive)});
    for (Bound& b : bounds) lower ? tighten_lower(node.lower, std::move(b)) : tighten_upper(node.upper, std::move(b));
  }
  if (const Json* v = kw.find("multipleOf")) {
    const long double m = number_value(kw.compiler, *v, kw.key("multipleOf"));
    if (!(m > 0)) kw.compiler.fail(kw.key("multipleOf"), "multipleOf must be greater than 0");
    node.multiple_of.emplace_back(m, kw.key("multipleOf"));
  }
}

// properties, additionalProperties, required, min/maxProperties. A name new to the
// node is also constrained by the additionalProperties merged so far, and the names
// it had by this schema's additionalProperties.
void merge_object_keywords(Node& node, const Keywords& kw) {
  const Json* properties = kw.find("properties");
  const Json* additional = kw.find("additionalProperties");
  if (properties && !properties->is_object()) kw.compiler.fail(kw.key("properties"), "properties must be an object");
  SchemaList own_additional;
  if (properties) node.lists_properties = true;
  if (additional || kw.find("patternProperties")) node.says_other_names = true;
  if (additional) own_additional = list_of(kw.compiler, kw.at, *additional, "/additionalProperties");
  std::vector<std::string> own_names;
  if (properties)
    for (const auto& item : properties->items()) own_names.push_back(item.key());
  if (additional)
    for (auto& [name, list] : node.properties)
      if (std::find(own_names.begin(), own_names.end(), name) == own_names.end())
        list = concat(std::move(list), own_additional);
  if (properties)
    for (const auto& item : properties->items()) {
      SchemaList own = list_of(kw.compiler, kw.at, item.value(), "/properties/" + escape_token(item.key()));
      auto it = std::find_if(node.properties.begin(), node.properties.end(),
                             [&](const auto& entry) { return entry.first == item.key(); });
      if (it != node.properties.end()) it->second = concat(std::move(it->second), own);
      else node.properties.emplace_back(item.key(), concat(node.additional, own));
    }
  node.additional = concat(std::move(node.additional), own_additional);
  if (const Json* v = kw.find("required")) {
    if (!v->is_array()) kw.compiler.fail(kw.key("required"), "required must be an array of strings");
    for (const Json& name : *v) {
      if (!name.is_string()) kw.compiler.fail(kw.key("required"), "required must be an array of strings");
      if (std::find(node.required.begin(), node.required.end(), name.get<std::string>()) == node.required.end())
        node.required.push_back(name.get<std::string>());
    }
    if (!v->empty()) node.required_pointer = kw.key("required");
  }
  if (const Json* v = kw.find("minProperties")) {
    const uint64_t n = count_value(kw.compiler, *v, kw.key("minProperties"));
    if (n > node.min_properties) node.min_properties = n, node.min_properties_pointer = kw.key("minProperties");
  }
  if (const Json* v = kw.find("maxProperties")) {
    const uint64_t n = count_value(kw.compiler, *v, kw.key("maxProperties"));
    if (!node.max_properties || n < *node.max_properties)
      node.max_properties = n, node.max_properties_pointer = kw.key("maxProperties");
  }
  for (const char* k : {"patternProperties", "dependencies", "dependentRequired", "dependentSchemas"})
    if (const Json* v = kw.find(k); v && !(v->is_object() && v->empty()))
      node.unsupported.push_back({kw.key(k), k, types::object});
  for (const char* k : {"propertyNames", "unevaluatedProperties"})
    if (const Json* v = kw.find(k); v && !is_trivial(*v)) node.unsupported.push_back({kw.key(k), k, types::object});
}

// items, prefixItems (and draft 4-2019's array-form items with additionalItems),
// min/maxItems, uniqueItems, contains: position i of the prefix, and the rest, each
// intersected position-wise.
void merge_array_keywords(Node& node, const Keywords& kw) {
  const Json* items = kw.find("items");
  const Json* prefix_items = kw.find("prefixItems");
  std::vector<SchemaList> own_prefix;
  SchemaList own_rest;
  bool has_rest = false;
  if (items && items->is_array()) {  // drafts 4-2019: a tuple, additionalItems for the rest
    if (prefix_items) kw.compiler.fail(kw.key("prefixItems"), "prefixItems beside an array-form items");
    for (size_t i = 0; i < items->size(); ++i)
      own_prefix.push_back(list_of(kw.compiler, kw.at, (*items)[i], "/items/" + std::to_string(i)));
    if (const Json* rest = kw.find("additionalItems")) {
      own_rest = list_of(kw.compiler, kw.at, *rest, "/additionalItems");
      has_rest = true;
    }
  } else {
    if (prefix_items) {
      if (!prefix_items->is_array()) kw.compiler.fail(kw.key("prefixItems"), "prefixItems must be an array");
      for (size_t i = 0; i < prefix_items->size(); ++i)
        own_prefix.push_back(list_of(kw.compiler, kw.at, (*prefix_items)[i], "/prefixItems/" + std::to_string(i)));
    }
    if (items) {
      own_rest = list_of(kw.compiler, kw.at, *items, "/items");
      has_rest = true;
    }
  }
  const size_t n = std::max(node.prefix.size(), own_prefix.size());
  for (size_t i = 0; i < n; ++i) {
    if (i >= node.prefix.size()) node.prefix.push_back(node.rest);
    if (i < own_prefix.size()) node.prefix[i] = concat(std::move(node.prefix[i]), own_prefix[i]);
    else if (has_rest) node.prefix[i] = concat(std::move(node.prefix[i]), own_rest);
  }
  if (has_rest) node.rest = concat(std::move(node.rest), own_rest);
  if (const Json* v = kw.find("minItems")) {
    const uint64_t n = count_value(kw.compiler, *v, kw.key("minItems"));
    if (n > node.min_items) node.min_items = n, node.min_items_pointer = kw.key("minItems");
  }
  if (const Json* v = kw.find("maxItems")) {
    const uint64_t n = count_value(kw.compiler, *v, kw.key("maxItems"));
    if (!node.max_items || n < *node.max_items) node.max_items = n, node.max_items_pointer = kw.key("maxItems");
  }
  if (const Json* v = kw.find("uniqueItems"); v && v->is_boolean() && v->get<bool>())
    node.unique_items_pointer = kw.key("uniqueItems");
  if (const Json* v = kw.find("contains")) {
    if (v->is_boolean() && !v->get<bool>()) {
      node.types &= static_cast<uint8_t>(~types::array);  // no element can match: no array can
      if (node.types == 0) node.make_empty("contains is false", kw.key("contains"));
    } else if (is_trivial(*v)) {
      if (node.min_items < 1) node.min_items = 1, node.min_items_pointer = kw.key("contains");
    } else {
      node.unsupported.push_back({kw.key("contains"), "contains", types::array});
    }
  }
  if (const Json* v = kw.find("unevaluatedItems"); v && !is_trivial(*v))
    node.unsupported.push_back({kw.key("unevaluatedItems"), "unevaluatedItems", types::array});
}

// not (only of types has a grammar: the remaining types); if/then/else and dynamic
// references are noted as unsupported.
void merge_not_and_unsupported(Node& node, const Keywords& kw) {
  if (const Json* v = kw.find("not")) {
    // Only "not" of types (or of everything) has a grammar: the remaining types.
    const bool only_type = v->is_object() && v->contains("type") &&
                           std::all_of(v->items().begin(), v->items().end(), [](const auto& item) {
                             return item.key() == "type" || item.key() == "title" || item.key() == "description";
                           });
    if (v->is_boolean() ? v->get<bool>() : v->empty()) {
      node.make_empty("not of a schema that accepts everything", kw.key("not"));
    } else if (only_type) {
      node.types &= static_cast<uint8_t>(~type_bits(kw.compiler, (*v)["type"], kw.key("not") + "/type"));
      if (node.types == 0) node.make_empty("no type is left", kw.key("not"));
    } else if (!v->is_boolean()) {
      node.unsupported.push_back({kw.key("not"), "not", types::all});
    }
  }
  if (kw.find("if") && (kw.find("then") || kw.find("else"))) node.unsupported.push_back({kw.key("if"), "if/then/else", types::all});
  for (const char* k : {"$recursiveRef", "$dynamicRef"})
    if (kw.find(k)) node.unsupported.push_back({kw.key(k), k, types::all});
}

}  // namespace

Node Compiler::read_list(const SchemaList& list, int depth) {
  Node node;
  for (const SchemaAt& at : list) {
    std::vector<std::string> inlining;
    merge_schema(node, at, depth, inlining);
  }
  return node;
}

void Compiler::merge_schema(Node& node, const SchemaAt& at, int depth, std::vector<std::string>& inlining) {
  const Json& s = *at.schema;
  const std::string& p = at.pointer;
  if (depth > options_.limits.max_depth)
    fail(p, "the schema is nested deeper than " + std::to_string(options_.limits.max_depth) + " (limit max_depth)");
  if (s.is_boolean()) {
    if (!s.get<bool>()) node.make_empty("the schema is false", p);
    return;
  }
  if (!s.is_object()) fail(p, "a schema must be an object or a boolean");

  if (auto it = s.find("$ref"); it != s.end()) {
    if (!it->is_string()) fail(p + "/$ref", "$ref must be a string");
    std::optional<SchemaAt> target = resolve_ref(at, it->get<std::string>());
    if (!target) {
      unenforceable(p + "/$ref", "remote $ref '" + it->get<std::string>() + "'");
    } else if (std::find(inlining.begin(), inlining.end(), target->pointer) == inlining.end()) {
      // A schema already being merged adds nothing (A and A is A).
      count_expansion(p + "/$ref");
      inlining.push_back(target->pointer);
      merge_schema(node, *target, depth + 1, inlining);
      inlining.pop_back();
    }
    if (refs_override_siblings_) return;
  }
  const Keywords kw{*this, at};
  merge_types_and_values(node, kw);
  merge_string_keywords(node, kw);
  merge_number_keywords(node, kw);
  merge_object_keywords(node, kw);
  merge_array_keywords(node, kw);

  // combinations: allOf merged here, anyOf/oneOf kept as groups (one branch: merged)
  if (const Json* all = kw.find("allOf")) {
    if (!all->is_array() || all->empty()) fail(kw.key("allOf"), "allOf must be a non-empty array");
    for (size_t i = 0; i < all->size(); ++i) {
      count_expansion(kw.key("allOf"));
      merge_schema(node, child(at, (*all)[i], "/allOf/" + std::to_string(i)), depth + 1, inlining);
    }
  }
  for (const char* k : {"anyOf", "oneOf"}) {
    const Json* v = kw.find(k);
    if (!v) continue;
    if (!v->is_array() || v->empty()) fail(kw.key(k), std::string(k) + " must be a non-empty array");
    Group group{{}, std::string_view(k) == "oneOf", kw.key(k)};
    for (size_t i = 0; i < v->size(); ++i) {
      std::string suffix = std::string(1, '/').append(k).append("/").append(std::to_string(i));
      group.branches.push_back(child(at, (*v)[i], suffix));
    }
    if (group.branches.size() == 1) merge_schema(node, group.branches[0], depth + 1, inlining);
    else node.groups.push_back(std::move(group));
  }
  merge_not_and_unsupported(node, kw);
}

}  // namespace sluice::grammar::schema
