#pragma once
// StreamPump: the one loop between a route and its engine requests, used by every
// route that waits on the engine (chat, completions, Responses, Messages, embeddings,
// speech). The route's `step` takes what the engine has sent (pops the streams, folds,
// encodes, writes) and says whether its answer is complete; between steps the pump
// waits on the connection's strand for the next engine event or for the client to
// leave (StreamWatch). `pump_streams` owns the pump's lifetime: whatever way the
// route's answer ends (done, client gone, a failed write, an exception), every stream
// that has not finished is cancelled, and aborted in the engine, so that its KV
// blocks are freed at the engine's next step.
//
// Used by one handler on one strand.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/request_stream.h"
#include "server/http/router.h"
#include "server/http/stream_watch.h"

namespace sluice::server {

class StreamPump {
 public:
  // Removes a request from the engine's queue or batch at once (the stream's cancel
  // flag alone waits for the engine to read it); empty when the engine has none.
  using Abort = std::function<void(const std::string& request_id)>;
  // Takes what the engine has sent; true once the answer is complete.
  using Step = std::function<asio::awaitable<bool>()>;
  using Answer = std::function<asio::awaitable<void>(StreamPump&)>;

  StreamPump(asio::any_io_executor strand, ClientLink* link,
             std::vector<std::shared_ptr<engine::RequestStream>> streams, Abort abort);

  // Calls `step`, then waits for engine events and calls it again, until it says the
  // answer is complete (true) or the client has left (false). `step` is a named
  // object (see pump_streams).
  asio::awaitable<bool> run(const Step& step);
  bool is_client_gone() const { return watch_.is_client_gone(); }
  // Cancels (and aborts) every stream whose request has not finished.
  void cancel_unfinished();
  // Stops watching the socket; the session owns it again.
  asio::awaitable<void> finish() { return watch_.finish(); }

 private:
  StreamWatch watch_;
  std::vector<std::shared_ptr<engine::RequestStream>> streams_;
  Abort abort_;
};

class ModelService;
// The Abort of a text model's engine.
StreamPump::Abort engine_abort(ModelService& model);

// Runs `answer` with a pump on `streams`, then cancels what has not finished and stops
// watching the socket; an exception from `answer` is rethrown after that.
// The coroutine keeps references to its arguments: callers pass named objects that
// outlive it.
asio::awaitable<void> pump_streams(Exchange& ex, const std::vector<std::shared_ptr<engine::RequestStream>>& streams,
                                   const StreamPump::Abort& abort, const StreamPump::Answer& answer);

}  // namespace sluice::server
