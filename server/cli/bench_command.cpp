#include "server/cli/bench_command.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "engine/loader/gguf_file.h"
#include "engine/synthetic/random_weights.h"
#include "engine/loader/quantize.h"
#include "engine/loader/weight_source.h"
#include "engine/models/batch_builder.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/bench_serving.h"
#include "server/cli/bench_speculation.h"
#include "server/cli/bench_tts.h"

namespace sluice::server {
namespace {

using backends::DType;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBlockSize = 16;  // the engine's default block_size
constexpr int kCopyRepeats = 5;
constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

DType parse_dtype(const std::string& text, std::initializer_list<DType> allowed, const char* flag) {
  std::string names;
  for (DType d : allowed) {
    if (lower(text) == lower(std::string(backends::dtype_name(d)))) return d;
    names += (names.empty() ? "" : " ") + lower(std::string(backends::dtype_name(d)));
  }
  throw std::invalid_argument(std::string(flag) + ": '" + text + "' is not one of " + names);
}

// The value after "key<spaces/tabs>:" on the first line of `path` that starts with key.
std::string read_field(const std::filesystem::path& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(key)) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

// The driver's name for NVIDIA GPU `index` (in PCI order, which is CUDA's order on
// the one-GPU machines this runs on); read from /proc so no CUDA call is needed.
std::string nvidia_gpu_name(int index) {
  std::vector<std::filesystem::path> gpus;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec))
    gpus.push_back(entry.path() / "information");
  std::sort(gpus.begin(), gpus.end());
  if (index < 0 || static_cast<size_t>(index) >= gpus.size()) return "";
  return read_field(gpus[static_cast<size_t>(index)], "Model");
}

uint64_t host_available_bytes() {
  const std::string kib = read_field("/proc/meminfo", "MemAvailable");
  return kib.empty() ? 0 : std::stoull(kib) * 1024;
}

void require_memory(uint64_t needed, uint64_t available, const std::string& what, const char* hint) {
  if (available == 0 || needed <= available) return;
  char text[256];
  std::snprintf(text, sizeof text, "%s need %.2f GiB but only %.2f GiB is free; %s", what.c_str(),
                static_cast<double>(needed) / kGiB, static_cast<double>(available) / kGiB, hint);
  throw std::runtime_error(text);
}

// "512.0 MiB", "15.00 GiB": buffer sizes in binary units, as memory_info is read.
std::string format_bytes(uint64_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (b >= kGiB) std::snprintf(text, sizeof text, "%.2f GiB", b / kGiB);
  else std::snprintf(text, sizeof text, "%.1f MiB", b / (1024.0 * 1024.0));
  return text;
}

// B sequences, each owning blocks_per_seq consecutive blocks of one KV cache, and
// the steps run over them (their arrays filled by the engine's BatchBuilder).
class StepRunner {
 public:
  StepRunner(engine::Model& model, engine::KvCache& cache, int64_t blocks_per_seq)
      : model_(model), cache_(cache), blocks_per_seq_(blocks_per_seq), builder_(cache.block_size()) {}

  // One decode step: sequence s (s < batch) has `context` tokens cached and decodes
  // the token at position `context`, its KV going to the same slot every step.
  void prepare_decode(int batch, int context) {
    builder_.clear();
    for (int s = 0; s < batch; ++s) add_sequence(s, context, 1, true);
  }
  // The prefill chunk [begin, begin + count) of a prompt in sequence 0; only the
  // prompt's last token produces logits, as in the engine.
  void prepare_prefill(int begin, int count, bool last) {
    builder_.clear();
    add_sequence(0, begin, count, last);
  }

  double run() {
    logits_.resize(builder_.num_logit_rows() * static_cast<size_t>(model_.hparams().vocab_size));
    const engine::StepBatch batch = builder_.batch();
    const auto start = Clock::now();
    model_.forward(batch, cache_, logits_);  // downloads the logits: the step has finished
    return seconds_since(start);
  }

