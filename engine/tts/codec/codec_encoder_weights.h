#pragma once
// The codec encoder's weights on a backend (the speech tokenizer's `encoder.*`
// tensors), checked and prepared at load: every tensor is required at the shape
// the CodecEncoderConfig implies (a LoadError names the file and the tensor
// otherwise), then rearranged on the host and uploaded. What load does:
//   - Convolutions to conv1d's tap-major [Cout, k*Cin] (backend.h). A strided
//     conv (kernel m*s, stride s) keeps that layout: read over its input viewed
//     as [T/s, s*Cin] rows, it is an m-tap conv with s*Cin input channels.
//   - LayerScale folded into the rows of o_proj and fc2.
//   - RVQ tables embed_sum / clamp(cluster_usage, 1e-5), only the kept
//     codebooks, and their squared norms on the host (the nearest-entry search).
// Immutable after load; used by the thread that encodes.
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_encoder_config.h"

namespace sluice::engine::tts {

// A causal conv: w [Cout, kernel*Cin] (tap-major), bias [Cout] or null.
struct EncoderConv {
  backends::Tensor w;
  backends::Tensor bias;
  int64_t kernel = 1;
  int64_t stride = 1;  // kernel is a multiple of it
  // Input rows before the first output's own rows (Mimi's left padding): kernel - stride.
  int64_t context() const { return kernel - stride; }
};

struct EncoderStage {
  EncoderConv unit_conv1;  // c -> c / compress, residual_kernel_size
  EncoderConv unit_conv2;  // c / compress -> c, k1
  EncoderConv down;        // c -> 2c, kernel 2s, stride s
};

struct EncoderLayerWeights {
  backends::Tensor attn_norm_w, attn_norm_b;  // [H]
  backends::Tensor q, k, v;                   // [heads*hd, H], [kv*hd, H]
  backends::Tensor o;                         // [H, heads*hd], LayerScale folded in
  backends::Tensor mlp_norm_w, mlp_norm_b;    // [H]
  backends::Tensor fc1;                       // [F, H]
  backends::Tensor fc2;                       // [H, F], LayerScale folded in
};

struct CodecEncoderWeights {
  EncoderConv first;                       // 1 -> num_filters
  std::vector<EncoderStage> stages;
  EncoderConv last;                        // -> hidden_size
  std::vector<EncoderLayerWeights> layers;
  EncoderConv downsample;                  // hidden -> hidden, kernel 2 * stride, no bias
  backends::Tensor semantic_proj;          // [codebook_dim, hidden]
  backends::Tensor acoustic_proj;          // [codebook_dim, hidden]
  backends::Tensor codebooks;              // [num_codes * codebook_size, codebook_dim]: row j*size + c
  std::vector<float> codebook_norms;       // |row|^2 of each row of `codebooks`, on the host
  std::vector<std::unique_ptr<backends::Buffer>> buffers;  // owning the device side
};

// Throws loader::LoadError naming the file and the tensor that is missing or has
// another shape.
CodecEncoderWeights load_codec_encoder_weights(const loader::TensorSet& set, const CodecEncoderConfig& config,
                                               backends::Backend& backend);

}  // namespace sluice::engine::tts
