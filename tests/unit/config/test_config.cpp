// Tests of config/: defaults, the three sources and their precedence, validation
// messages (key + source), the models list, --help and the example config file.
#include <doctest/doctest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "tests/unit/fixtures_dir.h"

namespace unit_config_test_config {

namespace {

using sluice::config::Config;
using sluice::config::ConfigError;
using sluice::config::ConfigOptions;
using sluice::config::Environment;

// Lexically from the fixtures dir, which need not exist in a fresh checkout.
const std::string kExample =
    (std::filesystem::path(SLUICE_FIXTURES_DIR).parent_path().parent_path() / "config" /
     "sluice.example.jsonc")
        .string();

// A config file that lives as long as the test that wrote it.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("sluice-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) +
              ".jsonc"))
                .string();
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Parses `sluice serve ARGS...` the way main does and resolves it.
Config load(std::vector<std::string> args, const Environment& env = {}) {
  CLI::App app{"sluice"};
  CLI::App* serve = app.add_subcommand("serve");
  ConfigOptions options(*serve);
  args.insert(args.begin(), "serve");
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector back to front
  app.parse(args);
  return options.resolve(env);
}

// The ConfigError message of a load that must fail.
std::string error_of(std::vector<std::string> args, const Environment& env = {}) {
  try {
    load(std::move(args), env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("expected a ConfigError");
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::vector<std::string> kModel = {"--model", "m.gguf"};

std::vector<std::string> with_model(std::vector<std::string> args) {
  args.insert(args.end(), kModel.begin(), kModel.end());
  return args;
}

}  // namespace

TEST_CASE("config: defaults come from a default-constructed Config") {
  Config config = load(kModel);
  Config defaults;
  CHECK(config.host == defaults.host);
  CHECK(config.port == 8080);
  CHECK(config.max_body_bytes == defaults.max_body_bytes);
  CHECK(config.header_timeout_s == defaults.header_timeout_s);
  CHECK(config.api_keys.empty());
  CHECK(config.log_level == "info");
  CHECK(config.access_log);
  CHECK(config.metrics_vllm_names);
  // The rest, key by key, through the same text the startup log shows.
  config.models.clear();
  CHECK(sluice::config::describe(config) == sluice::config::describe(defaults));
  config = load(kModel);
  REQUIRE(config.models.size() == 1);
  CHECK(config.models[0].path == "m.gguf");
  CHECK(config.models[0].name == "m");
  CHECK(config.models[0].backend == "auto");
  CHECK(config.models[0].context_length == 0);
}

TEST_CASE("config: each source alone") {
  TempFile file(R"({ "port": 1111, /* comment */ "models": ["f.gguf"] })");
  SUBCASE("file by --config") {
    Config config = load({"--config", file.path()});
    CHECK(config.port == 1111);
    CHECK(config.models[0].name == "f");
  }
  SUBCASE("file by SLUICE_CONFIG") {
    CHECK(load({}, {{"SLUICE_CONFIG", file.path()}}).port == 1111);
  }
  SUBCASE("environment") {
    Config config = load({}, {{"SLUICE_PORT", "2222"}, {"SLUICE_MODEL", "e.gguf"}});
    CHECK(config.port == 2222);
    CHECK(config.models[0].path == "e.gguf");
  }
  SUBCASE("flags") {
    CHECK(load(with_model({"--port", "3333"})).port == 3333);
    CHECK(load(with_model({"--port=4444"})).port == 4444);
  }
}

TEST_CASE("config: precedence is file < env < flag, per key") {
  TempFile file(R"({ "port": 1111, "host": "0.0.0.0", "models": ["a.gguf", "b.gguf"] })");
  Environment env = {{"SLUICE_PORT", "2222"}, {"SLUICE_MODEL", "c.gguf"}};

  Config from_env = load({"--config", file.path()}, env);
  CHECK(from_env.port == 2222);
  CHECK(from_env.host == "0.0.0.0");     // untouched keys keep the file's value
  REQUIRE(from_env.models.size() == 1);  // replaced, not appended
  CHECK(from_env.models[0].path == "c.gguf");

  Config from_flags = load(
      {"--config", file.path(), "--port", "3333", "--model", "d.gguf", "--model", "e.gguf"}, env);
  CHECK(from_flags.port == 3333);
  REQUIRE(from_flags.models.size() == 2);
  CHECK(from_flags.models[0].path == "d.gguf");
  CHECK(from_flags.models[1].path == "e.gguf");

  SUBCASE("the last of a repeated scalar flag wins") {
    CHECK(load(with_model({"--port", "1", "--port", "2"})).port == 2);
  }
  SUBCASE("--config beats SLUICE_CONFIG") {
    TempFile other(R"({ "port": 5555 })");
    CHECK(load(with_model({"--config", other.path()}), {{"SLUICE_CONFIG", file.path()}}).port ==
          5555);
  }
  SUBCASE("an empty variable counts as unset") {
    CHECK(load({"--config", file.path()}, {{"SLUICE_PORT", ""}}).port == 1111);
  }
}

TEST_CASE("config: lists") {
  SUBCASE("comma-separated in the environment") {
    Config config = load(kModel, {{"SLUICE_API_KEYS", " k1, k2,,k3 "},
                                  {"SLUICE_CORS_ORIGINS", "https://a.example,http://b:3000"}});
    CHECK(config.api_keys == std::vector<std::string>{"k1", "k2", "k3"});
    CHECK(config.cors_origins == std::vector<std::string>{"https://a.example", "http://b:3000"});
  }
  SUBCASE("repeatable and comma-separated flags") {
    Config config =
        load(with_model({"--api-keys", "k1", "--api-keys", "k2,k3", "--cors-origins", "*"}));
    CHECK(config.api_keys == std::vector<std::string>{"k1", "k2", "k3"});
    CHECK(config.cors_origins == std::vector<std::string>{"*"});
  }
  SUBCASE("arrays in the file; an empty flag clears") {
    TempFile file(R"({ "api_keys": ["x", "y"], "cors_origins": ["*"], "models": ["m.gguf"] })");
    CHECK(load({"--config", file.path()}).api_keys.size() == 2);
    CHECK(load({"--config", file.path(), "--cors-origins", ""}).cors_origins.empty());
  }
  SUBCASE("bad items") {
    CHECK(contains(error_of(with_model({"--cors-origins", "https://a.example/"})),
                   "config: cors_origins[0]: must be \"*\" or an origin"));
    std::string message = error_of(kModel, {{"SLUICE_API_KEYS", "good,has space"}});
    CHECK(contains(message, "config: api_keys[1]: must be a non-empty string without whitespace"));
    CHECK(!contains(message, "has space"));  // secrets stay out of messages
  }
}

TEST_CASE("config: booleans and choices") {
  for (const char* yes : {"true", "1", "yes", "YES", "True"}) {
    CHECK(load(with_model({"--access-log", yes}), {{"SLUICE_ACCESS_LOG", "no"}}).access_log);
  }
  for (const char* no : {"false", "0", "no"}) {
    CHECK_FALSE(load(kModel, {{"SLUICE_ACCESS_LOG", no}}).access_log);
  }
  CHECK_FALSE(load(kModel, {{"SLUICE_METRICS_VLLM_NAMES", "false"}}).metrics_vllm_names);
  CHECK_FALSE(load(with_model({"--metrics-vllm-names", "no"})).metrics_vllm_names);
  CHECK(contains(error_of(with_model({"--access-log", "maybe"})),
                 "config: access_log: must be one of true, false, 1, 0, yes, no, got \"maybe\" "
                 "(from --access-log)"));
  CHECK(load(kModel, {{"SLUICE_LOG_LEVEL", "DEBUG"}}).log_level == "debug");
  CHECK(contains(error_of(kModel, {{"SLUICE_LOG_LEVEL", "verbose"}}),
                 "config: log_level: must be one of trace, debug, info, warn, error, off, got "
                 "\"verbose\" (from SLUICE_LOG_LEVEL)"));
}

TEST_CASE("config: every range error names the key and the source") {
  struct Bad {
    std::string key, text, rule;
  };
  const std::vector<Bad> cases = {
      {"port", "65536", "must be an integer in [0, 65535]"},
      {"port", "-1", "must be an integer in [0, 65535]"},
      {"http_threads", "abc", "must be an integer in [0, 1024], got \"abc\""},
      {"http_threads", "1025", "must be an integer in [0, 1024]"},
      {"max_connections", "0", "must be an integer in [1, 1000000]"},
      {"max_body_bytes", "0", "must be an integer in [1, 17179869184]"},
      {"max_body_bytes", "17179869185", "must be an integer in [1, 17179869184]"},
      {"max_header_bytes", "1023", "must be an integer in [1024, 1048576]"},
      {"header_timeout_s", "0", "must be a number of seconds in (0, 86400]"},
      {"body_timeout_s", "86401", "must be a number of seconds in (0, 86400]"},
      {"idle_timeout_s", "nan", "must be a number of seconds in (0, 86400]"},
      {"write_timeout_s", "-5", "must be a number of seconds in (0, 86400]"},
      {"shutdown_grace_s", "-0.5", "must be a number of seconds in [0, 86400]"},
      {"host", " ", "must not be empty"},
  };
  for (const Bad& bad : cases) {
    CAPTURE(bad.key);
    CAPTURE(bad.text);
    std::string flag = "--" + bad.key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    std::string env = "SLUICE_" + bad.key;
    std::transform(env.begin(), env.end(), env.begin(), ::toupper);

    std::string from_flag = error_of(with_model({flag + "=" + bad.text}));
    CHECK(contains(from_flag, "config: " + bad.key + ": " + bad.rule));
    CHECK(contains(from_flag, "(from " + flag + ")"));

    std::string from_env = error_of(kModel, {{env, bad.text}});
    CHECK(contains(from_env, "config: " + bad.key + ": " + bad.rule));
    CHECK(contains(from_env, "(from " + env + ")"));
  }
  CHECK(error_of(kModel, {{"SLUICE_HTTP_THREADS", "abc"}}) ==
        "config: http_threads: must be an integer in [0, 1024], got \"abc\" (from "
        "SLUICE_HTTP_THREADS)");

  TempFile file(R"({ "port": 70000 })");
  CHECK(error_of(with_model({"--config", file.path()})) ==
        "config: port: must be an integer in [0, 65535], got 70000 (from " + file.path() + ")");
  TempFile grace(R"({ "shutdown_grace_s": 0, "header_timeout_s": 0.5 })");
  CHECK(load(with_model({"--config", grace.path()})).header_timeout_s == 0.5);
}

TEST_CASE("config: file errors") {
  SUBCASE("unknown key with a suggestion") {
    TempFile file(R"({ "htp_threads": 4 })");
    CHECK(error_of(with_model({"--config", file.path()})) ==
          "config: htp_threads: unknown key; did you mean \"http_threads\"? (from " + file.path() +
              ")");
    TempFile far(R"({ "colour": 4 })");
    CHECK(error_of(with_model({"--config", far.path()})) ==
          "config: colour: unknown key (from " + far.path() + ")");
    TempFile model(R"({ "models": [{"path": "a.gguf", "bakend": "cpu"}] })");
    CHECK(contains(error_of({"--config", model.path()}),
                   "config: models[0].bakend: unknown key; did you mean \"backend\"?"));
  }
  SUBCASE("wrong JSON type") {
    TempFile file(R"({ "port": "8080" })");
    CHECK(error_of(with_model({"--config", file.path()})) ==
          "config: port: expected an integer, got string \"8080\" (from " + file.path() + ")");
    TempFile flag(R"({ "access_log": "yes" })");
    CHECK(contains(error_of(with_model({"--config", flag.path()})),
                   "config: access_log: expected a boolean (true or false), got string"));
    TempFile keys(R"({ "api_keys": "secret" })");
    std::string message = error_of(with_model({"--config", keys.path()}));
    CHECK(contains(message, "config: api_keys: expected an array of strings, got string"));
    CHECK(!contains(message, "secret"));
    TempFile models(R"({ "models": {"path": "a.gguf"} })");
    CHECK(contains(error_of({"--config", models.path()}),
                   "config: models: expected an array of model objects, got object"));
    TempFile top(R"([1, 2])");
    CHECK(contains(error_of(with_model({"--config", top.path()})), "expected a JSON object"));
  }
  SUBCASE("malformed JSON names the file and the position") {
    TempFile file("{\n  \"port\": 80,\n  oops\n}");
    std::string message = error_of(with_model({"--config", file.path()}));
    CHECK(contains(message, "config: " + file.path() + ": malformed JSON at line 3, column"));
  }
  SUBCASE("duplicate keys") {
    TempFile file(R"({ "port": 1, "port": 2 })");
    CHECK(contains(error_of(with_model({"--config", file.path()})), "config: port: duplicate key"));
  }
  SUBCASE("missing file") {
    CHECK(contains(
        error_of(kModel, {{"SLUICE_CONFIG", "/nonexistent/sluice.json"}}),
        "config: cannot read config file \"/nonexistent/sluice.json\" (from SLUICE_CONFIG)"));
  }
}

TEST_CASE("config: models") {
  SUBCASE("NAME=PATH, and '=' after a '/' belongs to the path") {
    Config config = load({"--model", "tiny=models/t.gguf", "--model", "models/a=b.gguf"});
    CHECK(config.models[0].name == "tiny");
    CHECK(config.models[0].path == "models/t.gguf");
    CHECK(config.models[1].name == "a=b");
    CHECK(config.models[1].path == "models/a=b.gguf");
    CHECK(contains(error_of({"--model", "=x.gguf"}), "config: models[0].name: empty name"));
  }
  SUBCASE("default names and duplicates") {
    Config config = load({}, {{"SLUICE_MODEL", "/m/qwen.gguf,/m/llama.bin,/m/dir/"}});
    CHECK(config.models[0].name == "qwen");
    CHECK(config.models[1].name == "llama.bin");
    CHECK(config.models[2].name == "dir");
    CHECK(error_of({}, {{"SLUICE_MODEL", "a/x.gguf,b/x.gguf"}}) ==
          "config: models: duplicate model name \"x\" (models[0] and models[1]); give one a "
          "distinct name with NAME=PATH or \"name\" (from SLUICE_MODEL)");
    CHECK(load({"--model", "a/x.gguf", "--model", "y=b/x.gguf"}).models.size() == 2);
    TempFile file(R"({ "models": [{"path": "a.gguf", "name": "m"}, {"path": "m.gguf"}] })");
    CHECK(contains(error_of({"--config", file.path()}), "duplicate model name \"m\""));
  }
  SUBCASE("backend and context_length") {
    for (const char* good : {"auto", "cpu", "cuda", "cuda:0", "cuda:12"}) {
      TempFile file(std::string(R"({ "models": [{"path": "a.gguf", "backend": ")") + good +
                    "\"}] }");
      CHECK(load({"--config", file.path()}).models[0].backend == good);
    }
    for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CPU", "cuda:1.5"}) {
      CAPTURE(bad);
      TempFile file(std::string(R"({ "models": [{"path": "a.gguf", "backend": ")") + bad +
                    "\"}] }");
      CHECK(contains(error_of({"--config", file.path()}),
                     "config: models[0].backend: must be one of auto, cpu, cuda, cuda:N (N >= 0)"));
    }
    TempFile negative(R"({ "models": [{"path": "a.gguf", "context_length": -1}] })");
    CHECK(contains(error_of({"--config", negative.path()}),
                   "config: models[0].context_length: must be >= 0"));
    TempFile pooling(R"({ "models": [{"path": "a.gguf", "pooling": "mean"}, {"path": "b.gguf"}] })");
    const Config pooled = load({"--config", pooling.path()});
    CHECK(pooled.models[0].pooling == "mean");
    CHECK(pooled.models[1].pooling == "auto");
    TempFile bad_pooling(R"({ "models": [{"path": "a.gguf", "pooling": "cls"}] })");
    CHECK(contains(error_of({"--config", bad_pooling.path()}),
                   "config: models[0].pooling: must be one of auto, last, mean"));
    TempFile codec(R"({ "models": [{"path": "tts", "codec_precision": "int16"}, {"path": "b.gguf"}] })");
    const Config coded = load({"--config", codec.path()});
    CHECK(coded.models[0].codec_precision == "int16");
    CHECK(coded.models[1].codec_precision == "f32");
    TempFile bad_codec(R"({ "models": [{"path": "tts", "codec_precision": "bf16"}] })");
    CHECK(contains(error_of({"--config", bad_codec.path()}),
                   "config: models[0].codec_precision: must be one of f32, int16"));
    TempFile no_path(R"({ "models": [{"name": "a"}] })");
    CHECK(contains(error_of({"--config", no_path.path()}), "config: models[0].path: is required"));
    TempFile full(
        R"({ "models": [{"path": "a.gguf", "name": "A", "backend": "cuda:1", "context_length": 2048}] })");
    Config config = load({"--config", full.path()});
    CHECK(config.models[0].name == "A");
    CHECK(config.models[0].context_length == 2048);
  }
  SUBCASE("generation defaults: --generation-config and a model entry's generation") {
    const Config flags = load({"--model", "a.gguf", "--generation-config", R"({"temperature": 0, "max_tokens": 64})"});
    CHECK(flags.generation_config.temperature == 0.0);
    CHECK(flags.generation_config.max_tokens == 64);
    CHECK_FALSE(flags.generation_config.top_p.has_value());
    TempFile file(R"({ "generation_config": {"top_k": 40},
                       "models": [{"path": "a.gguf", "generation": {"top_p": 0.9, "repetition_penalty": 1.1}}] })");
    const Config c = load({"--config", file.path()});
    CHECK(c.generation_config.top_k == 40);
    CHECK(c.models[0].generation.top_p == 0.9);
    CHECK(c.models[0].generation.repetition_penalty == 1.1);
    CHECK(contains(error_of({"--model", "a.gguf", "--generation-config", R"({"temprature": 0.5})"}),
                   "generation_config.temprature: unknown key; did you mean \"temperature\"?"));
    CHECK(contains(error_of({"--model", "a.gguf", "--generation-config", R"({"temperature": 3})"}),
                   "generation_config.temperature: must be in [0, 2], got 3"));
    CHECK(contains(error_of({"--model", "a.gguf", "--generation-config", "temperature=1"}),
                   "generation_config: is not valid JSON"));
    TempFile bad(R"({ "models": [{"path": "a.gguf", "generation": {"max_tokens": 0}}] })");
    CHECK(contains(error_of({"--config", bad.path()}), "models[0].generation.max_tokens: must be"));
    CHECK(load({"--model", "a.gguf"}).default_max_tokens == 512);
  }
  SUBCASE("voices: a speech model entry maps request voice names to speakers") {
    TempFile file(R"({ "models": [{"path": "tts/", "name": "tts", "voices": {"Alloy": "Serena", "narrator": "ryan"}}] })");
    const Config c = load({"--config", file.path()});
    CHECK(c.models[0].voices.size() == 2);
    CHECK(c.models[0].voices.at("alloy") == "serena");  // case-insensitive, like speakers
    CHECK(c.models[0].voices.at("narrator") == "ryan");
    TempFile not_object(R"({ "models": [{"path": "tts/", "voices": ["alloy"]}] })");
    CHECK(contains(error_of({"--config", not_object.path()}), "config: models[0].voices: "));
    TempFile empty_speaker(R"({ "models": [{"path": "tts/", "voices": {"alloy": ""}}] })");
    CHECK(contains(error_of({"--config", empty_speaker.path()}), "config: models[0].voices.alloy: "));
    TempFile typo(R"({ "models": [{"path": "tts/", "voice": {}}] })");
    CHECK(contains(error_of({"--config", typo.path()}), "did you mean \"voices\"?"));
  }
  SUBCASE("--context-length fills every model entry that sets none") {
    const Config flags = load({"--model", "a.gguf", "--model", "b=c.gguf", "--context-length", "512"});
    CHECK(flags.context_length == 512);
    REQUIRE(flags.models.size() == 2);
    CHECK(flags.models[0].context_length == 512);
    CHECK(flags.models[1].context_length == 512);
    TempFile file(R"({ "context_length": 1024,
                       "models": [{"path": "a.gguf", "context_length": 2048}, {"path": "b.gguf"}] })");
    const Config mixed = load({"--config", file.path()});
    CHECK(mixed.models[0].context_length == 2048);  // the entry's own wins
    CHECK(mixed.models[1].context_length == 1024);
    CHECK(load({"--model", "a.gguf"}).models[0].context_length == 0);
    CHECK(contains(error_of({"--model", "a.gguf", "--context-length", "-5"}),
                   "config: context_length: must be an integer"));
    CHECK(load({"--model", "a.gguf"}, {{"SLUICE_CONTEXT_LENGTH", "300"}}).models[0].context_length == 300);
  }
  SUBCASE("--backend is the backend of every model entry that names none") {
    const Config flags = load({"--model", "a.gguf", "--backend", "cpu"});
    CHECK(flags.models[0].backend == "cpu");
    CHECK(load({"--model", "a.gguf"}).models[0].backend == "auto");
    CHECK(load({"--model", "a.gguf"}, {{"SLUICE_BACKEND", "cuda:1"}}).models[0].backend == "cuda:1");
    TempFile file(R"({ "backend": "cpu", "models": [{"path": "a.gguf", "backend": "cuda:0"}, {"path": "b.gguf"}] })");
    const Config mixed = load({"--config", file.path()});
    CHECK(mixed.models[0].backend == "cuda:0");  // the entry's own wins
    CHECK(mixed.models[1].backend == "cpu");
    CHECK(contains(error_of({"--model", "a.gguf", "--backend", "gpu"}),
                   "config: backend: must be one of auto, cpu, cuda, cuda:N (N >= 0), got \"gpu\""));
  }
  SUBCASE("at least one model") {
    CHECK(error_of({}) ==
          "config: models: at least one model is required (--model PATH, SLUICE_MODEL or "
          "\"models\" in the config file)");
    TempFile file(R"({ "models": [] })");
    CHECK(contains(error_of({"--config", file.path()}), "at least one model is required"));
  }
}

