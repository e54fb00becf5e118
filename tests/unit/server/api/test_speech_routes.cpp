// The speech routes before any speech model is in.
#include "server/api/speech/routes_speech.h"
#include "server/api/speech/routes_voices.h"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <optional>

#include "server/http/dispatcher.h"

namespace unit_server_api_test_speech_routes {

using namespace sluice;
using namespace sluice::server;

namespace {

Dispatched get(const Dispatcher& dispatcher, const char* target) {
  asio::io_context ioc;
  std::optional<Dispatched> out;
  const Request request{http::verb::get, target, 11};
  const std::string request_id = "req-test";  // outlives ioc.run(): dispatch() keeps references
  asio::co_spawn(ioc, dispatcher.dispatch(request, request_id),
                 [&](std::exception_ptr, Dispatched value) { out = std::move(value); });
  ioc.run();
  REQUIRE(out.has_value());
  return std::move(*out);
}

}  // namespace

TEST_CASE("/v1/audio/voices is 503 while models load, as the model routes are") {
  config::Config config;
  ModelServices services;
  Router router;
  PrepPool prep(1, 8);
  PrepPool encoder(1, 8);
  add_speech_routes(router, services, config, prep, encoder);
  add_voice_routes(router, services);
  ApiKeyAuth auth({});
  Cors cors({});
  Dispatcher dispatcher(router, auth, cors);

  const Dispatched loading = get(dispatcher, "/v1/audio/voices");
  CHECK(loading.response.result_int() == 503);
  CHECK(nlohmann::json::parse(loading.response.body())["error"]["message"] == "Models are still loading");

  services.mark_all_loaded();  // none of them speaks: an empty list, no longer an error
  const Dispatched loaded = get(dispatcher, "/v1/audio/voices");
  CHECK(loaded.response.result_int() == 200);
  CHECK(nlohmann::json::parse(loaded.response.body())["voices"].empty());
}
}  // namespace unit_server_api_test_speech_routes
