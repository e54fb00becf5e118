// compile_spec and GrammarCache.
#include "engine/grammar/grammar_spec.h"

#include <chrono>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/regex.h"

namespace sluice::grammar {

std::string_view kind_name(GrammarSpec::Kind kind) {
  switch (kind) {
    case GrammarSpec::Kind::json_schema: return "json_schema";
    case GrammarSpec::Kind::json_object: return "json_object";
    case GrammarSpec::Kind::regex: return "regex";
    case GrammarSpec::Kind::choice: return "choice";
    case GrammarSpec::Kind::gbnf: return "grammar";
  }
  return "unknown";
}

std::string GrammarSpec::cache_key() const {
  // Length-prefixed parts, so no two specs share a key.
  std::string key(kind_name(kind));
  key += any_whitespace ? "|ws" : "|compact";
  key += strict ? "|strict|" : "|lax|";
  key += std::to_string(text.size()) + ":" + text;
  for (const std::string& choice : choices) key += "|" + std::to_string(choice.size()) + ":" + choice;
  return key;
}

CompiledSpec compile_spec(const GrammarSpec& spec, std::shared_ptr<const TokenTable> tokens,
                          const GrammarLimits& limits) {
  CompiledSpec out;
  Grammar grammar;
  switch (spec.kind) {
    case GrammarSpec::Kind::json_schema: {
      JsonSchemaResult result = compile_json_schema(
          spec.text, JsonSchemaOptions{.any_whitespace = spec.any_whitespace, .strict = spec.strict, .limits = limits});
      grammar = std::move(result.grammar);
      out.unenforced = std::move(result.unenforced);
      break;
    }
    case GrammarSpec::Kind::json_object: grammar = json_object_grammar(spec.any_whitespace); break;
    case GrammarSpec::Kind::regex: grammar = compile_regex(spec.text, limits); break;
    case GrammarSpec::Kind::choice: grammar = compile_choice(spec.choices, limits); break;
    case GrammarSpec::Kind::gbnf: grammar = parse_gbnf(spec.text, limits); break;
  }
  out.grammar = CompiledGrammar::compile(std::move(grammar), std::move(tokens));
  return out;
}

GrammarCache::GrammarCache(std::shared_ptr<const TokenTable> tokens, size_t capacity, GrammarLimits limits)
    : tokens_(std::move(tokens)), capacity_(capacity == 0 ? 1 : capacity), limits_(limits) {}

size_t GrammarCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

GrammarCache::Lookup GrammarCache::get(const GrammarSpec& spec) {
  return get(spec.cache_key(), [&spec](const std::shared_ptr<const TokenTable>& tokens, const GrammarLimits& limits) {
    return compile_spec(spec, tokens, limits);
  });
}

GrammarCache::Lookup GrammarCache::get(const std::string& key, const Compile& compile) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return {.compiled = it->second->second, .hit = true};
    }
  }
  const auto start = std::chrono::steady_clock::now();
  CompiledSpec compiled = compile(tokens_, limits_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) {  // another thread was first
    lru_.splice(lru_.begin(), lru_, it->second);
    return {.compiled = it->second->second, .hit = false, .compile_seconds = seconds};
  }
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return {.compiled = std::move(compiled), .hit = false, .compile_seconds = seconds};
}

}  // namespace sluice::grammar
