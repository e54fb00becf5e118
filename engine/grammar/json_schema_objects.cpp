// Objects: the listed properties (properties, then required names that properties
// does not list) in schema order, required ones present, optional ones skippable,
// and, unless additionalProperties is false or the object is closed by default,
// other names interleaved anywhere.
//
// Ordered optional properties without a blow-up: a chain of rules per position i,
//   first[i]: nothing emitted yet, so no comma before the next member;
//   rest[i]:  something emitted, so each member comes after a comma;
// each with an alternative that emits property i and moves to i+1, and, when i is
// optional, one that skips it: 4 rules per property. Additional members are emitted
// only before skipping (in first/rest, not in the skip rules), so every object has
// one parse. A key that is not listed is a string that differs from every listed
// name: a trie over the names' bytes, left at a character boundary.
#include <map>

#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {
namespace {

struct TrieNode {
  std::map<uint8_t, size_t> children;
  bool terminal = false;
  bool boundary = true;  // between characters (not inside a UTF-8 sequence or an escape)
};

// The characters of escaped string content: a UTF-8 sequence or an escape each.
std::vector<std::string> characters(std::string_view content) {
  std::vector<std::string> out;
  for (size_t i = 0; i < content.size();) {
    const auto lead = static_cast<uint8_t>(content[i]);
    size_t n = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (content[i] == '\\') n = i + 1 < content.size() && content[i + 1] == 'u' ? 6 : 2;
    out.emplace_back(content.substr(i, n));
    i += n;
  }
  return out;
}

// The code points whose UTF-8 encoding starts with `lead`.
CodepointRange lead_range(uint8_t lead) {
  if (lead < 0x80) return {lead, lead};
  if (lead < 0xE0) return {static_cast<uint32_t>(lead & 0x1F) << 6, (static_cast<uint32_t>(lead & 0x1F) << 6) + 0x3F};
  if (lead < 0xF0) return {static_cast<uint32_t>(lead & 0x0F) << 12, (static_cast<uint32_t>(lead & 0x0F) << 12) + 0xFFF};
  return {static_cast<uint32_t>(lead & 0x07) << 18, (static_cast<uint32_t>(lead & 0x07) << 18) + 0x3FFFF};
}

}  // namespace

