#pragma once
// The GGML block layouts of the quantized weight formats the CPU backend reads,
// byte for byte as they sit in a GGUF file (little-endian, no padding). Scales are
// raw F16 bits; half.h converts them. QK_K ("super-block") formats hold 256 values.
#include <cstdint>

#include "backends/dtype.h"

namespace sluice::backends::cpu {

inline constexpr int kQk = 32;    // elements per block of the *_0 / *_1 formats
inline constexpr int kQkK = 256;  // elements per k-quant super-block
inline constexpr int kKScaleBytes = 12;  // Q4_K/Q5_K: 8 six-bit scales + 8 six-bit mins

// x = d * q, q signed 8-bit.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQk];
};

// x = d * (q - 8); byte j holds element j (low nibble) and element j + 16 (high nibble).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQk / 2];
};

// x = d * q + m, nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQk / 2];
};

// x = d * (q - 16), q 5-bit: nibbles as in Q4_0, bit j of the little-endian qh
// word is the fifth bit of element j.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQk / 2];
};

// x = d * q + m, q as in Q5_0 without the offset.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQk / 2];
};

// 8 sub-blocks of 32: x = d * sc[j] * q - dmin * mn[j], with 6-bit sc/mn packed in
// `scales`. Each 32 bytes of qs hold two sub-blocks (low nibbles, then high).
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQkK / 2];
};

// Q4_K plus a fifth bit per value: bit (2*pair + half) of qh[l] for element l of a sub-block.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQkK / 8];
  uint8_t qs[kQkK / 2];
};

// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q 6-bit = 4 low bits in ql, 2 high in qh.
struct BlockQ6_K {
  uint8_t ql[kQkK / 2];
  uint8_t qh[kQkK / 4];
  int8_t scales[kQkK / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(alignof(BlockQ8_0) == 2 && alignof(BlockQ6_K) == 2);

// Scale and min of sub-block j (0..7) of a Q4_K/Q5_K block: the first four are the
// low 6 bits of bytes 0-3 / 4-7; the last four take 4 bits from bytes 8-11 and their
// top 2 bits from the high bits of bytes 0-3 / 4-7.
inline void k_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *mn = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

}  // namespace sluice::backends::cpu
