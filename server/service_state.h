#pragma once
// What the routes report on: the registered models and the daemon's lifecycle.
// Owned by main and outliving the server; the flags are atomics and the registry
// locks, so any thread may read them.
#include <atomic>

#include "engine/model_registry.h"

namespace sluice::server {

struct ServiceState {
  engine::ModelRegistry models;
  std::atomic<bool> ready{false};     // every configured model is registered
  std::atomic<bool> draining{false};  // shutdown began: finish in-flight work, take no more
};

}  // namespace sluice::server
