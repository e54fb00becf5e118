// Rotary position embedding, in place.
//
// Pair i (0 <= i < n/2, n = num_rotated) rotates by angle pos * inv_freq[i] with
// inv_freq[i] = freq_scale * theta^(-2i/n), optionally reshaped by Llama 3
// scaling. The arithmetic follows Hugging Face: inv_freq is rounded to F32, the
// angle is one F32 product float(pos) * inv_freq, and cos/sin of that F32 angle
// are rounded to F32. Normal layout pairs (2i, 2i+1) (GGML); NeoX pairs (i, i + n/2).
#include <cmath>
#include <numbers>
#include <vector>

#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"

namespace sluice::backends::cpu {
namespace {

// Hugging Face's _compute_llama3_parameters, per frequency.
double llama3_scaled(double inv_freq, const RopeParams& p) {
  const double factor = p.llama3_factor;
  const double low = p.llama3_low_freq_factor;
  const double high = p.llama3_high_freq_factor;
  const double old_context = p.llama3_original_context;
  const double low_freq_wavelen = old_context / low;
  const double high_freq_wavelen = old_context / high;
  const double wavelen = 2.0 * std::numbers::pi / inv_freq;
  if (wavelen < high_freq_wavelen) return inv_freq;
  if (wavelen > low_freq_wavelen) return inv_freq / factor;
  const double smooth = (old_context / wavelen - low) / (high - low);
  return (1.0 - smooth) * inv_freq / factor + smooth * inv_freq;
}

std::vector<float> inverse_frequencies(const RopeParams& p, int n) {
  std::vector<float> inv(static_cast<size_t>(n / 2));
  for (int i = 0; i < n / 2; ++i) {
    double f = std::pow(static_cast<double>(p.theta), -2.0 * i / n);
    if (p.llama3_factor > 0.0f) f = llama3_scaled(f, p);
    inv[static_cast<size_t>(i)] = static_cast<float>(f * static_cast<double>(p.freq_scale));
  }
  return inv;
}

}  // namespace

void rope(ThreadPool& pool, const Tensor& x, const Tensor& positions, const RopeParams& params) {
  SLUICE_CHECK(x.dtype == DType::F32 && x.ndim == 3, "rope: x must be [T, heads, head_dim] F32");
  SLUICE_CHECK(positions.dtype == DType::I32 && positions.num_elements() == x.dim(0),
               "rope: positions must be [T] I32");
  const int64_t num_heads = x.dim(1);
  const int64_t head_dim = x.dim(2);
  const int n = params.num_rotated > 0 ? params.num_rotated : static_cast<int>(head_dim);
  SLUICE_CHECK(n % 2 == 0 && n <= head_dim, "rope: num_rotated must be even and <= head_dim");
  SLUICE_CHECK(params.llama3_factor <= 0.0f || params.llama3_high_freq_factor != params.llama3_low_freq_factor,
               "rope: llama3 high and low frequency factors must differ");
  const int half = n / 2;
  const std::vector<float> inv_freq = inverse_frequencies(params, n);
  const int32_t* pos = reinterpret_cast<const int32_t*>(host_ptr(positions));
  const Rows<float> xr(x);  // rows are heads: row t * num_heads + h

  for_each_row(pool, x.dim(0), num_heads * head_dim, [&](int64_t t) {
    thread_local std::vector<float> cos_sin;  // [half] cos then [half] sin
    cos_sin.resize(static_cast<size_t>(2 * half));
    float* c = cos_sin.data();
    float* s = c + half;
    const float p = static_cast<float>(pos[t]);
    for (int i = 0; i < half; ++i) {
      const float angle = p * inv_freq[static_cast<size_t>(i)];
      c[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      s[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
    for (int64_t h = 0; h < num_heads; ++h) {
      float* v = xr[t * num_heads + h];
      if (params.neox) {
        for (int i = 0; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * c[i] - b * s[i];
          v[i + half] = a * s[i] + b * c[i];
        }
      } else {
        for (int i = 0; i < half; ++i) {
          const float a = v[2 * i], b = v[2 * i + 1];
          v[2 * i] = a * c[i] - b * s[i];
          v[2 * i + 1] = a * s[i] + b * c[i];
        }
      }
    }
  });
}

}  // namespace sluice::backends::cpu
