#include "backends/cpu/dequantize.h"

#include <cstring>

#include "backends/check.h"
#include "backends/cpu/half.h"
#include "backends/cpu/quant_blocks.h"

// Built with -ffp-contract=off (backends/CMakeLists.txt): `d * q - m` must stay two
// roundings, as in the reference, whatever -march the build uses.

namespace sluice::backends::cpu {
namespace {

void dequantize_q8_0(const BlockQ8_0* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, y += kQk) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQk; ++j) y[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequantize_q4_0(const BlockQ4_0* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, y += kQk) {
    const float d = fp16_to_fp32(b[i].d);
    int32_t q[kQk];  // unpack first: the float loop then vectorizes cleanly
    for (int j = 0; j < kQk / 2; ++j) {
      q[j] = (b[i].qs[j] & 0x0F) - 8;
      q[j + kQk / 2] = (b[i].qs[j] >> 4) - 8;
    }
    for (int j = 0; j < kQk; ++j) y[j] = static_cast<float>(q[j]) * d;
  }
}

void dequantize_q4_1(const BlockQ4_1* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, y += kQk) {
    const float d = fp16_to_fp32(b[i].d);
    const float m = fp16_to_fp32(b[i].m);
    int32_t q[kQk];
    for (int j = 0; j < kQk / 2; ++j) {
      q[j] = b[i].qs[j] & 0x0F;
      q[j + kQk / 2] = b[i].qs[j] >> 4;
    }
    for (int j = 0; j < kQk; ++j) y[j] = static_cast<float>(q[j]) * d + m;
  }
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;  // little-endian host assumed, as GGUF is
}

// Element j's 5-bit value: its nibble plus bit j of the little-endian qh word.
void unpack_q5(const uint8_t* qs, const uint8_t* qh_bytes, int32_t* q) {
  const uint32_t qh = load_u32(qh_bytes);
  for (int j = 0; j < kQk / 2; ++j) {
    q[j] = (qs[j] & 0x0F) | static_cast<int32_t>(((qh >> j) & 1u) << 4);
    q[j + kQk / 2] = (qs[j] >> 4) | static_cast<int32_t>(((qh >> (j + 16)) & 1u) << 4);
  }
}

void dequantize_q5_0(const BlockQ5_0* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, y += kQk) {
    const float d = fp16_to_fp32(b[i].d);
    int32_t q[kQk];
    unpack_q5(b[i].qs, b[i].qh, q);
    for (int j = 0; j < kQk; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
  }
}

void dequantize_q5_1(const BlockQ5_1* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, y += kQk) {
    const float d = fp16_to_fp32(b[i].d);
    const float m = fp16_to_fp32(b[i].m);
    int32_t q[kQk];
    unpack_q5(b[i].qs, b[i].qh, q);
    for (int j = 0; j < kQk; ++j) y[j] = static_cast<float>(q[j]) * d + m;
  }
}

void dequantize_q4_k(const BlockQ4_K* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int j = 0; j < kQkK / 64; ++j, q += 32, y += 64) {
      uint8_t sc0, mn0, sc1, mn1;
      k_scale_min(b[i].scales, 2 * j, &sc0, &mn0);
      k_scale_min(b[i].scales, 2 * j + 1, &sc1, &mn1);
      const float d0 = d * sc0, m0 = dmin * mn0;
      const float d1 = d * sc1, m1 = dmin * mn1;
      for (int l = 0; l < 32; ++l) y[l] = d0 * static_cast<float>(q[l] & 0xF) - m0;
      for (int l = 0; l < 32; ++l) y[32 + l] = d1 * static_cast<float>(q[l] >> 4) - m1;
    }
  }
}

void dequantize_q5_k(const BlockQ5_K* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int j = 0; j < kQkK / 64; ++j, ql += 32, y += 64) {
      uint8_t sc0, mn0, sc1, mn1;
      k_scale_min(b[i].scales, 2 * j, &sc0, &mn0);
      k_scale_min(b[i].scales, 2 * j + 1, &sc1, &mn1);
      const float d0 = d * sc0, m0 = dmin * mn0;
      const float d1 = d * sc1, m1 = dmin * mn1;
      const int lo_bit = 2 * j, hi_bit = 2 * j + 1;
      for (int l = 0; l < 32; ++l)
        y[l] = d0 * static_cast<float>((ql[l] & 0xF) + (((qh[l] >> lo_bit) & 1) << 4)) - m0;
      for (int l = 0; l < 32; ++l)
        y[32 + l] = d1 * static_cast<float>((ql[l] >> 4) + (((qh[l] >> hi_bit) & 1) << 4)) - m1;
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* __restrict b, float* __restrict y, int64_t num_blocks) {
  for (int64_t i = 0; i < num_blocks; ++i, y += kQkK) {
    const float d = fp16_to_fp32(b[i].d);
    // Unpack the 6-bit values first. In each half of 128, element l of each quarter
    // shares qh[l]; quarters 0/2 take the low/high nibbles of ql[l], 1/3 of ql[l + 32].
    int32_t q[kQkK];
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const uint8_t* qh = b[i].qh + 32 * half;
      int32_t* qq = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        qq[l] = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        qq[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        qq[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        qq[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      }
    }
    // Element e uses scale e / 16; GGML rounds (d * scale) first, then * q.
    for (int s = 0; s < kQkK / 16; ++s) {
      const float ds = d * static_cast<float>(b[i].scales[s]);
      for (int l = 0; l < 16; ++l) y[16 * s + l] = ds * static_cast<float>(q[16 * s + l]);
    }
  }
}

}  // namespace

bool can_dequantize(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

void dequantize_row(DType dtype, const void* src, float* dst, int64_t n) {
  const int64_t block = dtype_traits(dtype).block_size;
  SLUICE_CHECK(block > 0 && n % block == 0, "row is not a whole number of blocks");
  const int64_t num_blocks = n / block;
  switch (dtype) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case DType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case DType::Q8_0: return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, num_blocks);
    case DType::Q4_0: return dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, num_blocks);
    case DType::Q4_1: return dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, num_blocks);
    case DType::Q5_0: return dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, num_blocks);
    case DType::Q5_1: return dequantize_q5_1(static_cast<const BlockQ5_1*>(src), dst, num_blocks);
    case DType::Q4_K: return dequantize_q4_k(static_cast<const BlockQ4_K*>(src), dst, num_blocks);
    case DType::Q5_K: return dequantize_q5_k(static_cast<const BlockQ5_K*>(src), dst, num_blocks);
    case DType::Q6_K: return dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, num_blocks);
    default:
      SLUICE_CHECK(false, "dequantize_row: unsupported dtype");
  }
}

}  // namespace sluice::backends::cpu
