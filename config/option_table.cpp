// The option table: one row per Config key, built from a few typed factories so
// that a value is parsed and range-checked the same way whether it came from the
// config file, the environment or a flag.
#include "config/option_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>

#include "config/config_loader.h"
#include "config/generation_option.h"
#include "config/kv_events_option.h"

namespace sluice::config::detail {
namespace {

using nlohmann::json;

OptionSpec row(std::string key, std::string value_name, std::string group, std::string help) {
  OptionSpec spec;
  spec.flag = "--" + key;
  std::replace(spec.flag.begin(), spec.flag.end(), '_', '-');
  spec.env = "SLUICE_" + key;
  std::transform(spec.env.begin(), spec.env.end(), spec.env.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  spec.key = std::move(key);
  spec.value_name = std::move(value_name);
  spec.group = std::move(group);
  spec.help = std::move(help);
  return spec;
}

std::optional<int64_t> parse_integer(std::string_view text) {
  text = trim(text);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_real(std::string_view text) {
  text = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string format_real(double value) {
  std::string out = json(value).dump();
  if (out.size() > 2 && out.ends_with(".0")) out.resize(out.size() - 2);
  return out;
}

template <typename T>
OptionSpec integer_option(std::string key, T Config::*member, int64_t lo, int64_t hi,
                          std::string value_name, std::string group, std::string help) {
  OptionSpec spec = row(key, std::move(value_name), std::move(group), std::move(help));
  std::string rule =
      "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  spec.set_from_text = [=](Config& config, std::string_view text, std::string_view origin) {
    std::optional<int64_t> value = parse_integer(text);
    if (!value || *value < lo || *value > hi) fail(key, rule + ", got " + quote(text), origin);
    config.*member = static_cast<T>(*value);
  };
  spec.set_from_json = [=](Config& config, const json& value, std::string_view origin) {
    if (!value.is_number_integer()) fail_type(key, "an integer", value, origin);
    // Non-negative JSON integers are stored unsigned and may not fit an int64_t.
    bool in_range = value.is_number_unsigned()
                        ? value.get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                              static_cast<int64_t>(value.get<uint64_t>()) >= lo
                        : value.get<int64_t>() >= lo && value.get<int64_t>() <= hi;
    if (!in_range) fail(key, rule + ", got " + value.dump(), origin);
    config.*member = value.get<T>();
  };
  spec.show = [member](const Config& config) { return std::to_string(config.*member); };
  return spec;
}

// Seconds; `lo_open` excludes `lo` itself so that a timeout of 0 is rejected.
OptionSpec seconds_option(std::string key, double Config::*member, double lo, bool lo_open,
                          std::string group, std::string help) {
  constexpr double kHi = 86400;
  OptionSpec spec = row(key, "SECONDS", std::move(group), std::move(help));
  std::string rule = "must be a number of seconds in " + std::string(lo_open ? "(" : "[") +
                     format_real(lo) + ", " + format_real(kHi) + "]";
  // Written so that NaN fails every comparison and is rejected.
  auto ok = [=](double v) { return (lo_open ? v > lo : v >= lo) && v <= kHi; };
  spec.set_from_text = [=](Config& config, std::string_view text, std::string_view origin) {
    std::optional<double> value = parse_real(text);
    if (!value || !ok(*value)) fail(key, rule + ", got " + quote(text), origin);
    config.*member = *value;
  };
  spec.set_from_json = [=](Config& config, const json& value, std::string_view origin) {
    if (!value.is_number()) fail_type(key, "a number", value, origin);
    if (!ok(value.get<double>())) fail(key, rule + ", got " + value.dump(), origin);
    config.*member = value.get<double>();
  };
  spec.show = [member](const Config& config) { return format_real(config.*member); };
  return spec;
}

OptionSpec bool_option(std::string key, bool Config::*member, std::string group, std::string help) {
  OptionSpec spec = row(key, "BOOL", std::move(group), std::move(help));
  spec.set_from_text = [=](Config& config, std::string_view text, std::string_view origin) {
    std::string word = lowercase(trim(text));
    if (word == "true" || word == "1" || word == "yes") {
      config.*member = true;
    } else if (word == "false" || word == "0" || word == "no") {
      config.*member = false;
    } else {
      fail(key, "must be one of true, false, 1, 0, yes, no, got " + quote(text), origin);
    }
  };
  spec.set_from_json = [=](Config& config, const json& value, std::string_view origin) {
    if (!value.is_boolean()) fail_type(key, "a boolean (true or false)", value, origin);
    config.*member = value.get<bool>();
  };
  spec.show = [member](const Config& config) { return config.*member ? "true" : "false"; };
  return spec;
}

// A string, optionally limited to `choices` (matched case-insensitively, stored lowercase).
OptionSpec string_option(std::string key, std::string Config::*member,
                         std::vector<std::string> choices, std::string value_name,
                         std::string group, std::string help) {
  OptionSpec spec = row(key, std::move(value_name), std::move(group), std::move(help));
  std::string rule = "must not be empty";
  if (!choices.empty()) {
    rule = "must be one of";
    for (const std::string& choice : choices)
      rule += (choice == choices.front() ? " " : ", ") + choice;
  }
  auto store = [=](Config& config, std::string_view raw, const std::string& got,
                   std::string_view origin) {
    std::string value(trim(raw));
    if (!choices.empty()) {
      value = lowercase(value);
      if (std::find(choices.begin(), choices.end(), value) == choices.end()) value.clear();
    }
    if (value.empty()) fail(key, rule + ", got " + got, origin);
    config.*member = std::move(value);
  };
  spec.set_from_text = [=](Config& config, std::string_view text, std::string_view origin) {
    store(config, text, quote(text), origin);
  };
  spec.set_from_json = [=](Config& config, const json& value, std::string_view origin) {
    if (!value.is_string()) fail_type(key, "a string", value, origin);
    store(config, value.get_ref<const std::string&>(), value.dump(), origin);
  };
  spec.show = [member](const Config& config) { return config.*member; };
  return spec;
}

// A folder path; empty means none (the feature that keeps files there is off).
OptionSpec folder_option(std::string key, std::string Config::*member, std::string group, std::string help) {
  OptionSpec spec = row(key, "DIR", std::move(group), std::move(help));
  spec.set_from_text = [=](Config& config, std::string_view text, std::string_view) {
    config.*member = std::string(trim(text));
  };
  spec.set_from_json = [=](Config& config, const json& value, std::string_view origin) {
    if (!value.is_string()) fail_type(key, "a string", value, origin);
    config.*member = std::string(trim(value.get_ref<const std::string&>()));
  };
  spec.show = [member](const Config& config) { return config.*member; };
  return spec;
}

// The backend of every model whose entry says auto (the entries' default): a string
// option whose value must name a backend.
OptionSpec backend_option(std::string group) {
  OptionSpec spec = string_option("backend", &Config::backend, {}, "BACKEND", std::move(group),
                                  "Backend of each model whose entry names none: auto (the first GPU if "
                                  "any, else the CPU), cpu, cuda or cuda:N");
  const auto check = [](const Config& config, std::string_view origin) {
    if (!is_valid_backend(config.backend))
      fail("backend", "must be one of auto, cpu, cuda, cuda:N (N >= 0), got " + quote(config.backend), origin);
  };
  spec.set_from_text = [set = spec.set_from_text, check](Config& config, std::string_view text,
                                                          std::string_view origin) {
    set(config, text, origin);
    check(config, origin);
  };
  spec.set_from_json = [set = spec.set_from_json, check](Config& config, const json& value,
                                                          std::string_view origin) {
    set(config, value, origin);
    check(config, origin);
  };
  return spec;
}

// A list of strings. `check` returns "" for a good item or the rule it breaks;
// `secret` keeps items out of error messages and out of show().
OptionSpec list_option(std::string key, std::vector<std::string> Config::*member,
                       std::function<std::string(std::string_view)> check, bool secret,
                       std::string value_name, std::string group, std::string help) {
  OptionSpec spec = row(key, std::move(value_name), std::move(group), std::move(help));
  spec.is_list = true;
  auto check_item = [=](std::string_view item, std::size_t index, std::string_view origin) {
    std::string broken = check(item);
    if (broken.empty()) return;
    std::string where = key + "[" + std::to_string(index) + "]";
    fail(where, secret ? broken : broken + ", got " + quote(item), origin);
  };
  spec.set_from_text = [=](Config& config, std::string_view text, std::string_view origin) {
    std::vector<std::string> items = split_list(text);
    for (std::size_t i = 0; i < items.size(); ++i) check_item(items[i], i, origin);
    config.*member = std::move(items);
  };
  spec.set_from_json = [=](Config& config, const json& value, std::string_view origin) {
    if (!value.is_array()) fail_type(key, "an array of strings", value, origin, secret);
    std::vector<std::string> items;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string()) {
        fail_type(key + "[" + std::to_string(i) + "]", "a string", value[i], origin, secret);
      }
      check_item(value[i].get_ref<const std::string&>(), i, origin);
      items.push_back(value[i].get<std::string>());
    }
    config.*member = std::move(items);
  };
  spec.show = [=](const Config& config) -> std::string {
    const std::vector<std::string>& items = config.*member;
    if (items.empty()) return "none";
    if (secret) return "*** (" + std::to_string(items.size()) + ")";
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
    return out;
  };
  return spec;
}

std::string check_api_key(std::string_view key) {
  bool has_space = std::any_of(key.begin(), key.end(),
                               [](unsigned char c) { return std::isspace(c) || std::iscntrl(c); });
  if (key.empty() || has_space) return "must be a non-empty string without whitespace";
  return "";
}

// Browsers send Origin as scheme://host[:port] with no path, so anything else
// (a trailing slash included) could never match and is a mistake worth reporting.
std::string check_origin(std::string_view origin) {
  if (origin == "*") return "";
  std::string_view rest = origin;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else {
    rest = {};
  }
  bool ok = !rest.empty() && rest.find_first_of("/ \t?#") == std::string_view::npos;
  return ok ? "" : "must be \"*\" or an origin like https://example.com:8443 (no path)";
}

std::vector<OptionSpec> build_table() {
  const std::string listener = "Listener";
  const std::string requests = "Requests";
  const std::string access = "Access control";
  const std::string logging = "Logging";
  std::vector<OptionSpec> table;
  table.push_back(string_option("host", &Config::host, {}, "HOST", listener,
                                "Address to listen on (IP literal or host name)"));
  table.push_back(integer_option("port", &Config::port, 0, 65535, "UINT", listener,
                                 "TCP port to listen on (0: ephemeral)"));
  table.push_back(integer_option("http_threads", &Config::http_threads, 0, 1024, "UINT", listener,
                                 "HTTP I/O threads (0: one per core, at least 2)"));
  table.push_back(integer_option("max_connections", &Config::max_connections, 1, 1'000'000, "UINT",
                                 listener, "Most client connections open at once"));
  table.push_back(integer_option("max_connections_per_address", &Config::max_connections_per_address, 0,
                                 1'000'000, "UINT", listener,
                                 "Most connections one client IP address may hold (0: no cap)"));
  table.push_back(integer_option("probe_connections", &Config::probe_connections, 0, 1024, "UINT", listener,
                                 "Connections beyond the caps kept for one /health, /ready or /metrics request"));
  table.push_back(integer_option("max_body_bytes", &Config::max_body_bytes, 1, int64_t{1} << 34,
                                 "BYTES", requests, "Largest request body accepted"));
  table.push_back(integer_option("max_header_bytes", &Config::max_header_bytes, 1024,
                                 int64_t{1} << 20, "BYTES", requests,
                                 "Largest request header block accepted"));
  table.push_back(integer_option("max_speech_body_bytes", &Config::max_speech_body_bytes, 1024,
                                 int64_t{1} << 34, "BYTES", requests,
                                 "Largest whole (non-streamed) /v1/audio/speech response; longer audio must be streamed"));
  table.push_back(seconds_option("max_reference_audio_s", &Config::max_reference_audio_s, 0, true, requests,
                                 "Longest voice-cloning reference clip (ref_audio, uploaded voices) of a Base speech model"));
  table.push_back(integer_option("max_voices", &Config::max_voices, 0, 1 << 20, "UINT", requests,
                                 "Uploaded voices (POST /v1/audio/voices) one Base speech model keeps; more get 409"));
  table.push_back(folder_option("voices_dir", &Config::voices_dir, requests,
                                "Folder where Base speech models keep uploaded voices across restarts "
                                "(<DIR>/<model id>/; empty: memory only)"));
  table.push_back(seconds_option("header_timeout_s", &Config::header_timeout_s, 0, true, requests,
                                 "From accept (or, on a kept-alive connection, a request's first byte) to its last header byte"));
  table.push_back(seconds_option("body_timeout_s", &Config::body_timeout_s, 0, true, requests,
                                 "To receive a whole request body"));
  table.push_back(seconds_option("idle_timeout_s", &Config::idle_timeout_s, 0, true, requests,
                                 "Close a keep-alive connection idle this long"));
  table.push_back(seconds_option("write_timeout_s", &Config::write_timeout_s, 0, true, requests,
                                 "To hand one response to a slow reader"));
  table.push_back(seconds_option("shutdown_grace_s", &Config::shutdown_grace_s, 0, false, requests,
                                 "On SIGTERM, in-flight requests get this long to finish"));
  table.push_back(bool_option("strict_request_fields", &Config::strict_request_fields, requests,
                              "Refuse unknown request body fields with 400 (default: ignore them)"));
  table.push_back(bool_option("allow_priority", &Config::allow_priority, requests,
                              "Honour the \"priority\" field (-1000..1000, lower first); off: it is ignored"));
  table.push_back(bool_option("exclude_tools_when_tool_choice_none", &Config::exclude_tools_when_tool_choice_none,
                              requests, "tool_choice \"none\": leave the tools out of the prompt too (OpenAI keeps them)"));
  table.push_back(integer_option("structured_output_max_nesting", &Config::structured_output_max_nesting, 1, 64, "UINT",
                                 requests, "Objects/arrays deep a recursive JSON Schema ($ref to itself) may nest a value"));
  // The prepare pool (server/services/prep_pool.h). The options keep the pool's first
  // name, as do its metrics (sluice_tokenizer_*) and its 429's code (tokenizer_busy):
  // configurations and dashboards use them.
  table.push_back(integer_option("tokenizer_threads", &Config::tokenizer_threads, 0, 256, "UINT", requests,
                                 "Threads of the prepare pool: parse, render, tokenize, compile (0: half the cores, 2..8)"));
  table.push_back(integer_option("tokenizer_queue_size", &Config::tokenizer_queue_size, 1, 1 << 20, "UINT",
                                 requests, "Requests being prepared or waiting to at once; more get 429"));
  table.push_back(integer_option("max_response_logprobs", &Config::max_response_logprobs, 1, int64_t{1} << 32,
                                 "UINT", requests,
                                 "Log-probability entries one response may hold (choices x tokens x (1 + "
                                 "logprobs)); more gets 400"));
  table.push_back(integer_option("responses_store_max_count", &Config::responses_store_max_count, 0, int64_t{1} << 32,
                                 "UINT", requests, "/v1/responses kept for previous_response_id and GET (0: none)"));
  table.push_back(integer_option("responses_store_max_bytes", &Config::responses_store_max_bytes, 0, int64_t{1} << 40,
                                 "BYTES", requests, "Bytes the kept /v1/responses may hold; least recently used go first"));
  table.push_back(seconds_option("responses_store_ttl_s", &Config::responses_store_ttl_s, 0, false, requests,
                                 "A kept /v1/responses response is forgotten after this long (0: never)"));
  table.push_back(list_option("api_keys", &Config::api_keys, check_api_key, true, "KEY,...", access,
                              "Accepted bearer API keys (none: no authentication)"));
  table.push_back(list_option("cors_origins", &Config::cors_origins, check_origin, false,
                              "ORIGIN,...", access,
                              "Origins allowed by CORS (\"*\": any; none: CORS off)"));
  table.push_back(string_option("log_level", &Config::log_level,
                                {"trace", "debug", "info", "warn", "error", "off"}, "LEVEL",
                                logging, "trace, debug, info, warn, error or off"));
  table.push_back(bool_option("access_log", &Config::access_log, logging,
                              "Log one line per HTTP request (true/false/1/0/yes/no)"));
  table.push_back(bool_option("metrics_vllm_names", &Config::metrics_vllm_names, logging,
                              "/metrics also shows the engine metrics under vLLM's names (vllm:*), for "
                              "gateways and autoscalers that read those (true/false)"));
  const std::string engine = "Engine";
  table.push_back(integer_option("kv_cache_bytes", &Config::kv_cache_bytes, 0, int64_t{1} << 40, "BYTES",
                                 engine,
                                 "KV cache budget of each model (0: 256 MiB on the CPU, 90% of a GPU's "
                                 "memory less the weights and a reserve)"));
  table.push_back(integer_option("block_size", &Config::block_size, 1, 256, "UINT", engine,
                                 "Tokens per KV cache block"));
  table.push_back(integer_option("max_num_seqs", &Config::max_num_seqs, 1, 4096, "UINT", engine,
                                 "Most sequences running at once per model"));
  table.push_back(integer_option("max_num_batched_tokens", &Config::max_num_batched_tokens, 1,
                                 1 << 20, "UINT", engine, "Most tokens in one engine step"));
  table.push_back(integer_option("max_prefill_tokens_while_decoding", &Config::max_prefill_tokens_while_decoding, -1,
                                 1 << 20, "INT", engine,
                                 "Most prompt tokens one engine step takes while sequences decode in it, so long "
                                 "prompts stall no stream for long (-1: on the CPU, paced to about one decode "
                                 "step's time, measured; 256 on a GPU; 0: max_num_batched_tokens)"));
  table.push_back(integer_option("max_waiting", &Config::max_waiting, 1, 1 << 20, "UINT", engine,
                                 "Queued sequences per model beyond which requests get 429"));
  table.push_back(integer_option("max_waiting_per_request", &Config::max_waiting_per_request, 0, 1 << 20, "UINT",
                                 engine,
                                 "Sequences (prompts x n) one request may queue; more gets 400 (0: a quarter of "
                                 "max_waiting)"));
  table.push_back(bool_option("enable_prefix_caching", &Config::enable_prefix_caching, engine,
                              "Reuse the KV blocks of shared prompt prefixes (true/false)"));
  table.push_back(integer_option("context_length", &Config::context_length, 0, int64_t{1} << 24, "TOKENS",
                                 engine,
                                 "Context length of each model whose entry sets none (0: the model's trained "
                                 "length, shrunk to fit the KV cache)"));
  table.push_back(integer_option("compute_threads", &Config::compute_threads, 0, 1024, "UINT",
                                 engine, "Compute threads per model (0: one per core)"));
  table.push_back(backend_option(engine));
  table.push_back(seconds_option("request_timeout_s", &Config::request_timeout_s, 0, true, engine,
                                 "Deadline of a request that sets no \"timeout\""));
  table.push_back(seconds_option("max_request_timeout_s", &Config::max_request_timeout_s, 0, true,
                                 engine, "Largest \"timeout\" a request may ask for"));
  table.push_back(seconds_option("queue_timeout_s", &Config::queue_timeout_s, 0, true, engine,
                                 "A request not admitted within this long times out"));
  table.push_back(generation_config_option());
  table.push_back(integer_option("default_max_tokens", &Config::default_max_tokens, 0, INT32_MAX, "TOKENS", engine,
                                 "max_tokens of a request that sets none when no generation default does "
                                 "(chat; 0: up to the context)"));
  table.push_back(seconds_option("health_step_timeout_s", &Config::health_step_timeout_s, 0, false, engine,
                                 "/health answers 503 when an engine step runs longer than this (0: never)"));
  table.push_back(kv_events_config_option());
  table.push_back(models_option());
  return table;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = build_table();
  return table;
}

void fail(std::string_view key, std::string_view message, std::string_view origin) {
  throw ConfigError("config: " + std::string(key) + ": " + std::string(message) + " (from " +
                    std::string(origin) + ")");
}

void fail_type(std::string_view key, std::string_view expected, const json& got,
               std::string_view origin, bool secret) {
  std::string shown = got.type_name();
  if (!secret && !got.is_null()) {
    std::string value = got.dump(-1, ' ', false, json::error_handler_t::replace);
    if (value.size() > 40) value = value.substr(0, 37) + "...";
    shown += " " + value;
  }
  fail(key, "expected " + std::string(expected) + ", got " + shown, origin);
}

std::string quote(std::string_view text) {
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string_view trim(std::string_view text) {
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  while (true) {
    std::size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) return items;
    text.remove_prefix(comma + 1);
  }
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance over three rolling rows.
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          cur[j] = std::min(cur[j], before[j - 2] + 1);
        }
      }
      before.swap(prev);
      prev.swap(cur);
    }
    return prev[b.size()];
  };
  std::string lowered = lowercase(word);
  std::size_t limit = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string& candidate : candidates) {
    std::size_t d = distance(lowered, lowercase(candidate));
    if (d <= limit && d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best = closest(word, candidates);
  return best.empty() ? "" : "; did you mean \"" + best + "\"?";
}

}  // namespace sluice::config::detail
