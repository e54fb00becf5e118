#pragma once
// CpuBackend: the Backend on host memory. Owns a ThreadPool of compute threads;
// ops run synchronously on the calling thread plus the pool, so synchronize() has
// nothing to wait for. Like every Backend, one thread (the model's engine thread)
// uses it at a time. Weights are wrapped in place (no copy of the mmap'd file);
// quantized matrices are also repacked once for the integer kernels of the path
// chosen at start (cpu_features.h).
#include <memory>

#include "backends/backend.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/quant/quant_matmul.h"
#include "backends/cpu/thread_pool.h"

namespace sluice::backends::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int num_threads, KernelPath path);

  std::string name() const override { return "cpu"; }
  DeviceKind device() const override { return DeviceKind::cpu; }
  MemoryInfo memory_info() const override;
  int num_threads() const { return pool_.num_threads(); }

  std::unique_ptr<Buffer> allocate(size_t bytes) override;
  std::unique_ptr<Buffer> wrap_weights(std::span<const std::byte> bytes) override;
  std::unique_ptr<Buffer> wrap_matrix(std::span<const std::byte> bytes, DType dtype, int64_t rows,
                                      int64_t cols) override;
  uint64_t made_weight_bytes() const override { return made_weight_bytes_; }
  std::string kernel_path() const override;
  int host_threads() const override { return pool_.num_threads(); }
  void host_parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) override {
    pool_.parallel_for(n, fn);
  }
  void upload(const Tensor& dst, std::span<const std::byte> src) override;
  void download(const Tensor& src, std::span<std::byte> dst) override;
  void fill_zero(const Tensor& dst) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void synchronize() override {}

  bool supports_matmul(DType weight_dtype) const override;

  void embed(const Tensor& table, const Tensor& ids, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor& y) override;
  void matmul_shared_input(const Tensor& x, std::span<const Tensor> ws, std::span<const Tensor> ys) override;
  void gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, bool gelu, const Tensor& scratch,
                 const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                  const Tensor& out) override;
  void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) override;
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void scale(const Tensor& x, float s, const Tensor& out) override;
  void mul(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void transpose(const Tensor& x, const Tensor& out) override;
  void softmax(const Tensor& x, const Tensor& out) override;
  void activate(const Tensor& x, Activation act, const Tensor& out) override;
  void clamp(const Tensor& x, float lo, float hi, const Tensor& out) override;
  void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) override;
  void snake(const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) override;
  void conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, int dilation, const Tensor& out) override;
  void depthwise_conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) override;
  void conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias, int stride,
                        const Tensor& out) override;
  void write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) override;
  void attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                 const AttentionParams& params, const Tensor& out) override;

 private:
  // w's repacked form: its buffer's, or one made now into `temp` (a weight that
  // was not loaded through wrap_matrix); nullptr for the float dtypes.
  const PackedMatrix* packed(const Tensor& w, std::unique_ptr<PackedMatrix>& temp);

  ThreadPool pool_;
  KernelPath path_;
  ConvScratch conv_scratch_;
  QuantMatmul quant_matmul_;
  uint64_t made_weight_bytes_ = 0;
};

// /proc/meminfo's MemTotal and MemAvailable; zeros where it cannot be read.
MemoryInfo read_meminfo(const char* path = "/proc/meminfo");

}  // namespace sluice::backends::cpu
