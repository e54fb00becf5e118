#include "tests/unit/engine/models/model_fixture.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "engine/loader/weight_source.h"
#include "engine/models/batch_builder.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::testing {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kBlocksPerRegion = 16;

std::vector<float> read_floats(const fs::path& path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<float> values(count);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (in.gcount() != static_cast<std::streamsize>(count * sizeof(float)))
    throw std::runtime_error(path.string() + " is shorter than its shape");
  return values;
}

}  // namespace

ModelFixture load_fixture(const std::string& name) {
  ModelFixture f;
  f.name = name;
  f.dir = fs::path(SLUICE_FIXTURES_DIR) / "models" / name;
  std::ifstream in(f.dir / "reference.json");
  if (!in) throw std::runtime_error("missing " + (f.dir / "reference.json").string());
  const auto index = nlohmann::json::parse(in);
  f.vocab_size = index.at("vocab_size").get<int64_t>();
  for (const auto& [variant, file] : index.at("gguf").items()) f.gguf[variant] = f.dir / file.get<std::string>();
  for (const auto& seq : index.at("sequences")) {
    ReferenceSequence r;
    r.tokens = seq.at("tokens").get<std::vector<int32_t>>();
    const auto shape = seq.at("shape").get<std::vector<size_t>>();
    for (const auto& [variant, file] : seq.at("logits").items())
      r.logits[variant] = read_floats(f.dir / file.get<std::string>(), shape.at(0) * shape.at(1));
    f.sequences.push_back(std::move(r));
  }
  return f;
}

std::shared_ptr<const loader::WeightSource> open_fixture_weights(const ModelFixture& fixture,
                                                                 const std::string& format) {
  if (format == "safetensors") return loader::open_safetensors_weights(fixture.dir);
  return loader::open_gguf_weights(fixture.gguf.at(format));
}

std::vector<double> row_abs_errors(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab) {
  if (a.size() != b.size()) throw std::invalid_argument("logits differ in size");
  std::vector<double> errors(a.size() / static_cast<size_t>(vocab), 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    double& e = errors[i / static_cast<size_t>(vocab)];
    e = std::max(e, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return errors;
}

std::vector<double> row_abs_max(const std::vector<float>& a, int64_t vocab) {
  std::vector<double> maxima(a.size() / static_cast<size_t>(vocab), 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    double& m = maxima[i / static_cast<size_t>(vocab)];
    m = std::max(m, std::abs(static_cast<double>(a[i])));
  }
  return maxima;
}

double max_relative_error(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab) {
  const auto errors = row_abs_errors(a, b, vocab);
  const auto scale = row_abs_max(b, vocab);
  double worst = 0.0;
  for (size_t r = 0; r < errors.size(); ++r) worst = std::max(worst, errors[r] / scale[r]);
  return worst;
}

ModelRunner::ModelRunner(std::shared_ptr<const loader::WeightSource> weights, int num_threads,
                         backends::DType kv_dtype)
    : owned_backend_(backends::make_cpu_backend(num_threads)), backend_(owned_backend_.get()) {
  load(std::move(weights), kv_dtype, std::nullopt);
}

ModelRunner::ModelRunner(std::shared_ptr<const loader::WeightSource> weights, backends::Backend& backend,
                         backends::DType kv_dtype, std::optional<backends::DType> quantize_to)
    : backend_(&backend) {
  load(std::move(weights), kv_dtype, quantize_to);
}

void ModelRunner::load(std::shared_ptr<const loader::WeightSource> weights, backends::DType kv_dtype,
                       std::optional<backends::DType> quantize_to) {
  model_ = Model::load(std::move(weights), *backend_, quantize_to);
  cache_ = std::make_unique<KvCache>(*backend_, model_->hparams(),
                                     KvCacheConfig{.num_blocks = kNumBlocks, .block_size = kBlockSize,
                                                   .dtype = kv_dtype});
}

std::vector<int32_t> ModelRunner::block_table(int region, int64_t num_tokens) const {
  const int64_t num_blocks = (num_tokens + kBlockSize - 1) / kBlockSize;
  if (num_blocks > kBlocksPerRegion || (region + 1) * kBlocksPerRegion > kNumBlocks)
    throw std::invalid_argument("sequence does not fit its test region");
  std::vector<int32_t> table;
  for (int64_t i = 0; i < num_blocks; ++i)
    table.push_back(static_cast<int32_t>((region + 1) * kBlocksPerRegion - 1 - i));
  return table;
}

std::vector<float> ModelRunner::step(const std::vector<std::vector<int32_t>>& tokens,
                                     const std::vector<int32_t>& cached, const std::vector<int>& regions,
                                     std::vector<int32_t> logit_rows) {
  BatchBuilder builder(kBlockSize);
  for (size_t s = 0; s < tokens.size(); ++s) {
    const size_t seq = builder.add_sequence(tokens[s], cached[s],
                                            block_table(regions[s], cached[s] + static_cast<int64_t>(tokens[s].size())));
    if (logit_rows.empty()) builder.add_logit_rows(seq, 0, static_cast<int64_t>(tokens[s].size()));
  }
  StepBatch batch = builder.batch();
  if (!logit_rows.empty()) batch.logit_rows = logit_rows;  // the rows a test picked, in its order
  std::vector<float> logits(batch.logit_rows.size() * static_cast<size_t>(model_->hparams().vocab_size));
  model_->forward(batch, *cache_, logits);
  return logits;
}

std::vector<float> ModelRunner::run(const std::vector<int32_t>& tokens, size_t chunk, int region) {
  std::vector<float> all;
  for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
    const size_t end = std::min(tokens.size(), begin + chunk);
    std::vector<int32_t> part(tokens.begin() + static_cast<ptrdiff_t>(begin),
                              tokens.begin() + static_cast<ptrdiff_t>(end));
    const auto logits = step({part}, {static_cast<int32_t>(begin)}, {region});
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace sluice::engine::testing
