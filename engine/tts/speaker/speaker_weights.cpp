#include "engine/tts/speaker/speaker_weights.h"

#include <string>

#include "backends/conv_panels.h"
#include "engine/loader/host_upload.h"

namespace sluice::engine::tts {
namespace {

// Reads conv tensors from the set, reshapes them on the host and uploads the result.
class Loader {
 public:
  Loader(const loader::TensorSet& set, backends::Backend& backend, SpeakerEncoderWeights& out)
      : set_(set), backend_(backend), out_(out) {}

  // `prefix`.conv.weight [cout, cin, taps] and its bias, the tap moved outward (on
  // the CPU as conv_panels.h's panels).
  TdnnWeights conv(const std::string& prefix, int64_t cout, int64_t cin, int64_t taps, int64_t dilation) {
    const std::vector<float> packed =
        loader::conv1d_taps_outward(set_.require_f32(prefix + ".weight", {cout, cin, taps}), cout, cin, taps);
    TdnnWeights out;
    out.w = backends::upload_conv_weight(backend_, out_.buffers, packed, cout, cin);
    out.bias = loader::upload_f32(backend_, out_.buffers, set_.require_f32(prefix + ".bias", {cout}), {cout});
    out.cout = cout;
    out.taps = taps;
    out.dilation = static_cast<int>(dilation);
    return out;
  }

 private:
  const loader::TensorSet& set_;
  backends::Backend& backend_;
  SpeakerEncoderWeights& out_;
};

}  // namespace

SpeakerEncoderWeights load_speaker_encoder_weights(const loader::TensorSet& set, const SpeakerEncoderConfig& c,
                                                   backends::Backend& backend) {
  SpeakerEncoderWeights w;
  Loader ld(set, backend, w);
  const std::string p = "speaker_encoder.";
  const size_t n = c.num_layers();
  w.first = ld.conv(p + "blocks.0.conv", c.channels[0], c.mel_dim, c.kernel_sizes[0], c.dilations[0]);
  for (size_t i = 1; i + 1 < n; ++i) {
    const std::string b = p + "blocks." + std::to_string(i) + ".";
    const int64_t ch = c.channels[i], group = ch / c.res2net_scale;
    SeRes2NetWeights block;
    block.tdnn1 = ld.conv(b + "tdnn1.conv", ch, c.channels[i - 1], 1, 1);
    for (int64_t j = 0; j + 1 < c.res2net_scale; ++j)
      block.res2net.push_back(ld.conv(b + "res2net_block.blocks." + std::to_string(j) + ".conv", group, group,
                                      c.kernel_sizes[i], c.dilations[i]));
    block.tdnn2 = ld.conv(b + "tdnn2.conv", ch, ch, 1, 1);
    block.se_squeeze = ld.conv(b + "se_block.conv1", c.se_channels, ch, 1, 1);
    block.se_excite = ld.conv(b + "se_block.conv2", ch, c.se_channels, 1, 1);
    w.blocks.push_back(std::move(block));
  }
  const int64_t pooled = c.pooled_channels();
  w.aggregate = ld.conv(p + "mfa.conv", pooled, pooled, c.kernel_sizes[n - 1], c.dilations[n - 1]);
  w.attention_tdnn = ld.conv(p + "asp.tdnn.conv", c.attention_channels, 3 * pooled, 1, 1);
  w.attention_conv = ld.conv(p + "asp.conv", pooled, c.attention_channels, 1, 1);
  w.fc = ld.conv(p + "fc", c.enc_dim, 2 * pooled, 1, 1);
  return w;
}

}  // namespace sluice::engine::tts
