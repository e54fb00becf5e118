// The portable integer kernels: the reference every other path must equal bit for
// bit, and the path of CPUs without AVX2 (and of non-x86 builds).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/half.h"
#include "backends/cpu/quant/act_quantize.h"
#include "backends/cpu/quant/quant_kernels.h"

namespace sluice::backends::cpu {
namespace {

constexpr int kMaxTokens = 8;  // tokens whose accumulators are live at once

uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

float load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return fp16_to_fp32(h);
}

// u[r][e]: the 16 rows' unsigned values of one block.
void decode_block(const PackedFormat& f, const uint8_t* block, uint8_t u[kPackRows][kPackBlock]) {
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < kPackRows; ++r)
      for (int j = 0; j < 4; ++j) {
        const int lane = 4 * r + j;
        uint8_t v;
        if (f.bits == 8) {
          v = block[64 * c + lane];
        } else {
          const uint8_t byte = block[64 * (c & 3) + lane];
          v = c < 4 ? (byte & 0x0F) : (byte >> 4);
          for (int p = 0; p < f.num_planes(); ++p)
            if ((load_u64(block + f.planes_offset() + 64 * p + 8 * c) >> lane) & 1) v |= static_cast<uint8_t>(16 << p);
        }
        u[r][4 * c + j] = v;
      }
}

void group_gemm_scalar(const PackedFormat& f, const uint8_t* group, int64_t num_blocks, const ActBlock* x,
                       int64_t num_tokens, float* y, int64_t y_stride, int valid_rows) {
  for (int64_t t0 = 0; t0 < num_tokens; t0 += kMaxTokens) {
    const int64_t nt = std::min<int64_t>(kMaxTokens, num_tokens - t0);
    float acc[kMaxTokens][kPackRows] = {};
    for (int64_t k = 0; k < num_blocks; ++k) {
      const uint8_t* block = group + k * f.block_bytes();
      uint8_t u[kPackRows][kPackBlock];
      decode_block(f, block, u);
      float a[2][kPackRows], b[2][kPackRows];
      for (int h = 0; h < f.num_scale_rows(); ++h)
        for (int r = 0; r < kPackRows; ++r) {
          a[h][r] = load_half(block + f.scales_offset() + 32 * h + 2 * r);
          b[h][r] = f.affine ? load_half(block + f.b_offset() + 2 * r) : a[h][r] * f.offset;
        }
      for (int64_t t = 0; t < nt; ++t) {
        const ActBlock& xb = x[(t0 + t) * num_blocks + k];
        for (int r = 0; r < kPackRows; ++r) {
          int32_t lo = 0, hi = 0;
          for (int e = 0; e < 16; ++e) lo += static_cast<int32_t>(u[r][e]) * xb.q[e];
          for (int e = 16; e < 32; ++e) hi += static_cast<int32_t>(u[r][e]) * xb.q[e];
          float& out = acc[t][r];
          if (f.split16) {
            out = std::fma(static_cast<float>(lo), a[0][r] * xb.d, out);
            out = std::fma(b[0][r], xb.s_lo, out);
            out = std::fma(static_cast<float>(hi), a[1][r] * xb.d, out);
            out = std::fma(b[1][r], xb.s_hi, out);
          } else {
            out = std::fma(static_cast<float>(lo + hi), a[0][r] * xb.d, out);
            out = std::fma(b[0][r], xb.s, out);
          }
        }
      }
    }
    for (int64_t t = 0; t < nt; ++t)
      for (int r = 0; r < valid_rows; ++r) y[(t0 + t) * y_stride + r] = acc[t][r];
  }
}

}  // namespace

const QuantKernels& scalar_quant_kernels() {
  static const QuantKernels kernels{quantize_rows_portable, group_gemm_scalar};
  return kernels;
}

}  // namespace sluice::backends::cpu
