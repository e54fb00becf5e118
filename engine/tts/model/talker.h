#pragma once
// The talker's forward pass for one step of many speech sequences: builds each input
// row from the dual track (as qwen_tts/core/models/modeling_qwen3_tts.py does: text
// projection P(text id) plus codec embedding rows, where a feedback row's codec part
// is the sum of the previous frame's 16 code embeddings), runs the shared decoder
// layers over the paged KV cache, and returns codebook-0 logits for each sequence's
// last row, keeping that row's final-norm hidden state on the device for the code
// predictor.
// Owns its workspace; the engine thread of its model calls it.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/models/kv_cache.h"
#include "engine/models/workspace.h"
#include "engine/tts/model/scratch_buffer.h"
#include "engine/tts/model/talker_step.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/model/tts_weights.h"

namespace sluice::engine::tts {

class Talker {
 public:
  Talker(backends::Backend& backend, const TtsConfig& config, const TtsWeights& weights);

  // Runs the step and fills `logits` [R, V] on the host. A malformed step is a
  // caller bug (SLUICE_CHECK).
  void forward(const TalkerStep& step, KvCache& cache, std::span<float> logits);

  // [R, d] final-norm hidden states of the last forward's logit rows, on the device.
  const backends::Tensor& final_hidden() const { return final_hidden_; }

  // The step's input rows [T, d] (text track + codec track) on the host, without
  // running the layers: what parity tests compare with the reference's embeddings.
  void input_rows(const TalkerStep& step, std::span<float> rows);

  // P(ids): the text track of `ids`, written to out [n, d] (on the device).
  void project_text(std::span<const int32_t> ids, const backends::Tensor& out);

 private:
  void check(const TalkerStep& step, const KvCache& cache) const;
  void build_inputs(const TalkerStep& step, const Workspace::Views& views);

  backends::Backend& backend_;
  const TtsConfig& config_;
  const TtsWeights& weights_;
  Workspace workspace_;
  backends::Tensor final_hidden_;
  // text ids [n] I32; text rows [n + 1, th] and projected [n + 1, d] (last row zero);
  // codec ids / feedback codes I32; codec parts [m + S + 1, d] (codec rows, speaker
  // vectors, a zero row); a feedback addend [f, d]; row maps [T] I32.
  ScratchBuffer text_ids_, text_in_, text_mid_, text_out_, codec_ids_, codec_out_, feedback_ids_, feedback_add_,
      text_map_, codec_map_;
};

}  // namespace sluice::engine::tts
