#include "engine/loader/safetensors_names.h"

#include <array>
#include <span>
#include <utility>

namespace sluice::loader::detail {
namespace {

using Pair = std::pair<std::string_view, std::string_view>;

// Per-layer module paths under "model.layers.N.".
constexpr std::array kLayerNames = {
    Pair{"self_attn.q_proj", "attn_q"},
    Pair{"self_attn.k_proj", "attn_k"},
    Pair{"self_attn.v_proj", "attn_v"},
    Pair{"self_attn.o_proj", "attn_output"},
    Pair{"self_attn.q_norm", "attn_q_norm"},
    Pair{"self_attn.k_norm", "attn_k_norm"},
    Pair{"mlp.gate_proj", "ffn_gate"},
    Pair{"mlp.up_proj", "ffn_up"},
    Pair{"mlp.down_proj", "ffn_down"},
    Pair{"input_layernorm", "attn_norm"},
};
constexpr std::array kLlamaNorms = {
    Pair{"post_attention_layernorm", "ffn_norm"},
};
constexpr std::array kGemmaNorms = {
    Pair{"post_attention_layernorm", "post_attention_norm"},
    Pair{"pre_feedforward_layernorm", "ffn_norm"},
    Pair{"post_feedforward_layernorm", "post_ffw_norm"},
};

bool consume(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

template <class Table>
std::string_view lookup(const Table& table, std::string_view module) {
  for (const auto& [hf, gguf] : table)
    if (hf == module) return gguf;
  return {};
}

}  // namespace

std::string_view hf_layer_module(std::string_view gguf_role) {
  for (const auto& table : {std::span<const Pair>(kLayerNames), std::span<const Pair>(kLlamaNorms)})
    for (const auto& [hf, gguf] : table)
      if (gguf == gguf_role) return hf;
  return {};
}

std::string gguf_tensor_name(std::string_view hf_name, bool is_gemma) {
  std::string_view name = hf_name;
  std::string_view suffix;
  for (std::string_view candidate : {".weight", ".bias"}) {
    if (name.ends_with(candidate)) {
      suffix = candidate;
      name.remove_suffix(candidate.size());
      break;
    }
  }
  if (suffix.empty()) return {};
  // Gemma3ForConditionalGeneration, before and after transformers 4.52.
  if (consume(name, "model.language_model.") || consume(name, "language_model.model.")) {
    // now relative to the text model
  } else if (name == "lm_head" || name == "language_model.lm_head") {
    return "output" + std::string(suffix);
  } else if (!consume(name, "model.")) {
    return {};
  }
  if (name == "embed_tokens") return "token_embd" + std::string(suffix);
  if (name == "norm") return "output_norm" + std::string(suffix);
  if (!consume(name, "layers.")) return {};
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 6) return {};
  const std::string_view layer = name.substr(0, dot);
  for (char c : layer)
    if (c < '0' || c > '9') return {};
  const std::string_view module = name.substr(dot + 1);
  std::string_view gguf = lookup(kLayerNames, module);
  if (gguf.empty()) gguf = is_gemma ? lookup(kGemmaNorms, module) : lookup(kLlamaNorms, module);
  if (gguf.empty()) return {};
  return "blk." + std::string(layer) + "." + std::string(gguf) + std::string(suffix);
}

}  // namespace sluice::loader::detail
