#pragma once
// CpuBackend: the Backend on host memory. Owns a ThreadPool of compute threads;
// ops run synchronously on the calling thread plus the pool, so synchronize() has
// nothing to wait for. Like every Backend, one thread (the model's engine thread)
// uses it at a time. Weights are wrapped in place (no copy of the mmap'd file).
#include <memory>

#include "backends/backend.h"
#include "backends/cpu/thread_pool.h"

namespace sluice::backends::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int num_threads);

  std::string name() const override { return "cpu"; }
  DeviceKind device() const override { return DeviceKind::cpu; }
  MemoryInfo memory_info() const override;
  int num_threads() const { return pool_.num_threads(); }

  std::unique_ptr<Buffer> allocate(size_t bytes) override;
  std::unique_ptr<Buffer> wrap_weights(std::span<const std::byte> bytes) override;
  void upload(const Tensor& dst, std::span<const std::byte> src) override;
  void download(const Tensor& src, std::span<std::byte> dst) override;
  void fill_zero(const Tensor& dst) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void synchronize() override {}

  bool supports_matmul(DType weight_dtype) const override;

  void embed(const Tensor& table, const Tensor& ids, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor& y) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                  const Tensor& out) override;
  void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) override;
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void scale(const Tensor& x, float s, const Tensor& out) override;
  void softmax(const Tensor& x, const Tensor& out) override;
  void write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) override;
  void attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                 const AttentionParams& params, const Tensor& out) override;

 private:
  ThreadPool pool_;
};

// /proc/meminfo's MemTotal and MemAvailable; zeros where it cannot be read.
MemoryInfo read_meminfo(const char* path = "/proc/meminfo");

}  // namespace sluice::backends::cpu
