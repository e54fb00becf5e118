// libFuzzer target for the HTTP request path: raw bytes from a client go through
// Beast's request parser (the session's header limit, body limit and pipelining)
// and then the Dispatcher, with its real middleware (request ids, API keys, CORS)
// and router. The routes are stand-ins for the daemon's: each parses its body with
// the proto/ parser the real handler starts with and answers 200 or the parser's
// error, so no engine or model is needed.
//
// Every response must be a valid status, and every error an OpenAI error object.
// Build and run: see tests/fuzz/CMakeLists.txt.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <variant>

#include "proto/chat.h"
#include "proto/completions.h"
#include "proto/errors.h"
#include "proto/tokenize.h"
#include "server/http/dispatcher.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace sluice::server;
namespace proto = sluice::proto;

constexpr size_t kHeaderLimit = 16 << 10;  // smaller than the server's defaults, same code
constexpr size_t kBodyLimit = 64 << 10;
constexpr int kMaxPipelined = 4;

// A route that parses its body with `parse` and answers with the outcome.
template <typename Parse>
Handler parsing_route(Parse parse) {
  return [parse](Exchange& ex) -> asio::awaitable<void> {
    auto parsed = parse(ex.request.body());
    if (const auto* error = std::get_if<proto::ApiError>(&parsed)) {
      set_error_response(ex.response, error->status, proto::error_body(*error));
    } else {
      ex.response.result(http::status::ok);
      ex.response.body() = "{}";
    }
    co_return;
  };
}

Handler text_route(std::string_view text) {
  return [text](Exchange& ex) -> asio::awaitable<void> {
    ex.response.result(http::status::ok);
    ex.response.body() = std::string(text) + std::string(ex.param("id"));
    co_return;
  };
}

struct Server {
  Router router;
  ApiKeyAuth auth{{"sk-fuzz"}};
  Cors cors{{"http://localhost:3000"}};
  Dispatcher dispatcher{router, auth, cors};

  Server() {
    router.add(http::verb::get, "/health", text_route("ok"), true);
    router.add(http::verb::get, "/v1/models", text_route("models"));
    router.add(http::verb::get, "/v1/models/{id}", text_route("model "));
    // The default ParseOptions, as the daemon's default config.
    router.add(http::verb::post, "/v1/completions",
               parsing_route([](std::string_view body) { return proto::parse_completion_request(body); }));
    router.add(http::verb::post, "/v1/chat/completions",
               parsing_route([](std::string_view body) { return proto::parse_chat_request(body); }));
    router.add(http::verb::post, "/tokenize",
               parsing_route([](std::string_view body) { return proto::parse_tokenize_request(body); }));
    router.add(http::verb::post, "/detokenize",
               parsing_route([](std::string_view body) { return proto::parse_detokenize_request(body); }));
    router.add(http::verb::get, "/boom", [](Exchange&) -> asio::awaitable<void> {
      throw std::runtime_error("handler failure");  // must become a 500, not a crash
      co_return;
    });
  }
};

void check_response(const Response& response) {
  const unsigned status = response.result_int();
  if (status < 100 || status > 599) __builtin_trap();
  if (status < 400) return;
  const auto body = nlohmann::json::parse(response.body(), nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"]["message"].is_string()) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Server server;
  std::string_view input = sluice::fuzz::as_text(data, size);
  for (int i = 0; i < kMaxPipelined && !input.empty(); ++i) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    parser.eager(true);
    // put() stops at the end of the header and of each chunk; feed it until done.
    size_t used = 0;
    while (!parser.is_done()) {
      beast::error_code ec;
      const size_t n = parser.put(asio::buffer(input.data() + used, input.size() - used), ec);
      used += n;
      if (used > input.size()) __builtin_trap();
      if (ec == http::error::need_more && n > 0) continue;
      if (ec || n == 0) return 0;  // malformed, over a limit or cut short: the session answers and closes
    }
    input.remove_prefix(used);

    Request request = parser.release();
    const std::string request_id = request_id_for(request);
    asio::io_context ioc;
    std::optional<Dispatched> out;
    asio::co_spawn(ioc, server.dispatcher.dispatch(request, request_id),
                   [&](std::exception_ptr error, Dispatched value) {
                     if (error) __builtin_trap();  // dispatch() must answer, never throw
                     out = std::move(value);
                   });
    ioc.run();
    if (!out) __builtin_trap();
    check_response(out->response);
  }
  return 0;
}
