// Resolves defaults < config file < environment < flags into one Config, using the
// option table for every per-key decision; also --help and the startup summary.
#include "config/config_loader.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "config/option_table.h"

// POSIX; declared here (with glibc's C linkage) so that no feature macro is needed.
extern "C" {
extern char** environ;
}

namespace sluice::config {
namespace {

using detail::option_table;
using detail::OptionSpec;
using nlohmann::json;

constexpr const char* kConfigFlag = "--config";
constexpr const char* kConfigEnv = "SLUICE_CONFIG";
constexpr const char* kEnvPrefix = "SLUICE_";

std::vector<std::string> table_keys() {
  std::vector<std::string> keys;
  for (const OptionSpec& spec : option_table()) keys.push_back(spec.key);
  return keys;
}

std::string read_file(const std::string& path, std::string_view origin) {
  auto cannot_read = [&](const std::string& why) {
    return ConfigError("config: cannot read config file " + detail::quote(path) + " (from " +
                       std::string(origin) + "): " + why);
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw cannot_read("it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cannot_read(std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw cannot_read("read error");
  return text.str();
}

// nlohmann keeps the last of two equal keys; in a config file that hides an edit,
// so a parse callback turns duplicates into errors.
json parse_file(const std::string& text, const std::string& path) {
  std::vector<std::set<std::string>> open_objects;
  auto on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) {
        detail::fail(key, "duplicate key; each key may appear once per object", path);
      }
    }
    return true;
  };
  try {
    return json::parse(text, on_event, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    // what() reads "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string message = e.what();
    std::size_t at = message.find(" at line ");
    message = at == std::string::npos ? message : message.substr(at + 1);
    throw ConfigError("config: " + path + ": malformed JSON " + message);
  }
}

void apply_file(Config& config, const std::string& path, std::string_view origin) {
  json root = parse_file(read_file(path, origin), path);
  if (!root.is_object()) {
    throw ConfigError("config: " + path +
                      ": expected a JSON object of keys at the top level, got " + root.type_name());
  }
  const std::vector<OptionSpec>& table = option_table();
  for (const auto& [key, value] : root.items()) {
    auto spec =
        std::find_if(table.begin(), table.end(), [&](const OptionSpec& s) { return s.key == key; });
    if (spec == table.end())
      detail::fail(key, "unknown key" + detail::suggestion(key, table_keys()), path);
    spec->set_from_json(config, value, path);
  }
}

std::string flag_help(const OptionSpec& spec) {
  return spec.help + " [env: " + spec.env + "] [default: " + spec.show(Config{}) + "]";
}

// Upgrades the top-level app's ordinary help to CLI11's "all" mode, which expands
// every subcommand; subcommands keep their own help. Stateless; CLI11 calls it on
// whichever thread asks for help.
class FullHelpFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Normal && app->get_parent() == nullptr) {
      mode = CLI::AppFormatMode::All;
    }
    return CLI::Formatter::make_help(app, std::move(name), mode);
  }
};

}  // namespace

Environment process_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text = *entry;
    std::size_t equals = text.find('=');
    if (!text.starts_with(kEnvPrefix) || equals == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return env;
}

std::vector<std::string> environment_warnings(const Environment& env) {
  std::vector<std::string> known = {kConfigEnv};
  for (const OptionSpec& spec : option_table()) known.push_back(spec.env);
  std::vector<std::string> warnings;
  for (const auto& [name, value] : env) {
    if (!name.starts_with(kEnvPrefix)) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string best = detail::closest(name, known);
    if (best.empty()) continue;  // some other tool's SLUICE_* variable, not a typo
    warnings.push_back("config: " + name + " is not a sluice setting; did you mean " + best + "?");
  }
  return warnings;
}

ConfigOptions::ConfigOptions(CLI::App& cmd) {
  config_file_ = cmd.add_option(kConfigFlag, CLI::callback_t{},
                                "JSON config file, comments allowed; flags and SLUICE_* variables "
                                "override its keys [env: " +
                                    std::string(kConfigEnv) + "]");
  config_file_->type_name("FILE")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  for (const OptionSpec& spec : option_table()) {
    CLI::Option* flag = cmd.add_option(spec.flag, CLI::callback_t{}, flag_help(spec));
    flag->type_name(spec.value_name)->group(spec.group);
    flag->multi_option_policy(spec.is_list ? CLI::MultiOptionPolicy::TakeAll
                                           : CLI::MultiOptionPolicy::TakeLast);
    flags_.push_back(flag);
  }
}

Config ConfigOptions::resolve(const Environment& env) const {
  Config config;
  auto env_value = [&](const std::string& name) -> const std::string* {
    auto it = env.find(name);
    return it == env.end() || it->second.empty() ? nullptr : &it->second;
  };

  if (config_file_->count() > 0) {
    apply_file(config, config_file_->results().back(), kConfigFlag);
  } else if (const std::string* path = env_value(kConfigEnv)) {
    apply_file(config, *path, kConfigEnv);
  }

  const std::vector<OptionSpec>& table = option_table();
  for (const OptionSpec& spec : table) {
    if (const std::string* value = env_value(spec.env))
      spec.set_from_text(config, *value, spec.env);
  }

  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::vector<std::string>& given = flags_[i]->results();
    if (given.empty()) continue;
    std::string text = given.back();
    if (table[i].is_list) {
      text.clear();
      for (const std::string& item : given) text += (text.empty() ? "" : ",") + item;
    }
    table[i].set_from_text(config, text, table[i].flag);
  }

  if (config.request_timeout_s > config.max_request_timeout_s) {
    throw ConfigError("config: request_timeout_s: must not exceed max_request_timeout_s (" +
                      nlohmann::json(config.request_timeout_s).dump() + " > " +
                      nlohmann::json(config.max_request_timeout_s).dump() + ")");
  }
  // The global context length and backend fill the entries that chose none: a model entry is
  // the more specific setting, whatever source each came from.
  for (ModelConfig& model : config.models) {
    if (model.context_length == 0) model.context_length = config.context_length;
    if (model.backend == "auto") model.backend = config.backend;
  }
  if (config.models.empty()) {
    throw ConfigError(
        "config: models: at least one model is required (--model PATH, SLUICE_MODEL or "
        "\"models\" in the config file)");
  }
  return config;
}

void use_full_help(CLI::App& app) { app.formatter(std::make_shared<FullHelpFormatter>()); }

std::string describe(const Config& config) {
  std::string out;
  for (const OptionSpec& spec : option_table()) {
    if (!out.empty()) out += '\n';
    out += spec.key + ": " + spec.show(config);
  }
  return out;
}

std::vector<OptionInfo> option_infos() {
  std::vector<OptionInfo> infos;
  for (const OptionSpec& spec : option_table()) {
    infos.push_back({spec.key, spec.flag, spec.env, spec.help, spec.show(Config{})});
  }
  return infos;
}

}  // namespace sluice::config
