#pragma once
// Reads encoded speech audio back with decoders independent of the encoders under
// test where one exists: libsndfile for WAV, FLAC, Ogg Opus and MP3; FFmpeg's own
// decoder for ADTS AAC, which libsndfile cannot read; raw s16le for pcm.
#include <string>
#include <string_view>
#include <vector>

namespace sluice::server {

// Not "DecodedAudio": server/audio/audio_decoder.h has that name in this namespace,
// and the test binary links both.
struct ReadBackAudio {
  int sample_rate = 0;
  int channels = 0;
  std::vector<float> samples;  // channel-interleaved, in [-1, 1]
};

// `format` is a response_format name; pcm has no header, so it is taken as mono at
// `pcm_rate`. Fails the running doctest case when the bytes do not decode.
ReadBackAudio decode_audio(std::string_view format, const std::string& bytes, int pcm_rate);

}  // namespace sluice::server
