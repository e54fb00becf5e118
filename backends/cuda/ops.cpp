// The CUDA backend's ops other than matmul: argument checks (as strict as the CPU
// backend's), then one kernel launch each.
#include <string>

#include "backends/check.h"
#include "backends/cuda/cuda_backend_impl.h"
#include "backends/cuda/cuda_error.h"

namespace sluice::backends::cuda {
namespace {

void check_f32_like(const Tensor& a, const Tensor& b, const char* what) {
  SLUICE_CHECK(a.dtype == DType::F32 && b.dtype == DType::F32 && same_shape(a, b), what);
}

void check_norm(const Tensor& x, const Tensor& weight, const Tensor& out) {
  check_f32_like(x, out, "norm: x and out must be F32 of one shape");
  SLUICE_CHECK(weight.dtype == DType::F32 && weight.num_elements() == x.cols() && weight.is_contiguous(),
               "norm: weight must be [d] F32");
}

RopeArgs rope_args(const RopeParams& p, int64_t head_dim) {
  RopeArgs a;
  a.num_rotated = p.num_rotated > 0 ? p.num_rotated : static_cast<int>(head_dim);
  SLUICE_CHECK(a.num_rotated % 2 == 0 && a.num_rotated <= head_dim, "rope: num_rotated must be even and <= head_dim");
  SLUICE_CHECK(a.num_rotated <= kAttentionMaxHeadDim, "rope: at most kAttentionMaxHeadDim rotated dimensions");
  SLUICE_CHECK(p.llama3_factor <= 0.0f || p.llama3_high_freq_factor != p.llama3_low_freq_factor,
               "rope: llama3 high and low frequency factors must differ");
  a.theta = p.theta;
  a.neox = p.neox;
  a.freq_scale = p.freq_scale;
  a.llama3_factor = p.llama3_factor;
  a.llama3_low_freq_factor = p.llama3_low_freq_factor;
  a.llama3_high_freq_factor = p.llama3_high_freq_factor;
  a.llama3_original_context = static_cast<float>(p.llama3_original_context);
  return a;
}

void check_heads(const Tensor& x, const char* what) {
  SLUICE_CHECK(x.dtype == DType::F32 && x.ndim == 3 && x.is_contiguous(), what);
}

KvCacheArgs cache_args(const KvLayer& cache, int64_t kv_heads, int64_t head_dim) {
  const Tensor& ck = cache.k;
  SLUICE_CHECK(ck.ndim == 4 && same_shape(ck, cache.v) && ck.dtype == cache.v.dtype &&
                   (ck.dtype == DType::F32 || ck.dtype == DType::F16) && ck.is_contiguous() &&
                   cache.v.is_contiguous(),
               "kv cache must be contiguous [num_blocks, block_size, kv_heads, head_dim] F32 or F16");
  SLUICE_CHECK(ck.dim(2) == kv_heads && ck.dim(3) == head_dim, "kv cache: heads or head_dim differ from k's");
  KvCacheArgs a;
  a.k = device_ptr(ck);
  a.v = device_ptr(cache.v);
  a.f16 = ck.dtype == DType::F16;
  a.num_slots = ck.dim(0) * ck.dim(1);
  return a;
}

}  // namespace

bool CudaBackend::supports_attention(int64_t heads, int64_t kv_heads, int64_t head_dim) const {
  // head_dim % 8: the kernel reads cache rows 8 elements (16 bytes of F16) at a time.
  return Backend::supports_attention(heads, kv_heads, head_dim) && heads / kv_heads <= kAttentionMaxGroup &&
         head_dim <= kAttentionMaxHeadDim && head_dim % 8 == 0;
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  check_norm(x, weight, out);
  launch_rms_norm(f32(x), stride(x), f32(weight), eps, f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::add_rms_norm(const Tensor& hidden, const Tensor& branch, const Tensor& weight, float eps,
                               const Tensor& normed) {
  check_norm(hidden, weight, normed);
  check_f32_like(hidden, branch, "add_rms_norm: hidden and branch must be F32 of one shape");
  launch_add_rms_norm(f32_mut(hidden), stride(hidden), f32(branch), stride(branch), f32(weight), eps,
                      f32_mut(normed), stride(normed), rows_of(hidden), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                             const Tensor& out) {
  check_norm(x, weight, out);
  SLUICE_CHECK(!bias || (bias.dtype == DType::F32 && bias.num_elements() == x.cols()),
               "layer_norm: bias must be [d] F32");
  launch_layer_norm(f32(x), stride(x), f32(weight), bias ? f32(bias) : nullptr, eps, f32_mut(out), stride(out),
                    rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::rope(const Tensor& x, const Tensor& positions, const RopeParams& params) {
  check_heads(x, "rope: x must be contiguous [T, heads, head_dim] F32");
  SLUICE_CHECK(positions.dtype == DType::I32 && positions.num_elements() == x.dim(0),
               "rope: positions must be [T] I32");
  launch_rope(f32_mut(x), x.dim(0), static_cast<int>(x.dim(1)), static_cast<int>(x.dim(2)),
              device_ptr_as<const int32_t>(positions), rope_args(params, x.dim(2)), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  check_f32_like(gate, up, "swiglu: gate, up, out must be F32 of one shape");
  check_f32_like(gate, out, "swiglu: gate, up, out must be F32 of one shape");
  launch_binary(BinaryOp::swiglu, f32(gate), stride(gate), f32(up), stride(up), f32_mut(out), stride(out),
                rows_of(gate), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::geglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  check_f32_like(gate, up, "geglu: gate, up, out must be F32 of one shape");
  check_f32_like(gate, out, "geglu: gate, up, out must be F32 of one shape");
  launch_binary(BinaryOp::geglu, f32(gate), stride(gate), f32(up), stride(up), f32_mut(out), stride(out),
                rows_of(gate), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_f32_like(a, b, "add: a, b, out must be F32 of one shape");
  check_f32_like(a, out, "add: a, b, out must be F32 of one shape");
  launch_binary(BinaryOp::add, f32(a), stride(a), f32(b), stride(b), f32_mut(out), stride(out), rows_of(a),
                stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::scale(const Tensor& x, float s, const Tensor& out) {
  check_f32_like(x, out, "scale: x, out must be F32 of one shape");
  launch_scale(f32(x), stride(x), s, f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::mul(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_f32_like(a, b, "mul: a, b, out must be F32 of one shape");
  check_f32_like(a, out, "mul: a, b, out must be F32 of one shape");
  launch_binary(BinaryOp::mul, f32(a), stride(a), f32(b), stride(b), f32_mut(out), stride(out), rows_of(a),
                stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::transpose(const Tensor& x, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32 && x.ndim == 2 && out.ndim == 2 &&
                   out.dim(0) == x.dim(1) && out.dim(1) == x.dim(0),
               "transpose: x [R, C] and out [C, R] must be F32");
  launch_transpose(f32(x), stride(x), f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::softmax(const Tensor& x, const Tensor& out) {
  check_f32_like(x, out, "softmax: x, out must be F32 of one shape");
  launch_softmax(f32(x), stride(x), f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) {
  check_heads(k, "write_kv: k must be contiguous [T, kv_heads, head_dim] F32");
  check_heads(v, "write_kv: v must be contiguous [T, kv_heads, head_dim] F32");
  SLUICE_CHECK(same_shape(k, v), "write_kv: k/v shapes differ");
  SLUICE_CHECK(slots.dtype == DType::I32 && slots.num_elements() == k.dim(0), "write_kv: slots must be [T] I32");
  const KvCacheArgs c = cache_args(cache, k.dim(1), k.dim(2));
  launch_rope_write_kv(nullptr, 0, f32_mut(k), f32(v), static_cast<int>(k.dim(1)), static_cast<int>(k.dim(2)),
                       k.dim(0), nullptr, nullptr, c, device_ptr_as<const int32_t>(slots), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::rope_write_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                                const RopeParams& params, const KvLayer& cache, const Tensor& slots) {
  check_heads(q, "rope_write_kv: q must be contiguous [T, heads, head_dim] F32");
  check_heads(k, "rope_write_kv: k must be contiguous [T, kv_heads, head_dim] F32");
  check_heads(v, "rope_write_kv: v must be contiguous [T, kv_heads, head_dim] F32");
  SLUICE_CHECK(same_shape(k, v) && q.dim(0) == k.dim(0) && q.dim(2) == k.dim(2), "rope_write_kv: shapes differ");
  SLUICE_CHECK(positions.dtype == DType::I32 && positions.num_elements() == q.dim(0),
               "rope_write_kv: positions must be [T] I32");
  SLUICE_CHECK(slots.dtype == DType::I32 && slots.num_elements() == k.dim(0),
               "rope_write_kv: slots must be [T] I32");
  const KvCacheArgs c = cache_args(cache, k.dim(1), k.dim(2));
  const RopeArgs r = rope_args(params, q.dim(2));
  launch_rope_write_kv(f32_mut(q), static_cast<int>(q.dim(1)), f32_mut(k), f32(v), static_cast<int>(k.dim(1)),
                       static_cast<int>(k.dim(2)), q.dim(0), device_ptr_as<const int32_t>(positions), &r, c,
                       device_ptr_as<const int32_t>(slots), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                            const AttentionParams& params, const Tensor& out) {
  check_heads(q, "attention: q must be contiguous [T, heads, head_dim] F32");
  check_heads(out, "attention: out must be contiguous [T, heads, head_dim] F32");
  SLUICE_CHECK(same_shape(q, out), "attention: q and out differ in shape");
  const Tensor& ck = cache.k;
  SLUICE_CHECK(ck.ndim == 4, "attention: cache must be [num_blocks, block_size, kv_heads, head_dim]");
  const int64_t heads = q.dim(1), head_dim = q.dim(2), kv_heads = ck.dim(2);
  SLUICE_CHECK(kv_heads > 0 && heads % kv_heads == 0 && heads / kv_heads <= kAttentionMaxGroup,
               "attention: heads must be a multiple of kv_heads, at most 8 per KV head");
  SLUICE_CHECK(head_dim <= kAttentionMaxHeadDim && head_dim % 8 == 0,
               "attention: head_dim must be a multiple of 8, at most 256");
  // The metadata is begin_step's. Outside a recording, sequences that differ from
  // what it uploaded (a caller that skipped begin_step, an op test) are uploaded now.
  if (!capturing_ && !step_meta_matches(sequences, q.dim(0))) begin_step(sequences, q.dim(0));
  SLUICE_CHECK(meta_.valid, "attention: begin_step must run before a recorded step");
  AttentionArgs a;
  a.rows = q.dim(0);
  a.heads = static_cast<int>(heads);
  a.kv_heads = static_cast<int>(kv_heads);
  a.head_dim = static_cast<int>(head_dim);
  a.block_size = static_cast<int>(ck.dim(1));
  a.scale = params.scale;
  a.sliding_window = params.sliding_window;
  a.softcap = params.softcap;
  const size_t split_bytes = attention_split_scratch_bytes(a);
  auto* split_scratch = split_bytes > 0 ? static_cast<float*>(attention_scratch_.get(split_bytes)) : nullptr;
  launch_attention(f32(q), cache_args(cache, kv_heads, head_dim), meta_.view(), a, f32_mut(out), split_scratch,
                   stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

}  // namespace sluice::backends::cuda
