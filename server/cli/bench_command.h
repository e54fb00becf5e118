#pragma once
// `sluice bench --model-shape llama3-8b --dtype q4_0`: measures the model's forward
// pass at real size on random weights (no download), on any backend. Prints the
// machine, the backend's copy bandwidth (the roofline decode is held against),
// decode tokens/s at several batch sizes over a filled KV cache, and prefill
// tokens/s of one prompt; --json writes the same numbers for scripts.
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sluice::server {

struct BenchOptions {
  std::string model_path;                 // a GGUF file or HF folder; empty: random weights of model_shape
  std::string model_shape = "llama3-8b";  // a random_model_preset name
  int layers = 0;                         // > 0: only this many layers (a quick run)
  std::string dtype = "bf16";             // matrices: bf16 f16 f32 q8_0 q4_0 q4_k q6_k
  std::string kv_dtype = "f16";           // f16 f32, as the engine's kv cache
  std::string backend = "auto";           // auto cpu cuda cuda:N
  std::string quantize = "none";          // none q8_0 q4_0: F32/F16/BF16 matrices quantized at load
  int threads = 0;                        // CPU compute threads; 0: one per core
  std::vector<int> batches = {1, 8, 32, 128};
  int context = 512;                      // tokens already cached per decode sequence
  int prompt = 512;                       // prefill length
  int chunk = 0;                          // prefill tokens per step; 0: the whole prompt
  int steps = 10;                         // timed decode steps per batch size
  int warmup = 3;                         // untimed decode steps first
  int prefill_runs = 3;                   // timed prefills (one untimed first when warmup > 0)
  int generate = 128;                     // --model: tokens of the one-stream generation run (and per engine stream)
  std::vector<int> streams = {4, 16, 64}; // --model: concurrent streams of the engine runs
  int stream_prompt = 128;                // --model: prompt tokens of each engine stream
  std::string speculative;                // --model: ngram | draft_model: speculation on against off (bench_speculation.h)
  std::string draft_model;                // the draft model of --speculative draft_model
  int speculative_tokens = 4;             // tokens drafted per sequence and step
  uint64_t copy_bytes = uint64_t{1} << 30;  // per copy buffer
  uint64_t seed = 1;
  std::string json_path;                  // empty: no JSON
  // Speech (bench_tts.h): a size preset ("0.6b", "1.7b") on random weights, or a
  // Qwen3-TTS checkpoint folder; empty: the text benchmark.
  std::string tts;
  std::string tts_kind = "custom_voice";  // custom_voice | voice_design (presets)
  int tts_frames = 50;                    // frames of the timed utterance
  int tts_chunk_frames = 4;               // frames per codec call after the first
  std::string codec_precision = "f32";    // the codec decoder's convolutions: f32 | int16
  std::vector<int> tts_streams;           // concurrent utterances through a SpeechEngine (empty: none)
  int tts_text_tokens = 32;               // text tokens of a random-weight prompt
};

void add_bench_options(CLI::App& app, BenchOptions& options);

// Returns the exit code: 0 on success, 1 when the model cannot be built or run,
// 2 for unusable options (an unknown preset, dtype or backend).
int run_bench(const BenchOptions& options);

}  // namespace sluice::server
