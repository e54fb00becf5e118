#include "server/kv_events/kv_event_encoding.h"

#include <msgpack.hpp>

#include <type_traits>
#include <variant>

namespace sluice::server {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

constexpr std::string_view kMedium = "GPU";

void pack_string(Packer& pk, std::string_view text) {
  pk.pack_str(static_cast<uint32_t>(text.size()));
  pk.pack_str_body(text.data(), static_cast<uint32_t>(text.size()));
}

void pack_hashes(Packer& pk, const std::vector<uint64_t>& hashes) {
  pk.pack_array(static_cast<uint32_t>(hashes.size()));
  for (uint64_t h : hashes) pk.pack_fix_uint64(h);
}

// Writes the struct's tag and fields: positionally (array) or by name (map). The
// field list is the one place that fixes their order.
class StructWriter {
 public:
  StructWriter(Packer& pk, KvEventLayout layout, std::string_view tag, uint32_t num_fields)
      : pk_(pk), layout_(layout) {
    if (layout_ == KvEventLayout::array) {
      pk_.pack_array(num_fields + 1);
      pack_string(pk_, tag);
    } else {
      pk_.pack_map(num_fields + 1);
      pack_string(pk_, "type");
      pack_string(pk_, tag);
    }
  }
  Packer& field(std::string_view name) {
    if (layout_ == KvEventLayout::map) pack_string(pk_, name);
    return pk_;
  }

 private:
  Packer& pk_;
  KvEventLayout layout_;
};

void pack_event(Packer& pk, KvEventLayout layout, const engine::KvCacheEvent& event) {
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, engine::KvBlockStored>) {
          // The map layout carries current vLLM's lora_name too (required there, nil).
          StructWriter w(pk, layout, "BlockStored", layout == KvEventLayout::map ? 7 : 6);
          pack_hashes(w.field("block_hashes"), e.block_hashes);
          if (e.parent_block_hash) {
            w.field("parent_block_hash").pack_fix_uint64(*e.parent_block_hash);
          } else {
            w.field("parent_block_hash").pack_nil();
          }
          w.field("token_ids").pack_array(static_cast<uint32_t>(e.token_ids.size()));
          for (int32_t t : e.token_ids) pk.pack_uint32(static_cast<uint32_t>(t));
          w.field("block_size").pack_int32(e.block_size);
          w.field("lora_id").pack_nil();
          pack_string(w.field("medium"), kMedium);
          if (layout == KvEventLayout::map) w.field("lora_name").pack_nil();
        } else if constexpr (std::is_same_v<T, engine::KvBlockRemoved>) {
          StructWriter w(pk, layout, "BlockRemoved", 2);
          pack_hashes(w.field("block_hashes"), e.block_hashes);
          pack_string(w.field("medium"), kMedium);
        } else {
          StructWriter w(pk, layout, "AllBlocksCleared", 0);
        }
      },
      event);
}

}  // namespace

bool parse_kv_event_layout(std::string_view name, KvEventLayout& out) {
  if (name == "array") {
    out = KvEventLayout::array;
  } else if (name == "map") {
    out = KvEventLayout::map;
  } else {
    return false;
  }
  return true;
}

std::string encode_kv_event_batch(const engine::KvEventBatch& batch, int32_t data_parallel_rank,
                                  KvEventLayout layout) {
  msgpack::sbuffer buffer;
  Packer pk(&buffer);
  pk.pack_array(3);
  pk.pack_double(batch.timestamp);
  pk.pack_array(static_cast<uint32_t>(batch.events.size()));
  for (const engine::KvCacheEvent& event : batch.events) pack_event(pk, layout, event);
  pk.pack_int32(data_parallel_rank);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace sluice::server
