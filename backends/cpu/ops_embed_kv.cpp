// Embedding gather (dequantizing table rows) and KV-cache writes.
#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/dequantize.h"
#include "backends/cpu/half.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"

namespace sluice::backends::cpu {

void embed(ThreadPool& pool, const Tensor& table, const Tensor& ids, const Tensor& out) {
  SLUICE_CHECK(table.ndim == 2 && can_dequantize(table.dtype), "embed: table must be [vocab, d] of a matmul dtype");
  SLUICE_CHECK(ids.dtype == DType::I32, "embed: ids must be I32");
  SLUICE_CHECK(out.dtype == DType::F32 && out.cols() == table.cols() && out.rows() == ids.num_elements(),
               "embed: out must be [T, d] F32");
  const int64_t vocab = table.dim(0);
  const int64_t d = table.cols();
  const int32_t* id = reinterpret_cast<const int32_t*>(host_ptr(ids));
  const Rows<const std::byte> tr(table);
  const Rows<float> outr(out);
  for_each_row(pool, out.rows(), d, [&](int64_t t) {
    SLUICE_CHECK(id[t] >= 0 && id[t] < vocab, "embed: token id out of range");
    dequantize_row(table.dtype, tr[id[t]], outr[t], d);
  });
}

namespace {

void check_cache(const Tensor& c, const Tensor& src) {
  SLUICE_CHECK(c.ndim == 4 && (c.dtype == DType::F32 || c.dtype == DType::F16),
               "kv cache must be [num_blocks, block_size, kv_heads, head_dim] F32 or F16");
  SLUICE_CHECK(src.dtype == DType::F32 && src.ndim == 3 && src.dim(1) == c.dim(2) && src.dim(2) == c.dim(3),
               "write_kv: k/v must be [T, kv_heads, head_dim] F32 matching the cache");
}

void store_row(const float* src, const Tensor& cache, std::byte* dst, int64_t n) {
  if (cache.dtype == DType::F32) {
    float* d = reinterpret_cast<float*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = src[i];
  } else {
    uint16_t* d = reinterpret_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
  }
}

}  // namespace

void write_kv(ThreadPool& pool, const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) {
  check_cache(cache.k, k);
  check_cache(cache.v, v);
  SLUICE_CHECK(same_shape(k, v) && same_shape(cache.k, cache.v), "write_kv: k/v shapes differ");
  SLUICE_CHECK(slots.dtype == DType::I32 && slots.num_elements() == k.dim(0), "write_kv: slots must be [T] I32");
  const int64_t num_slots = cache.k.dim(0) * cache.k.dim(1);
  const int64_t kv_heads = k.dim(1);
  const int64_t head_dim = k.dim(2);
  const int32_t* slot = reinterpret_cast<const int32_t*>(host_ptr(slots));
  const Rows<const float> kr(k), vr(v);
  const Rows<std::byte> ckr(cache.k), cvr(cache.v);
  for_each_row(pool, k.dim(0), kv_heads * head_dim, [&](int64_t t) {
    SLUICE_CHECK(slot[t] < num_slots, "write_kv: slot out of range");
    if (slot[t] < 0) return;  // a padding row
    for (int64_t h = 0; h < kv_heads; ++h) {
      const int64_t dst_row = static_cast<int64_t>(slot[t]) * kv_heads + h;
      store_row(kr[t * kv_heads + h], cache.k, ckr[dst_row], head_dim);
      store_row(vr[t * kv_heads + h], cache.v, cvr[dst_row], head_dim);
    }
  });
}

}  // namespace sluice::backends::cpu
