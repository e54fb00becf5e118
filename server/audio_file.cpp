#include "server/audio_file.h"

#include <sndfile.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sluice::server {
namespace {

int format_for(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".wav") return SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  if (ext == ".flac") return SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
  if (ext == ".ogg" || ext == ".opus") return SF_FORMAT_OGG | SF_FORMAT_OPUS;
  throw std::runtime_error(path.string() + ": unknown audio extension '" + ext + "' (use .wav, .flac or .ogg)");
}

}  // namespace

void write_audio_file(const std::filesystem::path& path, std::span<const float> samples, int sample_rate) {
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = format_for(path);
  SNDFILE* file = sf_open(path.c_str(), SFM_WRITE, &info);
  if (file == nullptr) throw std::runtime_error(path.string() + ": " + sf_strerror(nullptr));
  // Float input is scaled to the 16-bit range with clipping, not wrapped.
  sf_command(file, SFC_SET_CLIPPING, nullptr, SF_TRUE);
  const sf_count_t written = sf_write_float(file, samples.data(), static_cast<sf_count_t>(samples.size()));
  const std::string error = written == static_cast<sf_count_t>(samples.size()) ? "" : sf_strerror(file);
  if (sf_close(file) != 0 && error.empty()) throw std::runtime_error(path.string() + ": cannot close the file");
  if (!error.empty()) throw std::runtime_error(path.string() + ": " + error);
}

}  // namespace sluice::server
