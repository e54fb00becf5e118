#include "server/api/replica/replica_info.h"

#include <cstdio>
#include <random>
#include <string>

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "unknown"
#endif

namespace sluice::server {

ReplicaLoad replica_load(const std::vector<ReplicaModel>& models) {
  ReplicaLoad load;
  for (const ReplicaModel& model : models) {
    load.num_running += model.stats.num_running;
    load.num_waiting += model.stats.num_waiting + model.stats.num_pending;
  }
  return load;
}

nlohmann::json get_load_body(const ReplicaLoad& load) {
  return {{"load", load.total()},
          {"num_reqs", load.total()},
          {"num_running_reqs", load.num_running},
          {"num_waiting_reqs", load.num_waiting}};
}

nlohmann::json load_body(const ReplicaLoad& load) { return {{"server_load", load.total()}}; }

namespace {

// Random per process: vllm-router's kv_aware keys a replica's blocks by it and drops
// them when it changes (a restart).
const std::string& instance_id() {
  static const std::string id = [] {
    std::random_device random;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%08x%08x", random(), random());
    return std::string("sluice-") + hex;
  }();
  return id;
}

int64_t kv_tokens(const ReplicaModel& model) {
  return static_cast<int64_t>(model.stats.num_kv_blocks) * model.stats.block_size;
}

// The figures of one model, under the names SGLang's server info uses.
nlohmann::json model_figures(const ReplicaModel& model) {
  const bool is_text = model.info.kind == "text";
  return {{"model_path", model.info.id},
          {"served_model_name", model.info.id},
          {"tokenizer_path", model.info.id},
          {"kind", model.info.kind},
          {"is_generation", is_text},
          {"model_type", model.info.architecture},
          {"context_length", model.info.context_length},
          {"max_total_tokens", kv_tokens(model)},
          {"max_running_requests", model.max_num_seqs},
          {"max_prefill_tokens", model.max_num_batched_tokens},
          {"page_size", model.stats.block_size},
          {"kv_block_size", model.stats.block_size},
          {"num_kv_blocks", model.stats.num_kv_blocks}};
}

}  // namespace

nlohmann::json model_info_body(const ReplicaModel& model) {
  const bool is_text = model.info.kind == "text";
  return {{"model_path", model.info.id},
          {"served_model_name", model.info.id},
          {"tokenizer_path", model.info.id},
          {"is_generation", is_text},
          {"model_type", model.info.architecture},
          {"max_context_length", model.info.context_length},
          {"has_image_understanding", false},
          {"has_audio_understanding", false},
          {"weight_version", "default"}};
}

nlohmann::json server_info_body(const std::vector<ReplicaModel>& models) {
  nlohmann::json body = nlohmann::json::object();
  const ReplicaModel* lead = nullptr;
  for (const ReplicaModel& model : models) {
    if (model.info.kind == "text") {
      lead = &model;
      break;
    }
  }
  if (lead == nullptr && !models.empty()) lead = &models.front();
  if (lead != nullptr) {
    body = model_figures(*lead);
    body["model_id"] = lead->info.id;
  }
  body["version"] = std::string("sluice ") + SLUICE_VERSION;
  body["instance_id"] = instance_id();
  body["dp_size"] = 1;
  body["tp_size"] = 1;
  nlohmann::json listed = nlohmann::json::array();
  for (const ReplicaModel& model : models) {
    nlohmann::json entry = model_figures(model);
    entry["id"] = model.info.id;
    listed.push_back(std::move(entry));
  }
  body["models"] = std::move(listed);
  return body;
}

}  // namespace sluice::server
