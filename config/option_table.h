#pragma once
// Internal to config/: the one table of option descriptors that drives the config
// file, the SLUICE_* environment, the command-line flags, --help and describe().
// Adding a key to Config means adding one row to option_table() in option_table.cpp
// (and one entry to config/sluice.example.jsonc; a unit test checks that).
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace sluice::config::detail {

// One configuration key and every way to set it. `origin` is where the value came
// from ("--port", "SLUICE_PORT" or a file path) and ends up in every error message.
struct OptionSpec {
  std::string key;         // config file key: http_threads
  std::string flag;        // --http-threads
  std::string env;         // SLUICE_HTTP_THREADS
  std::string value_name;  // placeholder shown in --help: UINT, SECONDS, ...
  std::string group;       // --help section
  std::string help;        // one line, without env or default
  // Lists take every flag occurrence and split values on commas; scalars take the last.
  bool is_list = false;
  std::function<void(Config&, std::string_view text, std::string_view origin)> set_from_text;
  std::function<void(Config&, const nlohmann::json& value, std::string_view origin)> set_from_json;
  // Never reveals secrets: used for --help defaults and the startup log.
  std::function<std::string(const Config&)> show;
};

// Every key, in --help and describe() order. Built once; safe to call from any thread.
const std::vector<OptionSpec>& option_table();

// The row for `models` (flag --model, env SLUICE_MODEL); defined in model_option.cpp.
OptionSpec models_option();

// auto, cpu, cuda or cuda:N (N >= 0); defined in model_option.cpp.
bool is_valid_backend(std::string_view backend);

// Throws ConfigError "config: <key>: <message> (from <origin>)".
[[noreturn]] void fail(std::string_view key, std::string_view message, std::string_view origin);

// Throws ConfigError "config: <key>: expected <expected>, got <type> <value> (from <origin>)";
// `secret` leaves the value out of the message.
[[noreturn]] void fail_type(std::string_view key, std::string_view expected,
                            const nlohmann::json& got, std::string_view origin,
                            bool secret = false);

// `text` as a JSON string literal, so that empty strings and spaces stay visible.
std::string quote(std::string_view text);

std::string_view trim(std::string_view text);

// Comma-separated items, each trimmed; empty items are dropped.
std::vector<std::string> split_list(std::string_view text);

// The candidate closest to `word` by edit distance (a transposition counts as one),
// or "" when none is close enough to be a plausible typo.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

// "; did you mean \"x\"?" for a misspelt key, or "".
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace sluice::config::detail
