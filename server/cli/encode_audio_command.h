#pragma once
// `sluice encode-audio --model DIR --audio FILE`: a reference clip (WAV, FLAC, MP3,
// Ogg) through the codec encoder of a Qwen3-TTS checkpoint (DIR/speech_tokenizer,
// or DIR itself when it is a speech tokenizer folder), printing the codes as JSON
// ({"frames": n, "codes": [[16 codes] per frame]}) on stdout: the reference codes
// of voice cloning's ICL prompt, for checking them against the official package.
// --stats prints the audio length and the decode and encode times to stderr.
#include <string>

namespace CLI {
class App;
}

namespace sluice::server {

struct EncodeAudioOptions {
  std::string model_path;
  std::string audio_path;
  int threads = 0;
  std::string backend = "auto";
  bool stats = false;
};

void add_encode_audio_options(CLI::App& app, EncodeAudioOptions& options);

// Returns the exit code: 0 on success, 1 when the model cannot be loaded or run,
// 2 for audio that cannot be read or decoded.
int run_encode_audio(const EncodeAudioOptions& options);

}  // namespace sluice::server