 private:
  void add_sequence(int s, int num_cached, int count, bool sample) {
    block_table_.clear();
    for (int64_t b = 0; b < blocks_per_seq_; ++b) block_table_.push_back(static_cast<int32_t>(s * blocks_per_seq_ + b));
    tokens_.clear();
    // Any ids do: a fixed stride spreads them over the vocabulary.
    for (int32_t position = num_cached; position < num_cached + count; ++position)
      tokens_.push_back(static_cast<int32_t>((7919ll * (s + 1) + 104729ll * position) % model_.hparams().vocab_size));
    const size_t seq = builder_.add_sequence(tokens_, num_cached, block_table_);
    if (sample) builder_.add_last_logit_row(seq);
  }

  engine::Model& model_;
  engine::KvCache& cache_;
  int64_t blocks_per_seq_;
  engine::BatchBuilder builder_;
  std::vector<int32_t> tokens_, block_table_;  // of the sequence being added
  std::vector<float> logits_;
};

struct WeightBytes {
  uint64_t total = 0;           // every tensor
  uint64_t per_decode_row = 0;  // token_embd bytes one decode row gathers
  uint64_t per_step = 0;        // bytes every step reads whatever its size: all but token_embd
};

// The same split for a model file, from the tensors a model of its hparams binds,
// as bound: a matrix that --quantize turns into Q8_0 / Q4_0 counts at that size
// (the embedding always at Q8_0, as engine/models/model_weights.cpp does).
WeightBytes weight_bytes(const loader::WeightSource& source, std::optional<DType> quantize_to) {
  const engine::ModelHparams& h = source.hparams();
  WeightBytes w;
  const auto size = [&](const std::string& name) -> uint64_t {
    const auto view = source.find(name);
    if (!view) return 0;
    if (quantize_to && view->shape.size() == 2 && loader::can_quantize(view->dtype, view->shape[1])) {
      const DType to = name == "token_embd.weight" ? DType::Q8_0 : *quantize_to;
      if (auto bytes = backends::dtype_bytes(to, static_cast<uint64_t>(view->shape[0] * view->shape[1]))) return *bytes;
    }
    return view->data.size();
  };
  const uint64_t embd = size("token_embd.weight");
  w.total = embd + size("output.weight") + size("output_norm.weight");
  w.per_step = w.total - embd;
  if (h.tied_embeddings) w.per_step += embd;
  else w.per_decode_row = embd / static_cast<uint64_t>(std::max<int64_t>(h.vocab_size, 1));
  for (int64_t i = 0; i < h.num_layers; ++i)
    for (const char* t : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
                          "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm"}) {
      const uint64_t bytes = size("blk." + std::to_string(i) + "." + t + ".weight");
      w.total += bytes;
      w.per_step += bytes;
    }
  return w;
}

WeightBytes weight_bytes(const loader::RandomModelSpec& spec) {
  WeightBytes w;
  for (const auto& t : loader::random_model_tensors(spec)) {
    w.total += t.bytes;
    // The embedding is gathered row by row; with tied embeddings it is also the
    // output matrix, read whole.
    if (t.name == "token_embd.weight" && !spec.hparams.tied_embeddings)
      w.per_decode_row = t.bytes / static_cast<uint64_t>(t.shape[0]);
    else
      w.per_step += t.bytes;
  }
  return w;
}

// One run of the command: the parsed options, the backend, and the JSON report
// that each phase adds its section to while it prints its table.
class Bench {
 public:
  // file: the model file's weights (spec_ then only carries its hparams), or null
  // for random weights of `spec`.
  Bench(const BenchOptions& o, loader::RandomModelSpec spec, std::shared_ptr<const loader::WeightSource> file,
        DType kv_dtype, backends::BackendSpec backend_spec)
      : o_(o), spec_(std::move(spec)), file_(std::move(file)), kv_dtype_(kv_dtype), backend_spec_(backend_spec),
        bytes_(file_ ? weight_bytes(*file_, loader::parse_load_quantization(o.quantize)) : weight_bytes(spec_)),
        backend_(backends::make_backend(backend_spec, o.threads)),
        on_cpu_(backend_->device() == backends::DeviceKind::cpu),
        blocks_per_seq_((std::max({o.context + 1, o.prompt, o.generate}) + kBlockSize - 1) / kBlockSize) {}

