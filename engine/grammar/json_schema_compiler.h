#pragma once
// Internal to the JSON Schema front end (json_schema*.cpp, one file per keyword
// family): the compiler's state and the normalized form of a schema ("Node") that the
// families share. Not a public interface: nothing outside engine/grammar includes it.
//
// How a schema is compiled:
//  1. A schema object (and every schema allOf/$ref brings in) is read into a Node:
//     its keywords per type (strings, numbers, objects, arrays), with the subschemas
//     of properties and items kept as lists of schemas that all apply (SchemaList),
//     compiled later and lazily. Reading a $ref inlines its target; allOf merges.
//  2. anyOf/oneOf groups are distributed: each branch is merged into the rest of the
//     node and compiled on its own, the results are alternatives.
//  3. The node becomes one rule: an alternative per allowed type, or the serialized
//     literals of enum/const filtered by the other keywords.
// A SchemaList is compiled once per distinct list (memoized by its pointers), so a
// referenced schema becomes one rule. Recursion through $ref is unrolled: a list met
// again inside itself, deeper by objects/arrays, is compiled anew at that depth, until
// limits.max_recursive_nesting, where it admits no value; the lists that contain such
// a recursion are memoized per depth (nesting_).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/json_schema.h"

namespace sluice::grammar::schema {

// Ordered: properties keep the order of the schema, which is the order of the output.
using Json = nlohmann::ordered_json;

// One subschema in the document: where it is (a JSON pointer from the root, for
// messages and memoization) and the base URI that its $ref values resolve against.
struct SchemaAt {
  const Json* schema = nullptr;
  std::string pointer;
  std::string base;
};
using SchemaList = std::vector<SchemaAt>;  // all of them apply (an allOf); empty = any value

namespace types {
constexpr uint8_t null = 1, boolean = 2, object = 4, array = 8, string = 16;
constexpr uint8_t integer = 32;   // numbers with no fractional part
constexpr uint8_t fraction = 64;  // every other number ("number" is integer | fraction)
constexpr uint8_t all = 127;
}  // namespace types

struct Bound {
  long double value = 0;
  bool exclusive = false;
  std::string pointer;
};

// A keyword that the grammar cannot express, concerning values of `types`: refused
// (strict) or listed as unenforced when such values are possible.
struct Unsupported {
  std::string pointer;
  std::string message;
  uint8_t types = types::all;
};

struct Group {  // anyOf / oneOf: at least (exactly) one branch applies
  SchemaList branches;
  bool one_of = false;
  std::string pointer;
};

struct Node {
  uint8_t types = types::all;
  std::string why_empty;  // set when a keyword made the node unsatisfiable
  std::string why_empty_pointer;
  std::optional<std::vector<Json>> literals;  // enum / const, intersected
  std::string literals_pointer;

  // strings
  uint64_t min_length = 0;
  std::optional<uint64_t> max_length;
  std::string min_length_pointer, max_length_pointer;
  std::vector<std::pair<std::string, std::string>> patterns;  // (pattern, pointer)
  std::vector<std::pair<std::string, std::string>> formats;   // (format, pointer)

  // numbers
  std::optional<Bound> lower, upper;
  std::vector<std::pair<long double, std::string>> multiple_of;

  // objects
  std::vector<std::pair<std::string, SchemaList>> properties;
  std::vector<std::string> required;
  std::string required_pointer;
  SchemaList additional;  // applies to every name not in `properties`
  // Closed by default (JsonSchemaOptions::closed_objects): a merged schema lists
  // properties and none says anything of other names (additionalProperties,
  // patternProperties). Decided on the merged node, so allOf parts and anyOf branches
  // close over each other's names.
  bool lists_properties = false;
  bool says_other_names = false;
  uint64_t min_properties = 0;
  std::optional<uint64_t> max_properties;
  std::string min_properties_pointer, max_properties_pointer;

  // arrays
  std::vector<SchemaList> prefix;  // position i
  SchemaList rest;                 // positions after the prefix
  uint64_t min_items = 0;
  std::optional<uint64_t> max_items;
  std::string min_items_pointer, max_items_pointer;
  std::string unique_items_pointer;  // non-empty: uniqueItems true

  std::vector<Group> groups;
  std::vector<Unsupported> unsupported;

  void make_empty(std::string why, std::string pointer) {
    types = 0;
    if (why_empty.empty()) {
      why_empty = std::move(why);
      why_empty_pointer = std::move(pointer);
    }
  }
};

class Compiler {
 public:
  Compiler(const Json& document, const JsonSchemaOptions& options);

