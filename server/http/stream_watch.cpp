#include "server/http/stream_watch.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include <chrono>

namespace sluice::server {

struct StreamWatch::State {
  explicit State(asio::any_io_executor strand) : timer(strand) {}
  asio::steady_timer timer;
  bool is_pending = false;      // a wake-up arrived since the last wait()
  bool is_watching = false;     // the socket read is ours to interpret
  bool is_reading = false;      // the socket read is outstanding
  bool is_client_gone = false;
};

namespace {

asio::awaitable<void> watch_socket(std::shared_ptr<StreamWatch::State> state, ClientLink* link);

}  // namespace

StreamWatch::StreamWatch(asio::any_io_executor strand, ClientLink* link)
    : state_(std::make_shared<State>(strand)), link_(link) {
  if (!link_) return;
  // Streams may run far longer than any socket deadline; writes set their own.
  link_->stream.expires_never();
  state_->is_watching = true;
  state_->is_reading = true;
  asio::co_spawn(strand, watch_socket(state_, link_), asio::detached);
}

StreamWatch::~StreamWatch() {
  for (engine::RequestStream* stream : streams_) stream->set_wakeup(nullptr);
}

void StreamWatch::attach(engine::RequestStream& stream) {
  streams_.push_back(&stream);
  // Runs on the engine thread: only hand the news to the strand.
  std::weak_ptr<State> weak = state_;
  auto executor = state_->timer.get_executor();
  stream.set_wakeup([weak, executor] {
    asio::post(executor, [weak] {
      if (auto state = weak.lock()) {
        state->is_pending = true;
        state->timer.cancel();
      }
    });
  });
}

asio::awaitable<void> StreamWatch::wait() {
  if (state_->is_pending || state_->is_client_gone) {
    state_->is_pending = false;
    co_return;
  }
  state_->timer.expires_after(std::chrono::seconds(1));
  co_await state_->timer.async_wait(use_nothrow);
  state_->is_pending = false;
}

bool StreamWatch::is_client_gone() const { return state_->is_client_gone; }

asio::awaitable<void> StreamWatch::finish() {
  for (engine::RequestStream* stream : streams_) stream->set_wakeup(nullptr);
  streams_.clear();
  if (!link_) co_return;
  state_->is_watching = false;
  if (state_->is_reading) {
    beast::error_code ignored;
    link_->stream.socket().cancel(ignored);
  }
  while (state_->is_reading) {
    state_->timer.expires_after(std::chrono::milliseconds(100));
    co_await state_->timer.async_wait(use_nothrow);
  }
}

namespace {

asio::awaitable<void> watch_socket(std::shared_ptr<StreamWatch::State> state, ClientLink* link) {
  auto [ec, n] = co_await link->stream.async_read_some(link->buffer.prepare(4096), use_nothrow);
  if (!ec) {
    link->buffer.commit(n);  // the client's next request: the session reads it later
  } else if (state->is_watching) {
    state->is_client_gone = true;
  }
  state->is_reading = false;
  state->timer.cancel();
}

}  // namespace

}  // namespace sluice::server
