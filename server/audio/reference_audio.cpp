#include "server/audio/reference_audio.h"

#include "server/audio/ffmpeg_memory_input.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

namespace sluice::server {
namespace {

// The demuxers and decoders a reference may use: the formats the API documents
// (WAV, FLAC, MP3, Ogg Opus / Vorbis) and nothing else of FFmpeg's hundreds.
constexpr const char* kFormats = "wav,flac,mp3,ogg";
constexpr const char* kCodecs =
    "pcm_s16le,pcm_s24le,pcm_s32le,pcm_f32le,pcm_f64le,pcm_u8,pcm_alaw,pcm_mulaw,flac,mp3,mp3float,opus,libopus,"
    "vorbis,libvorbis";

using ffmpeg::CodecFree;
using ffmpeg::FrameFree;
using ffmpeg::IoFree;
using ffmpeg::PacketFree;
using FormatClose = ffmpeg::InputClose;

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

// Sample i of channel ch of a decoded frame, as a float in [-1, 1).
float sample_at(const AVFrame& frame, AVSampleFormat format, int channels, int ch, int i) {
  float v = 0.0f;
  if (!ffmpeg::sample_at(frame, format, channels, ch, i, &v))
    throw ReferenceAudioError(std::string("has an unsupported sample format ") + av_get_sample_fmt_name(format));
  return v;
}

// The mono mix of a decoded frame appended to out: the channels' mean.
void append_mono(const AVFrame& frame, std::vector<float>& out) {
  const auto format = static_cast<AVSampleFormat>(frame.format);
  const int channels = frame.ch_layout.nb_channels;
  if (channels < 1) throw ReferenceAudioError("has a frame without channels");
  for (int i = 0; i < frame.nb_samples; ++i) {
    float sum = 0.0f;
    for (int ch = 0; ch < channels; ++ch) sum += sample_at(frame, format, channels, ch, i);
    out.push_back(sum / static_cast<float>(channels));
  }
}

struct Decoded {
  std::vector<float> samples;
  int rate = 0;
};

Decoded decode(std::string_view bytes, const ReferenceAudioLimits& limits) {
  ffmpeg::MemoryInput input{std::as_bytes(std::span(bytes.data(), bytes.size()))};
  constexpr int kBufferBytes = 1 << 16;
  auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferBytes));
  if (buffer == nullptr) throw std::bad_alloc();
  std::unique_ptr<AVIOContext, IoFree> io(
      avio_alloc_context(buffer, kBufferBytes, 0, &input, ffmpeg::read_memory, nullptr, ffmpeg::seek_memory));
  if (!io) {
    av_free(buffer);
    throw std::bad_alloc();
  }
  AVFormatContext* raw_format = avformat_alloc_context();
  if (raw_format == nullptr) throw std::bad_alloc();
  raw_format->pb = io.get();
  raw_format->flags |= AVFMT_FLAG_CUSTOM_IO;
  AVDictionary* options = nullptr;
  av_dict_set(&options, "format_whitelist", kFormats, 0);
  av_dict_set(&options, "codec_whitelist", kCodecs, 0);
  const int opened = avformat_open_input(&raw_format, nullptr, nullptr, &options);
  av_dict_free(&options);
  if (opened < 0)  // avformat_open_input freed the context
    throw ReferenceAudioError("is not WAV, FLAC, MP3 or Ogg audio (" + ffmpeg::error_text(opened) + ")");
  std::unique_ptr<AVFormatContext, FormatClose> format(raw_format);
  if (const int found = avformat_find_stream_info(format.get(), nullptr); found < 0)
    throw ReferenceAudioError("cannot be read as audio (" + ffmpeg::error_text(found) + ")");
  const int stream = av_find_best_stream(format.get(), AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  if (stream < 0) throw ReferenceAudioError("holds no audio stream");
  const AVCodecParameters* params = format->streams[stream]->codecpar;
  const AVCodec* codec = avcodec_find_decoder(params->codec_id);
  if (codec == nullptr) throw ReferenceAudioError(std::string("uses a codec that cannot be decoded (") + avcodec_get_name(params->codec_id) + ")");
  std::unique_ptr<AVCodecContext, CodecFree> decoder(avcodec_alloc_context3(codec));
  if (!decoder) throw std::bad_alloc();
  avcodec_parameters_to_context(decoder.get(), params);
  AVDictionary* codec_options = nullptr;
  av_dict_set(&codec_options, "codec_whitelist", kCodecs, 0);
  const int codec_opened = avcodec_open2(decoder.get(), codec, &codec_options);
  av_dict_free(&codec_options);
  if (codec_opened < 0)
    throw ReferenceAudioError(std::string("uses a codec that is not accepted (") + codec->name + ")");
  if (decoder->sample_rate <= 0) throw ReferenceAudioError("has no sample rate");

  Decoded out;
  out.rate = decoder->sample_rate;
  const double max_samples = limits.max_seconds * out.rate;
  std::unique_ptr<AVPacket, PacketFree> packet(av_packet_alloc());
  std::unique_ptr<AVFrame, FrameFree> frame(av_frame_alloc());
  if (!packet || !frame) throw std::bad_alloc();
  auto drain = [&] {
    int got;
    while ((got = avcodec_receive_frame(decoder.get(), frame.get())) == 0) {
      if (frame->sample_rate != out.rate) throw ReferenceAudioError("changes its sample rate mid-stream");
      append_mono(*frame, out.samples);
      av_frame_unref(frame.get());
      if (static_cast<double>(out.samples.size()) > max_samples)
        throw ReferenceAudioError("is longer than " + seconds_text(limits.max_seconds));
    }
    if (got != AVERROR(EAGAIN) && got != AVERROR_EOF) throw ReferenceAudioError("cannot be decoded (" + ffmpeg::error_text(got) + ")");
  };
  int read;
  while ((read = av_read_frame(format.get(), packet.get())) >= 0) {
    if (packet->stream_index == stream) {
      const int sent = avcodec_send_packet(decoder.get(), packet.get());
      if (sent < 0 && sent != AVERROR(EAGAIN)) {
        av_packet_unref(packet.get());
        throw ReferenceAudioError("cannot be decoded (" + ffmpeg::error_text(sent) + ")");
      }
    }
    av_packet_unref(packet.get());
    drain();
  }
  if (read != AVERROR_EOF) throw ReferenceAudioError("cannot be read to its end (" + ffmpeg::error_text(read) + ")");
  avcodec_send_packet(decoder.get(), nullptr);
  drain();
  if (out.samples.empty()) throw ReferenceAudioError("holds no samples");
  if (static_cast<double>(out.samples.size()) < limits.min_seconds * out.rate)
    throw ReferenceAudioError("is shorter than " + seconds_text(limits.min_seconds));
  return out;
}

}  // namespace

