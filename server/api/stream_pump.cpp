#include "server/api/stream_pump.h"

#include <exception>
#include <utility>

#include "server/services/model_service.h"

namespace sluice::server {

StreamPump::StreamPump(asio::any_io_executor strand, ClientLink* link,
                       std::vector<std::shared_ptr<engine::RequestStream>> streams, Abort abort)
    : watch_(std::move(strand), link), streams_(std::move(streams)), abort_(std::move(abort)) {
  for (auto& stream : streams_) watch_.attach(*stream);
}

// Written without `for (;;)` and a co_return inside it: g++ 12 compiled that form of
// this coroutine into one that trapped (SIGILL) on its first resume.
asio::awaitable<bool> StreamPump::run(const Step& step) {
  bool done = co_await step();
  while (!done && !watch_.is_client_gone()) {
    co_await watch_.wait();
    done = co_await step();
  }
  co_return done;
}

void StreamPump::cancel_unfinished() {
  for (auto& stream : streams_) {
    if (stream->is_finished() || stream->is_cancelled()) continue;
    stream->cancel();
    if (abort_) abort_(stream->request_id());
  }
}

StreamPump::Abort engine_abort(ModelService& model) {
  return [&engine = model.engine()](const std::string& request_id) { engine.abort(request_id); };
}

asio::awaitable<void> pump_streams(Exchange& ex, const std::vector<std::shared_ptr<engine::RequestStream>>& streams,
                                   const StreamPump::Abort& abort, const StreamPump::Answer& answer) {
  StreamPump pump(co_await asio::this_coro::executor, ex.connection, streams, abort);
  std::exception_ptr failure;
  try {
    co_await answer(pump);
  } catch (...) {
    failure = std::current_exception();
  }
  pump.cancel_unfinished();
  co_await pump.finish();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace sluice::server
