#include "server/cli/serve_command.h"

#include <prometheus/registry.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <exception>
#include <sstream>
#include <string_view>
#include <thread>

#include "config/config_loader.h"
#include "engine/loader/load_stop.h"
#include "server/http/dispatcher.h"
#include "server/metrics/http_metrics.h"
#include "server/http/http_server.h"
#include "server/http/middleware.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"
#include "server/api/routes.h"
#include "server/api/openai/routes_embeddings.h"
#include "server/api/openai/routes_generate.h"
#include "server/api/anthropic/routes_messages.h"
#include "server/api/replica/routes_replica.h"
#include "server/api/responses/routes_responses.h"
#include "server/api/speech/routes_speech.h"
#include "server/api/speech/routes_voices.h"
#include "server/services/service_state.h"
#include "server/services/speech_service.h"

namespace sluice::server {

void setup_logging(const std::string& level) {
  auto logger = spdlog::stdout_color_mt("sluice");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::flush_on(spdlog::level::info);
}

namespace {

// Speech audio encoding jobs in hand at once (one per speech response at most).
constexpr int kMaxAudioEncodeJobs = 256;

void fail_loading(std::string_view what, HttpServer& server, std::atomic<int>& exit_code) {
  spdlog::error("cannot load model: {}", what);
  exit_code = 1;
  server.begin_shutdown();
}

// Registers every configured model and starts its engine; on failure asks the
// server to shut down. A shutdown while loading (SIGTERM) stops the load between
// models and between tensors: the daemon exits without waiting for the rest.
void load_models(const config::Config& config, ServiceState& state, ModelServices& services,
                 prometheus::Registry& registry, HttpServer& server, std::atomic<int>& exit_code,
                 engine::ComputeTurns& cpu_turns) {
  loader::LoadStopScope stop_scope(state.draining);
  size_t num_loaded = 0;
  for (const auto& model : config.models) {
    try {
      loader::check_load_stop();
      server::LoadedModel loaded = server::register_model(model);
      if (loaded.is_speech()) {
        auto service = SpeechService::load(loaded, config, model, registry, &cpu_turns);
        loaded.info.context_length = service->engine().max_model_len();
        services.add(std::move(loaded), std::move(service));
        ++num_loaded;
        continue;
      }
      auto service = ModelService::load(loaded, config, model, registry, &cpu_turns);
      // The engine may have shrunk the trained context to its KV cache: /v1/models
      // reports what is served.
      loaded.info.context_length = service->engine().max_model_len();
      loaded.info.has_chat_template = service->has_chat_template();
      services.add(std::move(loaded), std::move(service));
      ++num_loaded;
    } catch (const loader::LoadStopped&) {
      spdlog::warn("shutting down while loading: stopped loading models ({} of {} loaded; {} was next or "
                   "loading)",
                   num_loaded, config.models.size(), model.path);
      return;
    } catch (const std::exception& e) {
      fail_loading(e.what(), server, exit_code);
      return;
    } catch (...) {
      fail_loading("an exception of unknown type", server, exit_code);
      return;
    }
  }
  services.mark_all_loaded();
  state.ready = true;
  spdlog::info("ready: {} model(s) registered, serving /v1/completions, /v1/chat/completions, /v1/responses, "
               "/v1/messages and /v1/embeddings{}",
               services.size(), services.speech_services().empty() ? "" : " and /v1/audio/speech");
}

}  // namespace

int run_serve(const config::Config& config) {
  setup_logging(config.log_level);
  spdlog::info("sluice starting");
  std::istringstream lines(config::describe(config));
  for (std::string line; std::getline(lines, line);) spdlog::info("config: {}", line);

  prometheus::Registry registry;
  HttpMetrics http_metrics(registry);
  MetricsExposition exposition(registry);
  ServiceState state;
  // Every CPU engine's steps take turns on the cores (engine/compute_turns.h); it
  // outlives the engines, which `services` owns.
  engine::ComputeTurns cpu_turns(true);
  ModelServices services;  // engines: stopped explicitly once HTTP has drained

  // Tokenizing and chat templates run here, never on an I/O thread.
  PrepPool prep(prep_threads(config.tokenizer_threads), config.tokenizer_queue_size, &registry);
  Router router;
  add_routes(router, state, exposition, services, config.health_step_timeout_s);
  add_generation_routes(router, services, config, prep);
  add_messages_routes(router, services, config, prep);
  add_tokenize_routes(router, services, config, prep);
  ResponseStore response_store(response_store_limits(config));
  add_responses_routes(router, services, config, prep, response_store);
  add_embeddings_routes(router, services, config, prep);
  // Speech audio is encoded (FFmpeg, sonic, soxr) here, never on an I/O thread; a
  // stream has at most one chunk in hand, so the bound is never met in practice.
  PrepPool audio_encoder(2, kMaxAudioEncodeJobs);
  add_speech_routes(router, services, config, prep, audio_encoder);
  add_voice_routes(router, services);
  add_replica_routes(router, services, prep);
  ApiKeyAuth auth(config.api_keys);
  Cors cors(config.cors_origins);
  Dispatcher dispatcher(router, auth, cors);
  if (auth.is_enabled()) spdlog::info("API keys required ({} configured)", config.api_keys.size());
  if (cors.is_enabled()) spdlog::info("CORS enabled for {} origin(s)", config.cors_origins.size());

  HttpServer server(config, dispatcher, http_metrics, state);
  try {
    server.listen();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }

  server.on_grace_over([&services] { services.stop_all(); });
  std::atomic<int> exit_code{0};
  std::thread loader([&] { load_models(config, state, services, registry, server, exit_code, cpu_turns); });
  server.run();
  // Before the I/O threads' objects go: no job may resume a session after.
  prep.join();
  audio_encoder.join();
  loader.join();
  // After the drain: requests still running (past the grace period) finish as "abort".
  services.stop_all();
  spdlog::info("exiting with code {}", exit_code.load());
  return exit_code;
}

}  // namespace sluice::server
