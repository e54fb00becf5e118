// What a speech engine takes from the daemon's config.
#include "server/services/speech_service.h"

#include <doctest/doctest.h>

namespace sluice::server::unit_server_services_test_speech_service {
namespace {

TEST_CASE("speech service: the engine config comes from the daemon's, voices capped at 32") {
  config::Config config;
  config.max_num_seqs = 64;
  config.max_waiting = 17;
  config.block_size = 32;
  config.request_timeout_s = 2.5;
  engine::tts::SpeechEngineConfig c = speech_engine_config("tts", config);
  CHECK(c.model_name == "tts");
  CHECK(c.max_num_seqs == 32);
  CHECK(c.max_waiting == 17);
  CHECK(c.block_size == 32);
  CHECK(c.default_deadline == std::chrono::milliseconds(2500));
  CHECK(c.kv_cache_bytes == engine::tts::SpeechEngineConfig().kv_cache_bytes);  // 0: the engine's default

  config.max_num_seqs = 4;
  config.kv_cache_bytes = 64ull << 20;
  c = speech_engine_config("tts", config);
  CHECK(c.max_num_seqs == 4);
  CHECK(c.kv_cache_bytes == 64ull << 20);
}

}  // namespace
}  // namespace sluice::server
