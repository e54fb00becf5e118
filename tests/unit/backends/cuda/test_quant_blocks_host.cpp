// The CUDA kernels' block decode (backends/cuda/quant_blocks.cuh) compiled for the
// host, against the CPU dequantizers: every element of every format, bit for bit, on
// the real-model fixtures (tests/fixtures/quant_blocks.*) and on random blocks. The
// kernels (embed, dequantize to F16, the GEMVs) decode through exactly these
// functions, so this is where their decode math is checked on a machine without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/half.h"
#include "backends/cpu/quant_blocks.h"

// The CPU dequantizers are built without FP contraction (backends/CMakeLists.txt);
// the decode below must round `d * q - m` as two operations too, whatever -march the
// tests are built with (the device gets the same from mul_rn()).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "backends/cuda/quant_blocks.cuh"
#include "tests/unit/fixtures_dir.h"

namespace sluice::backends::cuda::unit_backends_cuda_test_quant_blocks_host {
namespace {

constexpr DType kFormats[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                              DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Bit-identical, except that any NaN equals any NaN (the compiler may swap the
// operands of a product, which changes only which NaN payload comes out).
bool same_value(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

// Decodes `num_blocks` blocks at `src` as one row through the CUDA header and through
// the CPU, and as block-by-block rows; returns the number of differing elements and
// reports the first.
int compare_with_cpu(DType dtype, const uint8_t* src, int64_t num_blocks) {
  const int64_t n = num_blocks * dtype_traits(dtype).block_size;
  std::vector<float> expect(static_cast<size_t>(n));
  cpu::dequantize_row(dtype, src, expect.data(), n);
  std::vector<float> got(static_cast<size_t>(n), std::nanf("0x7abcd"));  // an element never written stays NaN
  const bool known = visit_quant_format(dtype, [&](auto format) {
    decode_row<decltype(format)>(src, got.data(), n);
  });
  REQUIRE(known);
  int mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (same_value(got[i], expect[i])) continue;
    if (mismatches++ == 0) {
      INFO(dtype_name(dtype) << " element " << i << " (block " << i / dtype_traits(dtype).block_size
                             << "): cuda " << got[i] << " (0x" << std::hex << bits(got[i]) << "), cpu "
                             << expect[i] << " (0x" << bits(expect[i]) << ")");
      CHECK(false);
    }
  }
  return mismatches;
}

template <class F>
void check_chunk_map() {
  // Every element of a block belongs to exactly one group of exactly one chunk, and
  // groups start at multiples of 4 (the kernels load x at e0, e1 as float4).
  std::array<int, 256> seen{};
  bool aligned = true;
  for (int c = 0; c < F::kChunks; ++c)
    for (int g = 0; g < 2; ++g) {
      const int first = F::offset(c, g);
      aligned = aligned && first % 4 == 0 && first >= 0 && first + 4 <= F::kBlockElems;
      for (int k = 0; k < 4 && first >= 0 && first + k < 256; ++k) ++seen[static_cast<size_t>(first + k)];
    }
  CHECK(aligned);
  int once = 0;
  for (int i = 0; i < F::kBlockElems; ++i) once += seen[static_cast<size_t>(i)] == 1;
  CHECK(once == F::kBlockElems);
  CHECK(F::kChunks * 8 == F::kBlockElems);
}

}  // namespace

TEST_CASE("cuda quant blocks: sizes and field offsets are the CPU's, chunks cover each block once") {
  for (const DType dtype : kFormats) {
    CAPTURE(dtype_name(dtype));
    visit_quant_format(dtype, [&](auto format) {
      using F = decltype(format);
      CHECK(F::kBlockElems == static_cast<int>(dtype_traits(dtype).block_size));
      CHECK(F::kBlockBytes == static_cast<int>(dtype_traits(dtype).block_bytes));
      CHECK(F::kBlockBytes % 2 == 0);  // blocks stay 2-byte aligned in a row: the u16 loads rely on it
      check_chunk_map<F>();
    });
  }
  using cpu::BlockQ4_0, cpu::BlockQ4_1, cpu::BlockQ5_0, cpu::BlockQ5_1, cpu::BlockQ8_0;
  using cpu::BlockQ4_K, cpu::BlockQ5_K, cpu::BlockQ6_K;
  using Q8 = QuantFormat<DType::Q8_0>;
  CHECK(Q8::kD == offsetof(BlockQ8_0, d));
  CHECK(Q8::kQs == offsetof(BlockQ8_0, qs));
  using Q40 = QuantFormat<DType::Q4_0>;
  CHECK(Q40::kD == offsetof(BlockQ4_0, d));
  CHECK(Q40::kQs == offsetof(BlockQ4_0, qs));
  using Q41 = QuantFormat<DType::Q4_1>;
  CHECK(Q41::kD == offsetof(BlockQ4_1, d));
  CHECK(Q41::kM == offsetof(BlockQ4_1, m));
  CHECK(Q41::kQs == offsetof(BlockQ4_1, qs));
  using Q50 = QuantFormat<DType::Q5_0>;
  CHECK(Q50::kD == offsetof(BlockQ5_0, d));
  CHECK(Q50::kQh == offsetof(BlockQ5_0, qh));
  CHECK(Q50::kQs == offsetof(BlockQ5_0, qs));
  using Q51 = QuantFormat<DType::Q5_1>;
  CHECK(Q51::kD == offsetof(BlockQ5_1, d));
  CHECK(Q51::kM == offsetof(BlockQ5_1, m));
  CHECK(Q51::kQh == offsetof(BlockQ5_1, qh));
  CHECK(Q51::kQs == offsetof(BlockQ5_1, qs));
  using Q4K = QuantFormat<DType::Q4_K>;
  CHECK(Q4K::kD == offsetof(BlockQ4_K, d));
  CHECK(Q4K::kDmin == offsetof(BlockQ4_K, dmin));
  CHECK(Q4K::kScales == offsetof(BlockQ4_K, scales));
  CHECK(Q4K::kQs == offsetof(BlockQ4_K, qs));
  using Q5K = QuantFormat<DType::Q5_K>;
  CHECK(Q5K::kD == offsetof(BlockQ5_K, d));
  CHECK(Q5K::kDmin == offsetof(BlockQ5_K, dmin));
  CHECK(Q5K::kScales == offsetof(BlockQ5_K, scales));
  CHECK(Q5K::kQh == offsetof(BlockQ5_K, qh));
  CHECK(Q5K::kQs == offsetof(BlockQ5_K, qs));
  using Q6K = QuantFormat<DType::Q6_K>;
  CHECK(Q6K::kQl == offsetof(BlockQ6_K, ql));
  CHECK(Q6K::kQh == offsetof(BlockQ6_K, qh));
  CHECK(Q6K::kScales == offsetof(BlockQ6_K, scales));
  CHECK(Q6K::kD == offsetof(BlockQ6_K, d));
  // Nothing else is a quant format here.
  CHECK_FALSE(visit_quant_format(DType::F16, [](auto) {}));
  CHECK_FALSE(visit_quant_format(DType::Q2_K, [](auto) {}));
}

TEST_CASE("cuda quant blocks: scalar helpers are exact") {
  SUBCASE("uint_minus is float(q) - offset for every value the formats produce") {
    int wrong = 0;
    for (uint32_t q = 0; q < 65536; ++q)
      for (const float offset : {0.0f, 8.0f, 16.0f, 32.0f, 128.0f})
        wrong += uint_minus(q, offset) != static_cast<float>(static_cast<int>(q)) - offset;
    CHECK(wrong == 0);
    CHECK(uint_minus((1u << 22) - 1, 0.0f) == 4194303.0f);
  }
  SUBCASE("F16 and BF16 widen exactly as the CPU's conversions, every bit pattern") {
    int f16_wrong = 0, bf16_wrong = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      const auto h = static_cast<uint16_t>(i);
      f16_wrong += bits(f16_to_f32(h)) != bits(cpu::fp16_to_fp32(h));
      bf16_wrong += bits(bf16_to_f32(h)) != bits(cpu::bf16_to_fp32(h));
    }
    CHECK(f16_wrong == 0);
    CHECK(bf16_wrong == 0);
  }
  SUBCASE("k_scale_min from three words matches the CPU's byte version") {
    std::mt19937 rng(7);
    int wrong = 0;
    for (int trial = 0; trial < 4096; ++trial) {
      uint8_t scales[12];
      for (uint8_t& s : scales) s = static_cast<uint8_t>(rng());
      uint32_t w[3];
      std::memcpy(w, scales, sizeof w);
      for (int j = 0; j < 8; ++j) {
        uint8_t sc_cpu, mn_cpu;
        cpu::k_scale_min(scales, j, &sc_cpu, &mn_cpu);
        uint32_t sc, mn;
        k_scale_min(w[0], w[1], w[2], j, &sc, &mn);
        wrong += sc != sc_cpu || mn != mn_cpu;
      }
    }
    CHECK(wrong == 0);
  }
  SUBCASE("loads are little-endian and need only 2-byte alignment") {
    alignas(4) const uint8_t bytes[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    CHECK(load_u16(bytes + 2) == 0x0403u);
    CHECK(load_u32_a2(bytes + 2) == 0x06050403u);
    CHECK(load_u8(bytes + 7) == 0x08u);
    CHECK(byte_of(0x06050403u, 3) == 0x06u);
  }
}

TEST_CASE("cuda quant blocks: real blocks decode bit for bit as the CPU and gguf-py") {
  const std::string dir = SLUICE_FIXTURES_DIR;
  const std::vector<char> blocks = read_file(dir + "/quant_blocks.bin");
  const std::vector<char> ref = read_file(dir + "/quant_blocks_ref.bin");
  const std::vector<char> index_text = read_file(dir + "/quant_blocks.json");
  const auto index = nlohmann::json::parse(index_text.begin(), index_text.end());

  int num_types = 0;
  for (const auto& entry : index.at("types")) {
    const auto dtype = static_cast<DType>(entry.at("ggml_type").get<uint32_t>());
    CAPTURE(dtype_name(dtype));
    const auto& traits = dtype_traits(dtype);
    const auto num_blocks = entry.at("num_blocks").get<size_t>();
    const auto block_offset = entry.at("block_offset").get<size_t>();
    const auto ref_offset = entry.at("ref_offset").get<size_t>();
    REQUIRE(block_offset + num_blocks * traits.block_bytes <= blocks.size());
    REQUIRE(ref_offset + num_blocks * traits.block_size * sizeof(float) <= ref.size());
    const auto* src = reinterpret_cast<const uint8_t*>(blocks.data() + block_offset);

    // Block by block against gguf-py's values.
    std::vector<float> got(traits.block_size), expect(traits.block_size);
    int mismatched_blocks = 0;
    visit_quant_format(dtype, [&](auto format) {
      using F = decltype(format);
      for (size_t b = 0; b < num_blocks; ++b) {
        decode_row<F>(src + b * traits.block_bytes, got.data(), traits.block_size);
        std::memcpy(expect.data(), ref.data() + ref_offset + b * traits.block_size * sizeof(float),
                    traits.block_size * sizeof(float));
        mismatched_blocks += std::memcmp(got.data(), expect.data(), got.size() * sizeof(float)) != 0;
      }
    });
    CHECK(mismatched_blocks == 0);
    // All of them as one row (the kernels' chunk numbering across blocks), and against the CPU.
    CHECK(compare_with_cpu(dtype, src, static_cast<int64_t>(num_blocks)) == 0);
    ++num_types;
  }
  CHECK(num_types == 8);
}

TEST_CASE("cuda quant blocks: random blocks decode bit for bit as the CPU") {
  // Per format, 1024 blocks (as one row) of each kind:
  //   any:    random bytes, so subnormal, infinite and NaN scales too
  //   finite: random bytes with every F16 field (d, m, dmin) a value in [-0.05, 0.05]
  //   zeros, ones: all quant bits clear / set, F16 fields 0.125 (the ends of every q range)
  enum class Kind { any, finite, zeros, ones };
  constexpr int64_t kBlocks = 1024;
  std::mt19937 rng(20240611);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  int runs = 0;
  for (const DType dtype : kFormats) {
    const auto& traits = dtype_traits(dtype);
    std::vector<int> f16_fields;  // byte offsets of the block's F16 fields
    visit_quant_format(dtype, [&](auto format) {
      using F = decltype(format);
      f16_fields = {F::kD};
      if constexpr (requires { F::kM; }) {
        if (F::kM >= 0) f16_fields.push_back(F::kM);
      }
      if constexpr (requires { F::kDmin; }) f16_fields.push_back(F::kDmin);
    });
    std::vector<uint8_t> bytes(static_cast<size_t>(kBlocks) * traits.block_bytes);
    const auto set_f16 = [&](int64_t block, int field, float value) {
      const uint16_t h = cpu::fp32_to_fp16(value);
      std::memcpy(&bytes[static_cast<size_t>(block * traits.block_bytes + field)], &h, sizeof h);
    };
    for (const Kind kind : {Kind::any, Kind::finite, Kind::zeros, Kind::ones}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(static_cast<int>(kind));
      if (kind == Kind::any || kind == Kind::finite) {
        for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      } else {
        std::fill(bytes.begin(), bytes.end(), kind == Kind::zeros ? uint8_t{0x00} : uint8_t{0xFF});
      }
      for (int64_t b = 0; b < kBlocks; ++b) {
        if (kind == Kind::finite) {
          for (const int field : f16_fields) set_f16(b, field, scale(rng));
        } else if (kind != Kind::any) {
          for (const int field : f16_fields) set_f16(b, field, 0.125f);
        }
      }
      CHECK(compare_with_cpu(dtype, bytes.data(), kBlocks) == 0);
      ++runs;
    }
  }
  CHECK(runs == 4 * 8);
}

}  // namespace sluice::backends::cuda
