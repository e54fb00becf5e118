#pragma once
// The shape and numerics of a text model, whatever file it came from: read from
// GGUF metadata (`<arch>.*` keys) or from a Hugging Face config.json, and checked
// once at load so model code can trust it. Plain data.
#include <cstdint>
#include <string>

#include "backends/backend.h"

namespace sluice::engine {

struct ModelHparams {
  std::string architecture;  // "llama" | "qwen3" | "gemma3"
  int64_t vocab_size = 0;
  int64_t context_length = 0;    // trained
  int64_t embedding_length = 0;  // d_model
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;          // may differ from embedding_length / num_heads (Qwen3, Gemma 3)
  int64_t ffn_length = 0;
  float norm_eps = 1e-5f;
  bool tied_embeddings = false;  // no separate output.weight: logits use token_embd
  bool qk_norm = false;          // RMSNorm on each head of q and k (Qwen3, Gemma 3)
  bool post_norms = false;       // extra norms after attention and FFN (Gemma 3)
  bool gelu = false;             // GeGLU (gelu tanh) instead of SwiGLU
  float embedding_scale = 1.0f;  // embeddings * this (Gemma: sqrt(d_model))
  float attention_scale = 0.0f;  // 0: 1/sqrt(head_dim)
  float attention_softcap = 0.0f;
  float final_softcap = 0.0f;    // on the logits
  backends::RopeParams rope;        // global attention layers
  backends::RopeParams rope_local;  // sliding-window layers (Gemma 3)
  int32_t sliding_window = 0;       // 0: none
  int32_t sliding_window_pattern = 0;  // Gemma 3: every Nth layer (1-based) is global, the rest slide

  bool is_sliding_layer(int64_t layer) const {
    return sliding_window > 0 && sliding_window_pattern > 0 &&
           (layer + 1) % sliding_window_pattern != 0;
  }
};

}  // namespace sluice::engine
