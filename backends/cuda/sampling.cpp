// CudaBackend::sample: the rows' settings and adjust lists go to the device in one
// copy from pinned staging, one kernel launch samples every row (k_sample.cu), and
// only the SampledToken results come back.
//
// One staging layout, the same in pinned host memory and in the device scratch:
//   [SampleRowArgs x R][SampleAdjust x all entries] ... [SampleOut x R]
// The first part is uploaded, the last part downloaded.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "backends/check.h"
#include "backends/cuda/cuda_backend_impl.h"
#include "backends/cuda/cuda_error.h"

namespace sluice::backends::cuda {
namespace {

static_assert(kSampleMaxLogprobs == kMaxSampledLogprobs, "k_sample.cu's result size differs from SampledToken's");

size_t align_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct Layout {
  size_t adjust_offset = 0;
  size_t upload_bytes = 0;
  size_t out_offset = 0;
  size_t total_bytes = 0;
};

Layout layout_for(size_t rows, size_t num_adjust) {
  Layout l;
  l.adjust_offset = align_up(rows * sizeof(SampleRowArgs), alignof(SampleAdjust));
  l.upload_bytes = l.adjust_offset + num_adjust * sizeof(SampleAdjust);
  l.out_offset = align_up(l.upload_bytes, 256);
  l.total_bytes = l.out_offset + rows * sizeof(SampleOut);
  return l;
}

}  // namespace

void CudaBackend::PinnedFree::operator()(std::byte* p) const { cudaFreeHost(p); }

void CudaBackend::sample(const Tensor& logits, std::span<const RowSampling> rows, std::span<SampledToken> out) {
  SLUICE_CHECK(!capturing_, "sample: not allowed inside a recorded step");
  SLUICE_CHECK(logits.dtype == DType::F32 && logits.ndim >= 1, "sample: logits must be [R, vocab] F32");
  SLUICE_CHECK(logits.row_stride % sizeof(float) == 0, "sample: logits rows must be 4-byte aligned");
  const int64_t num_rows = logits.rows();
  const int64_t vocab = logits.cols();
  SLUICE_CHECK(rows.size() == static_cast<size_t>(num_rows) && out.size() == rows.size(),
               "sample: rows and out must have one entry per row of logits");
  SLUICE_CHECK(vocab > 0 && vocab <= kSampleMaxVocab, "sample: vocabulary size out of range");
  if (num_rows == 0) return;

  size_t num_adjust = 0;
  for (const RowSampling& r : rows) num_adjust += r.adjust.size();
  SLUICE_CHECK(num_adjust <= static_cast<size_t>(INT32_MAX), "sample: too many adjust entries");
  const Layout layout = layout_for(rows.size(), num_adjust);

  if (sample_pinned_bytes_ < layout.total_bytes) {
    // No copy touches the old staging: the previous call ended with a sync.
    const size_t bytes = std::max(layout.total_bytes, 2 * sample_pinned_bytes_);
    sample_pinned_.reset();
    sample_pinned_bytes_ = 0;
    void* pinned = nullptr;
    throw_if_failed(cudaMallocHost(&pinned, bytes), name() + ": cudaMallocHost for sampling");
    sample_pinned_.reset(static_cast<std::byte*>(pinned));
    sample_pinned_bytes_ = bytes;
  }
  std::byte* host = sample_pinned_.get();
  auto* args = reinterpret_cast<SampleRowArgs*>(host);
  auto* adjust = reinterpret_cast<SampleAdjust*>(host + layout.adjust_offset);

  // Each row's entries inside the vocabulary, sorted by token for the kernel's
  // binary search.
  int32_t next = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const RowSampling& row = rows[r];
    SampleRowArgs& a = args[r];
    a = SampleRowArgs{};
    a.uniform = row.uniform;
    a.temperature = row.temperature;
    a.top_k = row.top_k;
    a.top_p = row.top_p;
    a.min_p = row.min_p;
    a.num_logprobs = std::clamp(row.num_logprobs, 0, kMaxSampledLogprobs);
    a.adjust_begin = next;
    SampleAdjust* first = adjust + next;
    for (const LogitAdjust& e : row.adjust) {
      if (e.token < 0 || e.token >= vocab) continue;
      adjust[next++] = SampleAdjust{e.token, e.bias, e.repetition, e.subtract};
    }
    SampleAdjust* last = adjust + next;
    std::sort(first, last, [](const SampleAdjust& x, const SampleAdjust& y) { return x.token < y.token; });
    SLUICE_CHECK(std::adjacent_find(first, last, [](const SampleAdjust& x, const SampleAdjust& y) {
                   return x.token == y.token;
                 }) == last,
                 "sample: a row names a token twice in its adjust entries");
    a.adjust_count = static_cast<int32_t>(last - first);
  }
  const size_t upload_bytes = layout.adjust_offset + static_cast<size_t>(next) * sizeof(SampleAdjust);

  auto* device = static_cast<std::byte*>(sample_scratch_.get(layout.total_bytes));
  SLUICE_CUDA_CHECK(cudaMemcpyAsync(device, host, upload_bytes, cudaMemcpyHostToDevice, stream_));
  launch_sample(device_ptr_as<const float>(logits), row_stride_elems(logits, sizeof(float)), num_rows, vocab,
                reinterpret_cast<const SampleRowArgs*>(device),
                reinterpret_cast<const SampleAdjust*>(device + layout.adjust_offset),
                reinterpret_cast<SampleOut*>(device + layout.out_offset), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
  SLUICE_CUDA_CHECK(cudaMemcpyAsync(host + layout.out_offset, device + layout.out_offset,
                                    rows.size() * sizeof(SampleOut), cudaMemcpyDeviceToHost, stream_));
  SLUICE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  sample_scratch_.release_retired();  // never captured into a graph, and nothing is pending

  const auto* results = reinterpret_cast<const SampleOut*>(host + layout.out_offset);
  for (size_t r = 0; r < rows.size(); ++r) {
    const SampleOut& s = results[r];
    SampledToken& t = out[r];
    t = SampledToken{};
    t.token = s.token;
    t.logprob = s.logprob;
    t.num_top = std::clamp(s.num_top, 0, kMaxSampledLogprobs);
    std::copy_n(s.top_tokens, t.num_top, t.top_tokens);
    std::copy_n(s.top_logprobs, t.num_top, t.top_logprobs);
  }
}

}  // namespace sluice::backends::cuda
