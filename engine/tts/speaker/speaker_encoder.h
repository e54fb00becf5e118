#pragma once
// The Base checkpoints' speaker encoder: reference audio (24 kHz) -> log-mels
// (mel_frontend.h) -> ECAPA-TDNN -> the x-vector [enc_dim] that the talker's prompt
// takes as its speaker row (the official Qwen3TTSSpeakerEncoder in
// qwen_tts/core/models/modeling_qwen3_tts.py). Everything runs on Backend ops, in the
// [time, channels] layout of the signal ops:
//   - every Conv1d pads "same" with reflection: the padded input is a row gather
//     (embed) of the signal with reflected indices, then a causal conv1d;
//   - concatenations along channels are writes into column ranges of one tensor;
//   - reductions over time (the squeeze-excitation mean, the attentive pooling's
//     statistics, its softmax over time) run on the transpose: a matmul by a row of
//     weights (1 or 1/T) or a row softmax;
//   - per-channel scaling (squeeze-excitation) is a one-tap depthwise conv.
// Owns the weights and the front-end tables, immutable after load; its backend's
// thread (one at a time) runs it.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/speaker/mel_frontend.h"
#include "engine/tts/speaker/speaker_encoder_config.h"
#include "engine/tts/speaker/speaker_weights.h"

namespace sluice::engine::tts {

class SpeakerEncoder {
 public:
  // Throws loader::LoadError naming the file and the tensor.
  SpeakerEncoder(const loader::TensorSet& tensors, const SpeakerEncoderConfig& config, backends::Backend& backend);

  const SpeakerEncoderConfig& config() const { return config_; }
  int32_t sample_rate() const { return config_.sample_rate; }

  // Why audio of `num_samples` samples (at sample_rate()) cannot be encoded: too
  // short for the front-end's padding or the convolutions' reflection; nullopt when
  // it can.
  std::optional<std::string> check_length(int64_t num_samples) const;

  // The x-vector [enc_dim] of mono audio at sample_rate(); check_length must pass.
  std::vector<float> embed(std::span<const float> audio) const;
  // The log-mels [frames, mel_dim] of that audio (what embed() feeds the network).
  std::vector<float> mels(std::span<const float> audio) const;
  // The x-vector of given log-mels [frames, mel_dim] (tests: the network alone).
  std::vector<float> embed_mels(std::span<const float> mels, int64_t frames) const;

 private:
  std::vector<float> run_network(const backends::Tensor& mels, DeviceArena& arena) const;
  int64_t min_frames() const;

  backends::Backend& backend_;
  SpeakerEncoderConfig config_;
  SpeakerEncoderWeights weights_;
  MelFrontend frontend_;
};

}  // namespace sluice::engine::tts
