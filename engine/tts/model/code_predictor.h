#pragma once
// The code predictor ("sub-talker", the official
// Qwen3TTSTalkerCodePredictorModelForConditionalGeneration): for every sequence that
// sampled a codebook-0 token this step, codebooks 1..G-1 of the frame, all sequences
// batched in one forward per sub-step. Each frame starts a fresh short KV (one block
// per batch row, positions from 0): a 2-row prefill
// [proj(h_last), proj(C(c0))] then G-2 single rows proj(cp.codec_embedding[j-1](c_j)),
// lm_head[j] on each last row. proj is small_to_mtp_projection when the talker is
// wider than the predictor, else the identity. Owns its workspace and KV; the
// engine thread of its model calls it.
//
// Its KV is F32 whatever the talker's is: 15 decisions per frame over logits that
// spread tens of units make it the stage most sensitive to rounding (an F16 KV
// flipped greedy codes the official package picks by margins of 1e-3..1e-2, see
// tests/fixtures/qwen3_tts custom_voice_wide), and it holds only
// num_code_groups positions per sequence (5 layers x 16 positions x 8 KV heads x 128
// x 2 x 4 bytes = 640 KiB per sequence for the real models).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/models/kv_cache.h"
#include "engine/models/workspace.h"
#include "engine/tts/model/scratch_buffer.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/model/tts_weights.h"

namespace sluice::engine::tts {

class CodePredictor {
 public:
  // max_batch: the most sequences one call takes (its KV holds one block each).
  CodePredictor(backends::Backend& backend, const TtsConfig& config, const TtsWeights& weights, int64_t max_batch);

  // Picks code `codebook` (1..G-1) for each batch row from its logits [cv] (host
  // memory); the sampler's choice, called in codebook order.
  using PickCode = std::function<int32_t(int64_t row, int32_t codebook, std::span<const float> logits)>;

  // Batch row i predicts for the talker's final-hidden row hidden_rows[i] (of
  // talker_hidden [R, d]) with codebook-0 token c0[i]; fills codes [n, G] row-major
  // (codes[i*G] = c0[i]). n <= max_batch.
  void predict(const backends::Tensor& talker_hidden, std::span<const int32_t> hidden_rows,
               std::span<const int32_t> c0, const PickCode& pick, std::span<int32_t> codes);

 private:
  // rows [n, d] (talker width) -> hidden [n, p] of the workspace.
  void project(const backends::Tensor& rows, const backends::Tensor& hidden);
  void run(const Workspace::Views& views, std::span<const backends::SequenceSlice> sequences, int32_t head,
           std::span<const int32_t> logit_rows, std::span<float> logits);

  backends::Backend& backend_;
  const TtsConfig& config_;
  const TtsWeights& weights_;
  int64_t max_batch_;
  Workspace workspace_;
  KvCache cache_;
  std::vector<backends::SequenceSlice> sequences_;
  std::vector<int32_t> positions_, slots_, logit_rows_, ids_, map_;
  std::vector<float> logits_;
  // src [R + n, d] (talker rows then C(c0) rows), gathered inputs [2n, d], ids and maps.
  ScratchBuffer src_, gathered_, ids_buf_, map_buf_;
};

}  // namespace sluice::engine::tts
