#include "server/http/session.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/write.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "proto/errors.h"
#include "server/http/request_reader.h"

namespace sluice::server {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds to_duration(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// The client went away or ran out of time, or its request ran us out of memory:
// close without an answer.
bool needs_no_answer(const beast::error_code& ec) {
  return ec == beast::error::timeout || ec == http::error::end_of_stream ||
         ec == asio::error::eof || ec == asio::error::operation_aborted ||
         ec == asio::error::connection_reset || ec == asio::error::no_memory;
}

// The requests a connection in a probe slot may make (connection_tracker.h).
bool is_probe(const Request& header) {
  if (header.method() != http::verb::get && header.method() != http::verb::head) return false;
  std::string_view target = header.target();
  std::string_view path = target.substr(0, target.find('?'));
  return path == "/health" || path == "/ready" || path == "/metrics";
}

// RFC 9112 6.1: a server that receives a transfer coding it does not understand
// answers 501. Only chunked is understood; Beast would read "gzip, chunked" as
// plain chunked and hand the handler compressed bytes. Returns the first other
// coding, or "" when there is none.
std::string unsupported_transfer_coding(const Request& header) {
  auto [begin, end] = header.equal_range(http::field::transfer_encoding);
  for (auto field = begin; field != end; ++field) {
    std::string_view list = field->value();
    while (!list.empty()) {
      const size_t comma = list.find(',');
      std::string_view coding = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      coding = coding.substr(0, coding.find(';'));  // transfer parameters
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
      if (!coding.empty() && !beast::iequals(coding, "chunked")) return std::string(coding);
    }
  }
  return {};
}

// What the access log and metrics need about a request, filled as it is parsed.
struct RequestRecord {
  Clock::time_point start = Clock::now();
  std::string request_id;
  std::string method = "-";
  std::string target = "-";
  std::string_view route = "unmatched";
  std::string remote;
  bool is_head = false;  // the response goes without its body
};

class Session {
 public:
  Session(ConnectionTracker::Handle connection, const SessionContext& ctx)
      : connection_(std::move(connection)), stream_(connection_->stream), ctx_(ctx) {
    beast::error_code ec;
    auto endpoint = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }

  asio::awaitable<void> run() {
    while (co_await serve_one()) {
    }
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

 private:
  // Serves one request; false when the connection should close.
  asio::awaitable<bool> serve_one() {
    const auto& config = ctx_.config;
    // A new connection's header deadline runs from accept, so connections that never
    // send a byte cannot hold max_connections slots for the idle timeout. On a
    // kept-alive connection it runs from the request's first byte. Either way,
    // dribbling a header byte by byte (slowloris) buys nothing.
    const bool is_first = std::exchange(is_first_request_, false);
    auto header_deadline = Clock::now() + to_duration(config.header_timeout_s);
    if (buffer_.size() == 0) {
      if (!ctx_.tracker.enter_idle(connection_)) co_return false;
      auto idle_deadline = Clock::now() + to_duration(config.idle_timeout_s);
      stream_.expires_at(is_first ? std::min(header_deadline, idle_deadline) : idle_deadline);
      auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(4096), use_nothrow);
      if (ec) co_return false;
      buffer_.commit(n);
    }
    ctx_.tracker.enter_busy(connection_);
    if (!is_first) header_deadline = Clock::now() + to_duration(config.header_timeout_s);
    stream_.expires_at(header_deadline);

    RequestRecord record;
    record.remote = remote_;
    RequestParser parser;
    parser.header_limit(config.max_header_bytes);
    // The body limit is applied once the header is in, so an oversized declared
    // length is answered with 413 instead of failing the header read.
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());

    std::size_t header_bytes = 0;
    auto header_ec = co_await read_request_part(stream_, buffer_, parser, ParseGoal::header,
                                                config.max_header_bytes, header_bytes);
    if (header_ec) {
      if (header_ec == http::error::header_limit) {
        record.request_id = make_request_id();
        co_await send_error(record, nullptr, proto::header_too_large());
      } else if (!needs_no_answer(header_ec)) {
        record.request_id = make_request_id();
        co_await send_error(record, nullptr,
                            proto::invalid_request("Malformed HTTP request: " + header_ec.message()));
      }
      co_return false;
    }

    const auto& header = parser.get();
    record.request_id = request_id_for(header);
    record.method = std::string(header.method_string());
    record.target = std::string(header.target());
    record.is_head = header.method() == http::verb::head;
    GaugeHold in_flight(ctx_.metrics.requests_in_flight);
    if (connection_->probe_only) {
      // Over the caps: one probe, then the slot goes back; anything else is refused.
      ctx_.tracker.header_arrived(connection_);
      if (!is_probe(header)) {
        co_await send_error(record, &header, proto::too_many_connections());
        co_return false;
      }
      co_await finish_request(parser, record, header_bytes);
      co_return false;
    }
    co_return co_await finish_request(parser, record, header_bytes);
  }

  asio::awaitable<bool> finish_request(RequestParser& parser, RequestRecord& record,
                                       std::size_t header_bytes) {
    const auto& config = ctx_.config;
    const auto& header = parser.get();
    if (std::string coding = unsupported_transfer_coding(header); !coding.empty()) {
      // The body cannot be read, so the connection cannot be reused after. (A named
      // error: g++ 12 destroys a braced temporary in a co_await expression twice.)
      const proto::ApiError error{501, "Transfer-Encoding '" + coding + "' is not supported: only chunked is",
                                  "invalid_request_error", "", "unsupported_transfer_encoding"};
      co_await send_error(record, &header, error);
      co_return false;
    }
    parser.body_limit(config.max_body_bytes);
    auto declared = parser.content_length();
    if (declared && *declared > config.max_body_bytes) {
      // Refused before reading the body; the connection cannot be reused after.
      co_await send_error(record, &header, proto::payload_too_large(config.max_body_bytes));
      co_return false;
    }
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      http::response<http::empty_body> go_on{http::status::continue_, header.version()};
      stream_.expires_after(to_duration(config.write_timeout_s));
      auto [ec, n] = co_await http::async_write(stream_, go_on, use_nothrow);
      if (ec) co_return false;
    }

    stream_.expires_after(to_duration(config.body_timeout_s));
    // A chunked body's trailer section is header fields too: it gets what the header
    // left of max_header_bytes.
    std::size_t trailer_budget = config.max_header_bytes - std::min<std::size_t>(
                                                               header_bytes, config.max_header_bytes);
    std::size_t body_bytes = 0;
    auto body_ec = co_await read_request_part(stream_, buffer_, parser, ParseGoal::message,
                                              trailer_budget, body_bytes);
    if (body_ec == http::error::body_limit) {
      co_await send_error(record, &header, proto::payload_too_large(config.max_body_bytes));
      co_return false;
    }
    if (body_ec == http::error::header_limit) {
      co_await send_error(record, &header, proto::header_too_large());
      co_return false;
    }
    if (body_ec) {
      if (!needs_no_answer(body_ec)) {
        co_await send_error(record, &header,
                            proto::invalid_request("Malformed HTTP request body: " + body_ec.message()));
      }
      co_return false;
    }

    Request request = parser.release();
    ClientLink connection{stream_, buffer_, config.write_timeout_s};
    Dispatched dispatched =
        co_await ctx_.dispatcher.dispatch(request, record.request_id, &connection);
    record.route = dispatched.route;
    bool keep_alive = request.keep_alive() && !ctx_.tracker.is_draining();
    if (dispatched.sent) {
      stream_.expires_never();
      log_and_count(record, dispatched.response.result_int(), dispatched.bytes_sent, {});
      co_return keep_alive && dispatched.keep_alive;
    }
    co_return co_await send(record, dispatched.response, keep_alive);
  }