  void run() {
    describe();
    copy_peak_gbps_ = measure_copy();
    load();
    engine::KvCache cache(*backend_, spec_.hparams, {.num_blocks = blocks_per_seq_ * max_batch(),
                                                     .block_size = kBlockSize, .dtype = kv_dtype_});
    StepRunner runner(*model_, cache, blocks_per_seq_);
    if (file_) generate(runner);
    decode(runner);
    prefill(runner);
    if (file_) run_serving_tables(*model_, file_tokenizer(), o_, report_);
    if (file_ && !o_.speculative.empty()) speculate();
    if (!o_.json_path.empty()) {
      std::ofstream file(o_.json_path);
      file << report_.dump(2) << '\n';
      if (!file) throw std::runtime_error("cannot write " + o_.json_path);
    }
  }

 private:
  int max_batch() const { return *std::max_element(o_.batches.begin(), o_.batches.end()); }
  std::string dtype_text(DType d) const { return std::string(backends::dtype_name(d)); }

  void describe() {
    const engine::ModelHparams& h = spec_.hparams;
    const backends::MemoryInfo memory = backend_->memory_info();
    const int threads = o_.threads > 0 ? o_.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::string cpu_model = read_field("/proc/cpuinfo", "model name");
    const std::string device_name = on_cpu_ ? cpu_model : nvidia_gpu_name(backend_spec_.device_index);
    const int64_t all_layers =
        file_ ? h.num_layers : loader::random_model_preset(o_.model_shape).hparams.num_layers;
    std::printf("model     %s: %lld of %lld layers, d %lld, %lld heads / %lld kv x %lld, ffn %lld, vocab %lld\n",
                file_ ? file_->path().string().c_str() : o_.model_shape.c_str(), static_cast<long long>(h.num_layers),
                static_cast<long long>(all_layers),
                static_cast<long long>(h.embedding_length), static_cast<long long>(h.num_heads),
                static_cast<long long>(h.num_kv_heads), static_cast<long long>(h.head_dim),
                static_cast<long long>(h.ffn_length), static_cast<long long>(h.vocab_size));
    std::printf("machine   backend %s", backend_->name().c_str());
    if (on_cpu_) std::printf(" (%d threads)", threads);
    std::printf(", %s; memory %.1f GiB total, %.1f GiB free\n",
                device_name.empty() ? "unknown device" : device_name.c_str(),
                static_cast<double>(memory.total_bytes) / kGiB, static_cast<double>(memory.free_bytes) / kGiB);
    std::fflush(stdout);
    report_["machine"] = {{"backend", backend_->name()}, {"device_name", device_name}, {"cpu_model", cpu_model},
                          {"threads", on_cpu_ ? threads : 0}, {"memory_total_bytes", memory.total_bytes},
                          {"memory_free_bytes", memory.free_bytes}};
  }

  // Peak copy bandwidth: one untimed copy (first touch, clocks up), then the best
  // of kCopyRepeats. Counts read + write, 2 x bytes per copy, as STREAM's "copy".
  double measure_copy() {
    uint64_t bytes = o_.copy_bytes;
    const uint64_t free = backend_->memory_info().free_bytes;
    if (free > 0) bytes = std::min(bytes, free / 4);  // both buffers in half of what is free
    const int64_t floats = std::max<int64_t>(static_cast<int64_t>(bytes / 4), 1 << 18);
    bytes = static_cast<uint64_t>(floats) * 4;
    auto a = backend_->allocate(bytes), b = backend_->allocate(bytes);
    const auto ta = backends::Tensor::make(a.get(), 0, DType::F32, {floats});
    const auto tb = backends::Tensor::make(b.get(), 0, DType::F32, {floats});
    backend_->fill_zero(ta);
    backend_->fill_zero(tb);
    backend_->copy(ta, tb);
    backend_->synchronize();
    double best = 1e30;
    for (int i = 0; i < kCopyRepeats; ++i) {
      const auto start = Clock::now();
      backend_->copy(i % 2 ? tb : ta, i % 2 ? ta : tb);
      backend_->synchronize();
      best = std::min(best, seconds_since(start));
    }
    const double gbps = 2.0 * static_cast<double>(bytes) / best / kGB;
    std::printf("copy      Backend::copy of %s, best of %d: %.2f GB/s (read + write bytes = 2 x size; GB = 1e9 B)\n",
                format_bytes(bytes).c_str(), kCopyRepeats, gbps);
    std::fflush(stdout);
    report_["copy"] = {{"bytes", bytes}, {"repeats", kCopyRepeats}, {"best_seconds", best}, {"peak_gbps", gbps},
                       {"convention", "read + write bytes (2 x bytes per copy), GB = 1e9 bytes"}};
    return gbps;
  }

