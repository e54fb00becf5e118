#include "engine/tts/model/code_predictor.h"

#include "backends/check.h"
#include "backends/host_bytes.h"
#include "engine/models/architecture.h"
#include "engine/models/transformer_block.h"

namespace sluice::engine::tts {
namespace {

using backends::DType;
using backends::Tensor;

}  // namespace

CodePredictor::CodePredictor(backends::Backend& backend, const TtsConfig& config, const TtsWeights& weights,
                             int64_t max_batch)
    : backend_(backend),
      config_(config),
      weights_(weights),
      max_batch_(max_batch),
      workspace_(backend, config.predictor),
      cache_(backend, config.predictor, KvCacheConfig{max_batch, config.num_code_groups, DType::F32}) {}

void CodePredictor::project(const Tensor& rows, const Tensor& hidden) {
  const PredictorWeights& w = weights_.predictor;
  if (w.mtp_projection) {
    backend_.matmul(rows, w.mtp_projection, hidden);  // [n, p]
    backend_.add_bias(hidden, w.mtp_projection_bias, hidden);
  } else {
    backend_.copy(rows, hidden);
  }
}

void CodePredictor::run(const Workspace::Views& views, std::span<const backends::SequenceSlice> sequences,
                        int32_t head, std::span<const int32_t> logit_rows, std::span<float> logits) {
  const auto t = views.hidden.dim(0);
  backend_.upload(views.positions, std::as_bytes(std::span<const int32_t>(positions_)));
  backend_.upload(views.kv_slots, std::as_bytes(std::span<const int32_t>(slots_)));
  backend_.begin_step(sequences, t);
  const Architecture arch = qwen3_architecture();
  const StepContext step{backend_, config_.predictor, arch, views, sequences};
  transformer_layers(step, weights_.predictor.layers, cache_);
  backend_.upload(views.logit_rows, std::as_bytes(logit_rows));
  backend_.embed(views.hidden, views.logit_rows, views.final_hidden);
  backend_.rms_norm(views.final_hidden, weights_.predictor.norm, config_.predictor.norm_eps, views.final_hidden);
  backend_.matmul(views.final_hidden, weights_.predictor.lm_heads[static_cast<size_t>(head)], views.logits);
  backend_.download(views.logits, std::as_writable_bytes(logits));
  backend_.synchronize();
}

void CodePredictor::predict(const Tensor& talker_hidden, std::span<const int32_t> hidden_rows,
                            std::span<const int32_t> c0, const PickCode& pick, std::span<int32_t> codes) {
  const auto n = static_cast<int64_t>(c0.size());
  const int32_t groups = config_.num_code_groups;
  SLUICE_CHECK(n > 0 && n <= max_batch_ && hidden_rows.size() == c0.size() &&
                   codes.size() == static_cast<size_t>(n * groups),
               "CodePredictor::predict: batch sizes disagree");
  const int64_t d = config_.talker.embedding_length;
  const int64_t cv = config_.predictor.vocab_size;
  const int64_t r = talker_hidden.dim(0);
  for (int32_t row : hidden_rows) SLUICE_CHECK(row >= 0 && row < r, "CodePredictor::predict: hidden row outside");

  // Prefill: src = [talker_hidden (R rows); C(c0) (n rows)], gathered so batch row
  // i gets rows 2i = its h_last and 2i+1 = C(c0[i]).
  const Tensor src = src_.view(backend_, DType::F32, {r + n, d});
  backend_.copy(talker_hidden, src.slice(0, r));
  ids_.assign(c0.begin(), c0.end());
  const Tensor ids = ids_buf_.view(backend_, DType::I32, {n});
  backend_.upload(ids, backends::host_bytes(ids_));
  backend_.embed(weights_.talker.codec_embedding, ids, src.slice(r, n));
  map_.clear();
  for (int64_t i = 0; i < n; ++i) {
    map_.push_back(hidden_rows[static_cast<size_t>(i)]);
    map_.push_back(static_cast<int32_t>(r + i));
  }
  const Tensor map = map_buf_.view(backend_, DType::I32, {2 * n});
  backend_.upload(map, backends::host_bytes(map_));
  const Tensor gathered = gathered_.view(backend_, DType::F32, {2 * n, d});
  backend_.embed(src, map, gathered);

  sequences_.assign(static_cast<size_t>(n), {});
  positions_.clear();
  slots_.clear();
  logit_rows_.clear();
  const auto block = static_cast<int32_t>(cache_.block_size());
  for (int64_t i = 0; i < n; ++i) {
    auto& seq = sequences_[static_cast<size_t>(i)];
    seq.query_begin = static_cast<int32_t>(2 * i);
    seq.num_queries = 2;
    seq.num_cached = 0;
    seq.block_table = {static_cast<int32_t>(i)};
    for (int32_t p = 0; p < 2; ++p) {
      positions_.push_back(p);
      slots_.push_back(static_cast<int32_t>(i) * block + p);
    }
    logit_rows_.push_back(static_cast<int32_t>(2 * i + 1));
    codes[static_cast<size_t>(i * groups)] = c0[static_cast<size_t>(i)];
  }
  logits_.resize(static_cast<size_t>(n * cv));
  {
    const Workspace::Views views = workspace_.views(2 * n, n);
    project(gathered, views.hidden);
    run(views, sequences_, 0, logit_rows_, logits_);
  }
  for (int32_t j = 1; j < groups; ++j) {
    for (int64_t i = 0; i < n; ++i)
      codes[static_cast<size_t>(i * groups + j)] =
          pick(i, j, std::span<const float>(logits_).subspan(static_cast<size_t>(i * cv), static_cast<size_t>(cv)));
    if (j + 1 == groups) break;
    // Single step: row i = proj(cp.codec_embedding[j-1](c_j)) at position j + 1.
    positions_.clear();
    slots_.clear();
    logit_rows_.clear();
    for (int64_t i = 0; i < n; ++i) {
      auto& seq = sequences_[static_cast<size_t>(i)];
      seq.query_begin = static_cast<int32_t>(i);
      seq.num_queries = 1;
      seq.num_cached = j + 1;
      positions_.push_back(j + 1);
      slots_.push_back(static_cast<int32_t>(i) * block + j + 1);
      logit_rows_.push_back(static_cast<int32_t>(i));
      ids_[static_cast<size_t>(i)] = codes[static_cast<size_t>(i * groups + j)];
    }
    backend_.upload(ids, backends::host_bytes(ids_));
    const Tensor rows = gathered.slice(0, n);
    backend_.embed(weights_.predictor.codec_embeddings[static_cast<size_t>(j - 1)], ids, rows);
    const Workspace::Views views = workspace_.views(n, n);
    project(rows, views.hidden);
    run(views, sequences_, j, logit_rows_, logits_);
  }
}

}  // namespace sluice::engine::tts
