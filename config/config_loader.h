#pragma once
// Turns the four sources of settings into one validated Config.
//
// Precedence, lowest to highest, decided per key:
//   1. built-in defaults (a default-constructed Config, config.h)
//   2. the config file named by --config FILE, else by SLUICE_CONFIG
//      (JSON, comments allowed; see config/sluice.example.jsonc)
//   3. SLUICE_* environment variables (an empty variable counts as unset)
//   4. command-line flags
// A key set by a higher source replaces the lower value whole; for lists that
// includes `models`: --model or SLUICE_MODEL replace the file's models, they do
// not add to them. A file key such as `http_threads` has the flag
// `--http-threads` and the variable `SLUICE_HTTP_THREADS`; `models` has `--model`
// and `SLUICE_MODEL`. List values from flags and variables are comma-separated,
// and list flags may repeat.
//
// Every value is checked whichever source it came from, also when a higher source
// overrides it; errors are ConfigError with messages such as
//   config: http_threads: must be an integer in [0, 1024], got "abc" (from SLUICE_HTTP_THREADS)
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace sluice::config {

// A mistake in the configuration: the message names the key, the rule and the source.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Variable name → value.
using Environment = std::map<std::string, std::string>;

// The SLUICE_* variables of this process. Call from the main thread before other
// threads start (getenv-style access is not thread-safe against setenv).
Environment process_environment();

// Messages for SLUICE_* variables that set nothing (likely typos), with the
// closest known name when there is one; for the startup log as warnings.
std::vector<std::string> environment_warnings(const Environment& env);

// Registers --config, --model and one flag per schema key on a CLI11 command and
// resolves them, after parsing, together with the file and the environment.
// Owns nothing but pointers to the options it registered, which `cmd` owns:
// `cmd` must outlive this object. Main thread only: construct before
// CLI::App::parse, call resolve() after it.
class ConfigOptions {
 public:
  explicit ConfigOptions(CLI::App& cmd);

  // The validated configuration; requires at least one model.
  // Throws ConfigError.
  Config resolve(const Environment& env) const;

 private:
  CLI::Option* config_file_;
  std::vector<CLI::Option*> flags_;  // parallel to the option table
};

// Makes `app`'s -h/--help print every subcommand's options too (CLI11's
// "help all"), so that `sluice --help` lists every serve option. Also affects
// app.help(). Call on the top-level app, before or after adding subcommands.
void use_full_help(CLI::App& app);

// One "key: value" line per key for the startup log; API keys are shown as
// "*** (N)", never in clear.
std::string describe(const Config& config);

// One row of the option table, for documentation and tests.
struct OptionInfo {
  std::string key;            // config file key
  std::string flag;           // command-line flag
  std::string env;            // environment variable
  std::string help;           // one line
  std::string default_value;  // as shown in --help
};
std::vector<OptionInfo> option_infos();

}  // namespace sluice::config
