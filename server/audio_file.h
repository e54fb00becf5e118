#pragma once
// Writing speech to a file (`sluice speak --out`): mono float samples in [-1, 1]
// encoded by libsndfile, the container chosen by the extension: .wav (16-bit PCM),
// .flac (16-bit), .ogg (Opus). No hand-written codecs.
#include <filesystem>
#include <span>

namespace sluice::server {

// Throws std::runtime_error naming the file when the extension is not one of the
// above or libsndfile cannot write it.
void write_audio_file(const std::filesystem::path& path, std::span<const float> samples, int sample_rate);

}  // namespace sluice::server