TEST_CASE("config: --help lists every flag, variable and default") {
  CLI::App app{"sluice"};
  CLI::App* serve = app.add_subcommand("serve", "Serve models over HTTP");
  ConfigOptions options(*serve);
  sluice::config::use_full_help(app);
  std::string help = app.help();
  CHECK(contains(help, "--config"));
  CHECK(contains(help, "SLUICE_CONFIG"));
  for (const auto& info : sluice::config::option_infos()) {
    CAPTURE(info.key);
    CHECK(contains(help, info.flag));
    CHECK(contains(help, "[env: " + info.env + "]"));
    CHECK(contains(help, "[default: " + info.default_value + "]"));
  }
  CHECK(contains(help, "--port UINT"));
  CHECK(contains(help, "[env: SLUICE_PORT] [default: 8080]"));
}

TEST_CASE("config: the example file loads and documents every key") {
  Config config = load({"--config", kExample});
  CHECK(config.models.size() == 2);
  // Every scalar in the example is set to its default, so its comments can't drift.
  config.models.clear();
  CHECK(sluice::config::describe(config) == sluice::config::describe(Config{}));

  std::ifstream in(kExample);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json root = nlohmann::json::parse(text.str(), nullptr, true, true);
  for (const auto& info : sluice::config::option_infos()) {
    CAPTURE(info.key);
    CHECK(root.contains(info.key));
    CHECK(contains(text.str(), info.env));
  }
}

