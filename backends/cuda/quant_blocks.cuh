#pragma once
// The GGML quantized block formats as the CUDA kernels read them, and their decode.
// Byte layouts are those of backends/cpu/quant_blocks.h (GGUF's, little-endian, no
// padding); here they are byte offsets instead of structs, because a block is only
// 2-byte aligned in memory (a Q4_0 block is 18 bytes) and every load says its width.
//
// Decoding works in "chunks": 8 values of one block, taken as two groups of 4
// consecutive elements (at offset(c, 0) and offset(c, 1) within the block), whose
// quants sit in 4 consecutive bytes. Every kernel (embed, dequantize, GEMV) uses a
// chunk per thread, so each thread makes 16-byte loads of x and 4-byte decodes.
//
// Every value is computed with the same F32 operations in the same order as the CPU
// dequantizers (and GGML's), so the results are bit-identical: products use
// mul_rn(), which the device never fuses into an FMA; quant -> float conversions are
// exact. The host path (for tests/unit/backends/cuda/test_quant_blocks_host.cpp)
// must be compiled without FP contraction, as the CPU dequantizers are.
#include <cstdint>
#include <cstring>

#include "backends/dtype.h"

// nvcc builds the kernels as C++17; backends/cpu/half.h (C++20) serves only the
// plain C++ build of the host tests.
#ifdef __CUDACC__
#include <cuda_fp16.h>
#define SLUICE_HD __host__ __device__ __forceinline__
#else
#include "backends/cpu/half.h"
#define SLUICE_HD inline
#endif

