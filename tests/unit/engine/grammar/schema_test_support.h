#pragma once
// Test-only helpers of the JSON Schema tests: the canonical compact serialization
// that the compiled grammar expects of an instance, written here independently of the
// compiler. Canonical means: no whitespace; a number with an integral value written
// as an integer (1.0 -> 1, 1e3 -> 1000); object members in schema order: each name
// ranked by where a schema first lists it (properties, then required, then the
// members of const/enum objects, depth-first in document order), unlisted names last
// in name order.
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::grammar::testing {

using OrderedJson = nlohmann::ordered_json;

class CanonicalOrder {
 public:
  CanonicalOrder(const OrderedJson& schema, bool integral_floats_as_integers)
      : integral_floats_as_integers_(integral_floats_as_integers) {
    collect(schema, false);
  }

  std::string dump(const OrderedJson& value) const {
    std::string out;
    dump_into(value, out);
    return out;
  }

 private:
  void rank(const std::string& name) { rank_.emplace(name, rank_.size()); }

  void collect(const OrderedJson& v, bool literal) {
    if (v.is_object()) {
      if (literal) {
        for (const auto& item : v.items()) rank(item.key());
      } else {
        if (auto it = v.find("properties"); it != v.end() && it->is_object())
          for (const auto& item : it->items()) rank(item.key());
        if (auto it = v.find("required"); it != v.end() && it->is_array())
          for (const auto& name : *it)
            if (name.is_string()) rank(name.get<std::string>());
      }
      for (const auto& item : v.items())
        collect(item.value(), literal || item.key() == "const" || item.key() == "enum");
    } else if (v.is_array()) {
      for (const auto& e : v) collect(e, literal);
    }
  }

  void dump_into(const OrderedJson& v, std::string& out) const {
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && std::floor(d) == d && (integral_floats_as_integers_ || std::fabs(d) >= 9.2e18)) {
        char buffer[400];
        std::snprintf(buffer, sizeof buffer, "%.0f", d == 0 ? 0.0 : d);
        out += buffer;
        return;
      }
    }
    if (v.is_object()) {
      std::vector<std::pair<size_t, std::string>> keys;
      for (const auto& item : v.items()) {
        auto it = rank_.find(item.key());
        keys.emplace_back(it == rank_.end() ? std::numeric_limits<size_t>::max() : it->second, item.key());
      }
      std::sort(keys.begin(), keys.end());
      out += '{';
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i) out += ',';
        out += OrderedJson(keys[i].second).dump();
        out += ':';
        dump_into(v.at(keys[i].second), out);
      }
      out += '}';
    } else if (v.is_array()) {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        dump_into(v[i], out);
      }
      out += ']';
    } else {
      out += v.dump();
    }
  }

  bool integral_floats_as_integers_;
  std::map<std::string, size_t> rank_;
};

}  // namespace sluice::grammar::testing
