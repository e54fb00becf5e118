#pragma once
// What both FFmpeg audio readers (audio_decoder.cpp: any file FFmpeg reads, for the
// CLI; reference_audio.cpp: the whitelisted formats a client may upload) share:
// demuxing from bytes in memory through a custom AVIOContext, owners of the FFmpeg
// objects, and one sample of a decoded frame as a float.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
#include <libavutil/samplefmt.h>
}

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace sluice::server::ffmpeg {

inline std::string error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

// The bytes being demuxed; read_memory and seek_memory are the AVIOContext callbacks.
struct MemoryInput {
  std::span<const std::byte> bytes;
  size_t position = 0;
};

inline int read_memory(void* user, uint8_t* into, int size) {
  auto* in = static_cast<MemoryInput*>(user);
  const size_t n = std::min(static_cast<size_t>(size), in->bytes.size() - in->position);
  if (n == 0) return AVERROR_EOF;
  std::memcpy(into, in->bytes.data() + in->position, n);
  in->position += n;
  return static_cast<int>(n);
}

inline int64_t seek_memory(void* user, int64_t offset, int whence) {
  auto* in = static_cast<MemoryInput*>(user);
  const auto size = static_cast<int64_t>(in->bytes.size());
  if (whence & AVSEEK_SIZE) return size;
  const int64_t base = (whence & ~AVSEEK_FORCE) == SEEK_CUR ? static_cast<int64_t>(in->position)
                       : (whence & ~AVSEEK_FORCE) == SEEK_END ? size
                                                              : 0;
  const int64_t to = base + offset;
  if (to < 0 || to > size) return AVERROR(EINVAL);
  in->position = static_cast<size_t>(to);
  return to;
}

struct IoFree {
  void operator()(AVIOContext* io) const {
    av_freep(&io->buffer);  // avio may have replaced the buffer it was given
    avio_context_free(&io);
  }
};
struct InputClose {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct CodecFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};

// Sample i of channel c of a decoded frame as a float in [-1, 1] (integers scaled by
// 2^-(bits-1), as libsndfile's float reads) into *out; false for a sample format
// without such a reading.
inline bool sample_at(const AVFrame& frame, AVSampleFormat format, int channels, int c, int i, float* out) {
  const bool planar = av_sample_fmt_is_planar(format) != 0;
  const uint8_t* base = frame.extended_data[planar ? c : 0];
  const int index = planar ? i : i * channels + c;
  switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_U8: *out = (static_cast<float>(base[index]) - 128.0f) / 128.0f; return true;
    case AV_SAMPLE_FMT_S16: *out = static_cast<float>(reinterpret_cast<const int16_t*>(base)[index]) / 32768.0f; return true;
    case AV_SAMPLE_FMT_S32:
      *out = static_cast<float>(static_cast<double>(reinterpret_cast<const int32_t*>(base)[index]) / 2147483648.0);
      return true;
    case AV_SAMPLE_FMT_FLT: *out = reinterpret_cast<const float*>(base)[index]; return true;
    case AV_SAMPLE_FMT_DBL: *out = static_cast<float>(reinterpret_cast<const double*>(base)[index]); return true;
    default: return false;
  }
}

}  // namespace sluice::server::ffmpeg
