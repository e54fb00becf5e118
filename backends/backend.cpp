// The Backend defaults: fused ops as compositions of the plain ops, and no
// recording. A backend overrides these only where it has something better.
#include "backends/backend.h"

#include <stdexcept>

namespace sluice::backends {

std::unique_ptr<Buffer> Backend::wrap_matrix(std::span<const std::byte> bytes, DType, int64_t, int64_t) {
  return wrap_weights(bytes);
}

void Backend::matmul_shared_input(const Tensor& x, std::span<const Tensor> ws, std::span<const Tensor> ys) {
  for (size_t i = 0; i < ws.size(); ++i) matmul(x, ws[i], ys[i]);
}

void Backend::add_rms_norm(const Tensor& hidden, const Tensor& branch, const Tensor& weight, float eps,
                           const Tensor& normed) {
  add(hidden, branch, hidden);
  rms_norm(hidden, weight, eps, normed);
}

void Backend::gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, bool gelu,
                        const Tensor& scratch, const Tensor& out) {
  matmul(x, w_gate, out);
  matmul(x, w_up, scratch);
  if (gelu) {
    geglu(out, scratch, out);
  } else {
    swiglu(out, scratch, out);
  }
}

void Backend::rope_write_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                            const RopeParams& params, const KvLayer& cache, const Tensor& slots) {
  rope(q, positions, params);
  rope(k, positions, params);
  write_kv(k, v, cache, slots);
}

bool Backend::supports_attention(int64_t heads, int64_t kv_heads, int64_t head_dim) const {
  return kv_heads > 0 && heads % kv_heads == 0 && head_dim > 0;
}

void Backend::begin_step(std::span<const SequenceSlice>, int64_t) {}

int64_t Backend::recorded_step_rows(int64_t) const { return 0; }

void Backend::run_recorded(int64_t, const std::function<void()>& ops) { ops(); }

void Backend::forget_recordings() {}

bool Backend::supports_sampling() const { return false; }

void Backend::sample(const Tensor&, std::span<const RowSampling>, std::span<SampledToken>) {
  throw std::logic_error(name() + " backend: sample() is not implemented (supports_sampling() is false)");
}

}  // namespace sluice::backends
