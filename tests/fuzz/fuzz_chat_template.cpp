// libFuzzer target for chat templates: the input is a template source, optionally
// followed by "\0" and the text of the user's message. Compiling either succeeds or
// throws TemplateSyntaxError, rendering either succeeds or throws a TemplateError;
// nothing else may escape (the server turns TemplateError into a 400, anything else
// would be a 500), and the render limits must bound time and memory.
// Build and run: see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_template.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = sluice::fuzz::as_text(data, size);
  const size_t split = input.find('\0');
  const std::string_view source = input.substr(0, split);
  const std::string user = split == std::string_view::npos ? "Hi {{ there }}" : std::string(input.substr(split + 1));

  using sluice::chat::ChatMessage;
  const std::vector<ChatMessage> messages = {
      {"system", "You are terse.", {}},
      {"user", user, {}},
      {"assistant", "<think>ok</think>Sure.", {}},
      {"user", user, {}},
  };
  sluice::chat::RenderOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  // Smaller than the server's limits so that one input stays well under a second.
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_steps = 100'000;
  try {
    const auto compiled = sluice::chat::ChatTemplate::compile(std::string(source));
    volatile size_t sink = compiled.render(messages, true, options).size();
    (void)sink;
  } catch (const sluice::chat::TemplateError&) {
    // The template or the conversation was rejected: a 400 in the server.
  }
  return 0;
}
