// libFuzzer target for the GGUF reader: any byte string must either open or throw
// LoadError; never crash, hang, read outside the mapping or allocate without bound.
// Build and run: see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/loader/gguf_file.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

// Reads everything open() vouched for, so a bounds bug shows up as a crash here.
uint64_t touch(const sluice::loader::GgufFile& file) {
  uint64_t sum = 0;
  for (const sluice::loader::GgufKeyValue& entry : file.metadata()) {
    sum += entry.value.to_display_string(3).size();
    if (const auto ints = entry.value.to_int_vector()) sum += ints->size();
    if (const auto floats = entry.value.to_float_vector()) sum += floats->size();
    for (const std::string_view text : entry.value.strings()) sum += text.size();
  }
  for (const sluice::loader::GgufTensorInfo& tensor : file.tensors()) {
    const auto bytes = file.tensor_data(tensor);
    if (!bytes.empty()) sum += static_cast<uint8_t>(bytes.front()) + static_cast<uint8_t>(bytes.back());
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = sluice::fuzz::memory_file(sluice::fuzz::as_text(data, size));
  try {
    const sluice::loader::GgufFile file = sluice::loader::GgufFile::open(path);
    volatile uint64_t sink = touch(file);
    (void)sink;
  } catch (const sluice::loader::LoadError&) {
    // Rejecting hostile input is the expected outcome.
  }
  return 0;
}
