#pragma once
// The CUDA backend. One stream per backend (ops run in order on it, as the
// interface requires), one cuBLAS handle bound to that stream with a fixed
// workspace (so cuBLAS calls can be captured into graphs), and per-step attention
// metadata in device memory (begin_step) so recorded decode steps replay with new
// sequences. The op kernels live in the .cu files; kernels.h declares their launchers.
//
// Files: cuda_backend.cpp (device, memory, copies, step metadata, graphs),
// ops.cpp (norms, element-wise, rope, KV, attention), matmul.cpp (matmul,
// gated_mlp, embed: cuBLAS and the quantized kernels), sampling.cpp (sample).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/kernels.h"

namespace sluice::backends::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;

  std::string name() const override;
  DeviceKind device() const override { return DeviceKind::cuda; }
  MemoryInfo memory_info() const override;

  std::unique_ptr<Buffer> allocate(size_t bytes) override;
  std::unique_ptr<Buffer> wrap_weights(std::span<const std::byte> bytes) override;
  void upload(const Tensor& dst, std::span<const std::byte> src) override;
  void download(const Tensor& src, std::span<std::byte> dst) override;
  void fill_zero(const Tensor& dst) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void synchronize() override;

  bool supports_matmul(DType weight_dtype) const override;
  bool supports_attention(int64_t heads, int64_t kv_heads, int64_t head_dim) const override;

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
  void mul(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void transpose(const Tensor& x, const Tensor& out) override;
  void softmax(const Tensor& x, const Tensor& out) override;
  // Signal ops (ops_signal.cpp).
  void activate(const Tensor& x, Activation act, const Tensor& out) override;
  void clamp(const Tensor& x, float lo, float hi, const Tensor& out) override;
  void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) override;
  void snake(const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) override;
  void conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, int dilation, const Tensor& out) override;
  void depthwise_conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) override;
  void conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias, int stride, const Tensor& out) override;
  void write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) override;
  void attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                 const AttentionParams& params, const Tensor& out) override;

  void add_rms_norm(const Tensor& hidden, const Tensor& branch, const Tensor& weight, float eps,
                    const Tensor& normed) override;
  void gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, bool gelu, const Tensor& scratch,
                 const Tensor& out) override;
  void rope_write_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                     const RopeParams& rope, const KvLayer& cache, const Tensor& slots) override;

  void begin_step(std::span<const SequenceSlice> sequences, int64_t num_rows) override;
  int64_t recorded_step_rows(int64_t num_tokens) const override;
  void run_recorded(int64_t key, const std::function<void()>& ops) override;
  void forget_recordings() override;

  bool supports_sampling() const override { return true; }
  void sample(const Tensor& logits, std::span<const RowSampling> rows, std::span<SampledToken> out) override;

  cudaStream_t stream() const { return stream_; }
  int device_index() const { return device_; }

 private:
  // Attention metadata of the current step, in device memory (see begin_step).
  struct StepMeta {
    std::unique_ptr<DeviceBuffer> device;  // int32 sections below
    int32_t* pinned = nullptr;             // host staging of the same layout
    int64_t row_capacity = 0;
    int64_t seq_capacity = 0;
    int64_t table_capacity = 0;            // int32 entries for all block tables
    bool valid = false;                    // begin_step has run
    std::vector<int32_t> uploaded;         // what it uploaded, encoded by encode_step()
    std::vector<int32_t> probe;            // encode_step() scratch for comparisons
    AttentionMeta view() const;
  };
  void grow_step_meta(int64_t rows, int64_t seqs, int64_t table_entries);
  static void encode_step(std::span<const SequenceSlice> sequences, int64_t num_rows, std::vector<int32_t>& out);
  bool step_meta_matches(std::span<const SequenceSlice> sequences, int64_t num_rows);

  void gemm(const Tensor& x, const Tensor& w, const Tensor& y);  // F32/F16/BF16 weights via cuBLAS

  int device_;
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t meta_copied_ = nullptr;  // the pinned staging may be rewritten once this fires
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<DeviceBuffer> cublas_workspace_;
  Scratch activation_scratch_;  // x converted to F16/BF16 for cuBLAS
  Scratch weight_scratch_;      // quantized weights dequantized to F16 for tensor-core GEMMs
  Scratch attention_scratch_;   // per-split partial results of a split attention launch
  StepMeta meta_;
  std::map<int64_t, cudaGraphExec_t> graphs_;
  bool capturing_ = false;
  bool graphs_enabled_ = true;  // SLUICE_CUDA_GRAPHS=0 turns recording off (debugging)

  // sampling.cpp
  struct PinnedFree {
    void operator()(std::byte* p) const;  // cudaFreeHost
  };
  // Host staging of one sample() call: row settings and adjust entries going in,
  // the SampleOut results coming back. Each call ends with a stream sync, so no copy
  // from or into it is pending when the next call rewrites it.
  std::unique_ptr<std::byte, PinnedFree> sample_pinned_;
  size_t sample_pinned_bytes_ = 0;
  Scratch sample_scratch_{device_};  // the same layout on the device
};

// F32 activation views as the kernels take them (ops.cpp, ops_signal.cpp).
inline const float* f32(const Tensor& t) { return device_ptr_as<const float>(t); }
inline float* f32_mut(const Tensor& t) { return device_ptr_as<float>(t); }
inline int64_t stride(const Tensor& t) { return row_stride_elems(t, sizeof(float)); }
inline Rows2D rows_of(const Tensor& t) { return {t.rows(), t.cols()}; }

}  // namespace sluice::backends::cuda
