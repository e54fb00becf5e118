#pragma once
// `sluice bench --model`'s engine tables: S streams submitted at once to a real Engine
// (bench_engine.h), for each --streams count, first free and then with every output
// held to a JSON schema (the grammar masks' cost, as a ratio to the free run).
#include <nlohmann/json_fwd.hpp>

#include "server/cli/bench_command.h"

namespace sluice::engine {
class Model;
}
namespace sluice::tokenizer {
class Tokenizer;
}

namespace sluice::server {

// Prints both tables and writes them to report["engine"] and report["constrained"].
void run_serving_tables(engine::Model& model, const tokenizer::Tokenizer& tokenizer, const BenchOptions& options,
                        nlohmann::ordered_json& report);

}  // namespace sluice::server
