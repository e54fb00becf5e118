#pragma once
// The constant tables of the speaker encoder's mel front-end, computed on the host
// exactly as the official package gets them (mel_spectrogram in
// qwen_tts/core/models/modeling_qwen3_tts.py): torch.hann_window (periodic), a real
// DFT basis in the layout Backend::conv1d reads, and librosa's Slaney mel filterbank
// (librosa.filters.mel with htk=False, norm="slaney", float32). Pure functions; any
// thread.
#include <cstdint>
#include <vector>

namespace sluice::engine::tts {

// The official mel_spectrogram call of extract_speaker_embedding: 24 kHz audio,
// reflect padding of (n_fft - hop) / 2 on both sides, STFT without centering,
// magnitude sqrt(re^2 + im^2 + 1e-9), 128 mels over 0..12 kHz, log(clamp(x, 1e-5)).
struct MelSpec {
  int32_t sample_rate = 24000;
  int64_t n_fft = 1024;
  int64_t hop = 256;
  int64_t num_mels = 128;
  double fmin = 0.0;
  double fmax = 12000.0;
  float magnitude_eps = 1e-9f;
  float log_floor = 1e-5f;

  int64_t num_bins() const { return n_fft / 2 + 1; }
  int64_t padding() const { return (n_fft - hop) / 2; }
};

// w[n] = 0.5 - 0.5 cos(2 pi n / n_fft), n < n_fft (torch.hann_window's periodic form).
std::vector<float> hann_window(int64_t n_fft);

// [2 * num_bins, n_fft]: row k < num_bins is window[n] * cos(2 pi k n / n_fft), row
// num_bins + k is -window[n] * sin(2 pi k n / n_fft), so a frame's dot with a row is
// the real or imaginary part of its windowed DFT bin k. Read as conv1d weights
// [Cout, taps * hop] (tap j, channel c = sample j * hop + c), the hop-wide rows of
// the padded signal give one STFT frame per output row. n_fft must be a multiple of hop.
std::vector<float> dft_basis(const MelSpec& spec);

// [num_mels, num_bins], librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax) bit for
// bit up to libm: the triangle weights rounded to float32 first, then scaled by the
// Slaney area normalization 2 / (f[i+2] - f[i]) and rounded again, as librosa's
// float32 array does.
std::vector<float> slaney_mel_filterbank(const MelSpec& spec);

}  // namespace sluice::engine::tts
