#include "proto/sse.h"

namespace sluice::proto {

std::string dump_json(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::ordered_json& data) { return "data: " + dump_json(data) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string sse_error(const ApiError& error) { return "data: " + error_body(error) + "\n\n"; }

}  // namespace sluice::proto
