// KV-cache events on the wire: the msgpack payload read back field by field in
// the order llm-d's Go structs (kvevents/events.go) and vLLM's msgspec structs
// declare them, and the ZeroMQ framing, sequence numbers and replay of vLLM's
// ZmqEventPublisher.
#include <doctest/doctest.h>

#include <msgpack.hpp>

#include <chrono>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "server/kv_events/kv_event_encoding.h"
#include "server/kv_events/zmq_kv_event_publisher.h"

namespace sluice::server::unit_server_kv_events_test_kv_event_wire {
namespace {

engine::KvEventBatch sample_batch() {
  engine::KvEventBatch batch;
  batch.timestamp = 1700000000.5;
  batch.events.emplace_back(engine::KvAllBlocksCleared{});
  batch.events.emplace_back(engine::KvBlockStored{.block_hashes = {0x0102030405060708ull, 0xF0E0D0C0B0A09080ull},
                                                  .parent_block_hash = 7,
                                                  .token_ids = {1, 2, 3, 4, 5, 6, 7, 8},
                                                  .block_size = 4});
  batch.events.emplace_back(engine::KvBlockRemoved{.block_hashes = {0x0102030405060708ull}});
  return batch;
}

std::string as_string(const msgpack::object& o) {
  REQUIRE(o.type == msgpack::type::STR);
  return o.as<std::string>();
}

TEST_CASE("KV event wire: the array layout is [ts, [[tag, fields in llm-d's order]...], dp_rank]") {
  const std::string payload = encode_kv_event_batch(sample_batch(), 0, KvEventLayout::array);
  const msgpack::object_handle handle = msgpack::unpack(payload.data(), payload.size());
  const msgpack::object& batch = handle.get();
  REQUIRE(batch.type == msgpack::type::ARRAY);
  REQUIRE(batch.via.array.size == 3);
  CHECK(batch.via.array.ptr[0].type == msgpack::type::FLOAT64);
  CHECK(batch.via.array.ptr[0].as<double>() == 1700000000.5);
  CHECK(batch.via.array.ptr[2].as<int>() == 0);
  const msgpack::object& events = batch.via.array.ptr[1];
  REQUIRE(events.via.array.size == 3);

  const msgpack::object& cleared = events.via.array.ptr[0];
  REQUIRE(cleared.via.array.size == 1);
  CHECK(as_string(cleared.via.array.ptr[0]) == "AllBlocksCleared");

  // BlockStored: BlockHashes, ParentBlockHash, TokenIds, BlockSize, LoraID, Medium.
  const msgpack::object& stored = events.via.array.ptr[1];
  REQUIRE(stored.via.array.size == 7);
  const msgpack::object* f = stored.via.array.ptr;
  CHECK(as_string(f[0]) == "BlockStored");
  CHECK(f[1].as<std::vector<uint64_t>>() == std::vector<uint64_t>{0x0102030405060708ull, 0xF0E0D0C0B0A09080ull});
  CHECK(f[2].as<uint64_t>() == 7);
  CHECK(f[3].as<std::vector<uint32_t>>() == std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(f[4].as<int>() == 4);
  CHECK(f[5].is_nil());
  CHECK(as_string(f[6]) == "GPU");

  // BlockRemoved: BlockHashes, Medium.
  const msgpack::object& removed = events.via.array.ptr[2];
  REQUIRE(removed.via.array.size == 3);
  CHECK(as_string(removed.via.array.ptr[0]) == "BlockRemoved");
  CHECK(removed.via.array.ptr[1].as<std::vector<uint64_t>>() == std::vector<uint64_t>{0x0102030405060708ull});
  CHECK(as_string(removed.via.array.ptr[2]) == "GPU");
}

TEST_CASE("KV event wire: hashes are written in the 8-byte uint64 form, however small") {
  engine::KvEventBatch batch;
  batch.events.emplace_back(engine::KvBlockRemoved{.block_hashes = {5}});
  const std::string payload = encode_kv_event_batch(batch, 0, KvEventLayout::array);
  const std::string uint64_five("\xcf\x00\x00\x00\x00\x00\x00\x00\x05", 9);
  CHECK(payload.find(uint64_five) != std::string::npos);
}

TEST_CASE("KV event wire: the map layout tags each event with \"type\" and names its fields") {
  const std::string payload = encode_kv_event_batch(sample_batch(), 0, KvEventLayout::map);
  const msgpack::object_handle handle = msgpack::unpack(payload.data(), payload.size());
  const msgpack::object& events = handle.get().via.array.ptr[1];
  const msgpack::object& stored = events.via.array.ptr[1];
  REQUIRE(stored.type == msgpack::type::MAP);
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < stored.via.map.size; ++i) keys.push_back(as_string(stored.via.map.ptr[i].key));
  CHECK(keys == std::vector<std::string>{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
                                         "lora_id", "medium", "lora_name"});
  CHECK(as_string(stored.via.map.ptr[0].val) == "BlockStored");
  const msgpack::object& cleared = events.via.array.ptr[0];
  REQUIRE(cleared.via.map.size == 1);
  CHECK(as_string(cleared.via.map.ptr[0].val) == "AllBlocksCleared");
}

TEST_CASE("KV event wire: endpoints of later models are offset like vLLM's data-parallel ranks") {
  CHECK(offset_endpoint("tcp://*:5557", 0) == "tcp://*:5557");
  CHECK(offset_endpoint("tcp://*:5557", 2) == "tcp://*:5559");
  CHECK(offset_endpoint("tcp://indexer:5557", 1) == "tcp://indexer:5558");
  CHECK(offset_endpoint("tcp://127.0.0.1:*", 1) == "tcp://127.0.0.1:*");
  CHECK(offset_endpoint("ipc:///tmp/kv", 1) == "ipc:///tmp/kv_1");
  CHECK(offset_endpoint("", 3).empty());
}

uint64_t read_seq(const zmq::message_t& frame) {
  REQUIRE(frame.size() == 8);
  uint64_t seq = 0;
  for (size_t i = 0; i < 8; ++i) seq = (seq << 8) | static_cast<const unsigned char*>(frame.data())[i];
  return seq;
}

TEST_CASE("KV event publisher: [topic, seq, payload] messages without gaps, and replay from a seq") {
  KvEventPublisherOptions options;
  options.endpoint = "tcp://127.0.0.1:*";
  options.replay_endpoint = "tcp://127.0.0.1:*";
  options.topic = "kv@test@model";
  options.buffer_steps = 1000;
  ZmqKvEventPublisher publisher(options);
  publisher.start();
  zmq::context_t context;
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "kv@");
  sub.set(zmq::sockopt::rcvtimeo, 100);
  sub.connect(publisher.endpoint());

