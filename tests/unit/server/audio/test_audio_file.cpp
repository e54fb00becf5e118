#include "server/audio/audio_file.h"

#include <doctest/doctest.h>

#include <sndfile.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::server::unit_server_audio_test_audio_file {
namespace {

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("sluice-audio-" + std::to_string(std::random_device{}()) + name);
}

// Reads a mono file back as floats with its rate.
std::vector<float> read_back(const std::filesystem::path& path, SF_INFO& info) {
  info = {};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  REQUIRE(file != nullptr);
  std::vector<float> samples(static_cast<size_t>(info.frames));
  CHECK(sf_read_float(file, samples.data(), info.frames) == info.frames);
  sf_close(file);
  return samples;
}

}  // namespace

TEST_CASE("audio file: WAV and FLAC hold the samples at 16 bits, clipped outside [-1, 1]") {
  std::vector<float> samples(2400);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = 0.5f * std::sin(0.01f * static_cast<float>(i));
  samples[10] = 3.0f;  // clipped, not wrapped
  for (const char* ext : {".wav", ".flac"}) {
    const auto path = temp_path(ext);
    write_audio_file(path, samples, 24000);
    SF_INFO info;
    const std::vector<float> back = read_back(path, info);
    CHECK(info.samplerate == 24000);
    CHECK(info.channels == 1);
    REQUIRE(back.size() == samples.size());
    CHECK(back[10] > 0.99f);
    for (size_t i = 11; i < samples.size(); ++i) CHECK(std::abs(back[i] - samples[i]) < 1.0f / 16384);
    std::filesystem::remove(path);
  }
}

TEST_CASE("audio file: an unknown extension or an unwritable path is an error naming the file") {
  CHECK_THROWS_WITH_AS(write_audio_file("out.xyz", std::vector<float>(10), 24000),
                       doctest::Contains("out.xyz"), std::runtime_error);
  CHECK_THROWS_WITH_AS(write_audio_file("/nonexistent-dir/out.wav", std::vector<float>(10), 24000),
                       doctest::Contains("/nonexistent-dir/out.wav"), std::runtime_error);
}

}  // namespace sluice::server
