#pragma once
// Reference audio sent inside a JSON body (`ref_audio` of /v1/audio/speech): plain
// base64, or a data URI `data:audio/<type>;base64,<payload>`, as vLLM-Omni takes
// it. A URL or a file path is refused, never fetched or opened: the server reads no
// resource a client names. Pure functions; any thread.
#include <string>
#include <string_view>
#include <variant>

#include "proto/errors.h"

namespace sluice::proto {

struct AudioPayload {
  std::string bytes;      // the decoded file (WAV, FLAC, MP3, Ogg ...), not yet checked as audio
  std::string mime_type;  // from a data URI; empty for plain base64
};

// 400 naming `param` for a URL or path, a data URI that is not base64 audio, or
// text that is not base64.
std::variant<AudioPayload, ApiError> decode_audio_payload(std::string_view value, const std::string& param);

// Strict standard base64 (RFC 4648 §4): padding optional, line breaks (CR, LF)
// skipped, any other byte outside the alphabet refused. nullopt-like: false.
bool decode_base64(std::string_view text, std::string& out);

}  // namespace sluice::proto
