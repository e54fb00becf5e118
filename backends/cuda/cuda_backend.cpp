// Device, memory, copies, per-step attention metadata and CUDA graphs.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/check.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_backend_impl.h"
#include "backends/cuda/cuda_error.h"

namespace sluice::backends {

std::unique_ptr<Backend> make_cuda_backend(int device) { return std::make_unique<cuda::CudaBackend>(device); }

namespace cuda {
namespace {

constexpr size_t kCublasWorkspaceBytes = 32ull << 20;  // cuBLAS's own advice for Hopper
// Decode batch sizes recorded as graphs: every step of up to kMaxRecordedRows rows
// is padded up to the next bucket, so at most this many graphs exist per model.
constexpr int64_t kRecordBuckets[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256};

bool env_disables_graphs() {
  const char* value = std::getenv("SLUICE_CUDA_GRAPHS");
  return value && std::string(value) == "0";
}

}  // namespace

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = error_text(status);
    return 0;
  }
  if (count == 0 && why) *why = "the driver reports no device";
  return count;
}

CudaBackend::CudaBackend(int device)
    : device_(device), activation_scratch_(device), weight_scratch_(device), attention_scratch_(device) {
  const std::string where = "cuda:" + std::to_string(device);
  throw_if_failed(cudaSetDevice(device), where + ": cudaSetDevice");
  throw_if_failed(cudaGetDeviceProperties(&props_, device), where + ": cudaGetDeviceProperties");
  throw_if_failed(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), where + ": cudaStreamCreate");
  throw_if_failed(cudaEventCreateWithFlags(&meta_copied_, cudaEventDisableTiming), where + ": cudaEventCreate");
  throw_if_failed(cublasCreate(&cublas_), where + ": cublasCreate");
  throw_if_failed(cublasSetStream(cublas_, stream_), where + ": cublasSetStream");
  // A workspace of our own: cuBLAS must not allocate while a graph is captured.
  cublas_workspace_ = std::make_unique<DeviceBuffer>(device, kCublasWorkspaceBytes);
  throw_if_failed(cublasSetWorkspace(cublas_, cublas_workspace_->data(), kCublasWorkspaceBytes),
                  where + ": cublasSetWorkspace");
  // No TF32: F32 GEMMs stay F32, as on the CPU.
  throw_if_failed(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), where + ": cublasSetMathMode");
  graphs_enabled_ = !env_disables_graphs();
}

CudaBackend::~CudaBackend() {
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  forget_recordings();
  if (meta_.pinned) cudaFreeHost(meta_.pinned);
  if (cublas_) cublasDestroy(cublas_);
  if (meta_copied_) cudaEventDestroy(meta_copied_);
  if (stream_) cudaStreamDestroy(stream_);
}

std::string CudaBackend::name() const { return "cuda:" + std::to_string(device_); }

MemoryInfo CudaBackend::memory_info() const {
  size_t free_bytes = 0, total_bytes = 0;
  SLUICE_CUDA_CHECK(cudaSetDevice(device_));
  SLUICE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return {total_bytes, free_bytes};
}

std::unique_ptr<Buffer> CudaBackend::allocate(size_t bytes) { return std::make_unique<DeviceBuffer>(device_, bytes); }

