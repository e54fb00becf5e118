#include "server/audio/ffmpeg_audio_encoder.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
}

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/audio/audio_samples.h"

namespace sluice::server {
namespace {

std::string av_error(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

struct CodecFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct IoFree {
  void operator()(AVIOContext* io) const {
    av_freep(&io->buffer);  // avio may have replaced the buffer we gave it
    avio_context_free(&io);
  }
};
struct FormatFree {
  void operator()(AVFormatContext* f) const { avformat_free_context(f); }
};

// Float codecs get clipped floats; 16-bit ones (FLAC, WAV) get 16-bit samples, so
// FLAC stays 16-bit rather than 24. Mono makes planar and packed the same layout.
AVSampleFormat pick_sample_format(const AVCodec* codec) {
  AVSampleFormat s16 = AV_SAMPLE_FMT_NONE;
  for (const AVSampleFormat* f = codec->sample_fmts; f != nullptr && *f != AV_SAMPLE_FMT_NONE; ++f) {
    if (*f == AV_SAMPLE_FMT_FLT || *f == AV_SAMPLE_FMT_FLTP) return *f;
    if (*f == AV_SAMPLE_FMT_S16 || *f == AV_SAMPLE_FMT_S16P) s16 = *f;
  }
  if (s16 == AV_SAMPLE_FMT_NONE) throw std::runtime_error(std::string(codec->name) + ": no float or 16-bit input");
  return s16;
}

// One encoder and its muxer writing into `out_`. Owned and called by one thread.
class FfmpegAudioEncoder final : public AudioEncoder {
 public:
  FfmpegAudioEncoder(const FfmpegAudioFormat& format, int sample_rate, AudioDelivery delivery)
      : content_type_(format.content_type), delivery_(delivery) {
    const AVCodec* codec = avcodec_find_encoder_by_name(format.codec);
    const AVOutputFormat* muxer = av_guess_format(format.muxer, nullptr, nullptr);
    if (codec == nullptr || muxer == nullptr)
      throw std::runtime_error(std::string("FFmpeg has no ") + (codec == nullptr ? format.codec : format.muxer));
    open_codec(codec, format, sample_rate);
    open_muxer(muxer);
    frame_.reset(av_frame_alloc());
    packet_.reset(av_packet_alloc());
    if (!frame_ || !packet_) throw std::runtime_error("out of memory");
  }

  std::string push(std::span<const float> samples) override {
    pending_.insert(pending_.end(), samples.begin(), samples.end());
    const size_t frame_size = frame_size_ > 0 ? static_cast<size_t>(frame_size_) : pending_.size();
    size_t used = 0;
    while (frame_size > 0 && pending_.size() - used >= frame_size) {
      encode(std::span<const float>(pending_).subspan(used, frame_size));
      used += frame_size;
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(used));
    if (used > 0) flush_muxer();
    return take_released();
  }

  std::string finish() override {
    if (!pending_.empty()) {
      // A codec that takes no short last frame gets silence to fill it.
      if (frame_size_ > 0 && !(codec_->codec->capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME))
        pending_.resize(static_cast<size_t>(frame_size_), 0.0f);
      encode(pending_);
      pending_.clear();
    }
    drain(nullptr);  // the codec's delayed frames
    check(av_write_trailer(format_.get()), "finishing the stream");
    avio_flush(io_.get());
    std::string rest = std::move(out_);
    out_.clear();
    return rest;
  }

  std::string_view content_type() const override { return content_type_; }

 private:
  void open_codec(const AVCodec* codec, const FfmpegAudioFormat& format, int sample_rate) {
    codec_.reset(avcodec_alloc_context3(codec));
    if (!codec_) throw std::runtime_error("out of memory");
    codec_->sample_rate = sample_rate;
    codec_->sample_fmt = pick_sample_format(codec);
    codec_->time_base = AVRational{1, sample_rate};
    codec_->bit_rate = format.bit_rate;
    codec_->flags |= AV_CODEC_FLAG_BITEXACT;
    if (format.frame_seconds > 0) codec_->frame_size = static_cast<int>(std::lround(format.frame_seconds * sample_rate));
    av_channel_layout_default(&codec_->ch_layout, 1);
    // Muxers that put codec headers up front (Ogg, FLAC) read them from extradata.
    codec_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    const int opened = avcodec_open2(codec_.get(), codec, nullptr);
    if (opened < 0)
      throw std::runtime_error(std::string(format.codec) + " at " + std::to_string(sample_rate) + " Hz: " + av_error(opened));
    // A codec with variable frames (PCM) takes whatever has come.
    frame_size_ = (codec->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE) ? 0 : codec_->frame_size;
  }

  void open_muxer(const AVOutputFormat* muxer) {
    AVFormatContext* raw = nullptr;
    check(avformat_alloc_output_context2(&raw, muxer, nullptr, nullptr), "opening the muxer");
    format_.reset(raw);
    format_->flags |= AVFMT_FLAG_BITEXACT;  // no encoder version tags: same bytes from every build
    format_->metadata_header_padding = 0;    // FLAC would reserve 8 KiB for tags nobody edits
    constexpr int kBufferBytes = 4096;
    auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferBytes));
    if (buffer == nullptr) throw std::runtime_error("out of memory");
    // Without a seek callback the muxers see a pipe and write "unknown length"
    // headers; with one they seek back at the end to complete them.
    io_.reset(avio_alloc_context(buffer, kBufferBytes, 1, this, nullptr, &write_bytes,
                                 delivery_ == AudioDelivery::whole ? &seek_bytes : nullptr));
    if (!io_) {
      av_free(buffer);
      throw std::runtime_error("out of memory");
    }
    format_->pb = io_.get();
    format_->flags |= AVFMT_FLAG_CUSTOM_IO;
    stream_ = avformat_new_stream(format_.get(), nullptr);
    if (stream_ == nullptr) throw std::runtime_error("out of memory");
    check(avcodec_parameters_from_context(stream_->codecpar, codec_.get()), "describing the stream");
    stream_->time_base = codec_->time_base;
    check(avformat_write_header(format_.get(), nullptr), "writing the header");
  }

