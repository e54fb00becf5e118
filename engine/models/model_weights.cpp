#include "engine/models/model_weights.h"

#include <cstdint>
#include <string>

#include "engine/loader/load_error.h"
#include "engine/models/weight_binder.h"

namespace sluice::engine {

ModelWeights load_model_weights(const loader::WeightSource& source, const Architecture& arch,
                                backends::Backend& backend, std::optional<backends::DType> quantize_to) {
  const ModelHparams& h = source.hparams();
  try {
    arch.check(h);
  } catch (const std::invalid_argument& e) {
    throw loader::LoadError(source.path(), e.what());
  }
  if (!backend.supports_attention(h.num_heads, h.num_kv_heads, h.head_dim))
    throw loader::LoadError(source.path(), std::to_string(h.num_heads) + " heads over " +
                                               std::to_string(h.num_kv_heads) + " KV heads of head_dim " +
                                               std::to_string(h.head_dim) + " are beyond the " + backend.name() +
                                               " backend's attention");
  const int64_t d = h.embedding_length;
  ModelWeights w;
  WeightBinder bind = WeightBinder::for_source(source, backend, w.store, quantize_to);
  // The token embedding keeps 8 bits whatever the target: in tied models it is
  // also the output matrix, where 4 bits cost the logits most.
  w.token_embd = bind.matrix("token_embd.weight", h.vocab_size, d, /*keep_q8=*/true);
  w.output_norm = bind.vector("output_norm.weight", d);
  w.output = h.tied_embeddings ? w.token_embd : bind.matrix("output.weight", h.vocab_size, d);
  w.layers = bind_decoder_layers(bind, h, arch, gguf_layer_tensor_name);
  return w;
}

}  // namespace sluice::engine
