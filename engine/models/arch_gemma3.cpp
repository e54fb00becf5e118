// Gemma 3 (text): q/k head norms, a second RMSNorm on each branch before its
// residual add (post_attention_norm, post_ffw_norm), a GeGLU MLP, embeddings
// scaled by sqrt(d_model), and interleaved local (sliding-window, own RoPE base)
// and global attention layers. The +1 of Gemma's norms is folded into the
// weights by the weight source, so every norm here is a plain RMSNorm.
#include "engine/models/architecture.h"

namespace sluice::engine {

Architecture gemma3_architecture() {
  Architecture arch;
  arch.name = "gemma3";
  arch.qk_norm = true;
  arch.post_norms = true;
  arch.gelu = true;
  arch.sliding_window = true;
  return arch;
}

}  // namespace sluice::engine
