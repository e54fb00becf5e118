#pragma once
// The speaker encoder's log-mel front-end on a backend, as the official
// mel_spectrogram (qwen_tts/core/models/modeling_qwen3_tts.py) computes it: the
// 24 kHz signal reflect-padded by (n_fft - hop) / 2 on both sides on the host, then on
// the device one conv1d with the DFT basis over its hop-wide rows (one STFT frame per
// output row: frame t covers samples [t*hop, t*hop + n_fft) of the padded signal),
// |X| = sqrt(re^2 + im^2 + 1e-9), the Slaney mel filterbank (a matmul) and
// log(clamp(x, 1e-5)). Owns the tables on its backend; the thread that computes
// speaker embeddings uses it.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/tts/speaker/device_arena.h"
#include "engine/tts/speaker/mel_tables.h"

namespace sluice::engine::tts {

class MelFrontend {
 public:
  explicit MelFrontend(backends::Backend& backend, MelSpec spec = {});

  const MelSpec& spec() const { return spec_; }
  // Frames of `num_samples` samples: (num_samples + 2 * padding - n_fft) / hop + 1.
  int64_t num_frames(int64_t num_samples) const;
  // Why `num_samples` cannot be transformed (the reflect padding needs more samples
  // than it pads, as PyTorch's does), or nullopt.
  std::optional<std::string> check_length(int64_t num_samples) const;

  // The log-mels [num_frames, num_mels] of `audio` (24 kHz, in [-1, 1]), in
  // `arena`. check_length must pass (SLUICE_CHECK).
  backends::Tensor compute(std::span<const float> audio, DeviceArena& arena) const;

 private:
  backends::Backend& backend_;
  MelSpec spec_;
  std::vector<std::unique_ptr<backends::Buffer>> buffers_;
  backends::Tensor dft_;          // [2 * bins, n_fft]: conv1d weights, taps n_fft / hop of hop channels
  backends::Tensor filterbank_;   // [num_mels, bins]
  backends::Tensor magnitude_eps_;  // [bins], every entry magnitude_eps
};

}  // namespace sluice::engine::tts