std::unique_ptr<Buffer> CudaBackend::wrap_weights(std::span<const std::byte> bytes) {
  // Copied as they are: quantized blocks stay quantized on the device. Straight
  // from the mmap'd (pageable) file; the driver stages it.
  auto buffer = std::make_unique<DeviceBuffer>(device_, bytes.size());
  if (!bytes.empty())
    throw_if_failed(cudaMemcpy(buffer->data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
                    name() + ": weight upload");
  return buffer;
}

void CudaBackend::upload(const Tensor& dst, std::span<const std::byte> src) {
  SLUICE_CHECK(dst.is_contiguous() && src.size() == dst.num_bytes(), "upload: size or layout mismatch");
  SLUICE_CHECK(!capturing_, "upload: not allowed inside a recorded step");
  // From pageable memory the copy is staged before this returns, so the caller may
  // reuse `src` at once; it is ordered with the ops on the stream.
  if (!src.empty())
    SLUICE_CUDA_CHECK(cudaMemcpyAsync(device_ptr(dst), src.data(), src.size(), cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::download(const Tensor& src, std::span<std::byte> dst) {
  SLUICE_CHECK(src.is_contiguous() && dst.size() == src.num_bytes(), "download: size or layout mismatch");
  SLUICE_CHECK(!capturing_, "download: not allowed inside a recorded step");
  if (dst.empty()) return;
  SLUICE_CUDA_CHECK(cudaMemcpyAsync(dst.data(), device_ptr(src), dst.size(), cudaMemcpyDeviceToHost, stream_));
  SLUICE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the caller reads dst next
}

void CudaBackend::fill_zero(const Tensor& dst) {
  if (dst.num_elements() == 0) return;
  SLUICE_CUDA_CHECK(cudaMemset2DAsync(device_ptr(dst), dst.row_stride, 0, dst.row_bytes(),
                                      static_cast<size_t>(dst.rows()), stream_));
}

void CudaBackend::copy(const Tensor& src, const Tensor& dst) {
  SLUICE_CHECK(src.dtype == dst.dtype && src.rows() == dst.rows() && src.cols() == dst.cols(),
               "copy: src and dst differ in dtype or shape");
  if (src.num_elements() == 0) return;
  SLUICE_CUDA_CHECK(cudaMemcpy2DAsync(device_ptr(dst), dst.row_stride, device_ptr(src), src.row_stride,
                                      src.row_bytes(), static_cast<size_t>(src.rows()), cudaMemcpyDeviceToDevice,
                                      stream_));
}

void CudaBackend::synchronize() {
  SLUICE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  SLUICE_CUDA_CHECK(cudaGetLastError());  // a kernel fault surfaces here with its name
}

// --- per-step attention metadata ------------------------------------------------------
//
// One int32 buffer: [table_stride][row_sequence: rows][sequences: S x 3][block tables:
// S x table_stride]. Its layout depends only on the capacities, so a recorded step
// keeps valid pointers until the buffer grows (which forgets the recordings).

AttentionMeta CudaBackend::StepMeta::view() const {
  const auto* base = reinterpret_cast<const int32_t*>(device->data());
  AttentionMeta m;
  m.table_stride = base;
  m.row_sequence = base + 1;
  m.sequences = m.row_sequence + row_capacity;
  m.block_tables = m.sequences + 3 * seq_capacity;
  return m;
}

void CudaBackend::grow_step_meta(int64_t rows, int64_t seqs, int64_t table_entries) {
  if (meta_.device && rows <= meta_.row_capacity && seqs <= meta_.seq_capacity &&
      table_entries <= meta_.table_capacity)
    return;
  forget_recordings();  // they point into the old buffer
  meta_.row_capacity = std::max<int64_t>({rows, 2 * meta_.row_capacity, 256});
  meta_.seq_capacity = std::max<int64_t>({seqs, 2 * meta_.seq_capacity, 256});
  meta_.table_capacity = std::max<int64_t>({table_entries, 2 * meta_.table_capacity, 16384});
  const int64_t entries = 1 + meta_.row_capacity + 3 * meta_.seq_capacity + meta_.table_capacity;
  const size_t bytes = static_cast<size_t>(entries) * sizeof(int32_t);
  if (meta_.pinned) {
    SLUICE_CUDA_CHECK(cudaEventSynchronize(meta_copied_));
    SLUICE_CUDA_CHECK(cudaFreeHost(meta_.pinned));
    meta_.pinned = nullptr;
  }
  meta_.device.reset();
  meta_.device = std::make_unique<DeviceBuffer>(device_, bytes);
  void* pinned = nullptr;
  throw_if_failed(cudaMallocHost(&pinned, bytes), name() + ": cudaMallocHost for step metadata");
  meta_.pinned = static_cast<int32_t*>(pinned);
}

void CudaBackend::begin_step(std::span<const SequenceSlice> sequences, int64_t num_rows) {
  SLUICE_CHECK(!capturing_, "begin_step: not allowed inside a recorded step");
  size_t stride = 1;
  for (const SequenceSlice& s : sequences) stride = std::max(stride, s.block_table.size());
  const auto num_seqs = static_cast<int64_t>(sequences.size());
  grow_step_meta(num_rows, num_seqs, num_seqs * static_cast<int64_t>(stride));

  // The previous step's copy must be done before the staging is rewritten.
  SLUICE_CUDA_CHECK(cudaEventSynchronize(meta_copied_));
  int32_t* host = meta_.pinned;
  host[0] = static_cast<int32_t>(stride);
  int32_t* row_sequence = host + 1;
  int32_t* seq_info = row_sequence + meta_.row_capacity;
  int32_t* tables = seq_info + 3 * meta_.seq_capacity;
  std::fill(row_sequence, row_sequence + num_rows, -1);
  for (int64_t s = 0; s < num_seqs; ++s) {
    const SequenceSlice& seq = sequences[static_cast<size_t>(s)];
    SLUICE_CHECK(seq.query_begin >= 0 && seq.num_queries >= 0 && seq.query_begin + seq.num_queries <= num_rows,
                 "begin_step: sequence rows outside the step");
    std::fill(row_sequence + seq.query_begin, row_sequence + seq.query_begin + seq.num_queries,
              static_cast<int32_t>(s));
    seq_info[3 * s] = seq.query_begin;
    seq_info[3 * s + 1] = seq.num_queries;
    seq_info[3 * s + 2] = seq.num_cached;
    std::copy(seq.block_table.begin(), seq.block_table.end(), tables + s * static_cast<int64_t>(stride));
  }
  // Three copies of the used parts (the sections sit at fixed offsets).
  auto* device = reinterpret_cast<int32_t*>(meta_.device->data());
  const auto copy = [&](int64_t offset, int64_t count) {
    if (count > 0)
      SLUICE_CUDA_CHECK(cudaMemcpyAsync(device + offset, host + offset, static_cast<size_t>(count) * sizeof(int32_t),
                                        cudaMemcpyHostToDevice, stream_));
  };
  copy(0, 1 + num_rows);
  copy(1 + meta_.row_capacity, 3 * num_seqs);
  copy(1 + meta_.row_capacity + 3 * meta_.seq_capacity, num_seqs * static_cast<int64_t>(stride));
  SLUICE_CUDA_CHECK(cudaEventRecord(meta_copied_, stream_));
  encode_step(sequences, num_rows, meta_.uploaded);
  meta_.valid = true;
}

void CudaBackend::encode_step(std::span<const SequenceSlice> sequences, int64_t num_rows,
                              std::vector<int32_t>& out) {
  out.clear();
  out.push_back(static_cast<int32_t>(num_rows));
  for (const SequenceSlice& s : sequences) {
    out.insert(out.end(), {s.query_begin, s.num_queries, s.num_cached, static_cast<int32_t>(s.block_table.size())});
    out.insert(out.end(), s.block_table.begin(), s.block_table.end());
  }
}

bool CudaBackend::step_meta_matches(std::span<const SequenceSlice> sequences, int64_t num_rows) {
  if (!meta_.valid) return false;
  encode_step(sequences, num_rows, meta_.probe);
  return meta_.probe == meta_.uploaded;
}

// --- recorded steps (CUDA graphs) -------------------------------------------------------

int64_t CudaBackend::recorded_step_rows(int64_t num_tokens) const {
  if (!graphs_enabled_) return 0;
  for (int64_t bucket : kRecordBuckets)
    if (num_tokens <= bucket) return bucket;
  return 0;
}

void CudaBackend::run_recorded(int64_t key, const std::function<void()>& ops) {
  if (!graphs_enabled_) {
    ops();
    return;
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    // Relaxed mode: a scratch area that grows during the capture may cudaMalloc.
    SLUICE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    capturing_ = true;
    ops();
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    SLUICE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    SLUICE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    SLUICE_CUDA_CHECK(cudaGraphDestroy(graph));
    it = graphs_.emplace(key, exec).first;
  }
  SLUICE_CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
}

void CudaBackend::forget_recordings() {
  SLUICE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // a replay may still be running
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
  activation_scratch_.release_retired();
  weight_scratch_.release_retired();
  attention_scratch_.release_retired();
}

}  // namespace cuda
}  // namespace sluice::backends
