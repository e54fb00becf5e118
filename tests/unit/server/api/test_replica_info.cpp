// What routers read from a replica: the shapes of /get_load, /load, /get_server_info
// and /get_model_info (replica_info.h).
#include "server/api/replica/replica_info.h"

#include <doctest/doctest.h>

#include <vector>

namespace unit_server_api_test_replica_info {

using namespace sluice;
using sluice::server::ReplicaModel;

namespace {

ReplicaModel model(std::string id, std::string kind, int32_t running, int32_t waiting, int32_t pending) {
  ReplicaModel m;
  m.info.id = std::move(id);
  m.info.kind = std::move(kind);
  m.info.architecture = m.info.kind == "text" ? "llama" : "qwen3_tts";
  m.info.context_length = 256;
  m.info.path = "/secret/dir/weights.gguf";
  m.stats.num_running = running;
  m.stats.num_waiting = waiting;
  m.stats.num_pending = pending;
  m.stats.block_size = 16;
  m.stats.num_kv_blocks = 100;
  m.max_num_seqs = 64;
  m.max_num_batched_tokens = 2048;
  return m;
}

}  // namespace

TEST_CASE("load: running and waiting sequences of every model, as integers") {
  const std::vector<ReplicaModel> models = {model("a", "text", 3, 2, 1), model("b", "text", 1, 0, 0),
                                            model("voice", "speech", 2, 0, 4)};
  const auto load = server::replica_load(models);
  CHECK(load.num_running == 6);
  CHECK(load.num_waiting == 7);  // scheduler's queue and the engine inbox

  const auto get_load = server::get_load_body(load);
  CHECK(get_load["load"].is_number_integer());  // routers read it with as_i64
  CHECK(get_load["load"] == 13);
  CHECK(get_load["num_reqs"] == 13);
  CHECK(get_load["num_running_reqs"] == 6);
  CHECK(get_load["num_waiting_reqs"] == 7);
  CHECK(server::load_body(load) == nlohmann::json{{"server_load", 13}});
  CHECK(server::get_load_body(server::replica_load({}))["load"] == 0);
}

TEST_CASE("model and server info: the served name, never the file path") {
  const std::vector<ReplicaModel> models = {model("voice", "speech", 0, 0, 0), model("tiny", "text", 0, 0, 0)};
  const auto info = server::model_info_body(models[1]);
  CHECK(info["model_path"] == "tiny");
  CHECK(info["tokenizer_path"] == "tiny");
  CHECK(info["served_model_name"] == "tiny");
  CHECK(info["is_generation"] == true);
  CHECK(info["max_context_length"] == 256);
  CHECK(info.dump().find("secret") == std::string::npos);
  CHECK(server::model_info_body(models[0])["is_generation"] == false);

  // The first text model leads, whatever the load order.
  const auto server_info = server::server_info_body(models);
  CHECK(server_info["model_id"] == "tiny");
  CHECK(server_info["model_path"] == "tiny");
  CHECK(server_info["max_total_tokens"] == 1600);  // 100 blocks of 16
  CHECK(server_info["max_running_requests"] == 64);
  CHECK(server_info["max_prefill_tokens"] == 2048);
  CHECK(server_info["dp_size"] == 1);
  CHECK(server_info["kv_block_size"] == 16);
  CHECK(server_info["instance_id"].get<std::string>().starts_with("sluice-"));
  CHECK(server::server_info_body({})["instance_id"] == server_info["instance_id"]);  // one per process
  CHECK(server_info["version"].get<std::string>().starts_with("sluice "));
  REQUIRE(server_info["models"].size() == 2);
  CHECK(server_info["models"][0]["id"] == "voice");
  CHECK(server_info["models"][0]["is_generation"] == false);
  CHECK(server_info.dump().find("secret") == std::string::npos);
  // sglang-router reads "model" as an alias of "model_id": both would be a duplicate.
  CHECK_FALSE(server_info.contains("model"));
  CHECK_FALSE(server_info.contains("block_size"));  // and "block_size" of "kv_block_size" in vllm-router
}
}  // namespace unit_server_api_test_replica_info