namespace sluice::backends::cuda {

// --- scalar helpers ---------------------------------------------------------------

SLUICE_HD float bits_to_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

SLUICE_HD float f16_to_f32(uint16_t h) {
#ifdef __CUDACC__
  return __half2float(__ushort_as_half(h));  // exact; one instruction on the device
#else
  return cpu::fp16_to_fp32(h);
#endif
}

SLUICE_HD float bf16_to_f32(uint16_t h) { return bits_to_f32(static_cast<uint32_t>(h) << 16); }

// float(q) - offset, exactly, for 0 <= q < 2^22 and an integer offset < 2^22: the
// bits of 2^23 + q, minus 2^23 + offset. One logic op and one add instead of an
// int -> float conversion (which runs at a quarter of the FMA rate on the GPU).
SLUICE_HD float uint_minus(uint32_t q, float offset) {
  return bits_to_f32(0x4B000000u | q) - (8388608.0f + offset);
}

// A rounded product the compiler may not fuse with a following add.
SLUICE_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// Loads from quant data: 2-byte aligned at best, read-only for the kernel's life.
SLUICE_HD uint32_t load_u8(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

SLUICE_HD uint32_t load_u16(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const unsigned short*>(p));
#else
  uint16_t v;
  std::memcpy(&v, p, sizeof v);  // little-endian host, as GGUF
  return v;
#endif
}

// Four bytes at a 2-byte aligned address, as a little-endian word.
SLUICE_HD uint32_t load_u32_a2(const uint8_t* p) { return load_u16(p) | (load_u16(p + 2) << 16); }

SLUICE_HD uint32_t byte_of(uint32_t word, int k) { return (word >> (8 * k)) & 0xFFu; }

// Scale and min of sub-block j (0..7) of a Q4_K/Q5_K block, from the 12 scale bytes
// as three little-endian words (cpu::k_scale_min, without indexing a byte array,
// which on the device would go through local memory).
SLUICE_HD void k_scale_min(uint32_t w0, uint32_t w1, uint32_t w2, int j, uint32_t* sc, uint32_t* mn) {
  if (j < 4) {
    *sc = byte_of(w0, j) & 63;
    *mn = byte_of(w1, j) & 63;
  } else {
    const int k = j - 4;
    *sc = (byte_of(w2, k) & 0xF) | ((byte_of(w0, k) >> 6) << 4);
    *mn = (byte_of(w2, k) >> 4) | ((byte_of(w1, k) >> 6) << 4);
  }
}

// --- the formats -------------------------------------------------------------------
// Each: kBlockElems, kBlockBytes, kChunks (chunks per block), offset(c, g) and
// decode(block, c, v): v[0..3] = elements offset(c,0)+0..3, v[4..7] = offset(c,1)+0..3.

template <DType D>
struct QuantFormat;

// x = d * q, q int8.  [d f16][qs 32 x int8]
template <>
struct QuantFormat<DType::Q8_0> {
  static constexpr int kBlockElems = 32, kBlockBytes = 34, kChunks = 4;
  static constexpr int kD = 0, kQs = 2;
  SLUICE_HD static int offset(int c, int g) { return 8 * c + 4 * g; }
  SLUICE_HD static void decode(const uint8_t* b, int c, float* v) {
    const float d = f16_to_f32(static_cast<uint16_t>(load_u16(b + kD)));
    const uint32_t lo = load_u32_a2(b + kQs + 8 * c), hi = load_u32_a2(b + kQs + 8 * c + 4);
    for (int k = 0; k < 4; ++k) {
      // byte ^ 0x80 is the int8 value plus 128
      v[k] = mul_rn(uint_minus(byte_of(lo, k) ^ 0x80u, 128.0f), d);
      v[4 + k] = mul_rn(uint_minus(byte_of(hi, k) ^ 0x80u, 128.0f), d);
    }
  }
};

// Q4_0: x = d * (q - 8); Q4_1: x = d * q + m. Byte j of qs: element j (low nibble)
// and j + 16 (high).  [d f16][m f16, Q4_1 only][qs 16]
template <bool kMin>
struct Q4Small {
  static constexpr int kBlockElems = 32, kBlockBytes = kMin ? 20 : 18, kChunks = 4;
  static constexpr int kD = 0, kM = kMin ? 2 : -1, kQs = kMin ? 4 : 2;  // kM < 0: no m
  SLUICE_HD static int offset(int c, int g) { return 4 * c + 16 * g; }
  SLUICE_HD static void decode(const uint8_t* b, int c, float* v) {
    const float d = f16_to_f32(static_cast<uint16_t>(load_u16(b + kD)));
    const uint32_t q = load_u32_a2(b + kQs + 4 * c);
    if constexpr (kMin) {
      const float m = f16_to_f32(static_cast<uint16_t>(load_u16(b + kM)));
      for (int k = 0; k < 4; ++k) {
        v[k] = mul_rn(uint_minus(byte_of(q, k) & 0xF, 0.0f), d) + m;
        v[4 + k] = mul_rn(uint_minus(byte_of(q, k) >> 4, 0.0f), d) + m;
      }
    } else {
      for (int k = 0; k < 4; ++k) {
        v[k] = mul_rn(uint_minus(byte_of(q, k) & 0xF, 8.0f), d);
        v[4 + k] = mul_rn(uint_minus(byte_of(q, k) >> 4, 8.0f), d);
      }
    }
  }
};
template <>
struct QuantFormat<DType::Q4_0> : Q4Small<false> {};
template <>
struct QuantFormat<DType::Q4_1> : Q4Small<true> {};

// Q5_0: x = d * (q - 16); Q5_1: x = d * q + m. Nibbles as in Q4_0; bit e of the
// little-endian qh word is the fifth bit of element e.  [d][m, Q5_1 only][qh 4][qs 16]
template <bool kMin>
struct Q5Small {
  static constexpr int kBlockElems = 32, kBlockBytes = kMin ? 24 : 22, kChunks = 4;
  static constexpr int kD = 0, kM = kMin ? 2 : -1, kQh = kMin ? 4 : 2, kQs = kQh + 4;
  SLUICE_HD static int offset(int c, int g) { return 4 * c + 16 * g; }
  SLUICE_HD static void decode(const uint8_t* b, int c, float* v) {
    const float d = f16_to_f32(static_cast<uint16_t>(load_u16(b + kD)));
    const uint32_t q = load_u32_a2(b + kQs + 4 * c);
    const uint32_t qh = load_u32_a2(b + kQh);
    const uint32_t h_lo = qh >> (4 * c), h_hi = qh >> (16 + 4 * c);  // bits of elements 4c.., 16+4c..
    const float m = kMin ? f16_to_f32(static_cast<uint16_t>(load_u16(b + kM))) : 0.0f;
    for (int k = 0; k < 4; ++k) {
      const uint32_t q_lo = (byte_of(q, k) & 0xF) | (((h_lo >> k) & 1u) << 4);
      const uint32_t q_hi = (byte_of(q, k) >> 4) | (((h_hi >> k) & 1u) << 4);
      if constexpr (kMin) {
        v[k] = mul_rn(uint_minus(q_lo, 0.0f), d) + m;
        v[4 + k] = mul_rn(uint_minus(q_hi, 0.0f), d) + m;
      } else {
        v[k] = mul_rn(uint_minus(q_lo, 16.0f), d);
        v[4 + k] = mul_rn(uint_minus(q_hi, 16.0f), d);
      }
    }
  }
};
template <>
struct QuantFormat<DType::Q5_0> : Q5Small<false> {};
template <>
struct QuantFormat<DType::Q5_1> : Q5Small<true> {};

// Q4_K / Q5_K: 8 sub-blocks of 32, x = (d * sc[j]) * q - (dmin * mn[j]). Each 32 bytes
// of qs hold sub-blocks 2p (low nibbles) and 2p + 1 (high). Q5_K adds qh: bit 2p (2p + 1)
// of qh[l] is the fifth bit of element l of sub-block 2p (2p + 1).
// Chunk c: pair p = c / 8, elements l0..l0+3 of both sub-blocks, l0 = 4 (c % 8).
//   [d f16][dmin f16][scales 12][qh 32, Q5_K only][qs 128]
template <bool kHighBit>
struct QkFormat {
  static constexpr int kBlockElems = 256, kBlockBytes = kHighBit ? 176 : 144, kChunks = 32;
  static constexpr int kD = 0, kDmin = 2, kScales = 4, kQh = 16, kQs = kHighBit ? 48 : 16;
  SLUICE_HD static int offset(int c, int g) { return 64 * (c / 8) + 32 * g + 4 * (c % 8); }
  SLUICE_HD static void decode(const uint8_t* b, int c, float* v) {
    const int p = c / 8, l0 = 4 * (c % 8);
    const float d = f16_to_f32(static_cast<uint16_t>(load_u16(b + kD)));
    const float dmin = f16_to_f32(static_cast<uint16_t>(load_u16(b + kDmin)));
    const uint32_t w0 = load_u32_a2(b + kScales), w1 = load_u32_a2(b + kScales + 4),
                   w2 = load_u32_a2(b + kScales + 8);
    uint32_t sc0, mn0, sc1, mn1;
    k_scale_min(w0, w1, w2, 2 * p, &sc0, &mn0);
    k_scale_min(w0, w1, w2, 2 * p + 1, &sc1, &mn1);
    const float d0 = mul_rn(d, uint_minus(sc0, 0.0f)), m0 = mul_rn(dmin, uint_minus(mn0, 0.0f));
    const float d1 = mul_rn(d, uint_minus(sc1, 0.0f)), m1 = mul_rn(dmin, uint_minus(mn1, 0.0f));
    const uint32_t q = load_u32_a2(b + kQs + 32 * p + l0);
    uint32_t h = 0;
    if constexpr (kHighBit) h = load_u32_a2(b + kQh + l0);
    for (int k = 0; k < 4; ++k) {
      uint32_t q_lo = byte_of(q, k) & 0xF, q_hi = byte_of(q, k) >> 4;
      if constexpr (kHighBit) {
        q_lo |= ((byte_of(h, k) >> (2 * p)) & 1u) << 4;
        q_hi |= ((byte_of(h, k) >> (2 * p + 1)) & 1u) << 4;
      }
      v[k] = mul_rn(d0, uint_minus(q_lo, 0.0f)) - m0;
      v[4 + k] = mul_rn(d1, uint_minus(q_hi, 0.0f)) - m1;
    }
  }
};
template <>
struct QuantFormat<DType::Q4_K> : QkFormat<false> {};
template <>
struct QuantFormat<DType::Q5_K> : QkFormat<true> {};

// Q6_K: 16 sub-blocks of 16, x = (d * scales[e / 16]) * (q - 32), q = 4 bits of ql and
// 2 of qh. In each half of 128 elements, element l (0..31) of quarter s shares qh[l]
// (bits 2s, 2s+1); quarters 0/2 take the low/high nibbles of ql[l], 1/3 those of ql[l + 32].
// Chunk c: half h = c / 16, quarters s and s + 2 with s = (c / 8) % 2, l = l0..l0+3.
//   [ql 128][qh 64][scales 16 x int8][d f16]
template <>
struct QuantFormat<DType::Q6_K> {
  static constexpr int kBlockElems = 256, kBlockBytes = 210, kChunks = 32;
  static constexpr int kQl = 0, kQh = 128, kScales = 192, kD = 208;
  SLUICE_HD static int offset(int c, int g) { return 128 * (c / 16) + 32 * ((c / 8) % 2) + 64 * g + 4 * (c % 8); }
  SLUICE_HD static void decode(const uint8_t* b, int c, float* v) {
    const int h = c / 16, s = (c / 8) % 2, l0 = 4 * (c % 8);
    const float d = f16_to_f32(static_cast<uint16_t>(load_u16(b + kD)));
    // The scales of elements 128h + 32s + l0 (and + 64): both groups lie within one 16.
    const int first = (128 * h + 32 * s + l0) / 16;
    const float ds_lo = mul_rn(d, uint_minus(load_u8(b + kScales + first) ^ 0x80u, 128.0f));
    const float ds_hi = mul_rn(d, uint_minus(load_u8(b + kScales + first + 4) ^ 0x80u, 128.0f));
    const uint32_t ql = load_u32_a2(b + kQl + 64 * h + 32 * s + l0);
    const uint32_t qh = load_u32_a2(b + kQh + 32 * h + l0);
    for (int k = 0; k < 4; ++k) {
      const uint32_t q_lo = (byte_of(ql, k) & 0xF) | (((byte_of(qh, k) >> (2 * s)) & 3u) << 4);
      const uint32_t q_hi = (byte_of(ql, k) >> 4) | (((byte_of(qh, k) >> (4 + 2 * s)) & 3u) << 4);
      v[k] = mul_rn(ds_lo, uint_minus(q_lo, 32.0f));
      v[4 + k] = mul_rn(ds_hi, uint_minus(q_hi, 32.0f));
    }
  }
};

// --- rows ------------------------------------------------------------------------------

// Chunk `chunk` of a row of blocks (chunks numbered block by block): its 8 values,
// and the row elements its two groups of 4 start at.
template <class F>
SLUICE_HD void decode_row_chunk(const uint8_t* row, int64_t chunk, float* v, int64_t* e0, int64_t* e1) {
  const int64_t block = chunk / F::kChunks;
  const int c = static_cast<int>(chunk % F::kChunks);
  F::decode(row + block * F::kBlockBytes, c, v);
  *e0 = block * F::kBlockElems + F::offset(c, 0);
  *e1 = block * F::kBlockElems + F::offset(c, 1);
}

// A whole row of n elements (a whole number of blocks) to F32, chunk by chunk.
template <class F>
SLUICE_HD void decode_row(const uint8_t* row, float* out, int64_t n) {
  const int64_t num_chunks = n / F::kBlockElems * F::kChunks;
  for (int64_t i = 0; i < num_chunks; ++i) {
    float v[8];
    int64_t e0, e1;
    decode_row_chunk<F>(row, i, v, &e0, &e1);
    for (int k = 0; k < 4; ++k) {
      out[e0 + k] = v[k];
      out[e1 + k] = v[4 + k];
    }
  }
}

// Calls fn(QuantFormat<D>{}) for a block-quantized dtype these kernels read; returns
// false (without calling) for any other dtype.
template <class Fn>
bool visit_quant_format(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Q8_0: fn(QuantFormat<DType::Q8_0>{}); return true;
    case DType::Q4_0: fn(QuantFormat<DType::Q4_0>{}); return true;
    case DType::Q4_1: fn(QuantFormat<DType::Q4_1>{}); return true;
    case DType::Q5_0: fn(QuantFormat<DType::Q5_0>{}); return true;
    case DType::Q5_1: fn(QuantFormat<DType::Q5_1>{}); return true;
    case DType::Q4_K: fn(QuantFormat<DType::Q4_K>{}); return true;
    case DType::Q5_K: fn(QuantFormat<DType::Q5_K>{}); return true;
    case DType::Q6_K: fn(QuantFormat<DType::Q6_K>{}); return true;
    default: return false;
  }
}

}  // namespace sluice::backends::cuda
