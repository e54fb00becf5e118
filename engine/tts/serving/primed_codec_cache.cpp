#include "engine/tts/serving/primed_codec_cache.h"

#include <algorithm>

namespace sluice::engine::tts {

std::optional<CodecStream> PrimedCodecCache::find(std::span<const int32_t> ref_codes) {
  const auto hit = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return std::equal(e.codes.begin(), e.codes.end(), ref_codes.begin(), ref_codes.end());
  });
  if (hit == entries_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, hit);
  return entries_.front().stream.clone();
}

void PrimedCodecCache::keep(std::span<const int32_t> ref_codes, const CodecStream& primed) {
  if (capacity_ == 0) return;
  if (entries_.size() == capacity_) entries_.pop_back();
  entries_.push_front(Entry{std::vector<int32_t>(ref_codes.begin(), ref_codes.end()), primed.clone()});
}

}  // namespace sluice::engine::tts
