#include "server/cli/bench_speculation.h"

#include <cstdio>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/models/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/bench_engine.h"
#include "server/services/draft_model.h"

namespace sluice::server {
namespace {

// The tasks of loadtest/specbench.py, so the two benchmarks read alike.
constexpr const char* kText =
    "The lighthouse keeper climbed the stairs every evening at dusk. He lit the lamp, wound the clock, and wrote "
    "the weather in his logbook. Ships passed in the night and never knew his name. In the morning he put out "
    "the lamp and walked down to the harbor for bread.";
constexpr const char* kCode =
    "def update_inventory(inventory, item_name, item_count):\n"
    "    if item_name in inventory:\n"
    "        inventory[item_name] = inventory[item_name] + item_count\n"
    "    else:\n"
    "        inventory[item_name] = item_count\n"
    "    return inventory\n";

struct Task {
  const char* name;
  std::vector<std::string> messages;
};

std::vector<Task> tasks() {
  return {
      {"repetitive",
       {std::string("Repeat the following text exactly, word for word:\n\n") + kText,
        std::string("Rewrite this function with item_name renamed to product_name. Output only the code.\n\n") + kCode,
        std::string("Copy this paragraph and then copy it once more:\n\n") + kText}},
      {"chat",
       {"Write a short story about a lighthouse keeper.", "Explain why the sky is blue in a few sentences.",
        "Give me three ideas for a birthday party."}},
  };
}

// A user message as the server would prompt the model: its chat template when it has
// one, else the text itself.
std::vector<int32_t> chat_prompt(const tokenizer::Tokenizer& tokenizer, const std::string& message) {
  if (tokenizer.chat_template().empty()) return tokenizer.encode(message, /*add_special=*/true, /*parse_special=*/false);
  const chat::ChatTemplate chat_template = chat::ChatTemplate::compile(tokenizer.chat_template());
  const std::string text = chat_template.render({chat::ChatMessage{.role = "user", .content = message, .fields = {}}},
                                                /*add_generation_prompt=*/true);
  return tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/true);
}

// Two runs as one: their tokens over their time.
void add_run(EngineLoadResult& sum, const EngineLoadResult& run) {
  sum.streams = run.streams;
  sum.seconds += run.seconds;
  sum.generated_tokens += run.generated_tokens;
  sum.decode_seconds += run.decode_seconds;
  sum.decode_tokens += run.decode_tokens;
  sum.num_drafts += run.num_drafts;
  sum.num_draft_tokens += run.num_draft_tokens;
  sum.num_accepted_tokens += run.num_accepted_tokens;
}

const char* method_name(engine::SpeculativeMethod method) {
  return method == engine::SpeculativeMethod::draft_model ? "draft_model" : "ngram";
}

}  // namespace

nlohmann::ordered_json run_speculation_bench(engine::Model& model, const tokenizer::Tokenizer& tokenizer,
                                             backends::Backend& backend, const SpeculationBench& bench) {
  engine::SpeculativeConfig on;
  on.method = bench.method;
  on.num_speculative_tokens = bench.num_speculative_tokens;
  std::unique_ptr<engine::Model> draft;
  if (bench.method == engine::SpeculativeMethod::draft_model) {
    if (bench.draft_model_path.empty()) throw std::runtime_error("--speculative draft_model needs --draft-model");
    draft = load_draft_model(bench.draft_model_path, backend, tokenizer, "bench");
    on.draft_model = draft.get();
  }
  std::printf("\nspeculative  %s, %d tokens per step (off above %d decoding sequences) against none: per task and\n"
              "          stream count, four runs (off, on, on, off); chat prompts, up to %d tokens out, greedy;\n"
              "          decode = one stream's tokens/s after its first token (mean), output = all tokens / time\n",
              method_name(bench.method), on.num_speculative_tokens, on.disable_by_batch_size, bench.generate_tokens);
  std::printf("  %-10s %7s %12s %12s %8s %12s %12s %8s %9s %14s\n", "task", "streams", "decode off", "decode on",
              "speedup", "output off", "output on", "speedup", "accepted", "tokens/verify");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Task& task : tasks()) {
    EngineLoad load;
    load.generate_tokens = bench.generate_tokens;
    load.ignore_eos = false;  // greedy: both runs stop at the same EOS
    for (const std::string& message : task.messages) load.prompts.push_back(chat_prompt(tokenizer, message));
    for (int streams : bench.streams) {
      load.streams = streams;
      // off, on, on, off: a machine that speeds up or slows down during the four runs
      // favours neither.
      EngineLoadResult off;
      EngineLoadResult with;
      for (const bool speculate : {false, true, true, false}) {
        load.speculative = speculate ? on : engine::SpeculativeConfig{};
        add_run(speculate ? with : off, run_engine_load(model, tokenizer, load));
      }
      const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
      const double decode_speedup = ratio(with.decode_tokens_per_second(), off.decode_tokens_per_second());
      const double speedup = ratio(with.tokens_per_second(), off.tokens_per_second());
      const double acceptance = with.num_draft_tokens > 0 ? static_cast<double>(with.num_accepted_tokens) /
                                                                static_cast<double>(with.num_draft_tokens)
                                                          : 0.0;
      const double per_verify = with.num_drafts > 0 ? 1.0 + static_cast<double>(with.num_accepted_tokens) /
                                                                static_cast<double>(with.num_drafts)
                                                    : 1.0;
      std::printf("  %-10s %7d %12.1f %12.1f %8.2f %12.1f %12.1f %8.2f %8.0f%% %14.2f\n", task.name, streams,
                  off.decode_tokens_per_second(), with.decode_tokens_per_second(), decode_speedup,
                  off.tokens_per_second(), with.tokens_per_second(), speedup, acceptance * 100.0, per_verify);
      std::fflush(stdout);
      rows.push_back({{"task", task.name}, {"streams", streams}, {"off_tokens_per_second", off.tokens_per_second()},
                      {"on_tokens_per_second", with.tokens_per_second()}, {"speedup", speedup},
                      {"off_decode_tokens_per_second", off.decode_tokens_per_second()},
                      {"on_decode_tokens_per_second", with.decode_tokens_per_second()},
                      {"decode_speedup", decode_speedup}, {"off_generated_tokens", off.generated_tokens},
                      {"on_generated_tokens", with.generated_tokens},
                      {"draft_tokens", with.num_draft_tokens}, {"accepted_tokens", with.num_accepted_tokens},
                      {"acceptance", acceptance}, {"tokens_per_verify", per_verify}});
    }
  }
  return {{"method", method_name(bench.method)}, {"num_speculative_tokens", on.num_speculative_tokens},
          {"rows", rows}};
}

}  // namespace sluice::server
