#pragma once
// What a request asks its output to match, in API-neutral terms (proto/ fills it
// from response_format, structured_outputs, guided_* or grammar / json_schema), and
// its compilation for one model's vocabulary, cached.
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/grammar/limits.h"
#include "engine/grammar/matcher.h"

namespace sluice::grammar {

struct GrammarSpec {
  enum class Kind { json_schema, json_object, regex, choice, gbnf };
  Kind kind = Kind::json_object;
  std::string text;                  // the schema as JSON text, the regex or the GBNF
  std::vector<std::string> choices;  // Kind::choice
  bool any_whitespace = false;       // JSON kinds: whitespace allowed between tokens
  bool strict = true;                // json_schema: refuse what the grammar cannot enforce

  // The same spec, byte for byte (callers canonicalize the schema text first).
  std::string cache_key() const;
};

std::string_view kind_name(GrammarSpec::Kind kind);

struct CompiledSpec {
  std::shared_ptr<CompiledGrammar> grammar;
  std::vector<std::string> unenforced;  // json_schema, strict false: what is not enforced
};

// Front end + CompiledGrammar::compile. Throws GrammarError.
CompiledSpec compile_spec(const GrammarSpec& spec, std::shared_ptr<const TokenTable> tokens,
                          const GrammarLimits& limits = {});

// A bounded LRU of compiled specs for one vocabulary, keyed by GrammarSpec::cache_key.
// Thread-safe; two threads compiling the same new spec at once both compile it
// (compilation runs outside the lock) and the first result is kept.
class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenTable> tokens, size_t capacity, GrammarLimits limits = {});

  struct Lookup {
    CompiledSpec compiled;
    bool hit = false;
    double compile_seconds = 0.0;  // 0 on a hit
  };
  // Throws GrammarError (nothing is cached then).
  Lookup get(const GrammarSpec& spec);
  // Any other grammar (tool calls): `key` must name every input of `compile`.
  using Compile = std::function<CompiledSpec(const std::shared_ptr<const TokenTable>&, const GrammarLimits&)>;
  Lookup get(const std::string& key, const Compile& compile);

  const TokenTable& tokens() const { return *tokens_; }
  size_t size() const;

 private:
  std::shared_ptr<const TokenTable> tokens_;
  size_t capacity_;
  GrammarLimits limits_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, CompiledSpec>> lru_;  // most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, CompiledSpec>>::iterator> index_;
};

}  // namespace sluice::grammar
