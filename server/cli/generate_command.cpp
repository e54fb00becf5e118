#include "server/cli/generate_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "engine/loader/gguf_file.h"
#include "engine/loader/quantize.h"
#include "engine/loader/weight_source.h"
#include "engine/engine.h"
#include "engine/engine_stats.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/quiet_log.h"

namespace sluice::server {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int64_t kPrefillChunk = 512;  // tokens per prefill step: bounds the workspace

// The engine's timings of the one request, read after the engine thread has joined.
class RequestTimings : public engine::EngineObserver {
 public:
  void on_request_finished(const engine::RequestMetrics& request) override { metrics_ = request; }
  const engine::RequestMetrics& metrics() const { return metrics_; }

 private:
  engine::RequestMetrics metrics_;
};

// An engine for one sequence of prompt + max_new tokens: a KV pool of just its
// blocks, F32 as the reference numerics are checked in, prefill in chunks of
// kPrefillChunk tokens.
engine::EngineConfig one_sequence_config(const engine::ModelHparams& h, int64_t num_tokens) {
  engine::EngineConfig config;
  config.model_name = "generate";
  config.block_size = kBlockSize;
  config.max_num_seqs = 1;
  config.max_num_batched_tokens = kPrefillChunk;
  config.max_model_len = num_tokens;
  config.kv_dtype = backends::DType::F32;
  const auto num_blocks = static_cast<uint64_t>((num_tokens + kBlockSize - 1) / kBlockSize);
  config.kv_cache_bytes = engine::KvCache::bytes_per_block(h, kBlockSize, config.kv_dtype) * num_blocks;
  config.stream_capacity = static_cast<size_t>(num_tokens) + 16;  // never full, however slow stdout is
  return config;
}

// Streams the request's text to stdout until its finish, which it returns.
engine::ChoiceFinish print_until_finish(engine::RequestStream& stream) {
  std::vector<engine::RequestEvent> events;
  while (true) {
    stream.wait(std::chrono::seconds(1));
    events.clear();
    stream.poll(events);
    for (engine::RequestEvent& event : events) {
      if (const auto* delta = std::get_if<engine::ChoiceDelta>(&event)) {
        std::fwrite(delta->text.data(), 1, delta->text.size(), stdout);
        std::fflush(stdout);
      } else if (auto* finish = std::get_if<engine::ChoiceFinish>(&event)) {
        return std::move(*finish);
      }
    }
  }
}

}  // namespace

void add_generate_options(CLI::App& app, GenerateOptions& o) {
  app.add_option("--model", o.model_path, "GGUF file, or a Hugging Face model folder")->required();
  app.add_option("--prompt", o.prompt, "Prompt text (special tokens like <|im_start|> are parsed)")->required();
  app.add_option("--max-tokens", o.max_tokens, "Most tokens to generate")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--temperature", o.temperature, "Sampling temperature; 0 is greedy")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--top-k", o.top_k, "Keep the k most likely tokens; 0 keeps all")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--top-p", o.top_p, "Nucleus sampling mass")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--seed", o.seed, "Sampling seed (default: random)");
  app.add_option("--backend", o.backend, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--quantize", o.quantize, "Quantize F32/F16/BF16 weight matrices at load: none, q8_0 or q4_0")
      ->capture_default_str()->check(CLI::IsMember({"none", "q8_0", "q4_0"}));
  app.add_option("--threads", o.threads, "CPU compute threads; 0 is one per core")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_flag("--stats", o.stats, "Print token counts and speeds to stderr");
}

int run_generate(const GenerateOptions& o) {
  try {
    // A GGUF file carries its tokenizer; a Hugging Face folder has tokenizer.json.
    const tokenizer::Tokenizer tokenizer =
        std::filesystem::is_directory(o.model_path)
            ? tokenizer::Tokenizer::from_hf_dir(o.model_path)
            : tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(o.model_path));
    std::shared_ptr<const loader::WeightSource> weights = loader::open_weights(o.model_path);
    auto backend = backends::make_backend(backends::resolve_backend(o.backend), o.threads);
    auto model = engine::Model::load(weights, *backend, loader::parse_load_quantization(o.quantize));

    std::vector<int32_t> prompt = tokenizer.encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
    if (prompt.empty()) {
      std::fprintf(stderr, "error: the prompt has no tokens\n");
      return 1;
    }
    int64_t max_new = o.max_tokens;
    const int64_t context = model->hparams().context_length;
    if (context > 0) max_new = std::min<int64_t>(max_new, context - static_cast<int64_t>(prompt.size()));
    if (max_new <= 0) {
      std::fprintf(stderr, "error: the prompt (%zu tokens) fills the context (%lld)\n", prompt.size(),
                   static_cast<long long>(context));
      return 1;
    }
    engine::GenerationRequest request;
    request.request_id = "generate";
    request.prompt_tokens = prompt;
    request.params.temperature = o.temperature;
    request.params.top_k = o.top_k;
    request.params.top_p = o.top_p;
    request.params.seed = o.seed;  // absent: a random stream
    request.params.max_tokens = static_cast<int32_t>(max_new);

    RequestTimings timings;
    engine::ChoiceFinish finish;
    {
      const QuietLog quiet;  // stdout is the completion
      engine::Engine engine(*model, tokenizer,
                            one_sequence_config(model->hparams(), static_cast<int64_t>(prompt.size()) + max_new),
                            &timings);
      engine.start();
      engine::SubmitResult submitted = engine.submit(std::move(request));
      if (!submitted.ok()) throw std::runtime_error("the engine refused the prompt: " + submitted.message);
      finish = print_until_finish(*submitted.stream);
      engine.stop();  // joins the engine thread: the observer has seen the request
    }
    if (finish.reason != engine::FinishReason::stop && finish.reason != engine::FinishReason::length)
      throw std::runtime_error("generation ended with '" + std::string(finish.finish_reason()) + "': " + finish.error);
    std::fputc('\n', stdout);
    std::fflush(stdout);

    // Without stop strings a "stop" is an EOS, which the engine counts as an output
    // token but prints nothing for. Every token after the first took a decode step.
    const int64_t num_generated =
        finish.num_completion_tokens - (finish.reason == engine::FinishReason::stop ? 1 : 0);
    const int64_t num_decode_steps = std::max<int64_t>(0, finish.num_completion_tokens - 1);
    const double prefill_seconds = timings.metrics().prefill_time_s;
    const double decode_seconds = timings.metrics().decode_time_s;
    if (o.stats) {
      std::fprintf(stderr, "prompt tokens:     %zu\n", prompt.size());
      std::fprintf(stderr, "prompt speed:      %.2f tokens/s (%.3f s)\n",
                   static_cast<double>(prompt.size()) / prefill_seconds, prefill_seconds);
      std::fprintf(stderr, "generated tokens:  %lld\n", static_cast<long long>(num_generated));
      // Generation speed counts the decode steps (one forward each) and their sampling.
      std::fprintf(stderr, "generation speed:  %.2f tokens/s (%lld steps, %.3f s)\n",
                   num_decode_steps > 0 ? static_cast<double>(num_decode_steps) / decode_seconds : 0.0,
                   static_cast<long long>(num_decode_steps), decode_seconds);
      std::fprintf(stderr, "backend:           %s (%s kernels, %.1f MiB repacked at load)\n", backend->name().c_str(),
                   backend->kernel_path().c_str(), static_cast<double>(backend->made_weight_bytes()) / (1 << 20));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::server
