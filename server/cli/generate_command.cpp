#include "server/cli/generate_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "engine/loader/gguf_file.h"
#include "engine/loader/quantize.h"
#include "engine/loader/weight_source.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"
#include "engine/sampler.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace sluice::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kBlockSize = 16;
constexpr int64_t kPrefillChunk = 512;  // tokens per prefill step: bounds the workspace

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One sequence in its own small KV cache: feeds tokens in steps and returns the
// logits of the last one. Blocks are laid out in order, so block_table is 0..n-1.
class SingleSequence {
 public:
  SingleSequence(engine::Model& model, int64_t max_tokens)
      : model_(model),
        cache_(model.backend(), model.hparams(),
               engine::KvCacheConfig{.num_blocks = (max_tokens + kBlockSize - 1) / kBlockSize,
                                     .block_size = kBlockSize,
                                     .dtype = backends::DType::F32}),
        logits_(static_cast<size_t>(model.hparams().vocab_size)) {
    slice_.block_table.resize(static_cast<size_t>(cache_.num_blocks()));
    for (size_t i = 0; i < slice_.block_table.size(); ++i) slice_.block_table[i] = static_cast<int32_t>(i);
  }

  int64_t capacity() const { return cache_.num_slots(); }

  // Appends `tokens` in one step; returns the logits [vocab] after the last one.
  std::span<const float> feed(std::span<const int32_t> tokens) {
    const auto t = static_cast<int32_t>(tokens.size());
    positions_.resize(tokens.size());
    for (int32_t i = 0; i < t; ++i) positions_[static_cast<size_t>(i)] = num_cached_ + i;
    slice_.query_begin = 0;
    slice_.num_queries = t;
    slice_.num_cached = num_cached_;
    const int32_t last_row = t - 1;
    engine::StepBatch batch{.token_ids = tokens,
                            .positions = positions_,
                            .kv_slots = positions_,  // identity block table: slot == position
                            .sequences = std::span(&slice_, 1),
                            .logit_rows = std::span(&last_row, 1)};
    model_.forward(batch, cache_, logits_);
    num_cached_ += t;
    return logits_;
  }

 private:
  engine::Model& model_;
  engine::KvCache cache_;
  backends::SequenceSlice slice_;
  std::vector<int32_t> positions_;  // [T] of the current step
  std::vector<float> logits_;       // [vocab]
  int32_t num_cached_ = 0;
};

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
    SingleSequence sequence(*model, static_cast<int64_t>(prompt.size()) + max_new);
    engine::Sampler sampler(static_cast<int32_t>(model->hparams().vocab_size));
    engine::SamplingParams sampling;
    sampling.temperature = o.temperature;
    sampling.top_k = o.top_k;
    sampling.top_p = o.top_p;
    engine::Rng rng = o.seed ? engine::Rng(*o.seed, 0) : engine::Rng::from_entropy();
    std::vector<int32_t> output;
    tokenizer::IncrementalDetokenizer detokenizer(tokenizer);

    // Prefill: the prompt in chunks; the last chunk's logits give the first token.
    const auto prefill_start = Clock::now();
    std::span<const float> logits;
    for (size_t begin = 0; begin < prompt.size(); begin += kPrefillChunk) {
      const size_t count = std::min<size_t>(kPrefillChunk, prompt.size() - begin);
      logits = sequence.feed(std::span(prompt).subspan(begin, count));
    }
    const double prefill_seconds = seconds_since(prefill_start);

    // Decode: sample, print, feed back, until EOS or max_new tokens.
    const auto decode_start = Clock::now();
    int64_t num_generated = 0;
    int64_t num_decode_steps = 0;
    while (true) {
      const int32_t token = sampler.sample(logits, sampling, prompt, output, rng).token;
      if (tokenizer.is_eos(token)) break;
      ++num_generated;
      output.push_back(token);
      const std::string text = detokenizer.push(token);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      if (num_generated >= max_new) break;
      logits = sequence.feed(std::span(&token, 1));
      ++num_decode_steps;
    }
    const double decode_seconds = seconds_since(decode_start);
    const std::string rest = detokenizer.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);

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
