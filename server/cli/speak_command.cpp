#include "server/cli/speak_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "engine/loader/quantize.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_config.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/codec/codec_encoder.h"
#include "engine/tts/codec/codec_encoder_config.h"
#include "engine/synthetic/synthesize.h"
#include "engine/tts/model/tts_model.h"
#include "server/audio/audio_decoder.h"
#include "server/audio/audio_file.h"

namespace sluice::server {

void add_speak_options(CLI::App& app, SpeakOptions& o) {
  app.add_option("--model", o.model_path, "Qwen3-TTS checkpoint folder (CustomVoice, VoiceDesign or Base)")->required();
  app.add_option("--text", o.text, "Text to speak")->required();
  app.add_option("--voice", o.voice, "Speaker of a CustomVoice checkpoint (default: its first)");
  app.add_option("--language", o.language, "auto or a language of the checkpoint (english, chinese, ...)")
      ->capture_default_str();
  app.add_option("--instructions", o.instructions, "Voice description or style (1.7B checkpoints)");
  app.add_option("--ref-audio", o.ref_audio, "Base checkpoints: audio file of the voice to clone (WAV, FLAC, MP3, ...)");
  app.add_flag("--x-vector-only", o.x_vector_only,
               "Base checkpoints: clone from the reference's speaker embedding alone (no transcript)");
  app.add_option("--ref-text", o.ref_text,
                 "Base checkpoints, ICL cloning: the transcript of --ref-audio (whose codes the codec encoder computes)");
  app.add_option("--seed", o.seed, "Sampling seed (default: random)");
  app.add_option("--temperature", o.temperature, "Sampling temperature of both stages; 0 is greedy")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-frames", o.max_frames, "Most 80 ms frames to generate")->check(CLI::PositiveNumber);
  app.add_option("--chunk-frames", o.chunk_frames, "Frames decoded to audio at once after the first (streaming chunk)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--out", o.out_path, "Output file: .wav, .flac, .ogg/.opus, .mp3 or .aac")->required();
  app.add_option("--backend", o.backend, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--quantize", o.quantize, "Quantize the talker and code predictor at load: none, q8_0 or q4_0")
      ->capture_default_str()->check(CLI::IsMember({"none", "q8_0", "q4_0"}));
  app.add_option("--codec-precision", o.codec_precision,
                 "Codec decoder convolutions: f32 (reference) or int16 (faster on the CPU)")
      ->capture_default_str()->check(CLI::IsMember({"f32", "int16"}));
  app.add_option("--threads", o.threads, "CPU compute threads; 0 is one per core")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_flag("--stats", o.stats, "Print frames, per-stage times, first audio and the real-time factor to stderr");
}

namespace {

// A Base clone's reference: the x-vector of --ref-audio (decoded, mixed to mono
// and resampled to the speaker encoder's rate) and, in ICL mode, its codes from
// the checkpoint's codec encoder (speech_tokenizer/). Throws SynthesisError naming
// the field when the reference cannot be used.
struct Reference {
  std::vector<float> speaker_embedding;
  std::vector<int32_t> ref_codes;
  double embedding_ms = 0.0, codes_ms = 0.0;
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Reference clone_reference(const engine::tts::TtsModel& model, const std::filesystem::path& dir, const SpeakOptions& o) {
  namespace tts = engine::tts;
  const tts::SpeakerEncoder* encoder = model.speaker_encoder();
  if (encoder == nullptr) throw tts::SynthesisError("only Base checkpoints clone a voice from reference audio", "ref_audio");
  if (!o.x_vector_only && o.ref_text.empty())
    throw tts::SynthesisError("ICL cloning needs --ref-text (the transcript of --ref-audio); or pass --x-vector-only",
                              "ref_text");
  Reference out;
  auto start = std::chrono::steady_clock::now();
  std::vector<float> samples;
  try {
    const DecodedAudio audio = read_audio_file(o.ref_audio);
    samples = resample_audio(audio.samples, audio.sample_rate, encoder->sample_rate());
  } catch (const AudioDecodeError& e) {
    throw tts::SynthesisError(e.what(), "ref_audio");
  }
  if (auto error = encoder->check_length(static_cast<int64_t>(samples.size())))
    throw tts::SynthesisError("the reference audio is too short: " + *error, "ref_audio");
  out.speaker_embedding = encoder->embed(samples);
  out.embedding_ms = ms_since(start);
  if (o.x_vector_only) return out;

  start = std::chrono::steady_clock::now();
  const std::filesystem::path codec_dir = dir / "speech_tokenizer";
  const tts::CodecEncoderConfig config = tts::read_codec_encoder_config(codec_dir / "config.json");
  const auto tensors = loader::open_tensor_set(codec_dir);
  tts::CodecEncoder codec_encoder = tts::CodecEncoder::load(*tensors, config, model.backend());
  const auto rate = static_cast<int>(config.sample_rate);
  out.ref_codes = codec_encoder.encode(rate == encoder->sample_rate()
                                           ? samples
                                           : resample_audio(samples, encoder->sample_rate(), rate));
  out.codes_ms = ms_since(start);
  return out;
}

}  // namespace

int run_speak(const SpeakOptions& o) {
  namespace tts = engine::tts;
  try {
    const std::filesystem::path dir = o.model_path;
    auto backend = backends::make_backend(backends::resolve_backend(o.backend), o.threads);
    const auto model = tts::TtsModel::load(dir, *backend, loader::parse_load_quantization(o.quantize));
    const std::filesystem::path codec_dir = dir / "speech_tokenizer";
    const auto codec_tensors = loader::open_tensor_set(codec_dir);
    tts::CodecDecoder codec =
        tts::CodecDecoder::load(*codec_tensors, tts::read_codec_config(codec_dir / "config.json"), *backend,
                                tts::CodecDecoder::kDefaultMaxChunkFrames, tts::parse_codec_precision(o.codec_precision));
    tts::TtsGenerator generator(*model, tts::TtsGeneratorOptions{.max_sequences = 1});

    tts::TtsRequest request;
    request.prompt.text = o.text;
    request.prompt.voice = o.voice;
    if (request.prompt.voice.empty() && !model->config().speakers.empty())
      request.prompt.voice = model->config().speakers.begin()->first;
    request.prompt.language = o.language;
    request.prompt.instructions = o.instructions;
    Reference reference;
    if (!o.ref_audio.empty()) {
      reference = clone_reference(*model, dir, o);
      request.prompt.speaker_embedding = std::move(reference.speaker_embedding);
      request.prompt.ref_codes = std::move(reference.ref_codes);
      if (!request.prompt.ref_codes.empty()) request.prompt.ref_text = o.ref_text;
    } else if (!o.ref_text.empty() || o.x_vector_only) {
      throw tts::SynthesisError("--ref-text and --x-vector-only go with --ref-audio", "ref_audio");
    }
    request.seed = o.seed;
    request.temperature = o.temperature;
    if (o.max_frames) request.max_frames = *o.max_frames;

    std::vector<float> audio;
    const tts::SynthesisStats stats =
        tts::synthesize(generator, codec, request, o.chunk_frames, [&](std::span<const float> pcm) { audio.insert(audio.end(), pcm.begin(), pcm.end()); });
    write_audio_file(o.out_path, audio, static_cast<int>(codec.config().output_sample_rate));
    if (stats.instructions_dropped)
      std::fprintf(stderr, "note: this checkpoint size ignores --instructions (as the official package does)\n");
    if (o.stats) {
      const double frames = std::max<double>(1.0, static_cast<double>(stats.frames));
      std::fprintf(stderr, "backend:          %s (%s)\n", backend->name().c_str(), backend->kernel_path().c_str());
      if (!o.ref_audio.empty()) {
        std::fprintf(stderr, "speaker encoder:  %.1f ms (decode, resample, x-vector)\n", reference.embedding_ms);
        if (!o.x_vector_only) std::fprintf(stderr, "codec encoder:    %.1f ms (load, reference codes)\n", reference.codes_ms);
      }
      std::fprintf(stderr, "frames:           %lld (%s)\n", static_cast<long long>(stats.frames), stats.finish_reason.c_str());
      std::fprintf(stderr, "audio:            %.2f s\n", stats.audio_seconds);
      std::fprintf(stderr, "talker:           %.1f ms/frame (prompt prefill included)\n", stats.talker_ms / frames);
      std::fprintf(stderr, "code predictor:   %.1f ms/frame\n", stats.predictor_ms / frames);
      std::fprintf(stderr, "codec decoder:    %.1f ms/frame\n", stats.decoder_ms / frames);
      std::fprintf(stderr, "first audio:      %.0f ms\n", stats.first_audio_ms);
      std::fprintf(stderr, "wall:             %.2f s\n", stats.wall_ms / 1000.0);
      std::fprintf(stderr, "real-time factor: %.2f (audio seconds per wall second)\n", stats.real_time_factor());
    }
    return 0;
  } catch (const tts::SynthesisError& e) {
    std::fprintf(stderr, "sluice speak: %s%s%s\n", e.what(), e.param.empty() ? "" : " (", e.param.empty() ? "" : (e.param + ")").c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice speak: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::server
