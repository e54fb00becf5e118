#pragma once
// A loaded Qwen3-TTS model: its config, text tokenizer and the talker and code
// predictor weights bound to one backend, and for a Base checkpoint its speaker
// encoder (the codec decoder is loaded on its own, engine/tts/codec/). Immutable
// after load; generators (tts_generator.h) borrow it on the engine thread of the
// model. The backend must outlive it.
#include <filesystem>
#include <memory>
#include <optional>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/model/tts_weights.h"
#include "engine/tts/speaker/speaker_encoder.h"

namespace sluice::engine::tts {

class TtsModel {
 public:
  // A checkpoint folder (config.json, generation_config.json, model.safetensors,
  // vocab.json, merges.txt, tokenizer_config.json). quantize_to (Q8_0 / Q4_0)
  // quantizes the matrices at load. Throws loader::LoadError naming the file and
  // the key or tensor.
  static std::unique_ptr<TtsModel> load(const std::filesystem::path& dir, backends::Backend& backend,
                                        std::optional<backends::DType> quantize_to = std::nullopt);
  // Parts made elsewhere: random tensors at a preset's shapes for benchmarks (no
  // tokenizer: such a model starts prompts built without one, tts_prompt.h).
  static std::unique_ptr<TtsModel> from_parts(std::shared_ptr<const loader::TensorSet> tensors, TtsConfig config,
                                              std::optional<tokenizer::Tokenizer> tokenizer,
                                              backends::Backend& backend,
                                              std::optional<backends::DType> quantize_to = std::nullopt);

  const TtsConfig& config() const { return config_; }
  // Absent for a model made from parts without one.
  const std::optional<tokenizer::Tokenizer>& tokenizer() const { return tokenizer_; }
  const TtsWeights& weights() const { return weights_; }
  backends::Backend& backend() const { return backend_; }
  // A Base checkpoint's speaker encoder (x-vectors of reference audio); null for
  // the other kinds. It runs on backend(), so on the thread that owns it.
  const SpeakerEncoder* speaker_encoder() const { return speaker_encoder_.get(); }

 private:
  TtsModel(std::shared_ptr<const loader::TensorSet> tensors, TtsConfig config,
           std::optional<tokenizer::Tokenizer> tokenizer, backends::Backend& backend,
           std::optional<backends::DType> quantize_to);

  std::shared_ptr<const loader::TensorSet> tensors_;  // owns the bytes the weights view
  TtsConfig config_;
  std::optional<tokenizer::Tokenizer> tokenizer_;
  backends::Backend& backend_;
  TtsWeights weights_;
  std::unique_ptr<SpeakerEncoder> speaker_encoder_;
};

}  // namespace sluice::engine::tts
