#pragma once
// Writing speech to a file (`sluice speak --out`): mono float samples in [-1, 1]
// encoded by the speech endpoint's encoders (server/audio/audio_encoder.h), the format
// chosen by the extension: .wav (16-bit PCM), .flac (16-bit), .ogg or .opus (Ogg
// Opus), .mp3, .aac (ADTS). No hand-written codecs.
#include <filesystem>
#include <span>

namespace sluice::server {

// Throws std::runtime_error naming the file when the extension is not one of the
// above or the file cannot be written.
void write_audio_file(const std::filesystem::path& path, std::span<const float> samples, int sample_rate);

}  // namespace sluice::server
