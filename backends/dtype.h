#pragma once
// The registry of GGML tensor types as they are stored in GGUF files: the type id on
// disk, the block size (elements per quantization block) and the bytes per block.
// Backends implement kernels for a subset of these; loaders use the table to size
// tensors without knowing anything about the formats themselves.
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::backends {

// Values are the GGML type ids written in GGUF tensor infos; ids 4, 5 (Q4_2, Q4_3)
// and 31-33 (Q4_0_4_4 and friends) were removed from GGML and are not valid here.
enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
};

struct DTypeTraits {
  std::string_view name;  // as GGML spells it: "Q4_K", "BF16"
  uint32_t block_size;    // elements per block; 1 for plain number types
  uint32_t block_bytes;   // bytes one block occupies on disk and in memory
};

// nullptr for ids GGML never had or has removed; the loader turns that into an error.
const DTypeTraits* find_dtype(uint32_t ggml_type);

// Traits of a valid enumerator; DType values outside the table are a programming error
// (they can only be made by casting) and yield a "?" entry with block size 0.
const DTypeTraits& dtype_traits(DType dtype);

std::string_view dtype_name(DType dtype);

// Bytes that num_elements of dtype occupy; nullopt when num_elements is not a whole
// number of blocks or the size does not fit in 64 bits.
std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t num_elements);

}  // namespace sluice::backends