TEST_CASE("config: every key reaches its own field") {
  TempFile file(R"({
    "host": "::", "port": 1, "http_threads": 2, "max_connections": 3,
    "max_body_bytes": 4, "max_header_bytes": 2048, "header_timeout_s": 5,
    "body_timeout_s": 6, "idle_timeout_s": 7, "write_timeout_s": 8, "shutdown_grace_s": 9,
    "api_keys": ["k"], "cors_origins": ["*"], "log_level": "off", "access_log": false,
    "metrics_vllm_names": false, "kv_cache_bytes": 1048576, "block_size": 32, "max_num_seqs": 10,
    "max_num_batched_tokens": 512, "max_waiting": 11, "enable_prefix_caching": false,
    "compute_threads": 3, "backend": "cpu", "request_timeout_s": 12, "max_request_timeout_s": 13,
    "queue_timeout_s": 14, "health_step_timeout_s": 15,
    "models": [{"path": "p.gguf"}]
  })");
  Config c = load({"--config", file.path()});
  CHECK((c.host == "::" && c.port == 1 && c.http_threads == 2 && c.max_connections == 3));
  CHECK((c.max_body_bytes == 4 && c.max_header_bytes == 2048 && c.header_timeout_s == 5));
  CHECK((c.body_timeout_s == 6 && c.idle_timeout_s == 7 && c.write_timeout_s == 8));
  CHECK(c.shutdown_grace_s == 9);
  CHECK(c.api_keys == std::vector<std::string>{"k"});
  CHECK(c.cors_origins == std::vector<std::string>{"*"});
  CHECK(c.log_level == "off");
  CHECK_FALSE(c.access_log);
  CHECK_FALSE(c.metrics_vllm_names);
  CHECK(c.models[0].name == "p");
  CHECK((c.kv_cache_bytes == 1048576 && c.block_size == 32 && c.max_num_seqs == 10));
  CHECK((c.max_num_batched_tokens == 512 && c.max_waiting == 11 && !c.enable_prefix_caching));
  CHECK((c.compute_threads == 3 && c.request_timeout_s == 12 && c.max_request_timeout_s == 13));
  CHECK(c.queue_timeout_s == 14);
  CHECK(c.health_step_timeout_s == 15);
  CHECK((c.backend == "cpu" && c.models[0].backend == "cpu"));
}

