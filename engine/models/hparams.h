#pragma once
// The shape and numerics of a text model, whatever file it came from: read from
// GGUF metadata (`<arch>.*` keys) or from a Hugging Face config.json, and checked
// once at load so model code can trust it. Plain data.
//
// How the loaders fill it (engine/loader/gguf_weights.cpp, safetensors_weights.cpp):
// - Llama 3 RoPE scaling: config.json's rope_scaling / rope_parameters (rope_type
//   "llama3") go to rope.llama3_*. llama.cpp's converter writes no metadata for it
//   but a `rope_freqs.weight` tensor (one divisor per rotated pair); the GGUF loader
//   recovers rope.llama3_* from it exactly (the formula depends only on factor,
//   original_context / (high - low) and low / (high - low)) and rejects a tensor of
//   another shape. Models use rope.llama3_* and ignore rope_freqs.weight.
// - Linear scaling (rope.scaling.type "linear" / rope_type "linear"): freq_scale =
//   1 / factor, on the global rope only for Gemma 3.
// - Gemma 3: norm weights (all RMSNorms, q/k norms included) arrive with the +1
//   folded in, as llama.cpp's GGUFs store them; embedding_scale = sqrt(d_model);
//   attention_scale = 1/sqrt(query_pre_attn_scalar) from config.json, or GGUF
//   `gemma3.attention.scale` when present, or llama.cpp's rule otherwise (27B, 62
//   layers: 1/sqrt(d_model / heads); else 0 = 1/sqrt(head_dim)). rope_local.theta =
//   rope_local_base_freq / GGUF `gemma3.rope.freq_base_swa` (default 10000), no
//   scaling; sliding_window_pattern from layer_types / sliding_window_pattern, or GGUF
//   `gemma3.attention.sliding_window_pattern` (a period or one bool per layer), else
//   llama.cpp's fixed 6. A layer list that is not "all but every Nth" is refused.
// - A sliding layer's query sees the last `sliding_window` positions, itself
//   included (transformers and llama.cpp agree).
// - llama / qwen3: rope_local == rope, sliding_window 0.
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
  int32_t sliding_window_pattern = 0;  // Gemma 3: every Nth layer (1-based) is global, the rest slide;
                                       // num_layers + 1: every layer slides

  bool is_sliding_layer(int64_t layer) const {
    return sliding_window > 0 && sliding_window_pattern > 0 &&
           (layer + 1) % sliding_window_pattern != 0;
  }
};

}  // namespace sluice::engine
