#include "engine/tts/model/tts_weights.h"

#include <string>

#include "engine/loader/load_error.h"
#include "engine/models/architecture.h"
#include "engine/models/weight_binder.h"

namespace sluice::engine::tts {
namespace {

void check_attention(const loader::TensorSet& set, const ModelHparams& h, backends::Backend& backend) {
  if (!backend.supports_attention(h.num_heads, h.num_kv_heads, h.head_dim))
    throw loader::LoadError(set.path(), std::to_string(h.num_heads) + " heads over " +
                                            std::to_string(h.num_kv_heads) + " KV heads of head_dim " +
                                            std::to_string(h.head_dim) + " are beyond the " + backend.name() +
                                            " backend's attention");
}

}  // namespace

TtsWeights load_tts_weights(const loader::TensorSet& set, const TtsConfig& c, backends::Backend& backend,
                            std::optional<backends::DType> quantize_to) {
  check_attention(set, c.talker, backend);
  check_attention(set, c.predictor, backend);
  const Architecture arch = qwen3_architecture();
  const int64_t d = c.talker.embedding_length;
  const int64_t th = c.text_hidden_size;
  const int64_t p = c.predictor.embedding_length;
  const int64_t v = c.talker.vocab_size;
  const int64_t cv = c.predictor.vocab_size;

  TtsWeights w;
  WeightBinder bind = WeightBinder::for_tensor_set(set, backend, w.store, quantize_to);
  TalkerWeights& t = w.talker;
  t.text_embedding = bind.matrix("talker.model.text_embedding.weight", c.text_vocab_size, th, /*keep_q8=*/true);
  t.text_fc1 = bind.matrix("talker.text_projection.linear_fc1.weight", th, th);
  t.text_fc1_bias = bind.vector("talker.text_projection.linear_fc1.bias", th);
  t.text_fc2 = bind.matrix("talker.text_projection.linear_fc2.weight", d, th);
  t.text_fc2_bias = bind.vector("talker.text_projection.linear_fc2.bias", d);
  t.codec_embedding = bind.matrix("talker.model.codec_embedding.weight", v, d, /*keep_q8=*/true);
  t.layers = bind_decoder_layers(bind, c.talker, arch, hf_layer_tensor_names("talker.model."));
  t.norm = bind.vector("talker.model.norm.weight", d);
  t.codec_head = bind.matrix("talker.codec_head.weight", v, d);

  PredictorWeights& q = w.predictor;
  const std::string prefix = "talker.code_predictor.";
  for (int32_t j = 0; j + 1 < c.num_code_groups; ++j) {
    q.codec_embeddings.push_back(
        bind.matrix(prefix + "model.codec_embedding." + std::to_string(j) + ".weight", cv, d, /*keep_q8=*/true));
    q.lm_heads.push_back(bind.matrix(prefix + "lm_head." + std::to_string(j) + ".weight", cv, p));
  }
  if (c.has_mtp_projection()) {
    q.mtp_projection = bind.matrix(prefix + "small_to_mtp_projection.weight", p, d);
    q.mtp_projection_bias = bind.vector(prefix + "small_to_mtp_projection.bias", p);
  }
  q.layers = bind_decoder_layers(bind, c.predictor, arch, hf_layer_tensor_names(prefix + "model."));
  q.norm = bind.vector(prefix + "model.norm.weight", p);
  return w;
}

}  // namespace sluice::engine::tts
