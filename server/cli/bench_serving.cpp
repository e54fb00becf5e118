#include "server/cli/bench_serving.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar_spec.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar_tokens.h"
#include "engine/models/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/bench_engine.h"

namespace sluice::server {
namespace {

// Each stream a distinct synthetic prompt of --stream-prompt tokens, --generate out.
EngineLoad synthetic_load(const BenchOptions& o, int streams) {
  EngineLoad load;
  load.streams = streams;
  load.prompt_tokens = o.stream_prompt;
  load.generate_tokens = o.generate;
  return load;
}

// The engine with S concurrent streams (bench_engine.h): what continuous batching
// gives a server, without HTTP. Needs the file's tokenizer (detokenization).
void serve_streams(engine::Model& model, const tokenizer::Tokenizer& tokenizer, const BenchOptions& o,
                   nlohmann::ordered_json& report) {
  std::printf("\nengine    S streams submitted at once to the engine (scheduler, paged KV, sampler), each a\n"
              "          distinct %d-token prompt, %d tokens out, greedy, EOS ignored; aggregate = all tokens\n"
              "          generated / time from the first submission to the last token\n",
              o.stream_prompt, o.generate);
  std::printf("  %7s %10s %12s %14s %13s %7s %11s\n", "streams", "time s", "tokens/s", "TTFT mean ms",
              "TTFT max ms", "steps", "preempted");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int streams : o.streams) {
    const EngineLoadResult r = run_engine_load(model, tokenizer, synthetic_load(o, streams));
    std::printf("  %7d %10.2f %12.1f %14.0f %13.0f %7llu %11llu\n", streams, r.seconds, r.tokens_per_second(),
                r.ttft_mean_seconds * 1e3, r.ttft_max_seconds * 1e3, static_cast<unsigned long long>(r.steps),
                static_cast<unsigned long long>(r.preemptions));
    std::fflush(stdout);
    rows.push_back({{"streams", streams}, {"prompt_tokens", o.stream_prompt}, {"generate_tokens", o.generate},
                    {"seconds", r.seconds}, {"generated_tokens", r.generated_tokens},
                    {"tokens_per_second", r.tokens_per_second()}, {"ttft_mean_seconds", r.ttft_mean_seconds},
                    {"ttft_max_seconds", r.ttft_max_seconds}, {"steps", r.steps}, {"preemptions", r.preemptions}});
  }
  report["engine"] = rows;
}

// The same streams with every output constrained to a JSON schema (structured
// outputs): the grammar masks' cost, as a ratio to the unconstrained run above.
void serve_constrained_streams(engine::Model& model, const tokenizer::Tokenizer& tokenizer, const BenchOptions& o,
                               nlohmann::ordered_json& report) {
  // An array of at least 64 short strings: no stream can finish before its token
  // limit, and every token is masked.
  grammar::GrammarSpec spec;
  spec.kind = grammar::GrammarSpec::Kind::json_schema;
  spec.text = R"({"type":"array","minItems":64,"items":{"type":"string","maxLength":12}})";
  grammar::GrammarCache cache(engine::make_token_table(tokenizer, static_cast<int32_t>(model.hparams().vocab_size)),
                              1);
  const grammar::GrammarCache::Lookup compiled = cache.get(spec);
  std::printf("\nconstrained  the same streams, each output held to the JSON schema %s (compiled in %.1f ms)\n",
              spec.text.c_str(), compiled.compile_seconds * 1e3);
  std::printf("  %7s %12s %12s %8s\n", "streams", "tokens/s", "free tok/s", "ratio");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  size_t index = 0;
  for (int streams : o.streams) {
    const double free_rate = report["engine"][index++]["tokens_per_second"].get<double>();
    EngineLoad load = synthetic_load(o, streams);
    load.grammar = compiled.compiled.grammar;
    const EngineLoadResult r = run_engine_load(model, tokenizer, load);
    std::printf("  %7d %12.1f %12.1f %8.2f\n", streams, r.tokens_per_second(), free_rate,
                free_rate > 0 ? r.tokens_per_second() / free_rate : 0.0);
    std::fflush(stdout);
    rows.push_back({{"streams", streams}, {"tokens_per_second", r.tokens_per_second()},
                    {"unconstrained_tokens_per_second", free_rate}, {"generated_tokens", r.generated_tokens}});
  }
  const grammar::MatcherStats stats = compiled.compiled.grammar->stats();
  std::printf("  masks: %llu computed, %llu from the cache\n", static_cast<unsigned long long>(stats.masks_computed),
              static_cast<unsigned long long>(stats.masks_from_cache));
  report["constrained"] = rows;
}

}  // namespace

void run_serving_tables(engine::Model& model, const tokenizer::Tokenizer& tokenizer, const BenchOptions& options,
                        nlohmann::ordered_json& report) {
  serve_streams(model, tokenizer, options, report);
  serve_constrained_streams(model, tokenizer, options, report);
}

}  // namespace sluice::server
