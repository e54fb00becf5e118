// Llama (SmolLM2, Llama 2/3): the plain pre-norm block, SwiGLU MLP, RoPE (with
// Llama 3 frequency scaling when hparams carry it), optional tied embeddings.
#include "engine/models/architecture.h"

namespace sluice::engine {

Architecture llama_architecture() {
  Architecture arch;
  arch.name = "llama";
  return arch;
}

}  // namespace sluice::engine
