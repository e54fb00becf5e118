// libFuzzer target for the GGUF reader: any byte string must either open or throw
// LoadError; never crash, hang, read outside the mapping or allocate without bound.
// Build and run: see tests/fuzz/CMakeLists.txt.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/loader/gguf_file.h"

namespace {

// GgufFile::open takes a path; an in-memory file keeps each run off the disk.
const std::string& scratch_path() {
  static const std::string path = [] {
    const int fd = ::memfd_create("fuzz.gguf", 0);
    if (fd < 0) __builtin_trap();
    return "/proc/self/fd/" + std::to_string(fd);
  }();
  return path;
}

void write_input(const uint8_t* data, size_t size) {
  const int fd = std::stoi(scratch_path().substr(sizeof("/proc/self/fd/") - 1));
  if (::ftruncate(fd, 0) != 0) __builtin_trap();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
}

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
  write_input(data, size);
  try {
    const sluice::loader::GgufFile file = sluice::loader::GgufFile::open(scratch_path());
    volatile uint64_t sink = touch(file);
    (void)sink;
  } catch (const sluice::loader::LoadError&) {
    // Rejecting hostile input is the expected outcome.
  }
  return 0;
}
