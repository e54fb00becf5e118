// Qwen3 (dense): llama plus an RMSNorm over each head of q and k before RoPE
// (blk.N.attn_q_norm / attn_k_norm, [head_dim]); head_dim is its own
// hyperparameter, so heads * head_dim may differ from the embedding length.
#include "engine/models/architecture.h"

namespace sluice::engine {

Architecture qwen3_architecture() {
  Architecture arch;
  arch.name = "qwen3";
  arch.qk_norm = true;
  return arch;
}

}  // namespace sluice::engine
