#pragma once
// The Qwen3-TTS talker's and code predictor's weights as backend tensors, bound
// from a checkpoint's tensors under their published names (those of the official
// classes, as in Qwen/Qwen3-TTS-12Hz-0.6B-Base's model.safetensors). Every
// tensor the config implies is required with its shape, so a checkpoint that does
// not fit fails at load naming the file and the tensor. Immutable after load; used
// by the engine thread of its model.
#include <memory>
#include <optional>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/models/model_weights.h"
#include "engine/tts/model/tts_config.h"

namespace sluice::engine::tts {

// Shapes: d = talker hidden, th = text_hidden_size, tv = text_vocab_size,
// V = talker (codec) vocab, p = predictor hidden, cv = predictor vocab.
struct TalkerWeights {
  backends::Tensor text_embedding;   // [tv, th]
  backends::Tensor text_fc1;         // [th, th]
  backends::Tensor text_fc1_bias;    // [th] F32
  backends::Tensor text_fc2;         // [d, th]
  backends::Tensor text_fc2_bias;    // [d] F32
  backends::Tensor codec_embedding;  // [V, d]
  std::vector<LayerWeights> layers;
  backends::Tensor norm;             // [d] F32
  backends::Tensor codec_head;       // [V, d]
};

struct PredictorWeights {
  std::vector<backends::Tensor> codec_embeddings;  // num_code_groups - 1 of [cv, d]: codebooks 1..15
  backends::Tensor mtp_projection;       // [p, d], only when d != p (null view otherwise)
  backends::Tensor mtp_projection_bias;  // [p] F32, the same
  std::vector<LayerWeights> layers;
  backends::Tensor norm;                 // [p] F32
  std::vector<backends::Tensor> lm_heads;  // num_code_groups - 1 of [cv, p]
};

struct TtsWeights {
  TalkerWeights talker;
  PredictorWeights predictor;
  WeightStore store;
};

// quantize_to (Q8_0 / Q4_0): the decoder matrices, heads and the text projection
// are quantized at load; the embedding tables go to Q8_0. Throws loader::LoadError.
TtsWeights load_tts_weights(const loader::TensorSet& set, const TtsConfig& config, backends::Backend& backend,
                            std::optional<backends::DType> quantize_to);

}  // namespace sluice::engine::tts
