#include "engine/models/kv_cache.h"

#include <stdexcept>
#include <string>

namespace sluice::engine {
namespace {

using backends::DType;

uint64_t element_bytes(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    default:
      throw std::invalid_argument("KV cache dtype must be F32 or F16, not " +
                                  std::string(backends::dtype_name(dtype)));
  }
}

}  // namespace

uint64_t KvCache::bytes_per_block(const ModelHparams& hparams, int64_t block_size, DType dtype) {
  const uint64_t per_token_per_layer =
      static_cast<uint64_t>(hparams.num_kv_heads * hparams.head_dim) * element_bytes(dtype);
  return 2 * static_cast<uint64_t>(hparams.num_layers) * static_cast<uint64_t>(block_size) *
         per_token_per_layer;
}

uint64_t KvCache::bytes_per_block() const {
  return bytes_per_block(hparams_, config_.block_size, config_.dtype);
}

KvCache::KvCache(backends::Backend& backend, const ModelHparams& hparams, const KvCacheConfig& config)
    : config_(config), hparams_(hparams) {
  if (config.num_blocks <= 0 || config.block_size <= 0)
    throw std::invalid_argument("KV cache needs a positive number of blocks and block size");
  if (hparams.num_layers <= 0 || hparams.num_kv_heads <= 0 || hparams.head_dim <= 0)
    throw std::invalid_argument("KV cache needs layers, KV heads and a head dim");
  const uint64_t layer_bytes = static_cast<uint64_t>(config.num_blocks * config.block_size *
                                                     hparams.num_kv_heads * hparams.head_dim) *
                               element_bytes(config.dtype);
  layers_.reserve(static_cast<size_t>(hparams.num_layers));
  buffers_.reserve(2 * static_cast<size_t>(hparams.num_layers));
  for (int64_t i = 0; i < hparams.num_layers; ++i) {
    backends::KvLayer layer;
    for (backends::Tensor* view : {&layer.k, &layer.v}) {
      auto& buffer = buffers_.emplace_back(backend.allocate(layer_bytes));
      // [num_blocks, block_size, num_kv_heads, head_dim]
      *view = backends::Tensor::make(buffer.get(), 0, config.dtype,
                                     {config.num_blocks, config.block_size, hparams.num_kv_heads,
                                      hparams.head_dim});
      // Unwritten slots are never read (attention stops at the sequence length), but
      // zeroes keep a stray read finite and the memory touched up front.
      backend.fill_zero(*view);
    }
    layers_.push_back(layer);
  }
}

}  // namespace sluice::engine
