#pragma once
// The one configuration schema of sluice: plain structs with their defaults.
// Filled from (lowest to highest precedence) defaults, a config file, SLUICE_*
// environment variables and command-line flags; see config_loader.h.
#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

namespace sluice::config {

// Generation defaults set by the operator: what a request that leaves a field out
// gets (unset here: the model file's value, else the API default). The same ranges
// as the request fields.
struct GenerationConfig {
  std::optional<double> temperature, top_p, min_p, presence_penalty, frequency_penalty, repetition_penalty;
  std::optional<int64_t> top_k, max_tokens;
};

// Speculative decoding of one model (vLLM's speculative_config, its field names):
// drafts of num_speculative_tokens tokens verified in one step of the model.
struct SpeculativeModelConfig {
  std::string method = "none";         // none | ngram (prompt lookup: no draft model) | draft_model
  // draft_model: the small model that drafts (GGUF file or safetensors folder; its
  // tokenizer must be the target's), loaded on the target's backend.
  std::string model;
  int64_t num_speculative_tokens = 4;  // drafted tokens per step, 1..16
  int64_t prompt_lookup_min = 2;       // ngram: shortest suffix searched for, 1..prompt_lookup_max
  int64_t prompt_lookup_max = 4;       // ngram: longest, up to 32
  // Off in a step with more decoding sequences than this, 1..4096.
  int64_t disable_by_batch_size = 4;
};

// One model the daemon serves.
struct ModelConfig {
  std::string path;              // GGUF file, or a model folder (safetensors)
  std::string name;              // served model id; empty: the file name without .gguf
  std::string backend = "auto";  // cpu | cuda | cuda:N | auto (auto: Config::backend)
  int64_t context_length = 0;    // 0: the model's trained context length
  std::string quantize = "none"; // none | q8_0 | q4_0: F32/F16/BF16 matrices quantized at load
  // Speech models: the codec decoder's convolutions, f32 (the reference numerics)
  // or int16 (CPU only: faster, the waveform within engine/tts/codec's stated SNR).
  std::string codec_precision = "f32";
  GenerationConfig generation;   // over Config::generation_config, field by field
  // Speech models: voice name a request may use -> checkpoint speaker, over the
  // built-in OpenAI voice table (server/services/speech_voices.h). Names are lower-case.
  std::map<std::string, std::string> voices;
  // Base (voice-cloning) speech models: the folder uploaded voices are kept in, over
  // Config::voices_dir; "" falls back to it.
  std::string voices_dir;
  // Chat: a Jinja file used instead of the model file's chat template (vLLM's
  // --chat-template); "" keeps the model's.
  std::string chat_template;
  // How tool calls and reasoning are read from the output: auto (from the chat
  // template) | hermes | llama3_json | none, and auto | qwen3 | deepseek_r1 | none.
  std::string tool_call_parser = "auto";
  std::string reasoning_parser = "auto";
  // /v1/embeddings: how a text model pools its final hidden states. auto: the GGUF's
  // `<arch>.pooling_type` when present (mean or last), else last (decoder LLMs, as
  // vLLM) | last | mean. Always L2-normalized.
  std::string pooling = "auto";
  SpeculativeModelConfig speculative;  // off by default
};

// KV-cache events in vLLM's format (its --kv-events-config, same keys): the block
// pool's cached and evicted blocks, published over ZeroMQ for KV-aware routers.
struct KvEventsConfig {
  bool enable_kv_cache_events = false;
  std::string publisher = "zmq";            // zmq | null (null: off, as in vLLM)
  std::string endpoint = "tcp://*:5557";    // bound when it has "*" or "::" (or ipc/inproc), else connected
  std::string replay_endpoint;              // ROUTER socket for missed messages; "": none
  int64_t buffer_steps = 10'000;            // messages kept for replay
  int64_t hwm = 100'000;                    // PUB send high-water mark
  int64_t max_queue_size = 100'000;         // batches waiting to be sent; more are dropped
  std::string topic = "kv@{host}@{model}";  // {host}: the host name, {model}: the served model id
  std::string event_layout = "array";       // array (vLLM array_like, llm-d) | map (current vLLM)
  bool enabled() const { return enable_kv_cache_events && publisher == "zmq"; }
};

struct Config {
  // HTTP listener
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  int http_threads = 0;  // 0: one per core, at least 2
  int max_connections = 1024;
  int max_connections_per_address = 0;  // regular slots one client IP may hold; 0: no cap
  int probe_connections = 16;           // beyond max_connections, for one /health, /ready or /metrics request

