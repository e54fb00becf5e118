#pragma once
// The daemon's lifecycle as the routes report it (/ready, draining). Owned by main
// and outliving the server; atomics, so any thread may read them.
#include <atomic>

namespace sluice::server {

struct ServiceState {
  std::atomic<bool> ready{false};     // every configured model is registered
  std::atomic<bool> draining{false};  // shutdown began: finish in-flight work, take no more
};

}  // namespace sluice::server
