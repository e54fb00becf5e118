#pragma once
// The paged KV cache of one model: per layer, K and V buffers of
// [num_blocks, block_size, num_kv_heads, head_dim] in F32 or F16. Block ids index
// dimension 0 and are shared by all layers, so one block id reserves block_size
// token slots in every layer at once (slot = block * block_size + offset).
//
// Owns the device memory only; which blocks belong to which sequence is the
// business of the block pool / caller. Used by the engine thread of its model.
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "engine/models/hparams.h"

namespace sluice::engine {

struct KvCacheConfig {
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  backends::DType dtype = backends::DType::F16;  // F32 for parity tests
};

class KvCache {
 public:
  // Allocates and zeroes num_blocks blocks on `backend`. Throws std::invalid_argument
  // for a non-positive size or a dtype other than F32 / F16.
  KvCache(backends::Backend& backend, const ModelHparams& hparams, const KvCacheConfig& config);

  // Device bytes one block takes over all layers, K and V: what a memory budget
  // divides by to size the pool.
  static uint64_t bytes_per_block(const ModelHparams& hparams, int64_t block_size,
                                  backends::DType dtype);
  uint64_t bytes_per_block() const;

  int64_t num_blocks() const { return config_.num_blocks; }
  int64_t block_size() const { return config_.block_size; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  backends::DType dtype() const { return config_.dtype; }
  // Token slots in the whole cache.
  int64_t num_slots() const { return config_.num_blocks * config_.block_size; }

  // Views of one layer's K and V: [num_blocks, block_size, num_kv_heads, head_dim].
  const backends::KvLayer& layer(int64_t index) const { return layers_[static_cast<size_t>(index)]; }

 private:
  KvCacheConfig config_;
  ModelHparams hparams_;
  std::vector<std::unique_ptr<backends::Buffer>> buffers_;  // 2 per layer: K, V
  std::vector<backends::KvLayer> layers_;                   // views into buffers_
};

}  // namespace sluice::engine
