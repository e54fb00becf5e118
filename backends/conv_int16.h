#pragma once
// The int16 form of the signal convolutions' weights, shared by the loader that
// makes it (engine/tts/codec/codec_weights.cpp) and the backend that reads it: the
// CPU backend's conv1d and conv_transpose1d take an I16 `w` in this layout beside
// backend.h's F32 one (other backends take F32 only).
//
// Why int16: a 16-bit multiply-add does twice the multiply-accumulates of an F32 FMA
// per instruction (AVX2 vpmaddwd 16 against 8; AVX-512 VNNI vpdpwssd 32 against 16,
// with the add fused), and integer sums are exact, so every kernel path gives the
// same bits without fixing a summation order.
//
// Layout of an I16 weight [columns, taps * padded_cin(cin) + 2]: each tap's Cin run
// padded with zeros to a multiple of 16, and the row's last two elements the bits of
// its F32 scale s (the real weight is s * q). Each activation row is quantized the
// same way by the op with a per-row scale, so the value of an output depends on its
// own window only (streaming and batch invariance hold as for F32).
//
// Exactness: a tap's dot product sum_c qw * qx is an int32 only if it cannot
// overflow, so the bounds are chosen from Cin: |qx| <= A, |qw| <= W with
// A * W * padded_cin <= 2^31 - 1 (and A, W <= 32767), A = W (the two quantizations
// then cost about the same noise). Cin 1536 gets 1182 levels each side (~10 bits),
// Cin 96 about 4700.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace sluice::backends {

inline constexpr int64_t kInt16ConvLanes = 16;

inline int64_t int16_conv_padded_cin(int64_t cin) { return (cin + kInt16ConvLanes - 1) / kInt16ConvLanes * kInt16ConvLanes; }

// The largest |q| of weights and of activations for a conv with `cin` input channels.
inline int32_t int16_conv_limit(int64_t cin) {
  const double bound = std::floor(std::sqrt(2147483647.0 / static_cast<double>(int16_conv_padded_cin(cin))));
  return static_cast<int32_t>(std::min(bound, 32767.0));
}

// I16 weight columns for a conv whose F32 weight is [columns, taps * cin] (backend.h's
// tap-major layout): [columns, taps * padded_cin + 2] as above.
inline std::vector<int16_t> pack_int16_conv_weights(std::span<const float> w, int64_t columns, int64_t taps, int64_t cin) {
  const int64_t pc = int16_conv_padded_cin(cin), row = taps * pc + 2;
  const float limit = static_cast<float>(int16_conv_limit(cin));
  std::vector<int16_t> out(static_cast<size_t>(columns * row), 0);
  for (int64_t o = 0; o < columns; ++o) {
    const float* src = w.data() + o * taps * cin;
    float peak = 0.0f;
    for (int64_t i = 0; i < taps * cin; ++i) peak = std::max(peak, std::fabs(src[i]));
    const float scale = peak / limit;
    int16_t* dst = out.data() + o * row;
    if (peak > 0.0f)
      for (int64_t j = 0; j < taps; ++j)
        for (int64_t c = 0; c < cin; ++c) {
          const float q = std::nearbyint(src[j * cin + c] / scale);
          dst[j * pc + c] = static_cast<int16_t>(std::clamp(q, -limit, limit));
        }
    std::memcpy(dst + taps * pc, &scale, sizeof(float));
  }
  return out;
}

}  // namespace sluice::backends
