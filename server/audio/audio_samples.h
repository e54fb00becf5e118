#pragma once
// Float samples to the integers the encoders store. Scaled by 32768 (the 16-bit
// decoders' divisor, so a round trip is within half a step) and clipped, never
// wrapped, outside [-1, 1).
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace sluice::server {

inline float clip_sample(float x) { return std::isnan(x) ? 0.0f : std::clamp(x, -1.0f, 1.0f); }

inline int16_t to_s16(float x) {
  const float scaled = std::nearbyint(clip_sample(x) * 32768.0f);
  return static_cast<int16_t>(std::min(scaled, 32767.0f));
}

}  // namespace sluice::server
