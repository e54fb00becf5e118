// The engine's embeddings of the parity fixture models (tests/fixtures/models/NAME/)
// against Hugging Face transformers (tests/fixtures/embeddings/make_embedding_goldens.py):
// last-token and mean pooling of the final normed hidden states, L2-normalized, from
// each model's f32 GGUF and from its safetensors folder; and all inputs in one batch
// equal to each run alone, bit for bit.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/engine/engine_harness.h"
#include "tests/unit/engine/models/model_fixture.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::testing::unit_engine_test_embedding_parity {
namespace {

constexpr double kMinCosine = 0.9999;

struct GoldenCase {
  std::vector<int32_t> tokens;
  std::vector<float> last, mean;
};

std::vector<GoldenCase> read_goldens(const std::string& name) {
  std::ifstream in(std::string(SLUICE_FIXTURES_DIR) + "/embeddings/" + name + ".json");
  REQUIRE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);
  REQUIRE(doc["model"] == name);
  std::vector<GoldenCase> cases;
  for (const auto& c : doc["cases"])
    cases.push_back({c["tokens"].get<std::vector<int32_t>>(), c["last"].get<std::vector<float>>(),
                     c["mean"].get<std::vector<float>>()});
  return cases;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// `format`: "f32" (the GGUF) or "safetensors" (the Hugging Face folder); the tokenizer
// comes from the GGUF either way (embeddings of token ids never use it).
LoadedFixture load_model(const ModelFixture& fixture, const std::string& format) {
  LoadedFixture f;
  f.backend = backends::make_cpu_backend(2);
  f.model = Model::load(open_fixture_weights(fixture, format), *f.backend);
  f.tokenizer = std::make_unique<tokenizer::Tokenizer>(
      tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(fixture.gguf.at("f32").string())));
  return f;
}

// Submits every input at once (one engine request each) and returns their vectors.
std::vector<std::vector<float>> embed(Engine& engine, const std::vector<std::vector<int32_t>>& inputs,
                                      Pooling pooling, const std::string& tag) {
  std::vector<GenerationRequest> requests;
  for (size_t i = 0; i < inputs.size(); ++i) {
    GenerationRequest r;
    r.request_id = tag + "-" + std::to_string(i);
    r.prompt_tokens = inputs[i];
    r.embed = pooling;
    requests.push_back(std::move(r));
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  REQUIRE(engine.submit_all(std::move(requests), streams).ok());
  std::vector<std::vector<float>> out;
  for (auto& stream : streams) {
    const ChoiceResult result = collect(*stream)[0];
    REQUIRE(result.finished);
    REQUIRE(result.finish.reason == FinishReason::stop);
    out.push_back(result.finish.embedding);
  }
  return out;
}

TEST_CASE("embeddings of the fixture models match transformers (cosine >= 0.9999); batch equals one by one") {
  for (const std::string& name : kFixtureNames) {
    const std::vector<GoldenCase> cases = read_goldens(name);
    REQUIRE(cases.size() >= 3);
    const ModelFixture fixture = load_fixture(name);
    std::vector<std::vector<int32_t>> inputs;
    for (const GoldenCase& c : cases) inputs.push_back(c.tokens);
    for (const std::string format : {"f32", "safetensors"}) {
      CAPTURE(name);
      CAPTURE(format);
      LoadedFixture f = load_model(fixture, format);
      Engine engine(*f.model, *f.tokenizer, small_config());
      engine.start();
      for (Pooling pooling : {Pooling::last, Pooling::mean}) {
        CAPTURE(to_string(pooling));
        const std::vector<std::vector<float>> batch = embed(engine, inputs, pooling, "batch");
        for (size_t i = 0; i < cases.size(); ++i) {
          CAPTURE(i);
          CAPTURE(inputs[i].size());
          const std::vector<float>& want = pooling == Pooling::last ? cases[i].last : cases[i].mean;
          const double cos = cosine(batch[i], want);
          CAPTURE(cos);
          CHECK(cos >= kMinCosine);
          // One by one: the same bits as in the batch.
          const std::vector<std::vector<float>> alone =
              embed(engine, {inputs[i]}, pooling, "alone-" + std::to_string(i));
          CHECK(alone[0] == batch[i]);
        }
      }
      CHECK(wait_idle(engine));
    }
  }
}

}  // namespace
}  // namespace sluice::engine::testing
