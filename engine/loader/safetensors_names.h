#pragma once
// Hugging Face tensor names → GGUF tensor names for the llama, qwen3 and gemma3
// families (as gguf-py's tensor_mapping.py maps them).
#include <string>
#include <string_view>

namespace sluice::loader::detail {

// "model.layers.3.self_attn.q_proj.weight" → "blk.3.attn_q.weight". Gemma 3 names
// its norms differently: post_attention_layernorm is the attention post-norm there,
// pre_feedforward_layernorm the FFN pre-norm. The multimodal prefixes
// ("model.language_model.", "language_model.model.") are stripped. Empty for a
// tensor with no GGUF counterpart (vision tower, rotary caches).
std::string gguf_tensor_name(std::string_view hf_name, bool is_gemma);

// The other way for one layer tensor of the llama / qwen3 layout: GGUF role
// "attn_q" -> module path "self_attn.q_proj" under "layers.N."; empty when unknown.
std::string_view hf_layer_module(std::string_view gguf_role);

}  // namespace sluice::loader::detail
