#pragma once
// ICL voice clones' codec streams, primed with their reference codes and kept for
// the next request with the same reference.
//
// An ICL request's audio is its reference codes and generated codes decoded as one
// pass, the reference's samples dropped (speech_codec_worker.h): every reference
// frame goes through the codec first (a 10 s reference is 125 frames, ~3.4 s on a
// 2-core CPU). The stream that leaves depends on the codes alone, so a copy of it
// (CodecStream::clone, ~2 ms) is exactly what decoding them again would give: a
// voice's later requests skip that work.
//
// Keyed by the codes themselves (an uploaded voice and an inline reference that
// encodes to the same codes share an entry); least recently used first out. Not
// thread-safe: the codec worker's thread owns it.
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <vector>

#include "engine/tts/codec/codec_decoder.h"

namespace sluice::engine::tts {

class PrimedCodecCache {
 public:
  // How many primed streams are kept (0: none). A stream of the real 12 Hz codec
  // holds ~9 MB (its KV ring is most of it).
  static constexpr size_t kDefaultCapacity = 8;

  explicit PrimedCodecCache(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  // A clone of the stream kept for these reference codes, if any (it becomes the
  // most recently used).
  std::optional<CodecStream> find(std::span<const int32_t> ref_codes);
  // Keeps a clone of `primed`, the stream that decoding ref_codes from a fresh one
  // left; the least recently used entry goes when full.
  void keep(std::span<const int32_t> ref_codes, const CodecStream& primed);

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<int32_t> codes;
    CodecStream stream;
  };

  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace sluice::engine::tts