  // The rule of a value matching every schema of `list`; nullopt when no value does.
  std::optional<uint32_t> compile_list(const SchemaList& list, int depth);
  // The grammar, rooted at `root`, with alternatives that can never finish removed.
  JsonSchemaResult finish(uint32_t root);

  SchemaAt root_schema() const;
  GrammarBuilder& builder() { return builder_; }
  const std::string& why_empty() const { return why_empty_; }
  const std::string& why_empty_pointer() const { return why_empty_pointer_; }

  // ---- reading (json_schema_node.cpp)
  Node read_list(const SchemaList& list, int depth);
  void merge_schema(Node& node, const SchemaAt& at, int depth, std::vector<std::string>& inlining);

  // ---- $ref (json_schema_refs.cpp)
  void index_document();
  // The schema `ref` names, read from `from`; nullopt for a reference to another
  // document (remote), which the caller reports as unsupported.
  std::optional<SchemaAt> resolve_ref(const SchemaAt& from, const std::string& ref);
  // `schema`, found at parent.pointer + suffix ("/properties/a"), under its own $id.
  SchemaAt child(const SchemaAt& parent, const Json& schema, std::string_view suffix) const;

  // ---- shared pieces of JSON (json_schema_values.cpp)
  Alternative& ws(Alternative& out);  // optional whitespace between tokens (any_whitespace)
  Alternative token(std::string_view text);  // a punctuation literal
  uint32_t any_value();
  uint32_t any_string();
  uint32_t string_char();  // one character of string content (a code point or an escape)
  uint32_t number();
  std::optional<uint32_t> compile_literals(const Node& node, const std::string& pointer, int depth);
  void append_literal(const Json& value, Alternative& out);

  // ---- per type (json_schema_numbers.cpp, json_schema_strings.cpp, json_schema_containers.cpp)
  std::optional<uint32_t> compile_numbers(const Node& node, const std::string& pointer);
  std::optional<uint32_t> compile_string(const Node& node, const std::string& pointer);
  std::optional<uint32_t> compile_object(const Node& node, const std::string& pointer, int depth);
  std::optional<uint32_t> compile_array(const Node& node, const std::string& pointer, int depth);
  // One level of nesting, held while an object's or array's members are compiled.
  class Nest {
   public:
    explicit Nest(Compiler& c) : c_(c) { ++c_.nesting_; }
    ~Nest() { --c_.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Compiler& c_;
  };
  uint32_t integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi, std::string_view name);
  std::optional<uint32_t> format_rule(const std::string& format);

  // A keyword the grammar cannot express: GrammarError when strict, else noted.
  void unenforceable(const std::string& pointer, const std::string& message);
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const;
  void note_empty(const std::string& why, const std::string& pointer);
  void count_expansion(const std::string& pointer);
  void check_size(const std::string& pointer);
  const JsonSchemaOptions& options() const { return options_; }
  bool refs_override_siblings() const { return refs_override_siblings_; }

 private:
  std::optional<uint32_t> compile_node(Node node, const std::string& pointer, int depth);
  std::optional<uint32_t> distribute(Node node, const std::string& pointer, int depth);

  const Json& document_;
  const JsonSchemaOptions& options_;
  GrammarBuilder builder_;
  bool refs_override_siblings_ = false;  // drafts 4-7: a $ref's siblings are ignored
  size_t num_expansions_ = 0;
  size_t num_compiles_ = 0;
  std::vector<std::string> unenforced_;
  std::string why_empty_, why_empty_pointer_;
  std::unordered_map<std::string, uint32_t> compiled_;  // SchemaList key -> rule
  std::unordered_map<std::string, std::optional<uint32_t>> done_;
  std::unordered_map<std::string, int> active_;  // SchemaList key -> its compilations in progress
  bool recursion_seen_ = false;  // the compilation in progress met a recursion (unrolled or cut)
  int nesting_ = 0;              // objects and arrays around the value being compiled
  // $ref targets: absolute URI (with "#anchor" for anchors) -> (pointer, base)
  std::map<std::string, std::pair<std::string, std::string>> ids_;
  std::string root_base_;
  // shared rules, made on first use
  std::optional<uint32_t> ws_, any_value_, any_string_, string_char_, number_;
  std::map<std::string, uint32_t> formats_;
};

// Code points of a JSON string value (UTF-8), for length checks on literals.
uint64_t count_code_points(std::string_view text);
// Equality of JSON values as JSON Schema defines it (numbers by value, objects unordered).
bool json_equal(const Json& a, const Json& b);
// The compact serialization the grammar emits: numbers with an integral value as
// integers (every digit: 1e20 -> 100000000000000000000), others as the shortest
// round-trip decimal; object members in their order.
std::string canonical_dump(const Json& value);

}  // namespace sluice::grammar::schema
