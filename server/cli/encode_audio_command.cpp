#include "server/cli/encode_audio_command.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_encoder.h"
#include "server/audio/reference_audio.h"

namespace sluice::server {

void add_encode_audio_options(CLI::App& app, EncodeAudioOptions& o) {
  app.add_option("--model", o.model_path, "Qwen3-TTS checkpoint folder, or its speech_tokenizer folder")->required();
  app.add_option("--audio", o.audio_path, "Reference clip: WAV, FLAC, MP3 or Ogg (Opus, Vorbis)")->required();
  app.add_option("--backend", o.backend, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU compute threads; 0 is one per core")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--stats", o.stats, "Print the audio length and the decode and encode times to stderr");
}

int run_encode_audio(const EncodeAudioOptions& o) {
  namespace tts = engine::tts;
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  std::string bytes;
  {
    std::ifstream in(o.audio_path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "sluice encode-audio: cannot read %s\n", o.audio_path.c_str());
      return 2;
    }
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  try {
    std::filesystem::path dir = o.model_path;
    if (std::filesystem::exists(dir / "speech_tokenizer" / "config.json")) dir /= "speech_tokenizer";
    const tts::CodecEncoderConfig config = tts::read_codec_encoder_config(dir / "config.json");
    auto backend = backends::make_backend(backends::resolve_backend(o.backend), o.threads);
    const auto tensors = loader::open_tensor_set(dir);
    tts::CodecEncoder encoder = tts::CodecEncoder::load(*tensors, config, *backend);

    const Clock::time_point decode_start = Clock::now();
    std::vector<float> samples;
    try {
      samples = decode_reference_audio(bytes, static_cast<int>(config.sample_rate));
    } catch (const ReferenceAudioError& e) {
      std::fprintf(stderr, "sluice encode-audio: %s %s\n", o.audio_path.c_str(), e.what());
      return 2;
    }
    const double decode_ms = ms_since(decode_start);
    const Clock::time_point encode_start = Clock::now();
    const std::vector<int32_t> codes = encoder.encode(samples);
    const double encode_ms = ms_since(encode_start);

    const auto q = static_cast<size_t>(config.num_codes);
    std::string json = "{\"frames\": " + std::to_string(codes.size() / q) + ", \"codes\": [";
    for (size_t i = 0; i < codes.size(); ++i) {
      json += i % q == 0 ? (i == 0 ? "[" : "], [") : ", ";
      json += std::to_string(codes[i]);
    }
    json += "]]}\n";
    std::fputs(json.c_str(), stdout);
    if (o.stats) {
      const double seconds = static_cast<double>(samples.size()) / static_cast<double>(config.sample_rate);
      std::fprintf(stderr, "backend:  %s (%s)\n", backend->name().c_str(), backend->kernel_path().c_str());
      std::fprintf(stderr, "audio:    %.2f s (%zu samples at %lld Hz)\n", seconds, samples.size(),
                   static_cast<long long>(config.sample_rate));
      std::fprintf(stderr, "decode:   %.1f ms (FFmpeg, mono, libsoxr)\n", decode_ms);
      std::fprintf(stderr, "encode:   %.1f ms (%.1f ms per audio second)\n", encode_ms, encode_ms / seconds);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice encode-audio: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::server
