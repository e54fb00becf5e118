#include "server/audio/audio_decoder.h"

#include "server/audio/ffmpeg_memory_input.h"

#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

namespace sluice::server {
namespace {

using ffmpeg::CodecFree;
using ffmpeg::FrameFree;
using ffmpeg::IoFree;
using ffmpeg::MemoryInput;
using ffmpeg::PacketFree;

// Sample `i` of channel `c` of a decoded frame as a float in [-1, 1].
float sample_at(const AVFrame& frame, AVSampleFormat format, int channels, int c, int i) {
  float v = 0.0f;
  if (!ffmpeg::sample_at(frame, format, channels, c, i, &v))
    throw AudioDecodeError(std::string("unsupported sample format ") + av_get_sample_fmt_name(format));
  return v;
}

class Decoder {
 public:
  Decoder(std::span<const std::byte> bytes, const AudioDecodeLimits& limits) : input_{bytes, 0}, limits_(limits) {}

  DecodedAudio run() {
    open();
    std::unique_ptr<AVPacket, PacketFree> packet(av_packet_alloc());
    frame_.reset(av_frame_alloc());
    if (!packet || !frame_) throw AudioDecodeError("out of memory");
    int status = 0;
    while ((status = av_read_frame(format_.get(), packet.get())) >= 0) {
      if (packet->stream_index == stream_) {
        const int sent = avcodec_send_packet(codec_.get(), packet.get());
        av_packet_unref(packet.get());
        if (sent < 0 && sent != AVERROR(EAGAIN)) throw AudioDecodeError("the audio does not decode: " + ffmpeg::error_text(sent));
        drain();
      } else {
        av_packet_unref(packet.get());
      }
    }
    if (status != AVERROR_EOF) throw AudioDecodeError("the audio does not demux: " + ffmpeg::error_text(status));
    avcodec_send_packet(codec_.get(), nullptr);
    drain();
    if (out_.samples.empty()) throw AudioDecodeError("the audio decodes to no samples");
    return std::move(out_);
  }

 private:
  void open() {
    if (input_.bytes.empty()) throw AudioDecodeError("the audio is empty");
    constexpr int kBufferBytes = 1 << 15;
    auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferBytes));
    if (buffer == nullptr) throw AudioDecodeError("out of memory");
    io_.reset(avio_alloc_context(buffer, kBufferBytes, 0, &input_, &ffmpeg::read_memory, nullptr, &ffmpeg::seek_memory));
    if (!io_) {
      av_free(buffer);
      throw AudioDecodeError("out of memory");
    }
    AVFormatContext* format = avformat_alloc_context();
    if (format == nullptr) throw AudioDecodeError("out of memory");
    format->pb = io_.get();
    format->flags |= AVFMT_FLAG_CUSTOM_IO;
    if (int e = avformat_open_input(&format, nullptr, nullptr, nullptr); e < 0)  // frees format on failure
      throw AudioDecodeError("the bytes are not an audio format FFmpeg reads: " + ffmpeg::error_text(e));
    format_.reset(format);
    if (int e = avformat_find_stream_info(format, nullptr); e < 0)
      throw AudioDecodeError("the audio's streams cannot be read: " + ffmpeg::error_text(e));
    const AVCodec* codec = nullptr;
    stream_ = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    if (stream_ < 0 || codec == nullptr) throw AudioDecodeError("the file holds no audio stream FFmpeg decodes");
    codec_.reset(avcodec_alloc_context3(codec));
    if (!codec_) throw AudioDecodeError("out of memory");
    if (int e = avcodec_parameters_to_context(codec_.get(), format->streams[stream_]->codecpar); e < 0)
      throw AudioDecodeError("the audio stream's parameters are unusable: " + ffmpeg::error_text(e));
    if (int e = avcodec_open2(codec_.get(), codec, nullptr); e < 0)
      throw AudioDecodeError("the audio decoder does not open: " + ffmpeg::error_text(e));
  }

  void drain() {
    while (avcodec_receive_frame(codec_.get(), frame_.get()) == 0) {
      const AVFrame& f = *frame_;
      const int channels = f.ch_layout.nb_channels;
      if (channels <= 0 || f.sample_rate <= 0) throw AudioDecodeError("the audio has no channels or no sample rate");
      if (out_.sample_rate == 0) out_.sample_rate = f.sample_rate;
      if (f.sample_rate != out_.sample_rate) throw AudioDecodeError("the audio changes its sample rate");
      const auto format = static_cast<AVSampleFormat>(f.format);
      for (int i = 0; i < f.nb_samples; ++i) {
        float sum = 0.0f;
        for (int c = 0; c < channels; ++c) sum += sample_at(f, format, channels, c, i);
        out_.samples.push_back(channels == 1 ? sum : sum / static_cast<float>(channels));
      }
      if (static_cast<double>(out_.samples.size()) > limits_.max_seconds * out_.sample_rate)
        throw AudioDecodeError("the audio is longer than " + std::to_string(static_cast<int>(limits_.max_seconds)) +
                               " seconds");
      av_frame_unref(frame_.get());
    }
  }

  MemoryInput input_;
  AudioDecodeLimits limits_;
  // Declared in the order they must be freed last-first: the demuxer before its IO.
  std::unique_ptr<AVIOContext, IoFree> io_;
  std::unique_ptr<AVFormatContext, ffmpeg::InputClose> format_;
  std::unique_ptr<AVCodecContext, CodecFree> codec_;
  std::unique_ptr<AVFrame, FrameFree> frame_;
  int stream_ = -1;
  DecodedAudio out_;
};

}  // namespace

DecodedAudio decode_audio_bytes(std::span<const std::byte> bytes, const AudioDecodeLimits& limits) {
  return Decoder(bytes, limits).run();
}

DecodedAudio read_audio_file(const std::filesystem::path& path, const AudioDecodeLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw AudioDecodeError("cannot read " + path.string());
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return decode_audio_bytes(std::as_bytes(std::span<const char>(bytes)), limits);
  } catch (const AudioDecodeError& e) {
    throw AudioDecodeError(path.string() + ": " + e.what());
  }
}

std::vector<float> resample_audio(std::span<const float> samples, int from, int to) {
  if (from <= 0 || to <= 0) throw AudioDecodeError("sample rates must be positive");
  if (from == to || samples.empty()) return {samples.begin(), samples.end()};
  const auto n = static_cast<size_t>(
      std::ceil(static_cast<double>(samples.size()) * static_cast<double>(to) / static_cast<double>(from)));
  std::vector<float> out(n);
  size_t done = 0;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  const soxr_error_t error = soxr_oneshot(from, to, 1, samples.data(), samples.size(), nullptr, out.data(), n, &done,
                                          &io, &quality, nullptr);
  if (error != nullptr) throw AudioDecodeError(std::string("libsoxr: ") + soxr_strerror(error));
  out.resize(done);
  return out;
}

}  // namespace sluice::server