std::vector<float> resample_mono(const std::vector<float>& samples, int from_rate, int to_rate) {
  if (from_rate == to_rate || samples.empty()) return samples;
  // librosa's resample keeps ceil(n * to / from) samples (zero-padded or cut): so do we.
  const auto wanted = static_cast<size_t>(
      std::ceil(static_cast<double>(samples.size()) * static_cast<double>(to_rate) / static_cast<double>(from_rate)));
  std::vector<float> out(wanted + 64);
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  size_t done = 0;
  const soxr_error_t error = soxr_oneshot(from_rate, to_rate, 1, samples.data(), samples.size(), nullptr, out.data(),
                                          out.size(), &done, &io, &quality, nullptr);
  if (error != nullptr)
    throw ReferenceAudioError(std::string("cannot be resampled (libsoxr: ") + soxr_strerror(error) + ")");
  out.resize(done);
  out.resize(wanted, 0.0f);
  return out;
}

std::vector<float> decode_reference_audio(std::string_view bytes, int target_rate, const ReferenceAudioLimits& limits) {
  if (bytes.empty()) throw ReferenceAudioError("is empty");
  Decoded decoded = decode(bytes, limits);
  return resample_mono(decoded.samples, decoded.rate, target_rate);
}

}  // namespace sluice::server