  // A SUB socket misses what is sent before its subscription reaches the publisher:
  // publish until one message arrives, then count from there.
  std::vector<zmq::message_t> frames;
  for (int attempt = 0; attempt < 300 && frames.empty(); ++attempt) {
    publisher.publish(sample_batch());
    (void)zmq::recv_multipart(sub, std::back_inserter(frames));
  }
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].to_string() == "kv@test@model");
  CHECK(frames[2].to_string() == encode_kv_event_batch(sample_batch(), 0, KvEventLayout::array));
  const uint64_t first = read_seq(frames[1]);
  // Drain what the retries queued, then five more: each seq is the one before + 1.
  uint64_t last = first;
  for (int i = 0; i < 5; ++i) publisher.publish(sample_batch());
  sub.set(zmq::sockopt::rcvtimeo, 2000);
  while (true) {
    frames.clear();
    if (!zmq::recv_multipart(sub, std::back_inserter(frames))) break;
    REQUIRE(frames.size() == 3);
    CHECK(read_seq(frames[1]) == last + 1);
    last = read_seq(frames[1]);
    sub.set(zmq::sockopt::rcvtimeo, 300);
  }
  CHECK(last >= first + 5);

  // Replay from `first`: every kept message from it on, then the end marker (-1).
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 5000);
  dealer.connect(publisher.replay_endpoint());
  const uint64_t start = first;
  std::array<unsigned char, 8> start_bytes{};
  for (int i = 0; i < 8; ++i) start_bytes[static_cast<size_t>(i)] = static_cast<unsigned char>(start >> (56 - 8 * i));
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(start_bytes), zmq::send_flags::none);
  std::vector<uint64_t> replayed;
  while (true) {
    frames.clear();
    REQUIRE(zmq::recv_multipart(dealer, std::back_inserter(frames)));
    REQUIRE(frames.size() == 3);  // [empty delimiter, seq, payload]
    CHECK(frames[0].size() == 0);
    const uint64_t seq = read_seq(frames[1]);
    if (seq == ~uint64_t{0}) {
      CHECK(frames[2].size() == 0);
      break;
    }
    CHECK(frames[2].to_string() == encode_kv_event_batch(sample_batch(), 0, KvEventLayout::array));
    replayed.push_back(seq);
  }
  REQUIRE_FALSE(replayed.empty());
  CHECK(replayed.front() == first);
  CHECK(replayed.back() == last);
  CHECK(replayed.size() == last - first + 1);
}

TEST_CASE("KV event publisher: a full queue drops the batch and counts it, never blocks") {
  KvEventPublisherOptions options;
  options.endpoint = "tcp://127.0.0.1:*";
  options.max_queue_size = 2;
  ZmqKvEventPublisher publisher(options);
  // Not started: nothing leaves the queue.
  publisher.publish(sample_batch());
  publisher.publish(sample_batch());
  CHECK(publisher.num_dropped() == 0);
  publisher.publish(sample_batch());
  CHECK(publisher.num_dropped() == 1);
}

TEST_CASE("KV event publisher: an endpoint that cannot be bound fails with its name") {
  KvEventPublisherOptions options;
  options.endpoint = "tcp://127.0.0.1:*";
  ZmqKvEventPublisher first(options);
  options.replay_endpoint = first.endpoint();  // taken by the first one's PUB socket
  CHECK_THROWS_WITH_AS(ZmqKvEventPublisher{options}, doctest::Contains("cannot bind the replay endpoint"),
                       std::runtime_error);
}

}  // namespace
}  // namespace sluice::server
