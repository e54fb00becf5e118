#pragma once
// The F32 panel form of the signal convolutions' weights, made at load by the
// speech models' loaders (upload_conv_weight below) for the CPU backend,
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
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace sluice::backends {

inline constexpr int64_t kConvPanelColumns = 16;

inline int64_t conv_panel_count(int64_t columns) { return (columns + kConvPanelColumns - 1) / kConvPanelColumns; }

// The panels of a conv whose F32 weight is [columns, K] (K = w.size() / columns).
inline std::vector<float> pack_conv_panels(std::span<const float> w, int64_t columns) {
  const int64_t k = static_cast<int64_t>(w.size()) / columns;
  std::vector<float> out(static_cast<size_t>(conv_panel_count(columns) * k * kConvPanelColumns), 0.0f);
  for (int64_t c = 0; c < columns; ++c) {
    const int64_t panel = c / kConvPanelColumns, lane = c % kConvPanelColumns;
    for (int64_t i = 0; i < k; ++i)
      out[static_cast<size_t>((panel * k + i) * kConvPanelColumns + lane)] = w[static_cast<size_t>(c * k + i)];
  }
  return out;
}

// Uploads a conv weight w [columns, K] (backend.h's layout) into a buffer added to
// `buffers`: on the CPU as panels where they pay (at least 16 columns, and an even
// `conv_cin`, the channels of the rows the conv reads), else as it is.
inline Tensor upload_conv_weight(Backend& backend, std::vector<std::unique_ptr<Buffer>>& buffers,
                                 std::span<const float> w, int64_t columns, int64_t conv_cin) {
  const int64_t k = static_cast<int64_t>(w.size()) / columns;
  const bool panels = backend.device() == DeviceKind::cpu && columns >= kConvPanelColumns && conv_cin % 2 == 0;
  const std::vector<float> panel_values = panels ? pack_conv_panels(w, columns) : std::vector<float>();
  const std::span<const float> values = panels ? std::span<const float>(panel_values) : w;
  auto& buffer = buffers.emplace_back(backend.allocate(values.size() * sizeof(float)));
  const Tensor t = panels ? Tensor::make(buffer.get(), 0, DType::F32, {conv_panel_count(columns), k, kConvPanelColumns})
                          : Tensor::make(buffer.get(), 0, DType::F32, {columns, k});
  backend.upload(t, std::as_bytes(values));
  return t;
}

}  // namespace sluice::backends