  // Sends one frame of samples to the codec and muxes what comes out.
  void encode(std::span<const float> samples) {
    av_frame_unref(frame_.get());
    frame_->nb_samples = static_cast<int>(samples.size());
    frame_->format = codec_->sample_fmt;
    frame_->sample_rate = codec_->sample_rate;
    check(av_channel_layout_copy(&frame_->ch_layout, &codec_->ch_layout), "describing a frame");
    check(av_frame_get_buffer(frame_.get(), 0), "allocating a frame");
    if (codec_->sample_fmt == AV_SAMPLE_FMT_FLT || codec_->sample_fmt == AV_SAMPLE_FMT_FLTP) {
      auto* dst = reinterpret_cast<float*>(frame_->data[0]);
      for (size_t i = 0; i < samples.size(); ++i) dst[i] = clip_sample(samples[i]);
    } else {
      auto* dst = reinterpret_cast<int16_t*>(frame_->data[0]);
      for (size_t i = 0; i < samples.size(); ++i) dst[i] = to_s16(samples[i]);
    }
    frame_->pts = next_pts_;
    next_pts_ += frame_->nb_samples;
    drain(frame_.get());
  }

  // Feeds the codec (nullptr: end of input) and writes every packet it has ready.
  void drain(const AVFrame* frame) {
    check(avcodec_send_frame(codec_.get(), frame), "encoding");
    for (;;) {
      const int got = avcodec_receive_packet(codec_.get(), packet_.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
      check(got, "encoding");
      packet_->stream_index = stream_->index;
      av_packet_rescale_ts(packet_.get(), codec_->time_base, stream_->time_base);
      check(av_write_frame(format_.get(), packet_.get()), "muxing");
    }
  }

  // Pushes what the muxer holds back (Ogg keeps packets for a fuller page) out to
  // `out_`, so each push releases every packet it made.
  void flush_muxer() {
    if (format_->oformat->flags & AVFMT_ALLOW_FLUSH) check(av_write_frame(format_.get(), nullptr), "muxing");
    avio_flush(io_.get());
  }

  std::string take_released() {
    if (delivery_ == AudioDelivery::whole) return {};
    std::string released = std::move(out_);
    out_.clear();
    return released;
  }

  static int write_bytes(void* opaque, uint8_t* data, int size) {
    auto* self = static_cast<FfmpegAudioEncoder*>(opaque);
    const auto bytes = static_cast<size_t>(size);
    if (self->delivery_ == AudioDelivery::stream) {
      self->out_.append(reinterpret_cast<const char*>(data), bytes);
      return size;
    }
    // The whole file: the muxer may have sought back to complete a header.
    std::string& out = self->out_;
    if (out.size() < self->position_ + bytes) out.resize(self->position_ + bytes);
    std::memcpy(out.data() + self->position_, data, bytes);
    self->position_ += bytes;
    return size;
  }

  // Only for AudioDelivery::whole, where `out_` holds the entire file.
  static int64_t seek_bytes(void* opaque, int64_t offset, int whence) {
    auto* self = static_cast<FfmpegAudioEncoder*>(opaque);
    const auto size = static_cast<int64_t>(self->out_.size());
    if (whence == AVSEEK_SIZE) return size;
    int64_t target = offset;
    if ((whence & ~AVSEEK_FORCE) == SEEK_CUR) target += static_cast<int64_t>(self->position_);
    if ((whence & ~AVSEEK_FORCE) == SEEK_END) target += size;
    if (target < 0) return AVERROR(EINVAL);
    self->position_ = static_cast<size_t>(target);
    return target;
  }

  void check(int code, const char* what) const {
    if (code < 0) throw std::runtime_error(std::string(codec_ ? codec_->codec->name : "audio") + ": " + what + ": " + av_error(code));
  }

  std::string_view content_type_;
  AudioDelivery delivery_;
  std::unique_ptr<AVCodecContext, CodecFree> codec_;
  std::unique_ptr<AVIOContext, IoFree> io_;
  std::unique_ptr<AVFormatContext, FormatFree> format_;  // freed before io_, which it points at
  std::unique_ptr<AVFrame, FrameFree> frame_;
  std::unique_ptr<AVPacket, PacketFree> packet_;
  AVStream* stream_ = nullptr;  // owned by format_
  int frame_size_ = 0;          // samples per codec frame; 0 when any count will do
  std::vector<float> pending_;  // samples short of a whole codec frame
  int64_t next_pts_ = 0;        // in samples
  std::string out_;             // bytes written by the muxer and not yet released
  size_t position_ = 0;         // AudioDelivery::whole: the muxer's write position in out_
};

}  // namespace

std::vector<int> ffmpeg_codec_sample_rates(const FfmpegAudioFormat& format) {
  const AVCodec* codec = avcodec_find_encoder_by_name(format.codec);
  if (codec == nullptr) throw std::runtime_error(std::string("FFmpeg has no encoder ") + format.codec);
  std::vector<int> rates;
  for (const int* rate = codec->supported_samplerates; rate != nullptr && *rate != 0; ++rate) rates.push_back(*rate);
  std::sort(rates.begin(), rates.end());
  return rates;
}

std::unique_ptr<AudioEncoder> make_ffmpeg_audio_encoder(const FfmpegAudioFormat& format, int sample_rate,
                                                        AudioDelivery delivery) {
  // FFmpeg's own log goes to stderr; keep its errors, drop its chatter (AAC's
  // quantizer statistics, FLAC's "unable to rewrite header" on every stream).
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_ERROR); });
  return std::make_unique<FfmpegAudioEncoder>(format, sample_rate, delivery);
}

}  // namespace sluice::server
