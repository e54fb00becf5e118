// The `sluice` executable: subcommands over the server, engine and config libraries.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "config/config_loader.h"
#include "server/cli/bench_command.h"
#include "server/cli/encode_audio_command.h"
#include "server/cli/generate_command.h"
#include "server/cli/speak_command.h"
#include "server/cli/inspect_command.h"
#include "server/cli/serve_command.h"

int main(int argc, char** argv) {
  using namespace sluice;
  CLI::App app{"sluice: an OpenAI-compatible LLM inference server"};
  app.require_subcommand(1);

  auto* serve = app.add_subcommand("serve", "Run the HTTP daemon");
  config::ConfigOptions serve_options(*serve);

  auto* inspect = app.add_subcommand("inspect", "Print a GGUF model's metadata and check it");
  std::string inspect_path;
  bool show_tensors = false;
  inspect->add_option("model", inspect_path, "GGUF file")->required();
  inspect->add_flag("--tensors", show_tensors, "Also list every tensor");

  auto* generate = app.add_subcommand("generate", "Complete one prompt and print the text");
  server::GenerateOptions generate_options;
  server::add_generate_options(*generate, generate_options);

  auto* speak = app.add_subcommand("speak", "Speak one text with a Qwen3-TTS checkpoint and write the audio");
  server::SpeakOptions speak_options;
  server::add_speak_options(*speak, speak_options);

  auto* encode_audio =
      app.add_subcommand("encode-audio", "Encode a reference clip to Qwen3-TTS codec codes (voice cloning)");
  server::EncodeAudioOptions encode_audio_options;
  server::add_encode_audio_options(*encode_audio, encode_audio_options);

  auto* bench = app.add_subcommand("bench", "Time the forward pass of a model shape on random weights");
  server::BenchOptions bench_options;
  server::add_bench_options(*bench, bench_options);

  config::use_full_help(app);
  CLI11_PARSE(app, argc, argv);

  if (*inspect) return server::run_inspect(inspect_path, show_tensors);
  if (*generate) return server::run_generate(generate_options);
  if (*speak) return server::run_speak(speak_options);
  if (*encode_audio) return server::run_encode_audio(encode_audio_options);
  if (*bench) return server::run_bench(bench_options);

  config::Config config;
  try {
    auto env = config::process_environment();
    config = serve_options.resolve(env);
    for (const auto& warning : config::environment_warnings(env))
      std::fprintf(stderr, "warning: %s\n", warning.c_str());
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return server::run_serve(config);
}
