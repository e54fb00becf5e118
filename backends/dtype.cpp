#include "backends/dtype.h"

#include <array>
#include <limits>

namespace sluice::backends {
namespace {

// Indexed by GGML type id; gaps (removed ids) have block_size 0. Sizes checked
// against GGML_QUANT_SIZES of the gguf Python package (0.19).
constexpr uint32_t kNumTypeIds = 42;

constexpr std::array<DTypeTraits, kNumTypeIds> make_table() {
  std::array<DTypeTraits, kNumTypeIds> table{};
  for (auto& traits : table) traits = {"?", 0, 0};
  auto set = [&table](DType type, std::string_view name, uint32_t block_size,
                      uint32_t block_bytes) {
    table[static_cast<uint32_t>(type)] = {name, block_size, block_bytes};
  };
  set(DType::F32, "F32", 1, 4);
  set(DType::F16, "F16", 1, 2);
  set(DType::Q4_0, "Q4_0", 32, 18);
  set(DType::Q4_1, "Q4_1", 32, 20);
  set(DType::Q5_0, "Q5_0", 32, 22);
  set(DType::Q5_1, "Q5_1", 32, 24);
  set(DType::Q8_0, "Q8_0", 32, 34);
  set(DType::Q8_1, "Q8_1", 32, 40);
  set(DType::Q2_K, "Q2_K", 256, 84);
  set(DType::Q3_K, "Q3_K", 256, 110);
  set(DType::Q4_K, "Q4_K", 256, 144);
  set(DType::Q5_K, "Q5_K", 256, 176);
  set(DType::Q6_K, "Q6_K", 256, 210);
  set(DType::Q8_K, "Q8_K", 256, 292);
  set(DType::IQ2_XXS, "IQ2_XXS", 256, 66);
  set(DType::IQ2_XS, "IQ2_XS", 256, 74);
  set(DType::IQ3_XXS, "IQ3_XXS", 256, 98);
  set(DType::IQ1_S, "IQ1_S", 256, 50);
  set(DType::IQ4_NL, "IQ4_NL", 32, 18);
  set(DType::IQ3_S, "IQ3_S", 256, 110);
  set(DType::IQ2_S, "IQ2_S", 256, 82);
  set(DType::IQ4_XS, "IQ4_XS", 256, 136);
  set(DType::I8, "I8", 1, 1);
  set(DType::I16, "I16", 1, 2);
  set(DType::I32, "I32", 1, 4);
  set(DType::I64, "I64", 1, 8);
  set(DType::F64, "F64", 1, 8);
  set(DType::IQ1_M, "IQ1_M", 256, 56);
  set(DType::BF16, "BF16", 1, 2);
  set(DType::TQ1_0, "TQ1_0", 256, 54);
  set(DType::TQ2_0, "TQ2_0", 256, 66);
  set(DType::MXFP4, "MXFP4", 32, 17);
  set(DType::NVFP4, "NVFP4", 64, 36);
  set(DType::Q1_0, "Q1_0", 128, 18);
  return table;
}

constexpr std::array<DTypeTraits, kNumTypeIds> kTable = make_table();
constexpr DTypeTraits kInvalid{"?", 0, 0};

}  // namespace

const DTypeTraits* find_dtype(uint32_t ggml_type) {
  if (ggml_type >= kNumTypeIds || kTable[ggml_type].block_size == 0) return nullptr;
  return &kTable[ggml_type];
}

const DTypeTraits& dtype_traits(DType dtype) {
  const DTypeTraits* traits = find_dtype(static_cast<uint32_t>(dtype));
  return traits != nullptr ? *traits : kInvalid;
}

std::string_view dtype_name(DType dtype) { return dtype_traits(dtype).name; }

std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t num_elements) {
  const DTypeTraits& traits = dtype_traits(dtype);
  if (traits.block_size == 0 || num_elements % traits.block_size != 0) return std::nullopt;
  const uint64_t num_blocks = num_elements / traits.block_size;
  if (num_blocks > std::numeric_limits<uint64_t>::max() / traits.block_bytes) {
    return std::nullopt;
  }
  return num_blocks * traits.block_bytes;
}

}  // namespace sluice::backends
