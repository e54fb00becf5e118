#pragma once
// What routers and gateways read from a replica besides the OpenAI API: its load
// (GET /get_load, /load), what it serves (GET /get_server_info, /get_model_info and
// their /server_info, /model_info aliases), as the router lineage of SGLang and vLLM
// (sglang-router, vllm-router) and vLLM's own server shape them. Plain data in, JSON
// out, so the routes stay one-liners and the shapes are unit-tested.
//
// Load is counted in sequences, as vLLM's gauges count them: the running and waiting
// sequences of every model, i.e. the sum of vllm:num_requests_running and
// vllm:num_requests_waiting over model_name. Routers compare it across replicas.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "server/services/model_status.h"

namespace sluice::server {

struct ReplicaLoad {
  int64_t num_running = 0;
  int64_t num_waiting = 0;  // queued in the scheduler or not yet seen by the engine thread
  int64_t total() const { return num_running + num_waiting; }
};

ReplicaLoad replica_load(const std::vector<ReplicaModel>& models);

// /get_load (SGLang's shape, what sglang-router's and vllm-router's power_of_two read:
// an integer "load"): {"load", "num_reqs", "num_running_reqs", "num_waiting_reqs"}.
nlohmann::json get_load_body(const ReplicaLoad& load);
// /load (vLLM's server-load endpoint): {"server_load"}.
nlohmann::json load_body(const ReplicaLoad& load);

// /get_model_info: SGLang's fields for `model`. model_path and tokenizer_path are the
// served name (what clients send as "model", and what routers take a worker's model
// id from), never a file path: these endpoints answer without an API key.
nlohmann::json model_info_body(const ReplicaModel& model);

// /get_server_info: the first text model's figures at the top level (SGLang's keys:
// model_path, served_model_name, tokenizer_path, max_total_tokens, max_running_requests,
// max_prefill_tokens, context_length, dp_size ...) and every model under "models".
// `models` in load order; the first text model leads (or the first model when none is).
nlohmann::json server_info_body(const std::vector<ReplicaModel>& models);

}  // namespace sluice::server
