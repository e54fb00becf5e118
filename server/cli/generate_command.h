#pragma once
// `sluice generate --model PATH --prompt TEXT`: submits one prompt to an Engine of
// its own and streams the completion to stdout, without the daemon. A smoke test of
// the path a server request takes below HTTP (tokenizer → scheduler → model runner
// on the paged KV cache → sampler → detokenizer and stop checks → RequestStream)
// and the quickest way to measure prompt and generation speed (--stats).
#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace sluice::server {

struct GenerateOptions {
  std::string model_path;   // a GGUF file, or a Hugging Face folder with tokenizer.json
  std::string prompt;
  int max_tokens = 64;
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;
  float top_p = 1.0f;
  std::optional<uint64_t> seed;  // default: random
  int threads = 0;               // 0: one per core
  std::string backend = "auto";  // auto | cpu | cuda | cuda:N
  std::string quantize = "none"; // none | q8_0 | q4_0: F32/F16/BF16 matrices quantized at load
  bool stats = false;            // timings to stderr
};

// Registers the subcommand's options on `app`, bound to `options`.
void add_generate_options(CLI::App& app, GenerateOptions& options);

// Returns the process exit code: 0 on success, 1 when the model cannot be loaded or run.
int run_generate(const GenerateOptions& options);

}  // namespace sluice::server
