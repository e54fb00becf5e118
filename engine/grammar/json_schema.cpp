// JSON Schema -> grammar: the entry points, the memoized compilation of subschemas,
// the per-type dispatch of a node, anyOf/oneOf distribution and the final pruning of
// alternatives that can never finish. The keyword families live in json_schema_*.cpp.
#include "engine/grammar/json_schema.h"

#include <algorithm>
#include <utility>

#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar {
namespace schema {
namespace {

// Keys beside a $ref that never constrain a value.
constexpr std::string_view kAnnotations[] = {"$ref",     "title",    "description", "default",    "examples",
                                             "$comment", "readOnly", "writeOnly",   "deprecated", "$schema",
                                             "$defs",    "definitions"};

// A schema that is only a reference to another one.
bool is_pure_ref(const Json& schema, bool refs_override_siblings) {
  if (!schema.is_object() || !schema.contains("$ref") || !schema["$ref"].is_string()) return false;
  if (refs_override_siblings) return true;
  for (const auto& item : schema.items())
    if (std::find(std::begin(kAnnotations), std::end(kAnnotations), item.key()) == std::end(kAnnotations)) return false;
  return true;
}

std::string list_key(const SchemaList& list) {
  std::string key;
  for (const SchemaAt& at : list) key += at.pointer + '\n';
  return key;
}

}  // namespace

Compiler::Compiler(const Json& document, const JsonSchemaOptions& options) : document_(document), options_(options) {
  if (document.is_object() && document.contains("$schema") && document["$schema"].is_string()) {
    const std::string uri = document["$schema"].get<std::string>();
    for (const char* draft : {"draft-03", "draft-04", "draft-06", "draft-07"})
      if (uri.find(draft) != std::string::npos) refs_override_siblings_ = true;
  }
}

void Compiler::unenforceable(const std::string& pointer, const std::string& message) {
  if (options_.strict) throw GrammarError(message + " cannot be enforced by the grammar", pointer);
  std::string entry = pointer + ": " + message;
  if (std::find(unenforced_.begin(), unenforced_.end(), entry) == unenforced_.end()) unenforced_.push_back(entry);
}

void Compiler::fail(const std::string& pointer, const std::string& message) const {
  throw GrammarError(message, pointer);
}

void Compiler::note_empty(const std::string& why, const std::string& pointer) {
  if (why_empty_.empty() && !why.empty()) {
    why_empty_ = why;
    why_empty_pointer_ = pointer;
  }
}

void Compiler::count_expansion(const std::string& pointer) {
  if (++num_expansions_ > options_.limits.max_ref_expansions)
    fail(pointer, "more than " + std::to_string(options_.limits.max_ref_expansions) +
                      " $ref/anyOf expansions (limit max_ref_expansions)");
}

void Compiler::check_size(const std::string& pointer) {
  const size_t n = builder_.num_elements();
  if (n > options_.limits.max_elements)
    fail(pointer, "the grammar has " + std::to_string(n) + " elements, over the limit of " +
                      std::to_string(options_.limits.max_elements) + " (limit max_elements)");
}

std::optional<uint32_t> Compiler::compile_list(const SchemaList& input, int depth) {
  if (depth > options_.limits.max_depth)
    fail(input.empty() ? "" : input.front().pointer,
         "the schema is nested deeper than " + std::to_string(options_.limits.max_depth) + " (limit max_depth)");
  if (input.empty()) return any_value();
  // A schema that only refers to another one is that one: one rule per target.
  SchemaList list = input;
  if (list.size() == 1) {
    for (int hops = 0; is_pure_ref(*list[0].schema, refs_override_siblings_); ++hops) {
      const std::string& ref = (*list[0].schema)["$ref"].get_ref<const std::string&>();
      std::optional<SchemaAt> target = resolve_ref(list[0], ref);
      if (!target || hops > options_.limits.max_depth) break;  // remote, or a pure cycle: read_list says so
      count_expansion(list[0].pointer + "/$ref");
      list[0] = *target;
    }
  }
  // A list's rule is memoized by the list, or, when it contains a recursion that
  // was unrolled or cut (its rule depends on how deep it sits), by the list and depth.
  const std::string key = list_key(list);
  const std::string key_here = key + "@" + std::to_string(nesting_);
  for (const std::string* k : {&key_here, &key})
    if (auto it = done_.find(*k); it != done_.end()) return it->second;
  if (auto it = compiled_.find(key_here); it != compiled_.end()) return it->second;  // a cycle at one depth
  if (active_[key] > 0) {  // the list contains itself, one object or array deeper (or more)
    recursion_seen_ = true;
    if (nesting_ >= options_.limits.max_recursive_nesting) {
      note_empty("a recursion that does not end within " + std::to_string(options_.limits.max_recursive_nesting) +
                     " levels of nesting (limit max_recursive_nesting)",
                 list.front().pointer);
      return std::nullopt;
    }
  }
  const std::string pointer = list.empty() ? "" : list.front().pointer;
  const uint32_t rule = builder_.add_rule(pointer.empty() ? "root" : pointer);
  const bool outer_recursion_seen = std::exchange(recursion_seen_, false);
  compiled_.emplace(key_here, rule);
  ++active_[key];
  Node node = read_list(list, depth);
  std::optional<uint32_t> body = compile_node(std::move(node), pointer, depth);
  --active_[key];
  compiled_.erase(key_here);
  const std::string& memo_key = recursion_seen_ ? key_here : key;
  recursion_seen_ = recursion_seen_ || outer_recursion_seen;
  if (!body) {
    // Recursive references made meanwhile point here: a rule that matches nothing,
    // removed with them by finish().
    builder_.set_alternatives(rule, {{builder_.bytes(ByteSet{})}});
    done_.emplace(memo_key, std::nullopt);
    return std::nullopt;
  }
  builder_.set_alternatives(rule, {{GrammarBuilder::ref(*body)}});
  done_.emplace(memo_key, rule);
  return rule;
}

std::optional<uint32_t> Compiler::compile_node(Node node, const std::string& pointer, int depth) {
  if (++num_compiles_ % 16 == 0) check_size(pointer);
  if (node.types == 0) {
    note_empty(node.why_empty, node.why_empty_pointer);
    return std::nullopt;
  }
  if (!node.groups.empty()) return distribute(std::move(node), pointer, depth);
  for (const Unsupported& u : node.unsupported)
    if (u.types & node.types) unenforceable(u.pointer, u.message);
  if (node.literals) return compile_literals(node, pointer, depth);

  std::vector<Alternative> alternatives;
  if (node.types & types::null) alternatives.push_back(builder_.literal("null"));
  if (node.types & types::boolean) {
    alternatives.push_back(builder_.literal("true"));
    alternatives.push_back(builder_.literal("false"));
  }
  const auto add = [&](std::optional<uint32_t> rule) {
    if (rule) alternatives.push_back({GrammarBuilder::ref(*rule)});
  };
  if (node.types & (types::integer | types::fraction)) add(compile_numbers(node, pointer));
  if (node.types & types::string) add(compile_string(node, pointer));
  if (node.types & types::object) add(compile_object(node, pointer, depth));
  if (node.types & types::array) add(compile_array(node, pointer, depth));
  if (alternatives.empty()) return std::nullopt;
  const uint32_t rule = builder_.add_rule((pointer.empty() ? "root" : pointer) + "-value");
  builder_.set_alternatives(rule, std::move(alternatives));
  return rule;
}

namespace {

// Whether no value can match two nodes: disjoint types, disjoint literals, or a
// required property whose literals are disjoint (a discriminator).
bool disjoint(Compiler& compiler, const Node& a, const Node& b, int depth) {
  if ((a.types & b.types) == 0) return true;
  const auto literals_disjoint = [](const std::optional<std::vector<Json>>& x,
                                    const std::optional<std::vector<Json>>& y) {
    if (!x || !y) return false;
    for (const Json& u : *x)
      for (const Json& v : *y)
        if (json_equal(u, v)) return false;
    return true;
  };
  if (literals_disjoint(a.literals, b.literals)) return true;
  if ((a.types | b.types) & ~types::object) return false;
  const auto property = [](const Node& node, const std::string& name) -> const SchemaList* {
    for (const auto& [key, list] : node.properties)
      if (key == name) return &list;
    return nullptr;
  };
  for (const std::string& name : a.required) {
    if (std::find(b.required.begin(), b.required.end(), name) == b.required.end()) continue;
    const SchemaList* pa = property(a, name);
    const SchemaList* pb = property(b, name);
    if (!pa || !pb) continue;
    if (literals_disjoint(compiler.read_list(*pa, depth + 1).literals, compiler.read_list(*pb, depth + 1).literals))
      return true;
  }
  return false;
}

}  // namespace

std::optional<uint32_t> Compiler::distribute(Node node, const std::string& /*pointer*/, int depth) {
  const Group group = node.groups.front();
  node.groups.erase(node.groups.begin());
  std::vector<Node> branches;
  for (const SchemaAt& branch : group.branches) {
    count_expansion(branch.pointer);
    Node merged = node;
    std::vector<std::string> inlining;
    merge_schema(merged, branch, depth + 1, inlining);
    branches.push_back(std::move(merged));
  }
  if (group.one_of) {
    bool exclusive = true;
    for (size_t i = 0; i < branches.size() && exclusive; ++i)
      for (size_t j = i + 1; j < branches.size() && exclusive; ++j)
        if (branches[i].types && branches[j].types) exclusive = disjoint(*this, branches[i], branches[j], depth);
    if (!exclusive) unenforceable(group.pointer, "oneOf with branches that can overlap (compiled as anyOf)");
  }
  std::vector<Alternative> alternatives;
  for (size_t i = 0; i < branches.size(); ++i)
    if (auto rule = compile_node(std::move(branches[i]), group.branches[i].pointer, depth + 1))
      alternatives.push_back({GrammarBuilder::ref(*rule)});
  if (alternatives.empty()) {
    note_empty("no branch of " + std::string(group.one_of ? "oneOf" : "anyOf") + " can match", group.pointer);
    return std::nullopt;
  }
  const uint32_t rule = builder_.add_rule(group.pointer);
  builder_.set_alternatives(rule, std::move(alternatives));
  return rule;
}

JsonSchemaResult Compiler::finish(uint32_t root) {
  // A rule is productive when one of its alternatives can finish: every byte class
  // non-empty and every rule productive. Alternatives that cannot are dropped so the
  // matcher never walks into a dead end (e.g. a required recursive property).
  const size_t num_rules = builder_.num_rules();
  const Element never = builder_.bytes(ByteSet{});  // the only empty byte class
  std::vector<char> productive(num_rules, 0);
  const auto element_ok = [&](const Element& e) {
    return e.kind == Element::Kind::bytes ? e != never : productive[e.index] != 0;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < num_rules; ++r) {
      if (productive[r]) continue;
      for (const Alternative& alternative : builder_.rule(static_cast<uint32_t>(r)).alternatives)
        if (std::all_of(alternative.begin(), alternative.end(), element_ok)) {
          productive[r] = 1;
          changed = true;
          break;
        }
    }
  }
  if (!productive[root]) {
    const std::string why = why_empty_.empty() ? "" : " (" + why_empty_ + ")";
    fail(why_empty_pointer_, "the schema accepts no value" + why);
  }
  for (size_t r = 0; r < num_rules; ++r) {
    if (!productive[r]) continue;
    std::vector<Alternative> kept;
    for (const Alternative& alternative : builder_.rule(static_cast<uint32_t>(r)).alternatives)
      if (std::all_of(alternative.begin(), alternative.end(), element_ok)) kept.push_back(alternative);
    builder_.set_alternatives(static_cast<uint32_t>(r), std::move(kept));
  }
  JsonSchemaResult result;
  try {
    result.grammar = std::move(builder_).build(root, options_.limits.max_elements);
  } catch (const GrammarError& e) {
    fail("", e.what());
  }
  result.unenforced = std::move(unenforced_);
  return result;
}

