// The dequantizers against gguf-py's reference on real blocks (tests/fixtures/
// quant_blocks.*, made by make_quant_fixtures.py). Required: bit-identical, since
// both sides perform the same F32 operations in the same order.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::backends::cpu::unit_backends_cpu_test_quant_fixtures {
namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("dequantize: real blocks match gguf-py bit for bit") {
  const std::string dir = SLUICE_FIXTURES_DIR;
  const std::vector<char> blocks = read_file(dir + "/quant_blocks.bin");
  const std::vector<char> ref = read_file(dir + "/quant_blocks_ref.bin");
  const std::vector<char> index_text = read_file(dir + "/quant_blocks.json");
  const auto index = nlohmann::json::parse(index_text.begin(), index_text.end());

  int num_types = 0;
  for (const auto& entry : index.at("types")) {
    const auto type_name = entry.at("type").get<std::string>();
    CAPTURE(type_name);
    const auto dtype = static_cast<DType>(entry.at("ggml_type").get<uint32_t>());
    REQUIRE(can_dequantize(dtype));
    const auto& traits = dtype_traits(dtype);
    REQUIRE(traits.name == type_name);
    const auto num_blocks = entry.at("num_blocks").get<size_t>();
    const auto block_offset = entry.at("block_offset").get<size_t>();
    const auto ref_offset = entry.at("ref_offset").get<size_t>();
    REQUIRE(block_offset + num_blocks * traits.block_bytes <= blocks.size());
    REQUIRE(ref_offset + num_blocks * traits.block_size * sizeof(float) <= ref.size());

    std::vector<float> got(traits.block_size), expect(traits.block_size);
    int mismatches = 0;
    for (size_t b = 0; b < num_blocks; ++b) {
      dequantize_row(dtype, blocks.data() + block_offset + b * traits.block_bytes, got.data(),
                     traits.block_size);
      std::memcpy(expect.data(), ref.data() + ref_offset + b * traits.block_size * sizeof(float),
                  traits.block_size * sizeof(float));
      if (std::memcmp(got.data(), expect.data(), got.size() * sizeof(float)) != 0) {
        ++mismatches;
        for (size_t i = 0; i < got.size(); ++i)
          if (got[i] != expect[i]) {
            INFO("block " << b << " element " << i << ": " << got[i] << " vs " << expect[i]);
            CHECK(got[i] == expect[i]);
            break;
          }
      }
    }
    CHECK(mismatches == 0);
    // A whole run of blocks as one row gives the same values as block by block.
    std::vector<float> row(num_blocks * traits.block_size);
    dequantize_row(dtype, blocks.data() + block_offset, row.data(), static_cast<int64_t>(row.size()));
    CHECK(std::memcmp(row.data(), ref.data() + ref_offset, row.size() * sizeof(float)) == 0);
    ++num_types;
  }
  CHECK(num_types == 8);
}

}  // namespace sluice::backends::cpu