  // Checks memory first (an 8B model takes minutes to find out otherwise), then
  // generates the weights in host memory and binds them to the backend.
  void load() {
    const uint64_t kv_bytes = engine::KvCache::bytes_per_block(spec_.hparams, kBlockSize, kv_dtype_) *
                              static_cast<uint64_t>(blocks_per_seq_ * max_batch());
    const char* hint = "use --layers, a smaller --dtype, fewer --batches or a shorter --context / --prompt";
    const uint64_t host = host_available_bytes();
    if (on_cpu_) {
      require_memory(bytes_.total + kv_bytes, host, "the weights and the KV cache", hint);
    } else {
      require_memory(bytes_.total, host, "the random weights (host copy)", hint);
      require_memory(bytes_.total + kv_bytes, backend_->memory_info().free_bytes, "the weights and the KV cache", hint);
    }
    auto start = Clock::now();
    std::shared_ptr<const loader::WeightSource> source = file_ ? file_ : loader::make_random_weights(spec_, o_.seed);
    const double generate_seconds = seconds_since(start);
    start = Clock::now();
    model_ = engine::Model::load(source, *backend_, loader::parse_load_quantization(o_.quantize));
    const double load_seconds = seconds_since(start);
    if (file_) {
      std::printf("weights   %s from the file, loaded in %.1f s\n", format_bytes(bytes_.total).c_str(), load_seconds);
    } else {
      std::printf("weights   %s matrices, F32 norms: %s random (seed %llu), generated in %.1f s, loaded in %.1f s\n",
                  dtype_text(spec_.matrix_dtype).c_str(), format_bytes(bytes_.total).c_str(),
                  static_cast<unsigned long long>(o_.seed), generate_seconds, load_seconds);
    }
    std::printf("kernels   %s; %s made at load (repacked weights)\n", backend_->kernel_path().c_str(),
                format_bytes(backend_->made_weight_bytes()).c_str());
    report_["kernels"] = {{"path", backend_->kernel_path()}, {"made_weight_bytes", backend_->made_weight_bytes()}};
    std::printf("KV cache  %s, %s: %lld blocks of %lld tokens\n", dtype_text(kv_dtype_).c_str(),
                format_bytes(kv_bytes).c_str(), static_cast<long long>(blocks_per_seq_ * max_batch()),
                static_cast<long long>(kBlockSize));
    const engine::ModelHparams& h = spec_.hparams;
    report_["model"] = {{"shape", o_.model_shape}, {"architecture", h.architecture}, {"layers", h.num_layers},
                        {"embedding_length", h.embedding_length}, {"num_heads", h.num_heads},
                        {"num_kv_heads", h.num_kv_heads}, {"head_dim", h.head_dim}, {"ffn_length", h.ffn_length},
                        {"vocab_size", h.vocab_size}, {"dtype", file_ ? "file" : dtype_text(spec_.matrix_dtype)},
                        {"kv_dtype", dtype_text(kv_dtype_)}, {"weight_bytes", bytes_.total}, {"kv_cache_bytes", kv_bytes},
                        {"seed", o_.seed}, {"generate_seconds", generate_seconds}, {"load_seconds", load_seconds}};
  }

