#include "server/cli/bench_tts.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "engine/loader/quantize.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_config.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/synthetic/synthesize.h"
#include "engine/tts/model/tts_model.h"
#include "engine/tts/model/tts_prompt.h"
#include "server/cli/bench_command.h"
#include "server/cli/bench_tts_streams.h"
#include "engine/synthetic/random_tensor_set.h"

namespace sluice::server {
namespace {

namespace tts = engine::tts;
using Clock = std::chrono::steady_clock;

tts::TtsKind parse_kind(const std::string& kind) {
  if (kind == "custom_voice") return tts::TtsKind::custom_voice;
  if (kind == "voice_design") return tts::TtsKind::voice_design;
  throw std::invalid_argument("--tts-kind: '" + kind + "' is not custom_voice or voice_design");
}

struct Loaded {
  std::unique_ptr<tts::TtsModel> model;
  std::unique_ptr<loader::TensorSet> codec_tensors;
  std::unique_ptr<tts::CodecDecoder> codec;
  tts::CodecConfig codec_config;
  std::string what;
};

Loaded load(const BenchOptions& o, backends::Backend& backend) {
  Loaded out;
  const auto quantize = loader::parse_load_quantization(o.quantize);
  tts::CodecConfig codec_config;
  if (std::filesystem::is_directory(o.tts)) {
    const std::filesystem::path dir = o.tts;
    out.model = tts::TtsModel::load(dir, backend, quantize);
    out.codec_tensors = loader::open_tensor_set(dir / "speech_tokenizer");
    codec_config = tts::read_codec_config(dir / "speech_tokenizer" / "config.json");
    out.what = dir.string();
  } else {
    tts::TtsConfig config = tts::tts_config_preset(o.tts, parse_kind(o.tts_kind));
    std::shared_ptr<const loader::TensorSet> tensors =
        loader::make_random_tensor_set("qwen3-tts-" + o.tts, backends::DType::BF16, o.seed);
    out.model = tts::TtsModel::from_parts(tensors, std::move(config), std::nullopt, backend, quantize);
    out.codec_tensors = loader::make_random_tensor_set("qwen3-tts-codec", backends::DType::F32, o.seed);
    codec_config = tts::codec_config_preset();
    out.what = "random weights, Qwen3-TTS-12Hz-" + o.tts + " " + o.tts_kind + " shapes";
  }
  out.codec = std::make_unique<tts::CodecDecoder>(
      tts::CodecDecoder::load(*out.codec_tensors, codec_config, backend, tts::CodecDecoder::kDefaultMaxChunkFrames,
                              tts::parse_codec_precision(o.codec_precision)));
  out.codec_config = codec_config;
  return out;
}

}  // namespace

int run_tts_bench(const BenchOptions& o) {
  try {
    auto backend = backends::make_backend(backends::resolve_backend(o.backend), o.threads);
    const Clock::time_point load_start = Clock::now();
    Loaded loaded = load(o, *backend);
    const double load_s = std::chrono::duration<double>(Clock::now() - load_start).count();

    tts::TtsGenerator generator(*loaded.model, tts::TtsGeneratorOptions{.max_sequences = 1});
    tts::TtsRequest request;
    request.seed = o.seed;
    request.max_frames = o.tts_frames;
    request.ignore_eos = true;  // every run makes the same number of frames
    const bool has_tokenizer = loaded.model->tokenizer().has_value();
    const auto run = [&] {
      const auto ignore = [](std::span<const float>) {};
      if (has_tokenizer) {
        request.prompt.text = "The quick brown fox jumps over the lazy dog, and then it runs far away.";
        if (!loaded.model->config().speakers.empty()) request.prompt.voice = loaded.model->config().speakers.begin()->first;
        return tts::synthesize(generator, *loaded.codec, request, o.tts_chunk_frames, ignore);
      }
      return tts::synthesize_prompt(generator, *loaded.codec, tts::synthetic_prompt(loaded.model->config(), o.tts_text_tokens),
                                    request, o.tts_chunk_frames, ignore);
    };
    if (o.warmup > 0) {
      tts::TtsRequest warm = request;
      request.max_frames = 2;
      run();
      request = warm;
    }
    const tts::SynthesisStats s = run();

    const double frames = std::max<double>(1.0, static_cast<double>(s.frames));
    std::printf("speech    %s\n", loaded.what.c_str());
    std::printf("          backend %s (%s), quantize %s, codec %s, loaded in %.1f s\n", backend->name().c_str(),
                backend->kernel_path().c_str(), o.quantize.c_str(), o.codec_precision.c_str(), load_s);
    std::printf("          one utterance, %lld frames (%.2f s of audio), streamed: the first frame alone, then %d at a time\n",
                static_cast<long long>(s.frames), s.audio_seconds, o.tts_chunk_frames);
    std::printf("  %-22s %10.1f ms/frame (prompt prefill included)\n", "talker", s.talker_ms / frames);
    std::printf("  %-22s %10.1f ms/frame\n", "code predictor", s.predictor_ms / frames);
    std::printf("  %-22s %10.1f ms/frame\n", "codec decoder", s.decoder_ms / frames);
    std::printf("  %-22s %10.1f ms/frame (80 ms of audio each)\n", "total", s.wall_ms / frames);
    std::printf("  %-22s %10.0f ms (talker %.0f, code predictor %.0f, codec %.0f)\n", "first audio", s.first_audio_ms,
                s.first_talker_ms, s.first_predictor_ms, s.first_decoder_ms);
    std::printf("  %-22s %10.2f (audio seconds per wall second; > 1 is faster than real time)\n", "real-time factor",
                s.real_time_factor());
    nlohmann::ordered_json streams;
    if (!o.tts_streams.empty()) {
      // The server's layout: the codec on a backend of its own, beside the talker's.
      auto codec_backend = backends::make_backend(backends::resolve_backend(o.backend), o.threads);
      tts::CodecDecoder codec =
          tts::CodecDecoder::load(*loaded.codec_tensors, loaded.codec_config, *codec_backend,
                                  tts::CodecDecoder::kDefaultMaxChunkFrames, tts::parse_codec_precision(o.codec_precision));
      streams = run_tts_streams(o, *loaded.model, codec);
    }
    if (!o.json_path.empty()) {
      nlohmann::ordered_json report = {
          {"model", loaded.what}, {"backend", backend->name()}, {"kernel_path", backend->kernel_path()},
          {"quantize", o.quantize}, {"codec_precision", o.codec_precision}, {"chunk_frames", o.tts_chunk_frames}, {"frames", s.frames}, {"audio_seconds", s.audio_seconds},
          {"talker_ms_per_frame", s.talker_ms / frames}, {"predictor_ms_per_frame", s.predictor_ms / frames},
          {"decoder_ms_per_frame", s.decoder_ms / frames}, {"first_audio_ms", s.first_audio_ms},
          {"first_audio_talker_ms", s.first_talker_ms}, {"first_audio_predictor_ms", s.first_predictor_ms},
          {"first_audio_decoder_ms", s.first_decoder_ms},
          {"real_time_factor", s.real_time_factor()}};
      if (!streams.is_null()) report["streams"] = streams;
      std::ofstream(o.json_path) << report.dump(2) << "\n";
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::server
