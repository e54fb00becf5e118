#pragma once
// Server-sent events framing for streamed responses: one "data:" line per event and
// a blank line after it. JSON is dumped on one line (newlines inside strings are
// escaped), so an event never spans lines; invalid UTF-8 is replaced, not thrown on.
#include <string>

#include <nlohmann/json.hpp>

#include "proto/errors.h"

namespace sluice::proto {

std::string sse_event(const nlohmann::ordered_json& data);  // "data: {json}\n\n"
std::string sse_done();                                      // "data: [DONE]\n\n"
std::string sse_error(const ApiError& error);                // "data: {"error":{...}}\n\n"

// One-line JSON with invalid UTF-8 replaced: the body of a non-streamed response.
std::string dump_json(const nlohmann::ordered_json& value);

}  // namespace sluice::proto