  // Requests
  uint64_t max_body_bytes = 8u << 20;
  uint32_t max_header_bytes = 16u << 10;
  uint64_t max_speech_body_bytes = 32u << 20;  // a whole (non-streamed) speech response
  // Voice cloning (Base speech models): the longest reference clip, the voices one
  // model keeps from POST /v1/audio/voices, and where it keeps them on disk ("":
  // memory only; a model's voices go to <voices_dir>/<model id>/ unless its entry
  // sets its own voices_dir).
  double max_reference_audio_s = 30;
  int64_t max_voices = 64;
  std::string voices_dir;
  double header_timeout_s = 10;  // from accept (kept-alive: a request's first byte) to its last header byte
  double body_timeout_s = 60;    // to receive the whole body
  double idle_timeout_s = 60;    // keep-alive connection with no request in progress
  double write_timeout_s = 60;   // to hand one response to a slow reader
  double shutdown_grace_s = 30;  // SIGTERM: in-flight requests get this long to finish
  bool strict_request_fields = false;  // unknown body fields: 400 instead of ignored
  bool allow_priority = false;         // honour "priority"; off: any client could jump the queue
  // tool_choice "none": leave the tools out of the prompt too (OpenAI keeps them in it).
  bool exclude_tools_when_tool_choice_none = false;
  // Levels of objects/arrays a recursive JSON Schema ($ref to itself) is unrolled to
  // (engine/grammar/limits.h max_recursive_nesting; OpenAI documents 10).
  int structured_output_max_nesting = 10;
  int tokenizer_threads = 0;           // threads that tokenize and render templates; 0: half the cores, 2..8
  int tokenizer_queue_size = 64;       // requests tokenizing or waiting to; more get 429
  // Log-probability entries one response may hold (choices x tokens x (1 + logprobs)).
  int64_t max_response_logprobs = 1'000'000;
  // /v1/responses with store: kept in memory, least recently used out first.
  int64_t responses_store_max_count = 10'000;
  uint64_t responses_store_max_bytes = 256u << 20;
  double responses_store_ttl_s = 3600;  // 0: kept until evicted

  // Access control
  std::vector<std::string> api_keys;      // empty: no authentication
  std::vector<std::string> cors_origins;  // empty: CORS off; "*": any origin

  // Logging
  std::string log_level = "info";  // trace | debug | info | warn | error | off
  bool access_log = true;
  bool metrics_vllm_names = true;  // /metrics also shows the engine series under vLLM's vllm:* names

  // Engine (per model)
  uint64_t kv_cache_bytes = 0;  // KV pool budget of each model; 0: automatic (see engine.h)
  int block_size = 16;                     // tokens per KV block
  int max_num_seqs = 64;                   // sequences running at once
  int max_num_batched_tokens = 2048;       // tokens per engine step
  // Prompt tokens one step takes while sequences decode in it (0: max_num_batched_tokens):
  // bounds the inter-token latency of streams while long prompts arrive.
  int max_prefill_tokens_while_decoding = -1;  // -1: the backend's (engine::prefill_cap_while_decoding, paces_prefill)
  int max_waiting = 256;                   // queued sequences beyond which requests get 429
  int max_waiting_per_request = 0;         // sequences one request may queue; 0: a quarter of max_waiting
  bool enable_prefix_caching = true;
  int compute_threads = 0;                 // 0: one per core
  std::string backend = "auto";            // of each model whose entry says auto: cpu | cuda | cuda:N | auto
  int64_t context_length = 0;              // of each model whose entry sets none; 0: the model's own
  double request_timeout_s = 600;          // deadline of a request that sets no "timeout"
  double max_request_timeout_s = 3600;     // largest "timeout" a request may ask for
  double queue_timeout_s = 60;             // to be admitted by the scheduler
  GenerationConfig generation_config;       // every model's generation defaults (over the model file's)
  int default_max_tokens = 512;            // a request with no max_tokens and no default; 0: up to the context
  double health_step_timeout_s = 120;      // /health says 503 when an engine step runs longer; 0: never
  KvEventsConfig kv_events_config;         // off by default

  std::vector<ModelConfig> models;
};

}  // namespace sluice::config