  asio::awaitable<void> send_error(RequestRecord& record, const Request* header,
                                   const proto::ApiError& error) {
    Response response;
    if (header) {
      response.version(header->version());
      ctx_.dispatcher.decorate(*header, record.request_id, response);
    } else {
      response.set(http::field::server, "sluice");
      response.set("X-Request-Id", record.request_id);
    }
    set_error_response(response, error.status, proto::error_body(error));
    if (error.status == 503) response.set(http::field::retry_after, "1");
    co_await send(record, response, /*keep_alive=*/false);
  }

  // Writes the response, then logs and counts it. False when the connection should close.
  asio::awaitable<bool> send(RequestRecord& record, Response& response, bool keep_alive) {
    response.keep_alive(keep_alive);
    response.prepare_payload();
    // HEAD: the headers GET would send, Content-Length included, and no body.
    if (record.is_head) response.body().clear();
    stream_.expires_after(to_duration(ctx_.config.write_timeout_s));
    auto [ec, bytes] = co_await http::async_write(stream_, response, use_nothrow);
    stream_.expires_never();

    log_and_count(record, response.result_int(), response.body().size(), ec);
    co_return !ec && keep_alive;
  }

  void log_and_count(const RequestRecord& record, unsigned status, uint64_t bytes,
                     beast::error_code ec) {
    double seconds = std::chrono::duration<double>(Clock::now() - record.start).count();
    ctx_.metrics.record(record.route, record.method, status, seconds);
    if (ctx_.config.access_log) {
      spdlog::info("{} \"{} {}\" {} {}B {:.2f}ms id={}{}", record.remote, record.method,
                   record.target, status, bytes, seconds * 1000.0, record.request_id,
                   ec ? " (write failed: " + ec.message() + ")" : "");
    }
  }