SchemaAt Compiler::root_schema() const { return SchemaAt{&document_, "", root_base_}; }

}  // namespace schema

JsonSchemaResult compile_json_schema(std::string_view schema_json, const JsonSchemaOptions& options) {
  using schema::Json;
  const GrammarLimits& limits = options.limits;
  if (schema_json.size() > limits.max_input_bytes)
    throw GrammarError("the schema is " + std::to_string(schema_json.size()) + " bytes, over the limit of " +
                       std::to_string(limits.max_input_bytes) + " (limit max_input_bytes)");
  // A schema level is two JSON levels ({"properties": {"x": {...}}}).
  const int max_json_depth = 2 * limits.max_depth + 2;
  Json document;
  try {
    document = Json::parse(
        schema_json,
        [&](int depth, Json::parse_event_t, Json&) {
          if (depth > max_json_depth)
            throw GrammarError("the schema is nested deeper than " + std::to_string(limits.max_depth) +
                               " (limit max_depth)");
          return true;
        });
  } catch (const Json::exception& e) {
    throw GrammarError(std::string("the schema is not valid JSON: ") + e.what());
  }
  if (!document.is_object() && !document.is_boolean()) throw GrammarError("a schema must be an object or a boolean");
  schema::Compiler compiler(document, options);
  compiler.index_document();
  std::optional<uint32_t> root = compiler.compile_list({compiler.root_schema()}, 0);
  if (!root) {
    const std::string why = compiler.why_empty().empty() ? "" : " (" + compiler.why_empty() + ")";
    throw GrammarError("the schema accepts no value" + why, compiler.why_empty_pointer());
  }
  return compiler.finish(*root);
}

Grammar json_object_grammar(bool any_whitespace) {
  JsonSchemaOptions options;
  options.any_whitespace = any_whitespace;
  return compile_json_schema(R"({"type":"object"})", options).grammar;
}

}  // namespace sluice::grammar
