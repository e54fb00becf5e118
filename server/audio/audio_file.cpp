#include "server/audio/audio_file.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <stdexcept>
#include <string>

#include "server/audio/audio_encoder.h"

namespace sluice::server {
namespace {

const char* format_for(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".wav") return "wav";
  if (ext == ".flac") return "flac";
  if (ext == ".ogg" || ext == ".opus") return "opus";
  if (ext == ".mp3") return "mp3";
  if (ext == ".aac") return "aac";
  throw std::runtime_error(path.string() + ": unknown audio extension '" + ext +
                           "' (use .wav, .flac, .ogg, .opus, .mp3 or .aac)");
}

}  // namespace

void write_audio_file(const std::filesystem::path& path, std::span<const float> samples, int sample_rate) {
  const char* format = format_for(path);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error(path.string() + ": cannot open for writing");
  try {
    // A whole file completes its header (WAV sizes, FLAC sample count, MP3 gapless
    // info) rather than the "unknown length" a stream has to send.
    const auto encoder = make_audio_encoder(format, sample_rate, AudioDelivery::whole);
    encoder->push(samples);
    const std::string bytes = encoder->finish();
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  } catch (const std::exception& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
  file.close();
  if (!file) throw std::runtime_error(path.string() + ": cannot write the file");
}

}  // namespace sluice::server