  // llama-bench's tg: one sequence generating o_.generate tokens from an empty
  // context, one decode step per token (the context grows 0, 1, ...).
  void generate(StepRunner& runner) {
    double total = 0.0;
    for (int pass = 0; pass < (o_.warmup > 0 ? 2 : 1); ++pass) {
      total = 0.0;
      for (int c = 0; c < o_.generate; ++c) {
        runner.prepare_decode(1, c);
        total += runner.run();
      }
    }
    const double gbps = static_cast<double>(bytes_.per_step + bytes_.per_decode_row) * o_.generate / total / kGB;
    std::printf("\ngenerate  one sequence, %d tokens from an empty context (as llama-bench tg%d)\n", o_.generate,
                o_.generate);
    std::printf("  %10s %10s %14s %9s\n", "time ms", "tokens/s", "weights MB/tok", "GB/s");
    std::printf("  %10.1f %10.1f %14.1f %9.2f\n", total * 1e3, o_.generate / total,
                static_cast<double>(bytes_.per_step + bytes_.per_decode_row) / 1e6, gbps);
    std::fflush(stdout);
    report_["generate"] = {{"tokens", o_.generate}, {"seconds", total}, {"tokens_per_second", o_.generate / total},
                           {"weight_bytes_per_token", bytes_.per_step + bytes_.per_decode_row}, {"achieved_gbps", gbps}};
  }

  // The KV cache is zeroed, never prefilled: attention's cost depends on the
  // length it reads, not on the values, so each sequence just says num_cached =
  // context. Every step decodes position `context` again (same slot), so all
  // steps cost the same.
  void decode(StepRunner& runner) {
    const uint64_t kv_token_bytes = engine::KvCache::bytes_per_block(spec_.hparams, 1, kv_dtype_);  // K+V, all layers
    std::printf("\ndecode    B sequences with %d cached tokens each (zeroed KV, num_cached = %d), one token each per step;\n"
                "          mean of %d steps after %d warm-up. Bytes read per step = every weight but the embedding\n"
                "          + B embedding rows + KV of %d tokens x B; GB/s = those bytes / step time\n",
                o_.context, o_.context, o_.steps, o_.warmup, o_.context + 1);
    std::printf("  %6s %10s %10s %12s %10s %9s %9s\n", "batch", "step ms", "tokens/s", "weights MB", "KV MB", "GB/s",
                "of copy");
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (int batch : o_.batches) {
      runner.prepare_decode(batch, o_.context);
      for (int i = 0; i < o_.warmup; ++i) runner.run();
      double total = 0.0, best = 1e30;
      for (int i = 0; i < o_.steps; ++i) {
        const double t = runner.run();
        total += t;
        best = std::min(best, t);
      }
      const double step = total / o_.steps;
      const uint64_t weights = bytes_.per_step + bytes_.per_decode_row * static_cast<uint64_t>(batch);
      const uint64_t kv = kv_token_bytes * static_cast<uint64_t>(o_.context + 1) * static_cast<uint64_t>(batch);
      const double gbps = static_cast<double>(weights + kv) / step / kGB;
      std::printf("  %6d %10.2f %10.1f %12.1f %10.1f %9.2f %8.1f%%\n", batch, step * 1e3, batch / step,
                  static_cast<double>(weights) / 1e6, static_cast<double>(kv) / 1e6, gbps,
                  100.0 * gbps / copy_peak_gbps_);
      std::fflush(stdout);
      rows.push_back({{"batch", batch}, {"context", o_.context}, {"steps", o_.steps}, {"warmup", o_.warmup},
                      {"step_seconds", step}, {"step_seconds_min", best}, {"tokens_per_second", batch / step},
                      {"weight_bytes_per_step", weights}, {"kv_bytes_per_step", kv}, {"achieved_gbps", gbps},
                      {"share_of_copy_peak", gbps / copy_peak_gbps_}});
    }
    report_["decode"] = rows;
  }

