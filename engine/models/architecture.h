#pragma once
// What sets one text architecture apart from the shared decoder-only transformer:
// which optional tensors each block has, which activation its MLP uses, and how its
// hyperparameters must look. Each architecture is a small file (arch_llama.cpp,
// arch_qwen3.cpp, arch_gemma3.cpp) that fills one of these in; everything else
// (weights, blocks, the forward pass) is shared. Plain data; any thread.
#include <string_view>

#include "engine/models/hparams.h"

namespace sluice::engine {

struct Architecture {
  std::string_view name;   // general.architecture: "llama"
  bool qk_norm = false;    // blk.N.attn_q_norm / attn_k_norm [head_dim]: RMSNorm per head before RoPE
  bool post_norms = false; // blk.N.post_attention_norm / post_ffw_norm [d]: on each branch before its residual add
  bool gelu = false;       // MLP is GeGLU (gelu tanh); else SwiGLU
  bool sliding_window = false;  // some layers attend over a sliding window (hparams say which)

  // Throws std::invalid_argument when hparams do not describe a model of this
  // architecture (flags that disagree with the ones above, sizes that cannot work).
  void check(const ModelHparams& hparams) const;
};

// The architectures this build runs, one per arch_*.cpp file.
Architecture llama_architecture();
Architecture qwen3_architecture();
Architecture gemma3_architecture();

// By general.architecture name; throws std::invalid_argument for an unknown one.
Architecture find_architecture(std::string_view name);

}  // namespace sluice::engine
