#include "engine/loader/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "engine/loader/load_error.h"

namespace sluice::loader {
namespace {

// Closes the descriptor on every path out of open(); the mapping outlives it.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() { ::close(fd_); }

 private:
  int fd_;
};

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

MappedFile MappedFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw LoadError(path, "cannot open: " + errno_text(errno));
  FdCloser closer(fd);

  struct stat st {};
  if (::fstat(fd, &st) != 0) throw LoadError(path, "cannot stat: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw LoadError(path, "not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return MappedFile();

  // Model files must be replaced by rename, never rewritten in place: a file truncated
  // under a live mapping turns reads of the lost pages into SIGBUS.
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) throw LoadError(path, "cannot mmap: " + errno_text(errno));
  return MappedFile(static_cast<const std::byte*>(addr), size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() noexcept {
  if (data_ != nullptr) {
    ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }
}

}  // namespace sluice::loader
