#include "backends/cpu/quant/packed_matrix.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "backends/check.h"
#include "backends/cpu/half.h"
#include "backends/cpu/quant_blocks.h"
#include "backends/cpu/thread_pool.h"

namespace sluice::backends::cpu {
namespace {

constexpr PackedFormat kQ4_0{4, false, false, -8.0f};
constexpr PackedFormat kQ4_1{4, true, false, 0.0f};
constexpr PackedFormat kQ5_0{5, false, false, -16.0f};
constexpr PackedFormat kQ5_1{5, true, false, 0.0f};
constexpr PackedFormat kQ8_0{8, false, false, -128.0f};
constexpr PackedFormat kQ4_K{4, true, false, 0.0f};
constexpr PackedFormat kQ5_K{5, true, false, 0.0f};
constexpr PackedFormat kQ6_K{6, false, true, -32.0f};

// One source block of 32 values in packed terms: w = a * u + b.
struct BlockValues {
  uint8_t u[kPackBlock];
  uint16_t a[2];  // F16; [1] only for split16
  uint16_t b;     // F16; affine formats only
};

uint16_t half(float v) { return fp32_to_fp16(v); }

template <class Block>
const Block* blocks_of(const std::byte* row) {
  return reinterpret_cast<const Block*>(row);
}

void nibbles(const uint8_t* qs, uint8_t* u) {  // *_0/*_1 order: low nibbles, then high
  for (int j = 0; j < 16; ++j) {
    u[j] = qs[j] & 0x0F;
    u[j + 16] = qs[j] >> 4;
  }
}

void fifth_bits(const uint8_t* qh_bytes, uint8_t* u) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < kPackBlock; ++j) u[j] |= static_cast<uint8_t>(((qh >> j) & 1u) << 4);
}

