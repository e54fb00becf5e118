#include "engine/tts/speaker/mel_frontend.h"

#include <limits>

#include "backends/check.h"
#include "engine/tts/speaker/column_view.h"

namespace sluice::engine::tts {
namespace {

using backends::DType;
using backends::Tensor;

// PyTorch's reflect padding: the edge sample is not repeated.
int64_t reflect(int64_t i, int64_t n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); }

}  // namespace

MelFrontend::MelFrontend(backends::Backend& backend, MelSpec spec) : backend_(backend), spec_(spec) {
  auto upload = [&](const std::vector<float>& values, std::initializer_list<int64_t> shape) {
    auto& buffer = buffers_.emplace_back(backend_.allocate(values.size() * sizeof(float)));
    const Tensor t = Tensor::make(buffer.get(), 0, DType::F32, shape);
    backend_.upload(t, std::as_bytes(std::span<const float>(values)));
    return t;
  };
  const int64_t bins = spec_.num_bins();
  dft_ = upload(dft_basis(spec_), {2 * bins, spec_.n_fft});
  filterbank_ = upload(slaney_mel_filterbank(spec_), {spec_.num_mels, bins});
  magnitude_eps_ = upload(std::vector<float>(static_cast<size_t>(bins), spec_.magnitude_eps), {bins});
}

int64_t MelFrontend::num_frames(int64_t num_samples) const {
  const int64_t padded = num_samples + 2 * spec_.padding();
  return padded < spec_.n_fft ? 0 : (padded - spec_.n_fft) / spec_.hop + 1;
}

std::optional<std::string> MelFrontend::check_length(int64_t num_samples) const {
  if (num_samples <= spec_.padding() || num_frames(num_samples) < 1)
    return "the audio has " + std::to_string(num_samples) + " samples; the mel front-end needs more than " +
           std::to_string(spec_.padding());
  return std::nullopt;
}

Tensor MelFrontend::compute(std::span<const float> audio, DeviceArena& arena) const {
  const auto n = static_cast<int64_t>(audio.size());
  SLUICE_CHECK(!check_length(n), "MelFrontend::compute: audio too short");
  const int64_t frames = num_frames(n), hop = spec_.hop, taps = spec_.n_fft / hop, bins = spec_.num_bins();
  // Frame t is hop-wide rows t .. t + taps - 1 of the padded signal; the rows past
  // the last frame's end are not needed.
  const int64_t rows = frames + taps - 1, pad = spec_.padding();
  std::vector<float> padded(static_cast<size_t>(rows * hop));
  for (int64_t i = 0; i < rows * hop; ++i) padded[static_cast<size_t>(i)] = audio[static_cast<size_t>(reflect(i - pad, n))];
  const Tensor signal = arena.upload(DType::F32, {rows, hop}, padded);

  const Tensor spectrum = arena.f32({frames, 2 * bins});  // [re | im]
  backend_.conv1d(signal, dft_, Tensor{}, 1, spectrum);
  const Tensor re = columns(spectrum, 0, bins), im = columns(spectrum, bins, bins);
  backend_.mul(re, re, re);
  backend_.mul(im, im, im);
  backend_.add(re, im, re);
  backend_.add_bias(re, magnitude_eps_, re);
  backend_.activate(re, backends::Backend::Activation::sqrt, re);

  const Tensor mels = arena.f32({frames, spec_.num_mels});
  backend_.matmul(re, filterbank_, mels);
  backend_.clamp(mels, spec_.log_floor, std::numeric_limits<float>::infinity(), mels);
  backend_.activate(mels, backends::Backend::Activation::log, mels);
  return mels;
}

}  // namespace sluice::engine::tts
