#pragma once
// Read-only memory mapping of a whole file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace sluice::loader {

// Owns a read-only mapping of a whole file and unmaps it on destruction; move-only.
// Immutable after open(), so any thread may read it. Weights are served straight from
// the page cache: nothing is copied at load time.
class MappedFile {
 public:
  // Throws LoadError when the file cannot be opened, is not a regular file, or cannot
  // be mapped. An empty file maps to an empty span.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(const std::byte* data, size_t size) : data_(data), size_(size) {}
  void unmap() noexcept;

  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sluice::loader
