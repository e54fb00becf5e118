#pragma once
// The CPU backend's repacked weight layout and quantized activation blocks: the
// one data format every integer kernel path (scalar, AVX2, AVX-512) reads, so
// every path computes the same integers and rounds the same floats.
//
// A weight matrix [out, in] is cut into groups of kPackRows rows; a group is
// stored block by block along `in` (32 elements a block), each block holding the
// 16 rows' values interleaved so one 64-byte vector load feeds 16 output rows:
//
//   quants  bits 4-6: 4 x 64 bytes; byte 4r+j of vector p holds element 4p+j of
//           row r in its low nibble and element 4(p+4)+j in its high nibble.
//           bits 8:   8 x 64 bytes; byte 4r+j of vector c is element 4c+j of row r.
//   planes  bits 5: one, bits 6: two bit planes, each 8 little-endian u64 masks;
//           bit 4r+j of mask c is bit 4 (plane 0) or 5 (plane 1) of element 4c+j.
//   a       F16 per row (split16: a_lo[16] for elements 0-15, a_hi[16] for 16-31)
//   b       F16 per row, affine formats only; else b = a * offset
//
// Every weight is w = a * u + b, u the unsigned integer above, so a dot with an
// activation block x = d * q (q int8) is a * d * Σ u q + b * d * Σ q, with the
// first sum exact in int32 and the second precomputed per activation block.
#include <cstdint>

#include "backends/dtype.h"

namespace sluice::backends::cpu {

inline constexpr int kPackRows = 16;   // weight rows per group
inline constexpr int kPackBlock = 32;  // elements per block

struct PackedFormat {
  int bits = 4;           // 4, 5, 6 or 8
  bool affine = false;    // b stored per row; else b = a * offset
  bool split16 = false;   // two scales per block (Q6_K's 16-element sub-blocks)
  float offset = 0.0f;    // when !affine: -8 (Q4_0), -16 (Q5_0), -32 (Q6_K), -128 (Q8_0)

  int quant_bytes() const { return bits == 8 ? 512 : 256; }
  int num_planes() const { return bits == 5 ? 1 : bits == 6 ? 2 : 0; }
  int planes_offset() const { return quant_bytes(); }
  int scales_offset() const { return quant_bytes() + 64 * num_planes(); }
  int num_scale_rows() const { return split16 ? 2 : 1; }  // F16 a vectors per block
  int b_offset() const { return scales_offset() + 32 * num_scale_rows(); }
  int block_bytes() const { return b_offset() + (affine ? 32 : 0); }
};

// PackedFormat's offsets as compile-time constants, for kernels specialized per
// format (bits, affine, split16).
template <int Bits, bool Affine, bool Split16>
struct PackedLayout {
  static constexpr int kQuantBytes = Bits == 8 ? 512 : 256;
  static constexpr int kPlanes = Bits == 5 ? 1 : Bits == 6 ? 2 : 0;
  static constexpr int kScales = kQuantBytes + 64 * kPlanes;
  static constexpr int kB = kScales + 32 * (Split16 ? 2 : 1);
  static constexpr int kBlockBytes = kB + (Affine ? 32 : 0);
};

// The packed format of a GGML weight dtype; nullptr when the dtype is not packed
// (F32, F16, BF16 take the float path).
const PackedFormat* packed_format(DType dtype);

// One 32-element block of an activation row quantized to int8: x ≈ d * q.
struct ActBlock {
  int8_t q[kPackBlock];
  float d;
  float s;     // d * Σ q
  float s_lo;  // d * Σ q[0..15]
  float s_hi;  // d * Σ q[16..31]
};
static_assert(sizeof(ActBlock) == 48);

}  // namespace sluice::backends::cpu
