#include "engine/models/model_weights.h"

#include <cstdint>
#include <string>

#include "engine/loader/load_error.h"
#include "engine/loader/quantize.h"

namespace sluice::engine {
namespace {

using backends::DType;
using backends::Tensor;
using loader::LoadError;

// Turns required weight views into backend tensors, checking dtypes on the way.
class WeightBinder {
 public:
  WeightBinder(const loader::WeightSource& source, backends::Backend& backend, ModelWeights& out,
               std::optional<DType> quantize_to)
      : source_(source), backend_(backend), out_(out), quantize_to_(quantize_to) {}

  // A matrix [rows, cols] in any dtype the backend's matmul takes.
  Tensor matrix(const std::string& name, int64_t rows, int64_t cols) {
    const int64_t shape[] = {rows, cols};
    loader::WeightView view = source_.require(name, shape);
    if (quantize_to_ && loader::can_quantize(view.dtype, cols) && view.data.size() == expected_bytes(view, rows, cols)) {
      // The token embedding keeps 8 bits whatever the target: in tied models it is
      // also the output matrix, where 4 bits cost the logits most.
      const DType to = name == "token_embd.weight" ? DType::Q8_0 : *quantize_to_;
      auto& bytes = out_.quantized.emplace_back(loader::quantize_matrix(view.dtype, view.data, rows, cols, to));
      view.data = bytes;
      view.dtype = to;
    }
    if (!backend_.supports_matmul(view.dtype))
      throw LoadError(source_.path(), "tensor '" + name + "': dtype " +
                                          std::string(backends::dtype_name(view.dtype)) +
                                          " is not supported by the " + backend_.name() +
                                          " backend's matmul");
    if (!backends::dtype_bytes(view.dtype, static_cast<uint64_t>(cols)))
      throw LoadError(source_.path(), "tensor '" + name + "': rows of " + std::to_string(cols) +
                                          " elements are not whole " +
                                          std::string(backends::dtype_name(view.dtype)) + " blocks");
    // Sizes are checked before the backend reads (and may repack) the bytes.
    const uint64_t expected = *backends::dtype_bytes(view.dtype, static_cast<uint64_t>(rows * cols));
    if (expected != view.data.size())
      throw LoadError(source_.path(), "tensor '" + name + "': " + std::to_string(view.data.size()) +
                                          " bytes where its shape needs " + std::to_string(expected));
    auto& buffer = out_.buffers.emplace_back(backend_.wrap_matrix(view.data, view.dtype, rows, cols));
    return check_size(name, view, Tensor::make(buffer.get(), 0, view.dtype, {rows, cols}));
  }

  // A vector [n] in F32 (norm weights).
  Tensor vector(const std::string& name, int64_t n) {
    const int64_t shape[] = {n};
    loader::WeightView view = source_.require(name, shape);
    if (view.dtype != DType::F32)
      throw LoadError(source_.path(), "tensor '" + name + "': expected F32, found " +
                                          std::string(backends::dtype_name(view.dtype)));
    return bind(name, view, {n});
  }

 private:
  Tensor bind(const std::string& name, const loader::WeightView& view,
              std::initializer_list<int64_t> shape) {
    auto& buffer = out_.buffers.emplace_back(backend_.wrap_weights(view.data));
    return check_size(name, view, Tensor::make(buffer.get(), 0, view.dtype, shape));
  }

  Tensor check_size(const std::string& name, const loader::WeightView& view, const Tensor& tensor) {
    if (tensor.num_bytes() != view.data.size())
      throw LoadError(source_.path(), "tensor '" + name + "': " + std::to_string(view.data.size()) +
                                          " bytes where its shape needs " +
                                          std::to_string(tensor.num_bytes()));
    return tensor;
  }

  static uint64_t expected_bytes(const loader::WeightView& view, int64_t rows, int64_t cols) {
    return backends::dtype_bytes(view.dtype, static_cast<uint64_t>(rows * cols)).value_or(0);
  }

  const loader::WeightSource& source_;
  backends::Backend& backend_;
  ModelWeights& out_;
  std::optional<DType> quantize_to_;
};

}  // namespace

ModelWeights load_model_weights(const loader::WeightSource& source, const Architecture& arch,
                                backends::Backend& backend, std::optional<DType> quantize_to) {
  const ModelHparams& h = source.hparams();
  try {
    arch.check(h);
  } catch (const std::invalid_argument& e) {
    throw LoadError(source.path(), e.what());
  }
  if (!backend.supports_attention(h.num_heads, h.num_kv_heads, h.head_dim))
    throw LoadError(source.path(), std::to_string(h.num_heads) + " heads over " + std::to_string(h.num_kv_heads) +
                                       " KV heads of head_dim " + std::to_string(h.head_dim) +
                                       " are beyond the " + backend.name() + " backend's attention");
  const int64_t d = h.embedding_length;
  const int64_t q = h.num_heads * h.head_dim;
  const int64_t kv = h.num_kv_heads * h.head_dim;
  const int64_t f = h.ffn_length;

  ModelWeights w;
  WeightBinder bind(source, backend, w, quantize_to);
  w.token_embd = bind.matrix("token_embd.weight", h.vocab_size, d);
  w.output_norm = bind.vector("output_norm.weight", d);
  if (h.tied_embeddings) {
    w.output = w.token_embd;
  } else {
    w.output = bind.matrix("output.weight", h.vocab_size, d);
  }
  w.layers.resize(static_cast<size_t>(h.num_layers));
  for (int64_t i = 0; i < h.num_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    l.attn_norm = bind.vector(p + "attn_norm.weight", d);
    l.attn_q = bind.matrix(p + "attn_q.weight", q, d);
    l.attn_k = bind.matrix(p + "attn_k.weight", kv, d);
    l.attn_v = bind.matrix(p + "attn_v.weight", kv, d);
    l.attn_output = bind.matrix(p + "attn_output.weight", d, q);
    if (arch.qk_norm) {
      l.attn_q_norm = bind.vector(p + "attn_q_norm.weight", h.head_dim);
      l.attn_k_norm = bind.vector(p + "attn_k_norm.weight", h.head_dim);
    }
    if (arch.post_norms) l.post_attn_norm = bind.vector(p + "post_attention_norm.weight", d);
    l.ffn_norm = bind.vector(p + "ffn_norm.weight", d);
    l.ffn_gate = bind.matrix(p + "ffn_gate.weight", f, d);
    l.ffn_up = bind.matrix(p + "ffn_up.weight", f, d);
    l.ffn_down = bind.matrix(p + "ffn_down.weight", d, f);
    if (arch.post_norms) l.post_ffw_norm = bind.vector(p + "post_ffw_norm.weight", d);
  }
  return w;
}

}  // namespace sluice::engine
