#pragma once
// `sluice speak --model DIR --text TEXT --out FILE.wav`: one utterance through a
// Qwen3-TTS checkpoint folder (talker, code predictor, codec decoder; for a Base
// checkpoint the speaker encoder of --ref-audio's voice first), streamed
// frame by frame as the server will, written to a WAV/FLAC/Ogg file. --stats prints
// frames, audio seconds, ms per frame per stage, time to first audio and the
// real-time factor.
#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace sluice::server {

struct SpeakOptions {
  std::string model_path;       // a Qwen3-TTS checkpoint folder
  std::string text;
  std::string voice;            // CustomVoice speaker; default: the first one
  std::string language = "auto";
  std::string instructions;     // VoiceDesign (1.7B) voice description / style
  std::string ref_audio;        // Base: the voice to clone (any audio file FFmpeg reads)
  bool x_vector_only = false;   // Base: clone from the speaker embedding alone
  std::string ref_text;         // Base ICL: the reference's transcript (its codes come from the codec encoder)
  std::optional<uint64_t> seed;
  std::optional<float> temperature;  // 0: greedy talker and code predictor; default: the checkpoint's
  std::optional<int> max_frames;
  int chunk_frames = 4;          // frames per codec call after the first
  std::string out_path;
  int threads = 0;
  std::string backend = "auto";
  std::string quantize = "none";  // none | q8_0 | q4_0: talker and code predictor matrices
  std::string codec_precision = "f32";  // f32 | int16: the codec decoder's convolutions
  bool stats = false;
};

void add_speak_options(CLI::App& app, SpeakOptions& options);

// Returns the exit code: 0 on success, 1 when the model cannot be loaded or run,
// 2 for a request the model refuses (unknown voice or language, empty text, bad or
// missing reference audio).
int run_speak(const SpeakOptions& options);

}  // namespace sluice::server
