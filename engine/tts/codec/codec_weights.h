#pragma once
// The codec decoder's weights on a backend, checked and prepared at load: every
// tensor is required at the shape the CodecConfig implies (a LoadError names the
// file and the tensor otherwise), then rearranged on the host into what the
// Backend's signal ops read and uploaded. What load does to the published tensors:
//   - RVQ tables: embedding_sum / clamp(cluster_usage, 1e-5), then each table is
//     multiplied by its output_proj (rvq_first for codebook 0, rvq_rest for the
//     others) on the backend, so decoding a frame is 16 row gathers and a sum.
//   - Convolutions to the tap-major layouts of backend.h (conv1d [Cout, k*Cin],
//     depthwise [C, k], transposed [s*Cout, m*Cin] with its documented repack),
//     conv1d's and transposed ones then quantized to int16 when asked for.
//   - LayerScale folded into o_proj / down_proj rows, ConvNeXt gamma into pwconv2's
//     rows and bias, SnakeBeta alpha -> exp(alpha), beta -> 1 / (exp(beta) + 1e-9).
// Immutable after load; used by the thread that decodes.
#include <memory>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/models/model_weights.h"
#include "engine/tts/codec/codec_config.h"

namespace sluice::engine::tts {

struct SnakeWeights {
  backends::Tensor alpha;     // [C] exp(alpha)
  backends::Tensor inv_beta;  // [C] 1 / (exp(beta) + 1e-9)
};

// A causal conv1d: w [Cout, k*Cin], bias [Cout]; its input carries (k-1)*dilation
// rows of left context.
struct ConvWeights {
  backends::Tensor w;
  backends::Tensor bias;
  int64_t taps = 1;
  int dilation = 1;
  int64_t context() const { return (taps - 1) * dilation; }
};

// A causal transposed conv (kernel m*stride, right-trimmed): w [stride*Cout, m*Cin],
// bias [Cout]; its input carries m-1 rows of left context.
struct UpConvWeights {
  backends::Tensor w;
  backends::Tensor bias;
  int stride = 1;
  int64_t taps = 1;  // m
  int64_t context() const { return taps - 1; }
};

// Upsampler stage: transposed conv, then a ConvNeXt block (latent_dim = L channels).
struct UpsampleWeights {
  UpConvWeights up;
  backends::Tensor dw_w, dw_b;      // [L, 7], [L]
  backends::Tensor norm_w, norm_b;  // [L], [L]
  backends::Tensor pw1_w, pw1_b;    // [4L, L], [4L]
  backends::Tensor pw2_w, pw2_b;    // [L, 4L], [L], gamma folded in
  int64_t dw_taps = 7;
};

struct ResidualUnitWeights {
  SnakeWeights act1;
  ConvWeights conv1;  // k7, dilated
  SnakeWeights act2;
  ConvWeights conv2;  // k1
};

struct DecoderBlockWeights {
  SnakeWeights snake;
  UpConvWeights up;
  std::vector<ResidualUnitWeights> units;  // dilations 1, 3, 9
};

struct CodecWeights {
  backends::Tensor codebooks;  // [num_quantizers * codebook_size, codebook_dim]: row j*size + c
  ConvWeights pre_conv;        // codebook_dim -> latent_dim, k3
  backends::Tensor input_proj_w, input_proj_b;    // [hidden, latent], [hidden]
  std::vector<LayerWeights> layers;               // the shared decoder block's weights
  backends::Tensor output_norm;                   // [hidden]
  backends::Tensor output_proj_w, output_proj_b;  // [latent, hidden], [latent]
  std::vector<UpsampleWeights> upsample;
  ConvWeights first_conv;      // latent_dim -> decoder_dim, k7
  std::vector<DecoderBlockWeights> blocks;
  SnakeWeights final_snake;
  ConvWeights last_conv;       // -> 1 channel, k7
  std::vector<std::unique_ptr<backends::Buffer>> buffers;  // owning the device side
};

// The convolutions' weights: F32 (the reference numerics), or int16 on the CPU
// backend (backends/conv_int16.h: ~1.5x the F32 convs' speed on AVX2, the
// waveform within the SNR that tests/unit/engine/tts/test_codec_int16.cpp states).
enum class CodecPrecision { f32, int16 };

// "f32" or "int16"; throws std::invalid_argument naming the value otherwise.
CodecPrecision parse_codec_precision(std::string_view name);

// Throws loader::LoadError naming the file and the tensor that is missing or has
// another shape, std::invalid_argument for int16 on a backend without it.
CodecWeights load_codec_weights(const loader::TensorSet& set, const CodecConfig& config,
                                backends::Backend& backend, CodecPrecision precision = CodecPrecision::f32);

}  // namespace sluice::engine::tts
