#include "server/kv_events/zmq_kv_event_publisher.h"

#include <spdlog/spdlog.h>

#include <array>
#include <bit>
#include <chrono>
#include <iterator>
#include <span>
#include <stdexcept>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace sluice::server {
namespace {

// How often the publisher thread looks at the replay socket while no batch comes.
constexpr auto kReplayPollInterval = std::chrono::milliseconds(20);
// Closing waits this long for queued messages to leave, then drops them.
constexpr int kLingerMs = 500;

std::array<char, 8> big_endian(uint64_t value) {
  std::array<char, 8> out{};
  for (int i = 7; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<char>(value & 0xFF);
    value >>= 8;
  }
  return out;
}

bool binds(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://");
}

}  // namespace

std::string offset_endpoint(const std::string& endpoint, int index) {
  if (index == 0 || endpoint.empty()) return endpoint;
  if (endpoint.starts_with("tcp://")) {
    const size_t colon = endpoint.rfind(':');
    const std::string port = endpoint.substr(colon + 1);
    if (colon != std::string::npos && !port.empty() && port != "*" &&
        port.find_first_not_of("0123456789") == std::string::npos)
      return endpoint.substr(0, colon + 1) + std::to_string(std::stoi(port) + index);
    return endpoint;  // a wildcard port: every model gets its own anyway
  }
  return endpoint + "_" + std::to_string(index);
}

ZmqKvEventPublisher::ZmqKvEventPublisher(KvEventPublisherOptions options)
    : options_(std::move(options)), context_(std::make_unique<zmq::context_t>(1)) {
  try {
    pub_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::pub);
    pub_->set(zmq::sockopt::sndhwm, options_.hwm);
    pub_->set(zmq::sockopt::linger, kLingerMs);
    if (binds(options_.endpoint)) {
      pub_->bind(options_.endpoint);
      bound_endpoint_ = pub_->get(zmq::sockopt::last_endpoint);
    } else {
      pub_->connect(options_.endpoint);
      bound_endpoint_ = options_.endpoint;
    }
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("KV events: cannot open " + options_.endpoint + ": " + e.what());
  }
  if (!options_.replay_endpoint.empty()) {
    try {
      replay_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::router);
      replay_->set(zmq::sockopt::linger, 0);
      replay_->bind(options_.replay_endpoint);
      bound_replay_endpoint_ = replay_->get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error("KV events: cannot bind the replay endpoint " + options_.replay_endpoint + ": " +
                               e.what());
    }
  }
}

ZmqKvEventPublisher::~ZmqKvEventPublisher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  replay_.reset();
  pub_.reset();
  context_.reset();
}

void ZmqKvEventPublisher::start() {
  thread_ = std::thread([this] { run(); });
}

void ZmqKvEventPublisher::publish(engine::KvEventBatch batch) {
  {
    std::lock_guard lock(mutex_);
    if (static_cast<int64_t>(queue_.size()) < options_.max_queue_size) {
      queue_.push_back(std::move(batch));
      wake_.notify_one();
      return;
    }
  }
  // Logged at the first drop and at every power of two after it: a slow or stuck
  // publisher must not flood the log from the engine thread either.
  const uint64_t dropped = dropped_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (std::has_single_bit(dropped))
    spdlog::warn("KV events {}: the publisher queue is full ({} batches): {} batch(es) dropped so far",
                 options_.topic, options_.max_queue_size, dropped);
}

void ZmqKvEventPublisher::run() {
  std::vector<engine::KvEventBatch> batches;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      const auto ready = [this] { return stopping_ || !queue_.empty(); };
      if (replay_) {
        wake_.wait_for(lock, kReplayPollInterval, ready);
      } else {
        wake_.wait(lock, ready);
      }
      if (stopping_ && queue_.empty()) return;
      while (!queue_.empty()) {
        batches.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    for (const engine::KvEventBatch& batch : batches) send(batch);
    batches.clear();
    if (replay_) serve_replay();
  }
}

void ZmqKvEventPublisher::send(const engine::KvEventBatch& batch) {
  std::string payload = encode_kv_event_batch(batch, 0, options_.layout);
  const uint64_t seq = next_seq_++;
  const std::array<char, 8> seq_bytes = big_endian(seq);
  try {
    // A PUB socket never blocks: past its high-water mark it drops the message.
    pub_->send(zmq::buffer(options_.topic), zmq::send_flags::sndmore);
    pub_->send(zmq::buffer(seq_bytes), zmq::send_flags::sndmore);
    pub_->send(zmq::buffer(payload), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    spdlog::warn("KV events {}: sending message {} failed: {}", options_.topic, seq, e.what());
  }
  if (replay_) {
    kept_.emplace_back(seq, std::move(payload));
    while (static_cast<int64_t>(kept_.size()) > options_.buffer_steps) kept_.pop_front();
  }
}

void ZmqKvEventPublisher::serve_replay() {
  std::vector<zmq::message_t> request;
  while (true) {
    request.clear();
    try {
      if (!zmq::recv_multipart(*replay_, std::back_inserter(request), zmq::recv_flags::dontwait)) return;
    } catch (const zmq::error_t& e) {
      spdlog::warn("KV events {}: replay request: {}", options_.topic, e.what());
      return;
    }
    // [client identity, empty delimiter, start seq]: what a REQ or DEALER client sends.
    if (request.size() != 3 || request[2].size() != 8) {
      spdlog::debug("KV events {}: ignoring a malformed replay request ({} frames)", options_.topic,
                    request.size());
      continue;
    }
    uint64_t start = 0;
    for (const auto byte : std::span(static_cast<const unsigned char*>(request[2].data()), 8))
      start = (start << 8) | byte;
    const std::string client = request[0].to_string();
    auto reply = [&](uint64_t seq, const std::string& payload) {
      const std::array<char, 8> seq_bytes = big_endian(seq);
      replay_->send(zmq::buffer(client), zmq::send_flags::sndmore);
      replay_->send(zmq::message_t(), zmq::send_flags::sndmore);
      replay_->send(zmq::buffer(seq_bytes), zmq::send_flags::sndmore);
      replay_->send(zmq::buffer(payload), zmq::send_flags::none);
    };
    try {
      for (const auto& [seq, payload] : kept_)
        if (seq >= start) reply(seq, payload);
      reply(~uint64_t{0}, std::string());  // the end marker: -1 as a signed 8-byte integer
    } catch (const zmq::error_t& e) {
      spdlog::warn("KV events {}: answering a replay request: {}", options_.topic, e.what());
    }
  }
}

}  // namespace sluice::server