  // One sequence's prompt from position 0 in steps of `chunk` tokens, only the
  // last producing logits; one untimed prefill first when warm-up is asked for.
  void prefill(StepRunner& runner) {
    const int chunk = o_.chunk > 0 ? std::min(o_.chunk, o_.prompt) : o_.prompt;
    const auto prefill_once = [&] {
      double t = 0.0;
      for (int begin = 0; begin < o_.prompt; begin += chunk) {
        const int count = std::min(chunk, o_.prompt - begin);
        runner.prepare_prefill(begin, count, begin + count == o_.prompt);
        t += runner.run();
      }
      return t;
    };
    if (o_.warmup > 0) prefill_once();
    double total = 0.0;
    for (int i = 0; i < o_.prefill_runs; ++i) total += prefill_once();
    const double seconds = total / o_.prefill_runs;
    const int num_chunks = (o_.prompt + chunk - 1) / chunk;
    std::printf("\nprefill   %d tokens of one sequence in %d step%s of up to %d; mean of %d run%s\n", o_.prompt,
                num_chunks, num_chunks == 1 ? "" : "s", chunk, o_.prefill_runs, o_.prefill_runs == 1 ? "" : "s");
    std::printf("  %10s %10s\n", "time ms", "tokens/s");
    std::printf("  %10.1f %10.1f\n", seconds * 1e3, o_.prompt / seconds);
    report_["prefill"] = {{"prompt", o_.prompt}, {"chunk", chunk}, {"runs", o_.prefill_runs},
                          {"seconds", seconds}, {"tokens_per_second", o_.prompt / seconds}};
  }

  // Speculative decoding on against off (bench_speculation.h).
  void speculate() {
    SpeculationBench bench;
    bench.method = o_.speculative == "draft_model" ? engine::SpeculativeMethod::draft_model
                                                   : engine::SpeculativeMethod::ngram;
    bench.num_speculative_tokens = o_.speculative_tokens;
    bench.draft_model_path = o_.draft_model;
    bench.streams = o_.streams;
    bench.generate_tokens = o_.generate;
    report_["speculative"] = run_speculation_bench(*model_, file_tokenizer(), *backend_, bench);
  }

  tokenizer::Tokenizer file_tokenizer() const {
    const std::filesystem::path& path = file_->path();
    return std::filesystem::is_directory(path) ? tokenizer::Tokenizer::from_hf_dir(path)
                                               : tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(path));
  }

  const BenchOptions& o_;
  loader::RandomModelSpec spec_;
  std::shared_ptr<const loader::WeightSource> file_;
  DType kv_dtype_;
  backends::BackendSpec backend_spec_;
  WeightBytes bytes_;
  std::unique_ptr<backends::Backend> backend_;
  bool on_cpu_;
  int64_t blocks_per_seq_;
  double copy_peak_gbps_ = 0.0;
  std::unique_ptr<engine::Model> model_;
  nlohmann::ordered_json report_ = nlohmann::ordered_json::object();
};

}  // namespace

