#pragma once
// Publishes one model's KV-cache events over ZeroMQ the way vLLM's
// ZmqEventPublisher does, so that routers built for vLLM (llm-d's KV-cache
// manager, vllm-router's kv_aware policy) read sluice's as they read vLLM's:
//
//   PUB socket, one message per engine step:  [topic, seq (8 bytes, big-endian), payload]
//   payload: kv_event_encoding.h; seq counts messages from 0, without gaps.
//   optional ROUTER replay socket: a request [start seq (8 bytes, big-endian)]
//   (after the DEALER/REQ envelope) is answered with every kept message from that
//   seq on, each as [seq, payload], then [-1 as 8 bytes, empty].
//
// An endpoint containing "*" or "::", or an ipc:// or inproc:// one, is bound;
// any other is connected to (vLLM's rule: llm-d's indexer binds a SUB socket and
// the engines connect to it). The replay endpoint is always bound.
//
// publish() runs on the engine thread and never blocks: it queues the batch for
// the publisher thread, which encodes and sends it. With max_queue_size batches
// already waiting the batch is dropped, counted and logged (it never gets a seq,
// so subscribers cannot see it in the numbering: the log is where it shows).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "engine/scheduling/kv_events.h"
#include "server/kv_events/kv_event_encoding.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace sluice::server {

struct KvEventPublisherOptions {
  std::string endpoint = "tcp://*:5557";
  std::string replay_endpoint;  // empty: no replay socket
  std::string topic;
  int64_t buffer_steps = 10'000;     // messages kept for replay
  int64_t max_queue_size = 100'000;  // batches waiting for the publisher thread
  int32_t hwm = 100'000;             // the PUB socket's send high-water mark
  KvEventLayout layout = KvEventLayout::array;
};

class ZmqKvEventPublisher final : public engine::KvEventSink {
 public:
  // Opens the sockets; throws std::runtime_error naming the endpoint when one
  // cannot be bound or connected. start() begins sending.
  explicit ZmqKvEventPublisher(KvEventPublisherOptions options);
  ~ZmqKvEventPublisher() override;  // sends what is queued, then closes the sockets
  ZmqKvEventPublisher(const ZmqKvEventPublisher&) = delete;
  ZmqKvEventPublisher& operator=(const ZmqKvEventPublisher&) = delete;

  void start();
  void publish(engine::KvEventBatch batch) override;

  // Where the sockets ended up (a bound wildcard port resolved), for the log.
  const std::string& endpoint() const { return bound_endpoint_; }
  const std::string& replay_endpoint() const { return bound_replay_endpoint_; }
  const std::string& topic() const { return options_.topic; }
  uint64_t num_dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  void run();
  void send(const engine::KvEventBatch& batch);
  void serve_replay();

  KvEventPublisherOptions options_;
  std::unique_ptr<zmq::context_t> context_;
  std::unique_ptr<zmq::socket_t> pub_;
  std::unique_ptr<zmq::socket_t> replay_;  // null: no replay
  std::string bound_endpoint_;
  std::string bound_replay_endpoint_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<engine::KvEventBatch> queue_;  // guarded by mutex_
  bool stopping_ = false;                   // guarded by mutex_
  std::atomic<uint64_t> dropped_{0};

  // Publisher thread only.
  uint64_t next_seq_ = 0;
  std::deque<std::pair<uint64_t, std::string>> kept_;  // (seq, payload) for replay

  std::thread thread_;
};

// The endpoint of the index-th model of the daemon: tcp ports counted up from the
// configured one (vLLM offsets them by data-parallel rank the same way), other
// transports suffixed "_<index>". Index 0 is the endpoint itself.
std::string offset_endpoint(const std::string& endpoint, int index);

}  // namespace sluice::server
