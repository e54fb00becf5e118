// libFuzzer target for the Hugging Face tokenizer reader: the input is tokenizer.json,
// optionally followed by "\0\0" and tokenizer_config.json. Loading either succeeds or
// throws LoadError; a tokenizer that loads must encode and decode any text without
// crashing (its contract: encode and decode never throw).
// Build and run: see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "engine/loader/load_error.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) __builtin_trap();
}

// Unicode, digits, whitespace runs, a control-token lookalike and invalid UTF-8.
constexpr std::string_view kSample =
    "Hello  world 12345 <|im_start|>user\n\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80 \xFF\xC3 <s></s>";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = sluice::fuzz::as_text(data, size);
  const size_t split = input.find(std::string_view("\0\0", 2));
  const std::filesystem::path& dir = sluice::fuzz::scratch_dir();
  write_file(dir / "tokenizer.json", input.substr(0, split));
  if (split == std::string_view::npos) {
    std::filesystem::remove(dir / "tokenizer_config.json");
  } else {
    write_file(dir / "tokenizer_config.json", input.substr(split + 2));
  }
  try {
    const auto tokenizer = sluice::tokenizer::Tokenizer::from_hf_dir(dir);
    for (const bool special : {false, true}) {
      const auto ids = tokenizer.encode(kSample, special, special);
      volatile size_t sink = tokenizer.decode(ids, special).size();
      (void)sink;
    }
  } catch (const sluice::loader::LoadError&) {
    // Rejecting hostile input is the expected outcome.
  }
  return 0;
}
