#include "engine/models/architecture.h"

#include <stdexcept>
#include <string>

namespace sluice::engine {
namespace {

void require(bool condition, const Architecture& arch, const std::string& what) {
  if (!condition) throw std::invalid_argument(std::string(arch.name) + " hyperparameters: " + what);
}

std::string flag_mismatch(std::string_view flag, bool want) {
  return std::string(flag) + " is " + (want ? "false" : "true") + " but the architecture " +
         (want ? "needs" : "does not have") + " it";
}

}  // namespace

void Architecture::check(const ModelHparams& h) const {
  require(h.vocab_size > 0 && h.embedding_length > 0 && h.num_layers > 0 && h.ffn_length > 0,
          *this, "vocab, embedding, layer and FFN sizes must be positive");
  require(h.num_heads > 0 && h.num_kv_heads > 0 && h.head_dim > 0, *this,
          "head counts and head_dim must be positive");
  require(h.num_heads % h.num_kv_heads == 0, *this,
          "num_heads " + std::to_string(h.num_heads) + " is not a multiple of num_kv_heads " +
              std::to_string(h.num_kv_heads));
  require(h.norm_eps > 0.0f, *this, "norm_eps must be positive");
  require(h.rope.num_rotated > 0 && h.rope.num_rotated <= h.head_dim && h.rope.num_rotated % 2 == 0,
          *this, "rope.num_rotated must be even and within head_dim");
  require(h.qk_norm == qk_norm, *this, flag_mismatch("qk_norm", qk_norm));
  require(h.post_norms == post_norms, *this, flag_mismatch("post_norms", post_norms));
  require(h.gelu == gelu, *this, flag_mismatch("gelu", gelu));
  if (!sliding_window) require(h.sliding_window == 0, *this, "sliding_window set on an architecture without it");
  require(h.sliding_window >= 0 && h.sliding_window_pattern >= 0, *this, "negative sliding window");
  if (h.sliding_window > 0)
    require(h.rope_local.num_rotated > 0 && h.rope_local.num_rotated <= h.head_dim, *this,
            "rope_local.num_rotated must be within head_dim");
}

Architecture find_architecture(std::string_view name) {
  for (auto make : {llama_architecture, qwen3_architecture, gemma3_architecture}) {
    Architecture arch = make();
    if (arch.name == name) return arch;
  }
  throw std::invalid_argument("unsupported architecture '" + std::string(name) +
                              "' (this build runs llama, qwen3, gemma3)");
}

}  // namespace sluice::engine
