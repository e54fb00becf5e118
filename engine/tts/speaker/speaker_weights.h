#pragma once
// The speaker encoder's (ECAPA-TDNN) weights of a Base checkpoint on a backend,
// read from the `speaker_encoder.*` tensors at the shapes the SpeakerEncoderConfig
// implies (a LoadError names the file and the tensor otherwise), widened to F32
// and rearranged for Backend::conv1d: PyTorch's Conv1d [Cout, Cin, k] becomes
// [Cout, k*Cin] with the tap outward. Immutable after load; used by the thread
// that computes speaker embeddings.
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/speaker/speaker_encoder_config.h"

namespace sluice::engine::tts {

// A Conv1d with "same" reflect padding: (taps - 1) * dilation rows of context,
// half before the row (rounded down) and the rest after, as PyTorch pads "same".
struct TdnnWeights {
  backends::Tensor w;     // [Cout, taps * Cin] (on the CPU backends/conv_panels.h's panels)
  backends::Tensor bias;  // [Cout]
  int64_t cout = 0;
  int64_t taps = 1;
  int dilation = 1;
  int64_t context() const { return (taps - 1) * dilation; }
};

// TDNN (k1) -> Res2Net (scale - 1 dilated convs over channel groups) -> TDNN (k1)
// -> squeeze-excitation, plus the input.
struct SeRes2NetWeights {
  TdnnWeights tdnn1;
  std::vector<TdnnWeights> res2net;  // scale - 1 of [C/scale -> C/scale]
  TdnnWeights tdnn2;
  TdnnWeights se_squeeze;  // [se, C], applied to the time mean
  TdnnWeights se_excite;   // [C, se]
};

struct SpeakerEncoderWeights {
  TdnnWeights first;                     // mel_dim -> channels[0]
  std::vector<SeRes2NetWeights> blocks;  // layers 1..n-2
  TdnnWeights aggregate;                 // the blocks' concatenation -> channels[n-1]
  TdnnWeights attention_tdnn;            // [x, mean, std] (3C) -> attention_channels
  TdnnWeights attention_conv;            // attention_channels -> C
  TdnnWeights fc;                        // [mean, std] (2C) -> enc_dim
  std::vector<std::unique_ptr<backends::Buffer>> buffers;
};

SpeakerEncoderWeights load_speaker_encoder_weights(const loader::TensorSet& set, const SpeakerEncoderConfig& config,
                                                   backends::Backend& backend);

}  // namespace sluice::engine::tts
