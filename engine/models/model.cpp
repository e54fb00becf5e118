#include "engine/models/model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "backends/check.h"
#include "backends/host_bytes.h"
#include "engine/loader/load_error.h"
#include "engine/models/transformer_block.h"

namespace sluice::engine {
namespace {

// The first row of `rows` when they are one ascending run (the common cases: all
// rows of a decode step, the last row of one sequence), else -1.
int64_t contiguous_start(std::span<const int32_t> rows) {
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i] != rows[0] + static_cast<int32_t>(i)) return -1;
  return rows.empty() ? -1 : rows[0];
}

}  // namespace

std::unique_ptr<Model> Model::load(std::shared_ptr<const loader::WeightSource> source,
                                   backends::Backend& backend, std::optional<backends::DType> quantize_to) {
  if (!source) throw std::invalid_argument("Model::load: no weight source");
  Architecture arch;
  try {
    arch = find_architecture(source->hparams().architecture);
  } catch (const std::invalid_argument& e) {
    throw loader::LoadError(source->path(), e.what());
  }
  ModelWeights weights = load_model_weights(*source, arch, backend, quantize_to);
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

void Model::check(const StepBatch& batch, const KvCache& cache) const {
  const size_t t = batch.token_ids.size();
  SLUICE_CHECK(t > 0, "Model::forward: empty step");
  SLUICE_CHECK(batch.positions.size() == t && batch.kv_slots.size() == t,
               "Model::forward: token_ids, positions and kv_slots differ in length");
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
  for (int32_t row : batch.hidden_rows)
    SLUICE_CHECK(row >= 0 && static_cast<size_t>(row) < t, "Model::forward: hidden row outside the step");
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

void Model::forward(const StepBatch& batch, KvCache& cache, std::span<float> logits, std::span<float> hidden) {
  SLUICE_CHECK(logits.size() == batch.logit_rows.size() * static_cast<size_t>(hparams_.vocab_size),
               "Model::forward: logits span is not logit_rows x vocab_size");
  SLUICE_CHECK(hidden.size() == batch.hidden_rows.size() * static_cast<size_t>(hparams_.embedding_length),
               "Model::forward: hidden span is not hidden_rows x embedding_length");
  const backends::Tensor device_logits = run_step(batch, cache, hidden);
  if (device_logits) backend_.download(device_logits, std::as_writable_bytes(logits));
  backend_.synchronize();
  apply_final_softcap(logits);
}

backends::Tensor Model::forward_on_device(const StepBatch& batch, KvCache& cache) {
  SLUICE_CHECK(batch.hidden_rows.empty(), "Model::forward_on_device: hidden rows need forward()");
  return run_step(batch, cache, {});
}

backends::Tensor Model::run_step(const StepBatch& batch, KvCache& cache, std::span<float> hidden) {
  check(batch, cache);
  const auto t = static_cast<int64_t>(batch.token_ids.size());
  const auto r = static_cast<int64_t>(batch.logit_rows.size());
  // A decode step whose every row samples, in order, may run as a recording
  // (CUDA graph) padded to the backend's bucket size.
  const int64_t recorded_rows = is_plain_decode(batch) ? backend_.recorded_step_rows(t) : 0;
  if (recorded_rows > 0) return forward_recorded(batch, cache, recorded_rows);

  const Workspace::Views views = workspace_views(t, r);
  begin_step(views, batch.token_ids, batch.positions, batch.kv_slots, batch.sequences);
  // Only the logit rows are read after the last layer (unless hidden rows are asked
  // for): it runs its projections and MLP on them alone (transformer_block.h).
  if (r < t && batch.hidden_rows.empty()) {
    if (r > 0) backend_.upload(views.logit_rows, backends::host_bytes(batch.logit_rows));
    const OutputRows rows{.ids = views.logit_rows, .hidden = views.final_hidden};
    run_layers(views, batch.sequences, cache, &rows);
    if (r == 0) return {};
    backend_.rms_norm(views.final_hidden, weights_.output_norm, hparams_.norm_eps, views.final_hidden);
    backend_.matmul(views.final_hidden, weights_.output, views.logits);  // logits [R, vocab]
    return views.logits;
  }
  run_layers(views, batch.sequences, cache);
  const backends::Tensor logits = final_logits(batch, views);
  if (!batch.hidden_rows.empty()) download_hidden_rows(batch, views, hidden);
  return logits;
}

// Uploads a step's per-row inputs (all of views' rows) and its attention metadata.
void Model::begin_step(const Workspace::Views& views, std::span<const int32_t> ids,
                       std::span<const int32_t> positions, std::span<const int32_t> slots,
                       std::span<const backends::SequenceSlice> sequences) {
  backend_.upload(views.token_ids, backends::host_bytes(ids));
  backend_.upload(views.positions, backends::host_bytes(positions));
  backend_.upload(views.kv_slots, backends::host_bytes(slots));
  backend_.begin_step(sequences, static_cast<int64_t>(ids.size()));
}

bool Model::is_plain_decode(const StepBatch& batch) {
  if (!batch.hidden_rows.empty()) return false;
  for (const auto& seq : batch.sequences)
    if (seq.num_queries != 1) return false;
  return contiguous_start(batch.logit_rows) == 0 && batch.logit_rows.size() == batch.token_ids.size();
}

Workspace::Views Model::workspace_views(int64_t num_tokens, int64_t num_logit_rows) {
  const int64_t tokens_before = workspace_.token_capacity();
  const int64_t logits_before = workspace_.logit_capacity();
  Workspace::Views views;
  try {
    views = workspace_.views(num_tokens, num_logit_rows);
  } catch (...) {  // an allocation failed after some buffers were freed
    backend_.forget_recordings();
    throw;
  }
  // Recordings point at the old buffers.
  if (workspace_.token_capacity() != tokens_before || workspace_.logit_capacity() != logits_before)
    backend_.forget_recordings();
  return views;
}

void Model::reserve_workspace(int64_t max_tokens, int64_t max_logit_rows) {
  // A recorded decode step pads its rows up to the backend's bucket.
  const int64_t max_decode_rows = std::min(max_tokens, max_logit_rows);
  const int64_t padded = std::max<int64_t>(backend_.recorded_step_rows(max_decode_rows), 0);
  const int64_t tokens_before = workspace_.token_capacity();
  const int64_t logits_before = workspace_.logit_capacity();
  try {
    workspace_.reserve(std::max(max_tokens, padded), std::max(max_logit_rows, padded));
  } catch (...) {
    backend_.forget_recordings();
    throw;
  }
  if (workspace_.token_capacity() != tokens_before || workspace_.logit_capacity() != logits_before)
    backend_.forget_recordings();
}

void Model::run_layers(const Workspace::Views& views, std::span<const backends::SequenceSlice> sequences,
                       KvCache& cache, const OutputRows* output_rows) {
  backend_.embed(weights_.token_embd, views.token_ids, views.hidden);  // hidden [T, d]
  if (hparams_.embedding_scale != 1.0f) backend_.scale(views.hidden, hparams_.embedding_scale, views.hidden);
  const StepContext step{backend_, hparams_, arch_, views, sequences};
  transformer_layers(step, weights_.layers, cache, output_rows);
}

// Rows t..rows-1 are padding: token 0 at position 0 with no KV slot (write_kv skips
// it) and no sequence (attention writes zeros). Every row gets logits; only the
// real ones are downloaded. Per-step values reach the recording through the
// uploaded tensors and begin_step's metadata only.
backends::Tensor Model::forward_recorded(const StepBatch& batch, KvCache& cache, int64_t rows) {
  const auto t = static_cast<int64_t>(batch.token_ids.size());
  const Workspace::Views views = workspace_views(rows, rows);
  pad_ids_.assign(batch.token_ids.begin(), batch.token_ids.end());
  pad_positions_.assign(batch.positions.begin(), batch.positions.end());
  pad_slots_.assign(batch.kv_slots.begin(), batch.kv_slots.end());
  pad_ids_.resize(static_cast<size_t>(rows), 0);
  pad_positions_.resize(static_cast<size_t>(rows), 0);
  pad_slots_.resize(static_cast<size_t>(rows), -1);
  begin_step(views, pad_ids_, pad_positions_, pad_slots_, batch.sequences);
  backend_.run_recorded(rows, [&] {
    run_layers(views, batch.sequences, cache);
    backend_.rms_norm(views.hidden, weights_.output_norm, hparams_.norm_eps, views.final_hidden);
    backend_.matmul(views.final_hidden, weights_.output, views.logits);  // logits [rows, vocab]
  });
  return views.logits.slice(0, t);
}

void Model::apply_final_softcap(std::span<float> logits) const {
  if (hparams_.final_softcap <= 0.0f) return;
  // No tanh op in the backend; R x vocab on the host is small next to the matmul.
  const float cap = hparams_.final_softcap;
  for (float& x : logits) x = cap * std::tanh(x / cap);
}

backends::Tensor Model::final_logits(const StepBatch& batch, const Workspace::Views& views) {
  const auto r = static_cast<int64_t>(batch.logit_rows.size());
  if (r == 0) return {};
  // final_hidden [R, d]: the rows that sample, normed. A contiguous run is a slice;
  // otherwise gather the rows with embed(), treating hidden [T, d] as the table.
  const int64_t start = contiguous_start(batch.logit_rows);
  if (start >= 0) {
    backend_.rms_norm(views.hidden.slice(start, r), weights_.output_norm, hparams_.norm_eps,
                      views.final_hidden);
  } else {
    backend_.upload(views.logit_rows, backends::host_bytes(batch.logit_rows));
    backend_.embed(views.hidden, views.logit_rows, views.final_hidden);
    backend_.rms_norm(views.final_hidden, weights_.output_norm, hparams_.norm_eps, views.final_hidden);
  }
  backend_.matmul(views.final_hidden, weights_.output, views.logits);  // logits [R, vocab]
  return views.logits;
}

// Each run of consecutive hidden rows is normed from `hidden` into the same rows of
// `normed` (free once the layers are done; final_logits uses final_hidden) and
// downloaded. RMSNorm is per row, so a row's result is the same in any batch.
void Model::download_hidden_rows(const StepBatch& batch, const Workspace::Views& views, std::span<float> hidden) {
  const std::span<const int32_t> rows = batch.hidden_rows;
  const auto d = static_cast<size_t>(hparams_.embedding_length);
  for (size_t i = 0; i < rows.size();) {
    size_t n = 1;
    while (i + n < rows.size() && rows[i + n] == rows[i] + static_cast<int32_t>(n)) ++n;
    const backends::Tensor normed = views.normed.slice(rows[i], static_cast<int64_t>(n));
    backend_.rms_norm(views.hidden.slice(rows[i], static_cast<int64_t>(n)), weights_.output_norm, hparams_.norm_eps,
                      normed);
    backend_.download(normed, std::as_writable_bytes(hidden.subspan(i * d, n * d)));
    i += n;
  }
}

}  // namespace sluice::engine
