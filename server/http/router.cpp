#include "server/http/router.h"

#include <algorithm>

namespace sluice::server {
namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  size_t start = 1;  // paths start with '/'
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    segments.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return segments;
}

bool is_placeholder(std::string_view segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

// Matches `path` against `pattern`, collecting placeholder values (still encoded).
bool match_pattern(std::string_view pattern, std::string_view path,
                   std::vector<std::pair<std::string, std::string>>& params) {
  auto want = split_path(pattern);
  auto have = split_path(path);
  for (size_t i = 0; i < want.size(); ++i) {
    if (i >= have.size()) return false;
    if (!is_placeholder(want[i])) {
      if (want[i] != have[i]) return false;
      continue;
    }
    std::string name(want[i].substr(1, want[i].size() - 2));
    if (i + 1 == want.size()) {
      // The last placeholder takes the rest of the path.
      size_t offset = static_cast<size_t>(have[i].data() - path.data());
      std::string_view rest = path.substr(offset);
      if (rest.empty()) return false;
      params.emplace_back(std::move(name), std::string(rest));
      return true;
    }
    if (have[i].empty()) return false;
    params.emplace_back(std::move(name), std::string(have[i]));
  }
  return want.size() == have.size();
}

}  // namespace

std::string_view Exchange::param(std::string_view name) const {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return {};
}

void Router::add(http::verb method, std::string pattern, Handler handler, bool is_public, ErrorDialect dialect) {
  routes_.push_back(Route{method, std::move(pattern), is_public, std::move(handler), dialect});
}

RouteMatch Router::match(http::verb method, std::string_view target) const {
  RouteMatch result;
  std::string_view path = target.substr(0, target.find('?'));
  if (path.empty() || path.front() != '/') return result;

  std::vector<std::string> allowed;
  for (const auto& route : routes_) {
    std::vector<std::pair<std::string, std::string>> params;
    if (!match_pattern(route.pattern, path, params)) continue;
    result.dialect = route.dialect;
    // HEAD is GET without the body (RFC 9110 9.3.2), so every GET route answers it.
    bool answers = route.method == method ||
                   (method == http::verb::head && route.method == http::verb::get);
    if (answers) {
      for (auto& [name, value] : params) {
        std::string decoded;
        if (!percent_decode(value, decoded)) return RouteMatch{};  // malformed: 404 (an OpenAI error)
        value = std::move(decoded);
      }
      result.kind = RouteMatch::Kind::found;
      result.route = &route;
      result.params = std::move(params);
      return result;
    }
    allowed.emplace_back(http::to_string(route.method));
    if (route.method == http::verb::get) allowed.emplace_back(http::to_string(http::verb::head));
  }
  if (!allowed.empty()) {
    std::sort(allowed.begin(), allowed.end());
    allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
    result.kind = RouteMatch::Kind::method_not_allowed;
    for (const auto& m : allowed) result.allow += (result.allow.empty() ? "" : ", ") + m;
  }
  return result;
}

std::string_view Router::metrics_label(const RouteMatch& match) {
  return match.route ? std::string_view(match.route->pattern) : std::string_view("unmatched");
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

}  // namespace sluice::server
