#pragma once
// Hands fuzz inputs to loaders that take a path: an in-memory file (memfd) rewritten
// for each input keeps the runs off the disk, and a scratch folder on /dev/shm for
// loaders that read a model folder.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace sluice::fuzz {

// Writes `bytes` to `fd` from offset 0 and cuts the file there.
inline void rewrite(int fd, std::string_view bytes) {
  if (::ftruncate(fd, 0) != 0) __builtin_trap();
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
}

// A path whose file holds exactly the latest `bytes`; one memfd per process.
inline const std::string& memory_file(std::string_view bytes) {
  static const int fd = ::memfd_create("fuzz-input", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0) __builtin_trap();
  rewrite(fd, bytes);
  return path;
}

// A folder of this process's own, created once, removed by nobody: /dev/shm is
// cleared at boot and each run reuses the same few files.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern = "/dev/shm/sluice-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) __builtin_trap();
    return std::filesystem::path(pattern);
  }();
  return dir;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace sluice::fuzz
