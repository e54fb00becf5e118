#pragma once
// Shared by the codec decoder tests: a small config that exercises every part of
// the decoder (GQA heads, a short window the KV ring wraps around many times, two
// upsampler stages, decoder blocks of odd and even stride), random codes, and a
// tensor set that drops or reshapes one tensor of another set.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_config.h"

namespace sluice::engine::tts::test {

inline CodecConfig small_codec_config() {
  CodecConfig c;
  c.num_quantizers = 4;
  c.codebook_size = 32;
  c.codebook_dim = 16;
  c.latent_dim = 24;
  c.decoder_dim = 32;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.sliding_window = 5;
  c.upsampling_ratios = {2, 2};
  c.upsample_rates = {3, 2};
  c.output_sample_rate = 24000;
  c.samples_per_frame = 24;
  return c;
}

inline std::vector<int32_t> random_codes(const CodecConfig& c, int64_t frames, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> code(0, static_cast<int32_t>(c.codebook_size - 1));
  std::vector<int32_t> out(static_cast<size_t>(frames * c.num_quantizers));
  for (int32_t& v : out) v = code(rng);
  return out;
}

// Another set with `missing` absent and `reshaped` stored as [1, ...its shape];
// tensors appear to live in `file`.
class TamperedTensorSet final : public loader::TensorSet {
 public:
  TamperedTensorSet(const loader::TensorSet& inner, std::string missing, std::string reshaped, std::filesystem::path file)
      : inner_(inner), missing_(std::move(missing)), reshaped_(std::move(reshaped)), file_(std::move(file)) {}

  const std::filesystem::path& path() const override { return inner_.path(); }
  std::optional<loader::WeightView> find(std::string_view name) const override {
    if (name == missing_) return std::nullopt;
    auto view = inner_.find(name);
    if (view && name == reshaped_) view->shape.insert(view->shape.begin(), 1);
    return view;
  }
  std::filesystem::path file_of(std::string_view) const override { return file_; }
  std::vector<std::string> names() const override { return inner_.names(); }
  loader::WeightView require(std::string_view name, std::span<const int64_t> shape) const override {
    if (name != missing_) inner_.require(name, shape);  // a random set makes it on demand
    return TensorSet::require(name, shape);
  }

 private:
  const loader::TensorSet& inner_;
  std::string missing_, reshaped_;
  std::filesystem::path file_;
};

}  // namespace sluice::engine::tts::test
