#pragma once
// The F32 panel form of the signal convolutions' weights, made at load by the
// codec decoder's loader (engine/tts/codec/codec_weights.cpp) for the CPU backend,
// whose conv1d and conv_transpose1d take it beside backend.h's [columns, taps * cin]
// layout: the same F32 values, regrouped so that one 64-byte load gives one input's
// weights for 16 output columns (backends/cpu/conv_panel_kernel.h: an outer-product
// tile, ~1.4x the row-dot tile's speed on AVX-512).
//
// Layout for a conv with `columns` output columns and K = taps * cin (cin even,
// tap-major as backend.h's weight): a 3-D F32 tensor [panels, K, 16], panels =
// columns / 16 rounded up, zeros past `columns`:
//   panels[(p * K + k) * 16 + l] = w[16p + l][k]
// The third dimension is what tells this form from backend.h's 2-D one.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace sluice::backends {

inline constexpr int64_t kConvPanelColumns = 16;

inline int64_t conv_panel_count(int64_t columns) { return (columns + kConvPanelColumns - 1) / kConvPanelColumns; }

// The panels of a conv whose F32 weight is [columns, taps * cin].
inline std::vector<float> pack_conv_panels(std::span<const float> w, int64_t columns, int64_t taps, int64_t cin) {
  if (cin % 2 != 0) throw std::invalid_argument("conv weight panels need an even number of input channels");
  const int64_t k = taps * cin;
  std::vector<float> out(static_cast<size_t>(conv_panel_count(columns) * k * kConvPanelColumns), 0.0f);
  for (int64_t c = 0; c < columns; ++c) {
    const int64_t panel = c / kConvPanelColumns, lane = c % kConvPanelColumns;
    for (int64_t i = 0; i < k; ++i)
      out[static_cast<size_t>((panel * k + i) * kConvPanelColumns + lane)] = w[static_cast<size_t>(c * k + i)];
  }
  return out;
}

}  // namespace sluice::backends
