#include "engine/tts/model/talker.h"

#include "backends/check.h"
#include "backends/host_bytes.h"
#include "engine/models/architecture.h"
#include "engine/models/transformer_block.h"

namespace sluice::engine::tts {
namespace {

using backends::DType;
using backends::Tensor;

// Row indices where a missing part (-1) points at the zero row `zero_row`.
std::vector<int32_t> with_zero_row(std::span<const int32_t> map, int32_t zero_row) {
  std::vector<int32_t> out(map.begin(), map.end());
  for (int32_t& r : out)
    if (r < 0) r = zero_row;
  return out;
}

}  // namespace

Talker::Talker(backends::Backend& backend, const TtsConfig& config, const TtsWeights& weights)
    : backend_(backend), config_(config), weights_(weights), workspace_(backend, config.talker) {}

void Talker::project_text(std::span<const int32_t> ids, const Tensor& out) {
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t th = config_.text_hidden_size;
  const TalkerWeights& w = weights_.talker;
  const Tensor id_view = text_ids_.view(backend_, DType::I32, {n});
  backend_.upload(id_view, std::as_bytes(ids));
  const Tensor in = text_in_.view(backend_, DType::F32, {n, th});   // [n, th]
  const Tensor mid = text_mid_.view(backend_, DType::F32, {n, th});  // [n, th]
  backend_.embed(w.text_embedding, id_view, in);
  backend_.matmul(in, w.text_fc1, mid);
  backend_.add_bias(mid, w.text_fc1_bias, mid);
  backend_.activate(mid, backends::Backend::Activation::silu, mid);
  backend_.matmul(mid, w.text_fc2, out);  // [n, d]
  backend_.add_bias(out, w.text_fc2_bias, out);
}

void Talker::check(const TalkerStep& s, const KvCache& cache) const {
  const size_t t = s.text_of_row.size();
  SLUICE_CHECK(t > 0 && s.codec_of_row.size() == t && s.positions.size() == t && s.kv_slots.size() == t,
               "Talker::forward: row arrays differ in length");
  const int64_t d = config_.talker.embedding_length;
  SLUICE_CHECK(s.speaker_vectors.size() % static_cast<size_t>(d) == 0,
               "Talker::forward: speaker vectors are not rows of the talker's width");
  const auto num_codec_parts = static_cast<int32_t>(s.codec_ids.size() + s.speaker_vectors.size() / static_cast<size_t>(d));
  for (size_t r = 0; r < t; ++r) {
    SLUICE_CHECK(s.text_of_row[r] < static_cast<int32_t>(s.text_ids.size()) && s.codec_of_row[r] < num_codec_parts,
                 "Talker::forward: row part outside its list");
    SLUICE_CHECK(s.kv_slots[r] >= 0 && s.kv_slots[r] < cache.num_slots(), "Talker::forward: KV slot outside the cache");
  }
  for (int32_t id : s.text_ids)
    SLUICE_CHECK(id >= 0 && id < config_.text_vocab_size, "Talker::forward: text id outside the vocabulary");
  for (int32_t id : s.codec_ids)
    SLUICE_CHECK(id >= 0 && id < config_.talker.vocab_size, "Talker::forward: codec id outside the vocabulary");
  for (int32_t id : s.feedback_codes)
    SLUICE_CHECK(id >= 0 && id < config_.predictor.vocab_size, "Talker::forward: code outside its codebook");
  SLUICE_CHECK(s.num_feedback >= 0 && s.num_feedback <= static_cast<int32_t>(s.codec_ids.size()) &&
                   s.feedback_codes.size() ==
                       static_cast<size_t>(s.num_feedback) * static_cast<size_t>(config_.num_code_groups - 1),
               "Talker::forward: feedback codes do not match the feedback rows");
  SLUICE_CHECK(s.logit_rows.size() == s.sequences.size(), "Talker::forward: one logit row per sequence");
  for (const auto& seq : s.sequences)
    SLUICE_CHECK(static_cast<int64_t>(seq.block_table.size()) * cache.block_size() >= seq.num_cached + seq.num_queries,
                 "Talker::forward: block table shorter than the sequence");
}

// hidden[r] = P(text)[text_of_row[r]] + codec[codec_of_row[r]], each part gathered
// from a compact table whose extra last row is zero (a row without that part).
void Talker::build_inputs(const TalkerStep& s, const Workspace::Views& views) {
  const auto t = static_cast<int64_t>(s.text_of_row.size());
  const int64_t d = config_.talker.embedding_length;
  const auto n_text = static_cast<int64_t>(s.text_ids.size());
  const auto n_codec = static_cast<int64_t>(s.codec_ids.size());
  const auto n_speaker = static_cast<int64_t>(s.speaker_vectors.size()) / d;
  const TalkerWeights& w = weights_.talker;

  const Tensor text = text_out_.view(backend_, DType::F32, {n_text + 1, d});
  if (n_text > 0) project_text(s.text_ids, text.slice(0, n_text));
  backend_.fill_zero(text.slice(n_text, 1));

  // Codec parts: the embeddings of codec_ids, the speaker vectors, a zero row.
  const Tensor codec = codec_out_.view(backend_, DType::F32, {n_codec + n_speaker + 1, d});
  if (n_codec > 0) {
    const Tensor ids = codec_ids_.view(backend_, DType::I32, {n_codec});
    backend_.upload(ids, backends::host_bytes(s.codec_ids));
    backend_.embed(w.codec_embedding, ids, codec.slice(0, n_codec));
  }
  if (n_speaker > 0) backend_.upload(codec.slice(n_codec, n_speaker), backends::host_bytes(s.speaker_vectors));
  backend_.fill_zero(codec.slice(n_codec + n_speaker, 1));
  if (s.num_feedback > 0) {
    // Feedback rows: C(c0) + sum_j cp.codec_embedding[j-1](c_j), added in codebook
    // order as the reference sums them.
    const int64_t f = s.num_feedback;
    const Tensor rows = codec.slice(n_codec - f, f);
    const Tensor ids = feedback_ids_.view(backend_, DType::I32, {static_cast<int64_t>(s.feedback_codes.size())});
    backend_.upload(ids, backends::host_bytes(s.feedback_codes));
    const Tensor add = feedback_add_.view(backend_, DType::F32, {f, d});
    for (int32_t j = 1; j < config_.num_code_groups; ++j) {
      backend_.embed(weights_.predictor.codec_embeddings[static_cast<size_t>(j - 1)], ids.slice((j - 1) * f, f), add);
      backend_.add(rows, add, rows);
    }
  }

  const Tensor text_map = text_map_.view(backend_, DType::I32, {t});
  const Tensor codec_map = codec_map_.view(backend_, DType::I32, {t});
  backend_.upload(text_map, backends::host_bytes(with_zero_row(s.text_of_row, static_cast<int32_t>(n_text))));
  backend_.upload(codec_map, backends::host_bytes(with_zero_row(s.codec_of_row, static_cast<int32_t>(n_codec + n_speaker))));
  backend_.embed(text, text_map, views.hidden);     // hidden [T, d]
  backend_.embed(codec, codec_map, views.branch);   // branch [T, d] as scratch
  backend_.add(views.hidden, views.branch, views.hidden);
}

void Talker::input_rows(const TalkerStep& s, std::span<float> rows) {
  const auto t = static_cast<int64_t>(s.text_of_row.size());
  SLUICE_CHECK(rows.size() == static_cast<size_t>(t * config_.talker.embedding_length),
               "Talker::input_rows: rows span is not T x d");
  const Workspace::Views views = workspace_.views(t, 0);
  build_inputs(s, views);
  backend_.download(views.hidden, std::as_writable_bytes(rows));
  backend_.synchronize();
}

void Talker::forward(const TalkerStep& s, KvCache& cache, std::span<float> logits) {
  check(s, cache);
  const auto t = static_cast<int64_t>(s.text_of_row.size());
  const auto r = static_cast<int64_t>(s.logit_rows.size());
  SLUICE_CHECK(logits.size() == static_cast<size_t>(r * config_.talker.vocab_size),
               "Talker::forward: logits span is not R x vocab");
  const Workspace::Views views = workspace_.views(t, r);
  build_inputs(s, views);
  backend_.upload(views.positions, backends::host_bytes(s.positions));
  backend_.upload(views.kv_slots, backends::host_bytes(s.kv_slots));
  backend_.begin_step(s.sequences, t);
  const Architecture arch = qwen3_architecture();
  const StepContext step{backend_, config_.talker, arch, views, s.sequences};
  // final_hidden [R, d]: the last row of each sampling sequence, gathered and normed.
  // When that is fewer rows than the step (a prompt's prefill), the last layer runs
  // its projections and MLP on them alone (transformer_block.h; same bits).
  backend_.upload(views.logit_rows, backends::host_bytes(s.logit_rows));
  if (r < t) {
    const OutputRows rows{.ids = views.logit_rows, .hidden = views.final_hidden};
    transformer_layers(step, weights_.talker.layers, cache, &rows);
  } else {
    transformer_layers(step, weights_.talker.layers, cache);
    backend_.embed(views.hidden, views.logit_rows, views.final_hidden);
  }
  backend_.rms_norm(views.final_hidden, weights_.talker.norm, config_.talker.norm_eps, views.final_hidden);
  backend_.matmul(views.final_hidden, weights_.talker.codec_head, views.logits);  // [R, V]
  final_hidden_ = views.final_hidden;
  backend_.download(views.logits, std::as_writable_bytes(logits));
  backend_.synchronize();
}

}  // namespace sluice::engine::tts
