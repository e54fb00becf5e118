#pragma once
// Streaming audio encoders for speech responses: mono float PCM in [-1, 1] in, the
// bytes of an OpenAI `response_format` out (mp3, opus, aac, flac, wav, pcm) as the
// codec releases them, so a response can stream while samples are still being made.
// The codecs and containers are FFmpeg's (libavcodec/libavformat, Debian packages);
// `pcm` is raw 16-bit little-endian samples. No hand-written codecs.
//
// What a first 80 ms push (one model frame at 24 kHz) releases when streamed: pcm and
// wav all of it (wav after a 44-byte header); flac the header and an 80 ms frame;
// mp3 and opus their first frames (opus in an Ogg page per push); aac nothing yet:
// FFmpeg's AAC encoder looks ahead, so its first ADTS frames follow the next push.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::server {

// One encoded stream. Owned and called by one thread at a time.
class AudioEncoder {
 public:
  virtual ~AudioEncoder() = default;
  // Takes the next samples (any count, even 0; values outside [-1, 1] are clipped)
  // and returns the bytes the encoder releases now, possibly none.
  virtual std::string push(std::span<const float> samples) = 0;
  // Encodes what is left and returns the rest of the stream; call once, last.
  virtual std::string finish() = 0;
  // The HTTP Content-Type of the stream ("audio/mpeg", "audio/wav", ...).
  virtual std::string_view content_type() const = 0;
};

// How the bytes leave the encoder.
enum class AudioDelivery {
  // As the codec releases them, for a streamed response. Containers that would put
  // the length in their header say "unknown" instead (WAV sizes 0xFFFFFFFF, FLAC's
  // total sample count 0, no MP3 Xing/LAME header).
  stream,
  // All from finish(), for a file or a whole response: the container's header is
  // completed at the end (WAV sizes, FLAC sample count and MD5, MP3 LAME header
  // with the encoder delay, so decoders give the exact length).
  whole,
};

// Whether `format` is one of the response_format names above.
bool is_audio_format(std::string_view format);

// The sample rates the format's codec takes, ascending; empty when it takes any
// (flac, wav, pcm). Opus takes 8/12/16/24/48 kHz only, MP3 and AAC the MPEG rates.
// Throws std::invalid_argument for a format is_audio_format rejects.
std::vector<int> audio_format_sample_rates(std::string_view format);

// Throws std::invalid_argument for a format is_audio_format rejects, and
// std::runtime_error when the codec library cannot open the encoder.
std::unique_ptr<AudioEncoder> make_audio_encoder(std::string_view format, int sample_rate,
                                                 AudioDelivery delivery = AudioDelivery::stream);

}  // namespace sluice::server