// The row's 32-value blocks, in order.
void unpack_row(DType dtype, const std::byte* row, int64_t num_blocks, BlockValues* out) {
  switch (dtype) {
    case DType::Q4_0:
      for (int64_t k = 0; k < num_blocks; ++k) {
        const auto& b = blocks_of<BlockQ4_0>(row)[k];
        nibbles(b.qs, out[k].u);
        out[k].a[0] = b.d;
      }
      return;
    case DType::Q4_1:
      for (int64_t k = 0; k < num_blocks; ++k) {
        const auto& b = blocks_of<BlockQ4_1>(row)[k];
        nibbles(b.qs, out[k].u);
        out[k].a[0] = b.d;
        out[k].b = b.m;
      }
      return;
    case DType::Q5_0:
      for (int64_t k = 0; k < num_blocks; ++k) {
        const auto& b = blocks_of<BlockQ5_0>(row)[k];
        nibbles(b.qs, out[k].u);
        fifth_bits(b.qh, out[k].u);
        out[k].a[0] = b.d;
      }
      return;
    case DType::Q5_1:
      for (int64_t k = 0; k < num_blocks; ++k) {
        const auto& b = blocks_of<BlockQ5_1>(row)[k];
        nibbles(b.qs, out[k].u);
        fifth_bits(b.qh, out[k].u);
        out[k].a[0] = b.d;
        out[k].b = b.m;
      }
      return;
    case DType::Q8_0:
      for (int64_t k = 0; k < num_blocks; ++k) {
        const auto& b = blocks_of<BlockQ8_0>(row)[k];
        for (int j = 0; j < kPackBlock; ++j) out[k].u[j] = static_cast<uint8_t>(b.qs[j] + 128);
        out[k].a[0] = b.d;
      }
      return;
    case DType::Q4_K:
    case DType::Q5_K:
      for (int64_t s = 0; s < num_blocks / 8; ++s) {
        const bool five = dtype == DType::Q5_K;
        const uint8_t *scales, *qs, *qh = nullptr;
        uint16_t d16, dmin16;
        if (five) {
          const auto& b = blocks_of<BlockQ5_K>(row)[s];
          scales = b.scales, qs = b.qs, qh = b.qh, d16 = b.d, dmin16 = b.dmin;
        } else {
          const auto& b = blocks_of<BlockQ4_K>(row)[s];
          scales = b.scales, qs = b.qs, d16 = b.d, dmin16 = b.dmin;
        }
        const float d = fp16_to_fp32(d16), dmin = fp16_to_fp32(dmin16);
        for (int j = 0; j < 8; ++j) {  // sub-block j: nibbles of qs[32 (j/2) ..], low for even j
          BlockValues& v = out[8 * s + j];
          const uint8_t* q = qs + 32 * (j / 2);
          for (int l = 0; l < 32; ++l) {
            v.u[l] = j % 2 == 0 ? (q[l] & 0x0F) : (q[l] >> 4);
            if (qh) v.u[l] |= static_cast<uint8_t>(((qh[l] >> j) & 1) << 4);
          }
          uint8_t sc, mn;
          k_scale_min(scales, j, &sc, &mn);
          v.a[0] = half(d * static_cast<float>(sc));
          v.b = half(-(dmin * static_cast<float>(mn)));
        }
      }
      return;
    case DType::Q6_K:
      for (int64_t s = 0; s < num_blocks / 8; ++s) {
        const auto& b = blocks_of<BlockQ6_K>(row)[s];
        const float d = fp16_to_fp32(b.d);
        uint8_t q[kQkK];  // as dequantize_q6_k unpacks them, without the -32
        for (int h = 0; h < 2; ++h) {
          const uint8_t* ql = b.ql + 64 * h;
          const uint8_t* qh = b.qh + 32 * h;
          uint8_t* qq = q + 128 * h;
          for (int l = 0; l < 32; ++l) {
            qq[l] = static_cast<uint8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
            qq[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
            qq[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            qq[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
          }
        }
        for (int j = 0; j < 8; ++j) {
          BlockValues& v = out[8 * s + j];
          std::memcpy(v.u, q + 32 * j, kPackBlock);
          v.a[0] = half(d * static_cast<float>(b.scales[2 * j]));
          v.a[1] = half(d * static_cast<float>(b.scales[2 * j + 1]));
        }
      }
      return;
    default:
      SLUICE_CHECK(false, "unpack_row: dtype has no packed format");
  }
}

void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Writes row r (0..15) of one packed block.
void pack_block_row(const PackedFormat& f, const BlockValues& v, int r, uint8_t* block) {
  for (int e = 0; e < kPackBlock; ++e) {
    const int c = e / 4, lane = 4 * r + e % 4;
    const uint8_t u = v.u[e];
    if (f.bits == 8) {
      block[64 * c + lane] = u;
      continue;
    }
    block[64 * (c & 3) + lane] |= static_cast<uint8_t>(c < 4 ? (u & 0x0F) : (u & 0x0F) << 4);
    for (int p = 0; p < f.num_planes(); ++p) {
      if (!((u >> (4 + p)) & 1)) continue;
      uint8_t* mask = block + f.planes_offset() + 64 * p + 8 * c;
      uint64_t m;
      std::memcpy(&m, mask, 8);
      m |= uint64_t{1} << lane;
      std::memcpy(mask, &m, 8);
    }
  }
  for (int h = 0; h < f.num_scale_rows(); ++h) put_u16(block + f.scales_offset() + 32 * h + 2 * r, v.a[h]);
  if (f.affine) put_u16(block + f.b_offset() + 2 * r, v.b);
}

}  // namespace

const PackedFormat* packed_format(DType dtype) {
  switch (dtype) {
    case DType::Q4_0: return &kQ4_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q8_0: return &kQ8_0;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    default: return nullptr;
  }
}

PackedValues PackedMatrix::values(int64_t row, int64_t block) const {
  const PackedFormat& f = *format_;
  const uint8_t* data = group(row / kPackRows) + block * f.block_bytes();
  const int r = static_cast<int>(row % kPackRows);
  PackedValues v;
  for (int e = 0; e < kPackBlock; ++e) {
    const int c = e / 4, lane = 4 * r + e % 4;
    if (f.bits == 8) {
      v.u[e] = data[64 * c + lane];
      continue;
    }
    const uint8_t byte = data[64 * (c & 3) + lane];
    v.u[e] = c < 4 ? (byte & 0x0F) : (byte >> 4);
    for (int p = 0; p < f.num_planes(); ++p) {
      uint64_t m;
      std::memcpy(&m, data + f.planes_offset() + 64 * p + 8 * c, 8);
      if ((m >> lane) & 1) v.u[e] |= static_cast<uint8_t>(16 << p);
    }
  }
  for (int h = 0; h < 2; ++h) {
    uint16_t a16, b16 = 0;
    std::memcpy(&a16, data + f.scales_offset() + 32 * (f.split16 ? h : 0) + 2 * r, 2);
    if (f.affine) std::memcpy(&b16, data + f.b_offset() + 2 * r, 2);
    v.a[h] = fp16_to_fp32(a16);
    v.b[h] = f.affine ? fp16_to_fp32(b16) : v.a[h] * f.offset;
  }
  return v;
}

void PackedMatrix::FreeAligned::operator()(uint8_t* p) const { std::free(p); }

PackedMatrix::PackedMatrix(ThreadPool& pool, DType dtype, const std::byte* w, size_t row_bytes, int64_t rows,
                           int64_t cols)
    : dtype_(dtype), format_(packed_format(dtype)), rows_(rows), cols_(cols) {
  SLUICE_CHECK(format_ != nullptr, "PackedMatrix: dtype has no packed format");
  SLUICE_CHECK(cols % kPackBlock == 0 && cols % dtype_traits(dtype).block_size == 0,
               "PackedMatrix: cols must be whole blocks");
  const size_t bytes = (num_bytes() + 63) / 64 * 64;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes ? bytes : 64)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), 0, bytes);  // padding rows of the last group stay 0 (a = b = 0)
  const int64_t num_blocks = this->num_blocks();
  pool.parallel_for(num_groups(), [&](int64_t begin, int64_t end) {
    std::vector<BlockValues> values(static_cast<size_t>(num_blocks));
    for (int64_t g = begin; g < end; ++g) {
      uint8_t* group_data = data_.get() + static_cast<size_t>(g) * group_bytes();
      for (int r = 0; r < kPackRows && g * kPackRows + r < rows_; ++r) {
        unpack_row(dtype_, w + static_cast<size_t>(g * kPackRows + r) * row_bytes, num_blocks, values.data());
        for (int64_t k = 0; k < num_blocks; ++k)
          pack_block_row(*format_, values[static_cast<size_t>(k)], r, group_data + k * format_->block_bytes());
      }
    }
  });
}

}  // namespace sluice::backends::cpu
