#include "tests/unit/server/audio/audio_decode.h"

#include <doctest/doctest.h>

#include <sndfile.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/mem.h>
}

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace sluice::server {
namespace {

// libsndfile reading from memory: WAV, FLAC, Ogg Opus, MP3.
struct MemoryFile {
  const std::string* bytes;
  sf_count_t position = 0;
};

ReadBackAudio decode_with_sndfile(const std::string& bytes) {
  SF_VIRTUAL_IO io{};
  io.get_filelen = [](void* user) { return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes->size()); };
  io.seek = [](sf_count_t offset, int whence, void* user) {
    auto* file = static_cast<MemoryFile*>(user);
    const auto size = static_cast<sf_count_t>(file->bytes->size());
    const sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? file->position : size;
    file->position = std::clamp<sf_count_t>(base + offset, 0, size);
    return file->position;
  };
  io.read = [](void* into, sf_count_t count, void* user) {
    auto* file = static_cast<MemoryFile*>(user);
    const sf_count_t n = std::min<sf_count_t>(count, static_cast<sf_count_t>(file->bytes->size()) - file->position);
    std::memcpy(into, file->bytes->data() + file->position, static_cast<size_t>(n));
    file->position += n;
    return n;
  };
  io.write = [](const void*, sf_count_t, void*) -> sf_count_t { return 0; };
  io.tell = [](void* user) { return static_cast<MemoryFile*>(user)->position; };
  MemoryFile memory{&bytes};
  SF_INFO info{};
  SNDFILE* file = sf_open_virtual(&io, SFM_READ, &info, &memory);
  REQUIRE_MESSAGE(file != nullptr, sf_strerror(nullptr));
  ReadBackAudio out{info.samplerate, info.channels, {}};
  // A streamed FLAC says its length is unknown: read to the end, not to info.frames.
  std::vector<float> block(4096 * static_cast<size_t>(std::max(info.channels, 1)));
  for (sf_count_t got; (got = sf_readf_float(file, block.data(), 4096)) > 0;)
    out.samples.insert(out.samples.end(), block.begin(), block.begin() + got * info.channels);
  sf_close(file);
  return out;
}

// FFmpeg's demuxer and decoder for an ADTS AAC stream (libsndfile reads no AAC).
ReadBackAudio decode_aac_with_ffmpeg(const std::string& bytes) {
  MemoryFile memory{&bytes};
  constexpr int kBufferBytes = 4096;
  auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferBytes));
  AVIOContext* io = avio_alloc_context(buffer, kBufferBytes, 0, &memory,
                                       [](void* user, uint8_t* into, int size) {
                                         auto* file = static_cast<MemoryFile*>(user);
                                         const auto left = static_cast<sf_count_t>(file->bytes->size()) - file->position;
                                         const int n = static_cast<int>(std::min<sf_count_t>(size, left));
                                         if (n == 0) return AVERROR_EOF;
                                         std::memcpy(into, file->bytes->data() + file->position, static_cast<size_t>(n));
                                         file->position += n;
                                         return n;
                                       },
                                       nullptr, nullptr);
  AVFormatContext* format = avformat_alloc_context();
  format->pb = io;
  REQUIRE(avformat_open_input(&format, nullptr, av_find_input_format("aac"), nullptr) == 0);
  REQUIRE(avformat_find_stream_info(format, nullptr) >= 0);
  const AVCodec* codec = avcodec_find_decoder(format->streams[0]->codecpar->codec_id);
  REQUIRE(codec != nullptr);
  AVCodecContext* decoder = avcodec_alloc_context3(codec);
  avcodec_parameters_to_context(decoder, format->streams[0]->codecpar);
  REQUIRE(avcodec_open2(decoder, codec, nullptr) == 0);
  ReadBackAudio out{decoder->sample_rate, decoder->ch_layout.nb_channels, {}};
  AVPacket* packet = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  auto take_frames = [&] {
    while (avcodec_receive_frame(decoder, frame) == 0) {
      REQUIRE(frame->format == AV_SAMPLE_FMT_FLTP);  // mono: channel 0 is the signal
      const auto* data = reinterpret_cast<const float*>(frame->data[0]);
      out.samples.insert(out.samples.end(), data, data + frame->nb_samples);
    }
  };
  while (av_read_frame(format, packet) >= 0) {
    REQUIRE(avcodec_send_packet(decoder, packet) == 0);
    av_packet_unref(packet);
    take_frames();
  }
  avcodec_send_packet(decoder, nullptr);
  take_frames();
  av_frame_free(&frame);
  av_packet_free(&packet);
  avcodec_free_context(&decoder);
  avformat_close_input(&format);
  av_freep(&io->buffer);
  avio_context_free(&io);
  return out;
}

// Raw s16le, as OpenAI's pcm is.
ReadBackAudio decode_pcm(const std::string& bytes, int rate) {
  ReadBackAudio out{rate, 1, {}};
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const auto value = static_cast<int16_t>(static_cast<uint8_t>(bytes[i]) | (static_cast<uint8_t>(bytes[i + 1]) << 8));
    out.samples.push_back(static_cast<float>(value) / 32768.0f);
  }
  return out;
}

}  // namespace

ReadBackAudio decode_audio(std::string_view format, const std::string& bytes, int pcm_rate) {
  if (format == "pcm") return decode_pcm(bytes, pcm_rate);
  if (format == "aac") return decode_aac_with_ffmpeg(bytes);
  return decode_with_sndfile(bytes);
}

}  // namespace sluice::server
