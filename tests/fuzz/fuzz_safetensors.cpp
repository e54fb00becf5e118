// libFuzzer target for the safetensors reader: any byte string must either open or
// throw LoadError; never crash, read outside the mapping or allocate without bound.
// Build and run: see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/loader/load_error.h"
#include "engine/loader/safetensors_file.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = sluice::fuzz::memory_file(sluice::fuzz::as_text(data, size));
  try {
    const auto file = sluice::loader::SafetensorsFile::open(path);
    // Read both ends of every range open() vouched for, so a bounds bug crashes here.
    uint64_t sum = 0;
    for (const auto& tensor : file.tensors()) {
      const auto bytes = file.tensor_data(tensor);
      if (!bytes.empty()) sum += static_cast<uint8_t>(bytes.front()) + static_cast<uint8_t>(bytes.back());
      if (file.find_tensor(tensor.name) != &tensor) __builtin_trap();
    }
    for (const auto& [key, value] : file.metadata()) sum += key.size() + value.size();
    volatile uint64_t sink = sum;
    (void)sink;
  } catch (const sluice::loader::LoadError&) {
    // Rejecting hostile input is the expected outcome.
  }
  return 0;
}
