#include "server/cli/bench_tts_streams.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/tts/serving/speech_engine.h"
#include "engine/tts/model/tts_prompt.h"

namespace sluice::server {
namespace {

namespace tts = engine::tts;
using Clock = std::chrono::steady_clock;

constexpr const char* kText = "The quick brown fox jumps over the lazy dog, and then it runs far away.";

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct StreamRun {
  Clock::time_point first_audio{};
  Clock::time_point finished{};
  int64_t frames = 0;
  bool done = false;
};

tts::SpeechRequest make_request(const tts::TtsModel& model, const BenchOptions& o, int index, int frames) {
  tts::SpeechRequest r;
  r.request_id = "bench-" + std::to_string(index);
  r.tts.seed = o.seed + static_cast<uint64_t>(index);
  r.tts.max_frames = frames;
  r.tts.ignore_eos = true;
  r.chunk_frames = o.tts_chunk_frames;
  if (model.tokenizer()) {
    tts::PromptRequest prompt;
    prompt.text = kText;
    if (!model.config().speakers.empty()) prompt.voice = model.config().speakers.begin()->first;
    r.prompt = std::get<tts::TtsPrompt>(tts::build_prompt(model.config(), *model.tokenizer(), prompt));
  } else {
    r.prompt = tts::synthetic_prompt(model.config(), o.tts_text_tokens);
  }
  return r;
}

// Runs `n` requests at once; returns (wall, per-stream runs, frames per step).
nlohmann::ordered_json run_once(const BenchOptions& o, const tts::TtsModel& model, tts::CodecDecoder& codec, int n,
                                int frames, bool print) {
  tts::SpeechEngineConfig config;
  config.model_name = "bench";
  config.max_num_seqs = n;
  // Every stream's prompt and frames at once, so nothing is preempted.
  const int64_t positions = static_cast<int64_t>(n) * (o.tts_text_tokens + 64 + frames);
  const uint64_t per_block = engine::KvCache::bytes_per_block(model.config().talker, config.block_size, config.kv_dtype);
  config.kv_cache_bytes = per_block * static_cast<uint64_t>(positions / config.block_size + 2 * n + 1);
  tts::SpeechEngine engine(model, codec, config);
  engine.start();

  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < n; ++i) {
    engine::SubmitResult submitted = engine.submit(make_request(model, o, i, frames));
    if (!submitted.ok()) throw std::runtime_error("the speech engine refused a request: " + submitted.message);
    streams.push_back(submitted.stream);
  }
  std::vector<StreamRun> runs(static_cast<size_t>(n));
  for (int remaining = n; remaining > 0;) {
    for (size_t i = 0; i < streams.size(); ++i) {
      while (auto event = streams[i]->try_pop()) {
        StreamRun& run = runs[i];
        if (const auto* audio = std::get_if<engine::AudioDelta>(&*event)) {
          if (run.frames == 0) run.first_audio = Clock::now();
          run.frames += audio->num_frames;
        } else if (const auto* finish = std::get_if<engine::ChoiceFinish>(&*event)) {
          if (finish->reason != engine::FinishReason::length)
            throw std::runtime_error("a benchmark stream ended with " + std::string(finish->finish_reason()) + ": " +
                                     finish->error);
          run.finished = Clock::now();
          run.done = true;
          --remaining;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const engine::EngineStats stats = engine.stats();
  engine.stop();

  const double frame_s = static_cast<double>(codec.config().samples_per_frame) /
                         static_cast<double>(codec.config().output_sample_rate);
  std::vector<double> ttfa, rtf;
  Clock::time_point last = start;
  double audio_s = 0.0;
  for (const StreamRun& run : runs) {
    ttfa.push_back(ms(run.first_audio - start));
    const double seconds = static_cast<double>(run.frames) * frame_s;
    audio_s += seconds;
    rtf.push_back(seconds * 1000.0 / ms(run.finished - start));
    last = std::max(last, run.finished);
  }
  const double wall_s = ms(last - start) / 1000.0;
  const double frames_per_step =
      stats.num_steps > 0 ? static_cast<double>(stats.num_generation_tokens) / static_cast<double>(stats.num_steps) : 0.0;
  nlohmann::ordered_json row = {{"streams", n},
                                {"frames_per_stream", frames},
                                {"wall_s", wall_s},
                                {"audio_s", audio_s},
                                {"first_audio_ms_p50", percentile(ttfa, 0.5)},
                                {"first_audio_ms_max", percentile(ttfa, 1.0)},
                                {"stream_rtf_p50", percentile(rtf, 0.5)},
                                {"stream_rtf_min", percentile(rtf, 0.0)},
                                {"aggregate_rtf", audio_s / wall_s},
                                {"frames_per_step", frames_per_step}};
  if (print) {
    std::printf("  %7d %10.0f %10.0f %10.2f %10.2f %11.2f %10.1f\n", n, row["first_audio_ms_p50"].get<double>(),
                row["first_audio_ms_max"].get<double>(), row["stream_rtf_p50"].get<double>(),
                row["stream_rtf_min"].get<double>(), row["aggregate_rtf"].get<double>(), frames_per_step);
    std::fflush(stdout);
  }
  return row;
}

}  // namespace

nlohmann::ordered_json run_tts_streams(const BenchOptions& o, const tts::TtsModel& model, tts::CodecDecoder& codec) {
  if (o.warmup > 0) run_once(o, model, codec, 1, 2, false);
  std::printf("          concurrent streams through the speech engine, %d frames each (codec on its own thread)\n",
              o.tts_frames);
  std::printf("  %7s %10s %10s %10s %10s %11s %10s\n", "streams", "TTFA p50", "TTFA max", "RTF p50", "RTF min",
              "aggregate", "frames/step");
  std::printf("  %7s %10s %10s %10s %10s %11s %10s\n", "", "ms", "ms", "per stream", "per stream", "RTF", "");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int n : o.tts_streams) rows.push_back(run_once(o, model, codec, n, o.tts_frames, true));
  return rows;
}

}  // namespace sluice::server
