// CodecEncoder::quantize: Mimi's split residual vector quantizer, the first
// num_codes codebooks of it. The semantic and the acoustic quantizer each start
// from the downsampled frames projected by their own input_proj (the acoustic
// one does not see the semantic one's residual); within one, codebook j picks for
// every frame the table row e nearest to the residual r, and r -= e.
//
// The nearest row minimizes |r - e|^2 = |r|^2 + |e|^2 - 2 r.e: r.e for every row
// is one matmul on the backend, |e|^2 was computed at load, |r|^2 is the same for
// every row of a frame and is left out. The argmin runs on the host and takes
// the lowest index on a tie, as torch's argmin does. (PyTorch takes cdist's
// square root of the same expression first, which orders the rows alike.)
#include <limits>

#include "engine/tts/codec/codec_encoder.h"
#include "engine/tts/codec/codec_encoder_scratch.h"

namespace sluice::engine::tts {

using backends::DType;
using backends::Tensor;

std::vector<int32_t> CodecEncoder::quantize(const Tensor& y) {
  backends::Backend& be = *backend_;
  const CodecEncoderConfig& c = config_;
  const int64_t frames = y.dim(0), size = c.codebook_size, dim = c.codebook_dim, q = c.num_codes;
  CallBuffers call(be);
  const Tensor residual = call.f32({frames, dim}), scores = call.f32({frames, size});
  const Tensor chosen = call.f32({frames, dim}), ids = call.make(DType::I32, {frames});
  std::vector<float> host_scores(static_cast<size_t>(frames * size));
  std::vector<int32_t> picks(static_cast<size_t>(frames));
  std::vector<int32_t> codes(static_cast<size_t>(frames * q));

  for (int64_t j = 0; j < q; ++j) {
    if (j == 0 || j == c.num_semantic) {
      const bool semantic = j == 0;
      be.matmul(y, semantic ? weights_.semantic_proj : weights_.acoustic_proj, residual);
      stage(semantic ? "semantic_proj" : "acoustic_proj", residual);
    }
    const Tensor table = weights_.codebooks.slice(j * size, size);
    const float* norms = weights_.codebook_norms.data() + j * size;
    be.matmul(residual, table, scores);
    be.download(scores, std::as_writable_bytes(std::span<float>(host_scores)));
    for (int64_t t = 0; t < frames; ++t) {
      const float* row = host_scores.data() + t * size;
      float best = std::numeric_limits<float>::infinity();
      int32_t best_index = 0;
      for (int64_t e = 0; e < size; ++e) {
        const float distance = norms[e] - 2.0f * row[e];
        if (distance < best) best = distance, best_index = static_cast<int32_t>(e);
      }
      picks[static_cast<size_t>(t)] = best_index;
      codes[static_cast<size_t>(t * q + j)] = best_index;
    }
    // The residual for the next codebook of the same quantizer.
    const bool last_of_quantizer = j + 1 == q || j + 1 == c.num_semantic;
    if (last_of_quantizer) continue;
    be.upload(ids, std::as_bytes(std::span<const int32_t>(picks)));
    be.embed(table, ids, chosen);
    be.scale(chosen, -1.0f, chosen);
    be.add(residual, chosen, residual);
  }
  return codes;
}

}  // namespace sluice::engine::tts
