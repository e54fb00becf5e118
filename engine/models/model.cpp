#include "engine/models/model.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "backends/check.h"
#include "engine/loader/load_error.h"
#include "engine/models/transformer_block.h"

namespace sluice::engine {
namespace {

template <typename T>
std::span<const std::byte> bytes_of(std::span<const T> values) {
  return std::as_bytes(values);
}

// The first row of `rows` when they are one ascending run (the common cases: all
// rows of a decode step, the last row of one sequence), else -1.
int64_t contiguous_start(std::span<const int32_t> rows) {
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i] != rows[0] + static_cast<int32_t>(i)) return -1;
  return rows.empty() ? -1 : rows[0];
}

}  // namespace

std::unique_ptr<Model> Model::load(std::shared_ptr<const loader::WeightSource> source,
                                   backends::Backend& backend) {
  if (!source) throw std::invalid_argument("Model::load: no weight source");
  Architecture arch;
  try {
    arch = find_architecture(source->hparams().architecture);
  } catch (const std::invalid_argument& e) {
    throw loader::LoadError(source->path(), e.what());
  }
  ModelWeights weights = load_model_weights(*source, arch, backend);
  return std::unique_ptr<Model>(new Model(std::move(source), backend, arch, std::move(weights)));
}

Model::Model(std::shared_ptr<const loader::WeightSource> source, backends::Backend& backend,
             Architecture arch, ModelWeights weights)
    : source_(std::move(source)),
      backend_(backend),
      hparams_(source_->hparams()),
      arch_(arch),
      weights_(std::move(weights)),
      workspace_(backend, hparams_) {}

void Model::check(const StepBatch& batch, const KvCache& cache, std::span<const float> logits) const {
  const size_t t = batch.token_ids.size();
  SLUICE_CHECK(t > 0, "Model::forward: empty step");
  SLUICE_CHECK(batch.positions.size() == t && batch.kv_slots.size() == t,
               "Model::forward: token_ids, positions and kv_slots differ in length");
  SLUICE_CHECK(logits.size() == batch.logit_rows.size() * static_cast<size_t>(hparams_.vocab_size),
               "Model::forward: logits span is not logit_rows x vocab_size");
  SLUICE_CHECK(cache.num_layers() == hparams_.num_layers && cache.layer(0).k.dim(2) == hparams_.num_kv_heads &&
                   cache.layer(0).k.dim(3) == hparams_.head_dim,
               "Model::forward: KV cache made for another model shape");
  for (size_t i = 0; i < t; ++i) {
    SLUICE_CHECK(batch.token_ids[i] >= 0 && batch.token_ids[i] < hparams_.vocab_size,
                 "Model::forward: token id outside the vocabulary");
    SLUICE_CHECK(batch.kv_slots[i] >= 0 && batch.kv_slots[i] < cache.num_slots(),
                 "Model::forward: KV slot outside the cache");
    SLUICE_CHECK(batch.positions[i] >= 0, "Model::forward: negative position");
  }
  for (int32_t row : batch.logit_rows)
    SLUICE_CHECK(row >= 0 && static_cast<size_t>(row) < t, "Model::forward: logit row outside the step");
  size_t covered = 0;
  for (const auto& seq : batch.sequences) {
    SLUICE_CHECK(seq.query_begin >= 0 && seq.num_queries > 0 && seq.num_cached >= 0 &&
                     static_cast<size_t>(seq.query_begin) + static_cast<size_t>(seq.num_queries) <= t,
                 "Model::forward: sequence rows outside the step");
    SLUICE_CHECK(static_cast<int64_t>(seq.block_table.size()) * cache.block_size() >=
                     seq.num_cached + seq.num_queries,
                 "Model::forward: block table shorter than the sequence");
    for (int32_t block : seq.block_table)
      SLUICE_CHECK(block >= 0 && block < cache.num_blocks(), "Model::forward: block id outside the cache");
    covered += static_cast<size_t>(seq.num_queries);
  }
  SLUICE_CHECK(covered == t, "Model::forward: sequences do not cover the step's tokens exactly");
}

void Model::forward(const StepBatch& batch, KvCache& cache, std::span<float> logits) {
  check(batch, cache, logits);
  const auto t = static_cast<int64_t>(batch.token_ids.size());
  const auto r = static_cast<int64_t>(batch.logit_rows.size());
  const Workspace::Views views = workspace_.views(t, r);

  backend_.upload(views.token_ids, bytes_of(batch.token_ids));
  backend_.upload(views.positions, bytes_of(batch.positions));
  backend_.upload(views.kv_slots, bytes_of(batch.kv_slots));

  backend_.embed(weights_.token_embd, views.token_ids, views.hidden);  // hidden [T, d]
  if (hparams_.embedding_scale != 1.0f) backend_.scale(views.hidden, hparams_.embedding_scale, views.hidden);

  const StepContext step{backend_, hparams_, arch_, views, batch.sequences};
  for (int64_t layer = 0; layer < hparams_.num_layers; ++layer)
    transformer_block(step, weights_.layers[static_cast<size_t>(layer)], cache.layer(layer), layer);

  compute_logits(batch, views, logits);
}

void Model::compute_logits(const StepBatch& batch, const Workspace::Views& views, std::span<float> logits) {
  const auto r = static_cast<int64_t>(batch.logit_rows.size());
  if (r == 0) {
    backend_.synchronize();
    return;
  }
  // final_hidden [R, d]: the rows that sample, normed. A contiguous run is a slice;
  // otherwise gather the rows with embed(), treating hidden [T, d] as the table.
  const int64_t start = contiguous_start(batch.logit_rows);
  if (start >= 0) {
    backend_.rms_norm(views.hidden.slice(start, r), weights_.output_norm, hparams_.norm_eps,
                      views.final_hidden);
  } else {
    backend_.upload(views.logit_rows, bytes_of(batch.logit_rows));
    backend_.embed(views.hidden, views.logit_rows, views.final_hidden);
    backend_.rms_norm(views.final_hidden, weights_.output_norm, hparams_.norm_eps, views.final_hidden);
  }
  backend_.matmul(views.final_hidden, weights_.output, views.logits);  // logits [R, vocab]
  backend_.download(views.logits, std::as_writable_bytes(logits));
  backend_.synchronize();

  if (hparams_.final_softcap > 0.0f) {
    // No tanh op in the backend; R x vocab on the host is small next to the matmul.
    const float cap = hparams_.final_softcap;
    for (float& x : logits) x = cap * std::tanh(x / cap);
  }
}

}  // namespace sluice::engine