namespace {

// String content other than the listed names (escaped as the grammar emits them).
uint32_t other_name_content(Compiler& c, const std::vector<std::string>& names) {
  GrammarBuilder& b = c.builder();
  std::vector<TrieNode> trie(1);
  for (const std::string& name : names) {
    size_t at = 0;
    for (const std::string& ch : characters(name))
      for (size_t k = 0; k < ch.size(); ++k) {
        const auto byte = static_cast<uint8_t>(ch[k]);
        auto it = trie[at].children.find(byte);
        if (it == trie[at].children.end()) {
          trie.emplace_back();
          trie.back().boundary = k + 1 == ch.size();
          it = trie[at].children.emplace(byte, trie.size() - 1).first;
        }
        at = it->second;
      }
    trie[at].terminal = true;
  }
  const uint32_t free = b.repeat(GrammarBuilder::ref(c.string_char()), 0, -1, "other-name-free");
  const Rule& char_rule = b.rule(c.string_char());
  const std::vector<Alternative> escapes(char_rule.alternatives.begin() + 1, char_rule.alternatives.end());
  std::map<std::string, uint32_t> diverge_by_set;  // first bytes to avoid -> rule
  std::vector<uint32_t> rules(trie.size());
  for (size_t i = 0; i < trie.size(); ++i) rules[i] = b.add_rule("other-name");
  for (size_t i = 0; i < trie.size(); ++i) {
    const TrieNode& node = trie[i];
    std::vector<Alternative> alternatives;
    if (!node.terminal && node.boundary) alternatives.push_back({});
    for (const auto& [byte, next] : node.children) alternatives.push_back({b.byte(byte), GrammarBuilder::ref(rules[next])});
    if (node.boundary) {  // a character that no name has here, then anything
      std::string key;
      std::vector<CodepointRange> avoid{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      for (const auto& [byte, next] : node.children) {
        key += static_cast<char>(byte);
        if (byte != '\\') avoid.push_back(lead_range(byte));
      }
      auto it = diverge_by_set.find(key);
      if (it == diverge_by_set.end()) {
        const uint32_t plain = b.codepoints(avoid, true, "other-name-char");
        std::vector<Alternative> diverge{{GrammarBuilder::ref(plain)}};
        if (!node.children.contains('\\')) diverge.insert(diverge.end(), escapes.begin(), escapes.end());
        const uint32_t rule = b.add_rule("other-name-diverge");
        b.set_alternatives(rule, std::move(diverge));
        it = diverge_by_set.emplace(key, rule).first;
      }
      alternatives.push_back({GrammarBuilder::ref(it->second), GrammarBuilder::ref(free)});
    }
    b.set_alternatives(rules[i], std::move(alternatives));
  }
  return rules[0];
}

}  // namespace

std::optional<uint32_t> Compiler::compile_object(const Node& node, const std::string& pointer, int depth) {
  const Nest inside(*this);
  struct Member {
    std::string name;
    uint32_t value;
    bool required;
  };
  std::vector<Member> members;
  std::vector<std::string> names;  // every listed name, escaped, kept or not
  const auto is_required = [&](const std::string& name) {
    return std::find(node.required.begin(), node.required.end(), name) != node.required.end();
  };
  const auto add_member = [&](const std::string& name, const SchemaList& list, const std::string& where) {
    const std::string escaped = Json(name).dump();
    names.push_back(escaped.substr(1, escaped.size() - 2));
    std::optional<uint32_t> value = compile_list(list, depth + 1);
    if (value) members.push_back({name, *value, is_required(name)});
    else if (is_required(name)) note_empty("the required property '" + name + "' can have no value", where);
    return value.has_value() || !is_required(name);
  };
  for (const auto& [name, list] : node.properties)
    if (!add_member(name, list, pointer + "/properties/" + name)) return std::nullopt;
  for (const std::string& name : node.required)
    if (std::none_of(node.properties.begin(), node.properties.end(), [&](const auto& p) { return p.first == name; }))
      if (!add_member(name, node.additional, node.required_pointer)) return std::nullopt;
  // Closed by default: no other names (a required name that no properties lists is
  // named by the schema, so it is a member above, with any value).
  const bool closed = options().closed_objects && node.lists_properties && !node.says_other_names;
  const std::optional<uint32_t> additional = closed ? std::nullopt : compile_list(node.additional, depth + 1);

  // minProperties / maxProperties: only where the listed members already decide them.
  size_t num_required = 0;
  for (const Member& m : members) num_required += m.required;
  const uint64_t most = additional ? UINT64_MAX : members.size();
  if (node.min_properties > num_required) {
    if (node.min_properties > most) {
      note_empty("minProperties is more than the properties allowed", node.min_properties_pointer);
      return std::nullopt;
    }
    unenforceable(node.min_properties_pointer, "minProperties");
  }
  if (node.max_properties && *node.max_properties < most) {
    if (*node.max_properties < num_required) {
      note_empty("maxProperties is less than the required properties", node.max_properties_pointer);
      return std::nullopt;
    }
    unenforceable(node.max_properties_pointer, "maxProperties");
  }

  const std::string base = pointer.empty() ? "root" : pointer;
  const auto member_rule = [&](Alternative key, uint32_t value) {
    ws(key).push_back(builder_.byte(':'));
    ws(key).push_back(GrammarBuilder::ref(value));
    return GrammarBuilder::ref(builder_.sequence(std::move(key), base + "-member"));
  };
  std::optional<Element> other;
  if (additional) {
    const uint32_t content = names.empty() ? builder_.repeat(GrammarBuilder::ref(string_char()), 0, -1, "name")
                                           : other_name_content(*this, names);
    other = member_rule({builder_.byte('"'), GrammarBuilder::ref(content), builder_.byte('"')}, *additional);
  }
  Alternative comma;
  ws(comma).push_back(builder_.byte(','));
  ws(comma);
  const auto after_comma = [&](Element e, std::initializer_list<Element> tail) {
    Alternative out = comma;
    out.push_back(e);
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  };

  const size_t n = members.size();
  std::vector<uint32_t> first(n + 1), rest(n + 1), first_skip(n + 1), rest_skip(n + 1);
  for (size_t i = n + 1; i-- > 0;) {
    first_skip[i] = builder_.add_rule(base + "-first");
    rest_skip[i] = builder_.add_rule(base + "-rest");
    std::vector<Alternative> fs, rs;
    if (i == n) {
      fs.push_back({});
      rs.push_back({});
    } else {
      const Element kv = member_rule(builder_.literal(Json(members[i].name).dump()), members[i].value);
      fs.push_back({kv, GrammarBuilder::ref(rest[i + 1])});
      rs.push_back(after_comma(kv, {GrammarBuilder::ref(rest[i + 1])}));
      if (!members[i].required) {
        fs.push_back({GrammarBuilder::ref(first_skip[i + 1])});
        rs.push_back({GrammarBuilder::ref(rest_skip[i + 1])});
      }
    }
    builder_.set_alternatives(first_skip[i], std::move(fs));
    builder_.set_alternatives(rest_skip[i], std::move(rs));
    if (!other) {
      first[i] = first_skip[i];
      rest[i] = rest_skip[i];
      continue;
    }
    rest[i] = builder_.add_rule(base + "-rest-more");
    builder_.set_alternatives(rest[i], {after_comma(*other, {GrammarBuilder::ref(rest[i])}), {GrammarBuilder::ref(rest_skip[i])}});
    first[i] = builder_.add_rule(base + "-first-more");
    builder_.set_alternatives(first[i], {{*other, GrammarBuilder::ref(rest[i])}, {GrammarBuilder::ref(first_skip[i])}});
  }
  Alternative object{builder_.byte('{')};
  ws(object).push_back(GrammarBuilder::ref(first[0]));
  ws(object).push_back(builder_.byte('}'));
  return builder_.sequence(std::move(object), base + "-object");
}

}  // namespace sluice::grammar::schema
