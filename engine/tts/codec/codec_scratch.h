#pragma once
// Internal to the codec decoder (codec_decoder.cpp, codec_forward.cpp): the
// activations of one chunk, shared by every stream of a decoder, sized at load for
// its largest chunk. Used by the decoding thread only.
#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "engine/models/architecture.h"
#include "engine/models/workspace.h"

namespace sluice::engine::tts {

// KV block size of a stream's ring (codec_decoder.cpp explains the ring).
inline constexpr int64_t kCodecKvBlockSize = 16;

struct CodecScratch {
  CodecScratch(backends::Backend& backend, const ModelHparams& hparams, const Architecture& arch)
      : arch(arch), workspace(backend, hparams) {}
  Architecture arch;                            // the pre_transformer's: llama with a sliding window
  Workspace workspace;                          // the pre_transformer's [T, ...] buffers
  std::unique_ptr<backends::Buffer> ids;        // [num_quantizers * n] I32, codebook-major
  std::unique_ptr<backends::Buffer> in_a, in_b; // conv inputs: [context + rows, channels]
  std::unique_ptr<backends::Buffer> x, t1, t2;  // [rows, channels]: block residual stream and temporaries
  std::unique_ptr<backends::Buffer> merged;     // the first block's transposed conv output, every piece's
};

}  // namespace sluice::engine::tts
