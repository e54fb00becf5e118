// libFuzzer target for the request parsers of proto/: any byte string must come back
// as a parsed request or an ApiError (400); never throw, crash or hang. The first
// byte picks the parser. Build and run: see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "proto/anthropic_messages.h"
#include "proto/chat.h"
#include "proto/completions.h"
#include "proto/embeddings.h"
#include "proto/responses_api.h"
#include "proto/speech.h"
#include "proto/tokenize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto check_error = [](const auto& result) {
    if (const auto* e = std::get_if<sluice::proto::ApiError>(&result)) {
      if (e->status != 400 || e->message.empty()) __builtin_trap();
    }
  };
  switch (data[0] % 8) {
    case 0: check_error(sluice::proto::parse_completion_request(body)); break;
    case 1: check_error(sluice::proto::parse_chat_request(body)); break;
    case 2: check_error(sluice::proto::parse_tokenize_request(body)); break;
    case 3: check_error(sluice::proto::parse_speech_request(body)); break;  // ref_audio's base64 too
    case 4: check_error(sluice::proto::parse_messages_request(body, {}, /*count_tokens=*/data[0] & 0x10)); break;
    case 5: check_error(sluice::proto::parse_responses_request(body)); break;
    case 6: check_error(sluice::proto::parse_embeddings_request(body)); break;
    default: check_error(sluice::proto::parse_detokenize_request(body)); break;
  }
  return 0;
}
