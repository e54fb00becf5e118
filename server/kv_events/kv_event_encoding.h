#pragma once
// vLLM's KV-cache event wire format (vllm/distributed/kv_events.py), the msgpack
// payload of one ZMQ message:
//
//   batch:   [ts (float64), [event, ...], data_parallel_rank]          msgspec array_like
//   array:   ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]
//            ["BlockRemoved", block_hashes, medium]
//            ["AllBlocksCleared"]
//   map:     {"type": "BlockStored", "block_hashes": ..., ..., "lora_name": nil}   (same fields by name)
//
// "array" is the tagged-array layout of vLLM's array_like events, the one llm-d's
// KV-cache manager decodes (its Go structs read the fields in this order); "map" is
// the tagged-map layout of current vLLM, which vllm-router's kv_aware policy reads.
// Block hashes are unsigned 64-bit integers always written in msgpack's 8-byte
// uint64 form: Go's msgpack decoder hands an interface{} value the width it was
// written in, and llm-d accepts only uint64/int64 (or bytes) as a hash. lora_id is
// nil and medium is "GPU" (vLLM's name for the engine's own KV cache, whatever
// the device; llm-d lowers it to its default "gpu" tier).
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/scheduling/kv_events.h"

namespace sluice::server {

enum class KvEventLayout { array, map };

// "array" or "map" into `out`; false (out unchanged) for anything else.
bool parse_kv_event_layout(std::string_view name, KvEventLayout& out);

std::string encode_kv_event_batch(const engine::KvEventBatch& batch, int32_t data_parallel_rank,
                                  KvEventLayout layout);

}  // namespace sluice::server