  ConnectionTracker::Handle connection_;
  beast::tcp_stream& stream_;
  const SessionContext& ctx_;
  beast::flat_buffer buffer_;
  std::string remote_ = "-";
  bool is_first_request_ = true;
};

// The connection counted open, in the gauge and the tracker, exactly while its
// session runs, however that ends.
class OpenConnection {
 public:
  OpenConnection(ConnectionTracker::Handle connection, const SessionContext& ctx)
      : connection_(std::move(connection)), ctx_(ctx), open_(ctx.metrics.connections_open) {}
  ~OpenConnection() { ctx_.tracker.remove(connection_); }
  OpenConnection(const OpenConnection&) = delete;
  OpenConnection& operator=(const OpenConnection&) = delete;

 private:
  ConnectionTracker::Handle connection_;
  const SessionContext& ctx_;
  GaugeHold open_;
};

void close_after_failure(Connection& connection, std::string_view what) {
  spdlog::error("closing a connection after an unexpected error: {}", what);
  beast::error_code ignored;
  connection.stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  connection.stream.close();
}

}  // namespace

asio::awaitable<void> run_session(ConnectionTracker::Handle connection, const SessionContext& ctx) {
  // The tracker admitted the connection (connection_tracker.h); it forgets it here.
  OpenConnection open(connection, ctx);
  // A safety net: the coroutine is detached, so an exception would otherwise end it
  // silently, the socket left open.
  try {
    Session session(connection, ctx);
    co_await session.run();
  } catch (const std::exception& e) {
    close_after_failure(*connection, e.what());
  } catch (...) {
    close_after_failure(*connection, "an exception of unknown type");
  }
}

asio::awaitable<void> reject_connection(asio::ip::tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  Response response{http::status::service_unavailable, 11};
  response.set(http::field::server, "sluice");
  response.set(http::field::retry_after, "1");
  set_error_response(response, 503, proto::error_body(proto::too_many_connections()));
  response.keep_alive(false);
  response.prepare_payload();
  stream.expires_after(std::chrono::seconds(2));
  co_await http::async_write(stream, response, use_nothrow);
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace sluice::server