void add_bench_options(CLI::App& app, BenchOptions& o) {
  std::string presets;
  for (auto p : loader::random_model_presets()) presets += (presets.empty() ? "" : ", ") + std::string(p);
  app.add_option("--model", o.model_path,
                 "A real model (GGUF file or Hugging Face folder) instead of random weights; adds a one-stream "
                 "generation run (--generate tokens)");
  app.add_option("--streams", o.streams,
                 "With --model: concurrent streams of the engine runs (aggregate tokens/s), comma-separated")
      ->delimiter(',')->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--stream-prompt", o.stream_prompt, "With --model: prompt tokens of each engine stream")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--speculative", o.speculative,
                 "With --model: also run speculative decoding on against off (ngram, or draft_model with "
                 "--draft-model) on a repetitive task and on chat, at each --streams count")
      ->check(CLI::IsMember({"ngram", "draft_model"}));
  app.add_option("--draft-model", o.draft_model, "The draft model of --speculative draft_model (same tokenizer)");
  app.add_option("--speculative-tokens", o.speculative_tokens, "Tokens drafted per sequence and step")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--model-shape", o.model_shape, "Model shape preset: " + presets)->capture_default_str();
  app.add_option("--generate", o.generate,
                 "With --model: tokens of the one-stream generation run, and of each engine stream")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--layers", o.layers, "Number of layers (0: the preset's); a few make a quick run")->check(CLI::NonNegativeNumber);
  app.add_option("--dtype", o.dtype, "Matrix dtype: bf16 f16 f32 q8_0 q4_0 q4_k q6_k (norms are f32)")->capture_default_str();
  app.add_option("--kv-dtype", o.kv_dtype, "KV cache dtype: f16 f32")->capture_default_str();
  app.add_option("--backend", o.backend, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--quantize", o.quantize, "Quantize F32/F16/BF16 weight matrices at load: none, q8_0 or q4_0")
      ->capture_default_str()->check(CLI::IsMember({"none", "q8_0", "q4_0"}));
  app.add_option("--threads", o.threads, "CPU compute threads; 0 is one per core")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--batches", o.batches, "Decode batch sizes, comma-separated")->delimiter(',')->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--context", o.context, "Tokens cached per decode sequence")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--prompt", o.prompt, "Prefill prompt tokens")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--chunk", o.chunk, "Prefill tokens per step; 0 is the whole prompt")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--steps", o.steps, "Timed decode steps per batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "Untimed decode steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--prefill-runs", o.prefill_runs, "Timed prefills")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--copy-bytes", o.copy_bytes, "Bytes per buffer of the copy-bandwidth test")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "Seed of the random weights")->capture_default_str();
  app.add_option("--json", o.json_path, "Also write the results to this JSON file");
  app.add_option("--tts", o.tts, "Speech instead of text: 0.6b or 1.7b (random weights) or a Qwen3-TTS folder");
  app.add_option("--tts-kind", o.tts_kind, "Random-weight speech checkpoint kind: custom_voice or voice_design")
      ->capture_default_str();
  app.add_option("--tts-frames", o.tts_frames, "Frames (80 ms each) of the timed utterance")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--tts-chunk-frames", o.tts_chunk_frames, "Frames decoded to audio at once after the first")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--codec-precision", o.codec_precision, "Speech codec decoder convolutions: f32 or int16 (CPU)")
      ->capture_default_str()->check(CLI::IsMember({"f32", "int16"}));
  app.add_option("--tts-text-tokens", o.tts_text_tokens, "Text tokens of a random-weight speech prompt")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--tts-streams", o.tts_streams,
                 "Also run this many utterances at once through the speech engine (comma-separated, e.g. 1,4,16)")
      ->delimiter(',')->check(CLI::PositiveNumber);
}

int run_bench(const BenchOptions& o) {
  if (!o.tts.empty()) return run_tts_bench(o);
  loader::RandomModelSpec spec;
  std::shared_ptr<const loader::WeightSource> file;
  DType kv_dtype;
  backends::BackendSpec backend_spec;
  try {
    if (o.batches.empty()) throw std::invalid_argument("--batches: give at least one batch size");
    if (!o.model_path.empty()) {
      file = loader::open_weights(o.model_path);
      spec.hparams = file->hparams();
    } else {
      spec = loader::random_model_preset(o.model_shape);
    }
    if (o.layers > 0 && file) throw std::invalid_argument("--layers: only for random weights (--model-shape)");
    if (!o.speculative.empty() && !file) throw std::invalid_argument("--speculative: needs --model");
    if (o.speculative == "draft_model" && o.draft_model.empty())
      throw std::invalid_argument("--speculative draft_model: needs --draft-model");
    if (o.layers > 0) spec.hparams.num_layers = o.layers;
    spec.matrix_dtype = parse_dtype(o.dtype, {DType::BF16, DType::F16, DType::F32, DType::Q8_0, DType::Q4_0,
                                              DType::Q4_K, DType::Q6_K}, "--dtype");
    kv_dtype = parse_dtype(o.kv_dtype, {DType::F16, DType::F32}, "--kv-dtype");
    backend_spec = backends::resolve_backend(o.backend);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // a model file that does not load
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  try {
    Bench(o, std::move(spec), std::move(file), kv_dtype, backend_spec).run();
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::server
