// $ref: base URIs from $id, anchors, and JSON pointers (with ~0 ~1 and percent
// escapes) into the schema document. A reference to another document is remote:
// nothing is fetched, the caller reports it.
#include <cctype>

#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {
namespace {

bool has_scheme(std::string_view uri) {
  if (uri.empty() || !std::isalpha(static_cast<unsigned char>(uri[0]))) return false;
  for (char c : uri) {
    if (c == ':') return true;
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
  }
  return false;
}

std::string without_fragment(std::string_view uri) { return std::string(uri.substr(0, uri.find('#'))); }

// RFC 3986 reference resolution, without dot-segment removal (schemas rarely need it).
std::string resolve_uri(const std::string& base, const std::string& ref) {
  if (has_scheme(ref)) return ref;
  const std::string doc = without_fragment(base);
  if (ref.empty()) return doc;
  if (ref[0] == '#') return doc + ref;
  if (doc.empty()) return ref;
  const size_t scheme_end = doc.find(':');
  if (ref.rfind("//", 0) == 0) return doc.substr(0, scheme_end + 1) + ref;
  if (ref[0] == '/') {
    const size_t authority = doc.compare(scheme_end + 1, 2, "//") == 0 ? doc.find('/', scheme_end + 3) : scheme_end + 1;
    return (authority == std::string::npos ? doc : doc.substr(0, authority)) + ref;
  }
  const size_t slash = doc.rfind('/');
  return slash == std::string::npos ? ref : doc.substr(0, slash + 1) + ref;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string unescape_token(std::string_view token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

// The $id (draft 4: id) of a schema object that changes the base URI, if any.
const std::string* id_of(const Json& schema) {
  if (!schema.is_object()) return nullptr;
  for (const char* k : {"$id", "id"}) {
    auto it = schema.find(k);
    if (it != schema.end() && it->is_string() && !it->get_ref<const std::string&>().empty() &&
        it->get_ref<const std::string&>()[0] != '#')
      return &it->get_ref<const std::string&>();
  }
  return nullptr;
}

}  // namespace

SchemaAt Compiler::child(const SchemaAt& parent, const Json& schema, std::string_view suffix) const {
  SchemaAt at{&schema, parent.pointer + std::string(suffix), parent.base};
  if (const std::string* id = id_of(schema)) at.base = resolve_uri(parent.base, *id);
  return at;
}

void Compiler::index_document() {
  if (const std::string* id = id_of(document_)) root_base_ = without_fragment(*id);
  // Every object in the document: $id values are rare outside schema positions.
  const auto visit = [&](auto& self, const Json& value, const std::string& pointer, const std::string& base,
                         int depth) -> void {
    if (depth > 2 * options_.limits.max_depth + 2) return;
    std::string here = base;
    if (value.is_object()) {
      if (const std::string* id = id_of(value)) {
        here = resolve_uri(base, *id);
        ids_.emplace(without_fragment(here), std::make_pair(pointer, here));
      }
      for (const char* k : {"$id", "id"})
        if (auto it = value.find(k); it != value.end() && it->is_string()) {
          const std::string& s = it->get_ref<const std::string&>();
          if (!s.empty() && s[0] == '#') ids_.emplace(without_fragment(here) + s, std::make_pair(pointer, here));
        }
      if (auto it = value.find("$anchor"); it != value.end() && it->is_string())
        ids_.emplace(without_fragment(here) + "#" + it->get<std::string>(), std::make_pair(pointer, here));
      for (const auto& item : value.items()) {
        std::string token;
        for (char c : item.key()) token += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
        self(self, item.value(), pointer + "/" + token, here, depth + 1);
      }
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i)
        self(self, value[i], pointer + "/" + std::to_string(i), here, depth + 1);
    }
  };
  visit(visit, document_, "", root_base_, 0);
}

std::optional<SchemaAt> Compiler::resolve_ref(const SchemaAt& from, const std::string& ref) {
  const std::string where = from.pointer + "/$ref";
  const std::string uri = resolve_uri(from.base, ref);
  const size_t hash = uri.find('#');
  const std::string doc = uri.substr(0, hash);
  const std::string fragment = hash == std::string::npos ? "" : percent_decode(uri.substr(hash + 1));

  SchemaAt at;
  if (doc.empty() || doc == root_base_) {
    at = root_schema();
  } else if (auto it = ids_.find(doc); it != ids_.end()) {
    at = SchemaAt{&document_.at(Json::json_pointer(it->second.first)), it->second.first, it->second.second};
  } else {
    return std::nullopt;
  }
  if (fragment.empty()) return at;
  if (fragment[0] != '/') {
    auto it = ids_.find(without_fragment(at.base) + "#" + fragment);
    if (it == ids_.end()) fail(where, "no schema has the anchor '" + fragment + "'");
    return SchemaAt{&document_.at(Json::json_pointer(it->second.first)), it->second.first, it->second.second};
  }
  // Walk the pointer, following the base URI through the $ids on the way.
  size_t start = 1;
  while (true) {
    const size_t end = fragment.find('/', start);
    const std::string raw = fragment.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string token = unescape_token(raw);
    const Json* next = nullptr;
    if (at.schema->is_object()) {
      auto it = at.schema->find(token);
      if (it != at.schema->end()) next = &*it;
    } else if (at.schema->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos && token.size() < 10) {
      const size_t index = std::stoul(token);
      if (index < at.schema->size()) next = &(*at.schema)[index];
    }
    if (!next) fail(where, "$ref '" + ref + "' points to nothing");
    at = child(at, *next, "/" + raw);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return at;
}

}  // namespace sluice::grammar::schema
