#pragma once
// The plain data ModelServices reports per served model: its engine's health (what
// /health answers from) and its description with its engine's stats and limits
// (what the router endpoints answer from). Shaping them into bodies is server/api's.
#include <cstdint>
#include <string>

#include "engine/engine_shell.h"
#include "engine/engine_stats.h"
#include "engine/model_info.h"

namespace sluice::server {

// One served model's engine health.
struct ModelHealth {
  std::string id;
  engine::EngineHealth health;
};

// One served model as routers see it.
struct ReplicaModel {
  engine::ModelInfo info;
  engine::EngineStats stats;
  int64_t max_num_seqs = 0;
  int64_t max_num_batched_tokens = 0;
};

}  // namespace sluice::server