TEST_CASE("config: engine keys are validated") {
  CHECK(contains(error_of(with_model({"--block-size", "0"})), "config: block_size: must be an integer"));
  CHECK(contains(error_of(with_model({"--max-num-seqs", "x"})), "(from --max-num-seqs)"));
  CHECK(contains(error_of(with_model({"--queue-timeout-s", "0"})), "queue_timeout_s"));
  CHECK(contains(error_of(with_model({"--health-step-timeout-s", "-1"})), "health_step_timeout_s"));
  CHECK(load(with_model({"--health-step-timeout-s", "0"})).health_step_timeout_s == 0);
  CHECK(contains(error_of(with_model({"--request-timeout-s", "100", "--max-request-timeout-s", "10"})),
                 "request_timeout_s: must not exceed max_request_timeout_s"));
}

TEST_CASE("config: describe and environment warnings") {
  Config config;
  config.api_keys = {"secret-1", "secret-2"};
  sluice::config::ModelConfig model;
  model.path = "models/a.gguf";
  model.name = "a";
  model.backend = "cpu";
  config.models.push_back(model);
  std::string text = sluice::config::describe(config);
  CHECK(contains(text, "port: 8080\n"));
  CHECK(contains(text, "api_keys: *** (2)"));
  CHECK(!contains(text, "secret"));
  CHECK(contains(text, "models: a=models/a.gguf (backend cpu"));
  CHECK(std::count(text.begin(), text.end(), '\n') + 1 ==
        static_cast<long>(sluice::config::option_infos().size()));

  auto warnings = sluice::config::environment_warnings(
      {{"SLUICE_PROT", "1"}, {"SLUICE_PORT", "1"}, {"SLUICE_SOMETHING_ELSE_ENTIRELY", "1"}});
  REQUIRE(warnings.size() == 1);
  CHECK(contains(warnings[0], "SLUICE_PROT is not a sluice setting; did you mean SLUICE_PORT?"));
}

namespace {

TEST_CASE("config: a model entry's speculative object") {
  TempFile good(R"({"models": [{"path": "p.gguf", "speculative": {"method": "ngram", "num_speculative_tokens": 6,
                   "prompt_lookup_min": 1, "prompt_lookup_max": 5, "disable_by_batch_size": 2}}],
                   "max_prefill_tokens_while_decoding": 64})");
  const Config c = load({"--config", good.path()});
  const auto& s = c.models[0].speculative;
  CHECK(s.method == "ngram");
  CHECK((s.num_speculative_tokens == 6 && s.prompt_lookup_min == 1 && s.prompt_lookup_max == 5));
  CHECK(s.disable_by_batch_size == 2);
  CHECK(c.max_prefill_tokens_while_decoding == 64);
  CHECK(load({"--model", "p.gguf"}).models[0].speculative.method == "none");
  CHECK(load({"--model", "p.gguf"}).max_prefill_tokens_while_decoding == -1);  // the backend's default
  CHECK(contains(error_of({"--model", "p.gguf", "--max-prefill-tokens-while-decoding", "-2"}),
                 "max_prefill_tokens_while_decoding"));

  auto error = [](const std::string& speculative) {
    TempFile bad(R"({"models": [{"path": "p.gguf", "speculative": )" + speculative + "}]}");
    return error_of({"--config", bad.path()});
  };
  CHECK(contains(error(R"({"method": "eagle"})"), "models[0].speculative.method: must be one of none, ngram"));
  CHECK(contains(error(R"({"num_speculative_tokens": 0})"),
                 "models[0].speculative.num_speculative_tokens: must be between 1 and 16, got 0"));
  CHECK(contains(error(R"({"num_speculative_tokens": "4"})"), "models[0].speculative.num_speculative_tokens"));
  CHECK(contains(error(R"({"prompt_lookup_min": 4, "prompt_lookup_max": 3})"),
                 "models[0].speculative.prompt_lookup_min: must be at most prompt_lookup_max (3), got 4"));
  CHECK(contains(error(R"({"num_speculative_token": 3})"), "models[0].speculative.num_speculative_token: unknown key"));
  CHECK(contains(error(R"("ngram")"), "models[0].speculative"));
  CHECK(contains(error(R"({"method": "draft_model"})"),
                 "models[0].speculative.model: is required with method draft_model"));
  CHECK(contains(error(R"({"method": "ngram", "model": "d.gguf"})"),
                 "models[0].speculative.model: is only read with method draft_model"));
  CHECK(contains(error(R"({"method": "draft_model", "model": 3})"), "models[0].speculative.model"));
}

TEST_CASE("config: a draft model for speculative decoding") {
  TempFile good(R"({"models": [{"path": "p.gguf", "speculative": {"method": "draft_model", "model": "d.gguf",
                   "num_speculative_tokens": 3}}]})");
  const Config c = load({"--config", good.path()});
  const auto& s = c.models[0].speculative;
  CHECK(s.method == "draft_model");
  CHECK(s.model == "d.gguf");
  CHECK(s.num_speculative_tokens == 3);
}

}  // namespace
}  // namespace unit_config_test_config
