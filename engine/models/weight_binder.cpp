#include "engine/models/weight_binder.h"

#include <cstring>
#include <utility>

#include "engine/loader/load_error.h"
#include "engine/loader/load_stop.h"
#include "engine/loader/quantize.h"
#include "engine/loader/safetensors_names.h"
#include "engine/loader/tensor_set.h"
#include "engine/loader/weight_table.h"

namespace sluice::engine {

using backends::DType;
using backends::Tensor;
using loader::LoadError;

WeightBinder::WeightBinder(Require require, FileOf file_of, backends::Backend& backend, WeightStore& store,
                           std::optional<DType> quantize_to)
    : require_(std::move(require)),
      file_of_(std::move(file_of)),
      backend_(backend),
      store_(store),
      quantize_to_(quantize_to) {}

WeightBinder WeightBinder::for_source(const loader::WeightSource& source, backends::Backend& backend,
                                      WeightStore& store, std::optional<DType> quantize_to) {
  return WeightBinder(
      [&source](const std::string& name, std::span<const int64_t> shape) { return source.require(name, shape); },
      [&source](const std::string&) { return source.path(); }, backend, store, quantize_to);
}

WeightBinder WeightBinder::for_tensor_set(const loader::TensorSet& set, backends::Backend& backend, WeightStore& store,
                                          std::optional<DType> quantize_to) {
  WeightBinder binder(
      [&set](const std::string& name, std::span<const int64_t> shape) { return set.require(name, shape); },
      [&set](const std::string& name) { return set.file_of(name); }, backend, store, quantize_to);
  binder.widen_vectors_ = true;
  return binder;
}

void WeightBinder::fail(const std::string& name, const std::string& reason) const {
  throw LoadError(file_of_(name), "tensor '" + name + "': " + reason);
}

Tensor WeightBinder::matrix(const std::string& name, int64_t rows, int64_t cols, bool keep_q8) {
  loader::check_load_stop();  // a shutdown need not wait for the rest of the model
  const int64_t shape[] = {rows, cols};
  loader::WeightView view = require_(name, shape);
  const uint64_t stored = backends::dtype_bytes(view.dtype, static_cast<uint64_t>(rows * cols)).value_or(0);
  if (quantize_to_ && loader::can_quantize(view.dtype, cols) && view.data.size() == stored) {
    const DType to = keep_q8 ? DType::Q8_0 : *quantize_to_;
    auto& bytes = store_.made.emplace_back(loader::quantize_matrix(view.dtype, view.data, rows, cols, to));
    view.data = bytes;
    view.dtype = to;
  }
  if (!backend_.supports_matmul(view.dtype))
    fail(name, "dtype " + std::string(backends::dtype_name(view.dtype)) + " is not supported by the " +
                   backend_.name() + " backend's matmul");
  if (!backends::dtype_bytes(view.dtype, static_cast<uint64_t>(cols)))
    fail(name, "rows of " + std::to_string(cols) + " elements are not whole " +
                   std::string(backends::dtype_name(view.dtype)) + " blocks");
  // Sizes are checked before the backend reads (and may repack) the bytes.
  const uint64_t expected = *backends::dtype_bytes(view.dtype, static_cast<uint64_t>(rows * cols));
  if (expected != view.data.size())
    fail(name, std::to_string(view.data.size()) + " bytes where its shape needs " + std::to_string(expected));
  auto& buffer = store_.buffers.emplace_back(backend_.wrap_matrix(view.data, view.dtype, rows, cols));
  return check_size(name, view.data, Tensor::make(buffer.get(), 0, view.dtype, {rows, cols}));
}

Tensor WeightBinder::vector(const std::string& name, int64_t n) {
  loader::check_load_stop();
  const int64_t shape[] = {n};
  loader::WeightView view = require_(name, shape);
  if (widen_vectors_ && (view.dtype == DType::F16 || view.dtype == DType::BF16)) {
    // Checkpoints in half precision store norms and biases that way too; the ops
    // that read them take F32. (A WeightSource hands out F32 already: anything
    // else from it is a broken source and fails below.)
    const auto wide = loader::detail::to_f32(view.dtype, view.data, static_cast<uint64_t>(n));
    if (!wide || view.data.size() != static_cast<size_t>(n) * 2) fail(name, "size does not match its shape");
    auto& bytes = store_.made.emplace_back(wide->size() * sizeof(float));
    std::memcpy(bytes.data(), wide->data(), bytes.size());
    view.data = bytes;
    view.dtype = DType::F32;
  }
  if (view.dtype != DType::F32)
    fail(name, "expected F32, found " + std::string(backends::dtype_name(view.dtype)));
  auto& buffer = store_.buffers.emplace_back(backend_.wrap_weights(view.data));
  return check_size(name, view.data, Tensor::make(buffer.get(), 0, view.dtype, {n}));
}

Tensor WeightBinder::check_size(const std::string& name, std::span<const std::byte> data,
                                const Tensor& tensor) const {
  if (tensor.num_bytes() != data.size())
    fail(name, std::to_string(data.size()) + " bytes where its shape needs " + std::to_string(tensor.num_bytes()));
  return tensor;
}

std::string gguf_layer_tensor_name(int64_t layer, std::string_view role) {
  return "blk." + std::to_string(layer) + "." + std::string(role) + ".weight";
}

LayerTensorName hf_layer_tensor_names(std::string prefix) {
  return [prefix = std::move(prefix)](int64_t layer, std::string_view role) {
    return prefix + "layers." + std::to_string(layer) + "." +
           std::string(loader::detail::hf_layer_module(role)) + ".weight";
  };
}

std::vector<LayerWeights> bind_decoder_layers(WeightBinder& bind, const ModelHparams& h, const Architecture& arch,
                                              const LayerTensorName& name) {
  const int64_t d = h.embedding_length;
  const int64_t q = h.num_heads * h.head_dim;
  const int64_t kv = h.num_kv_heads * h.head_dim;
  const int64_t f = h.ffn_length;
  std::vector<LayerWeights> layers(static_cast<size_t>(h.num_layers));
  for (int64_t i = 0; i < h.num_layers; ++i) {
    LayerWeights& l = layers[static_cast<size_t>(i)];
    l.attn_norm = bind.vector(name(i, "attn_norm"), d);
    l.attn_q = bind.matrix(name(i, "attn_q"), q, d);
    l.attn_k = bind.matrix(name(i, "attn_k"), kv, d);
    l.attn_v = bind.matrix(name(i, "attn_v"), kv, d);
    l.attn_output = bind.matrix(name(i, "attn_output"), d, q);
    if (arch.qk_norm) {
      l.attn_q_norm = bind.vector(name(i, "attn_q_norm"), h.head_dim);
      l.attn_k_norm = bind.vector(name(i, "attn_k_norm"), h.head_dim);
    }
    if (arch.post_norms) l.post_attn_norm = bind.vector(name(i, "post_attention_norm"), d);
    l.ffn_norm = bind.vector(name(i, "ffn_norm"), d);
    l.ffn_gate = bind.matrix(name(i, "ffn_gate"), f, d);
    l.ffn_up = bind.matrix(name(i, "ffn_up"), f, d);
    l.ffn_down = bind.matrix(name(i, "ffn_down"), d, f);
    if (arch.post_norms) l.post_ffw_norm = bind.vector(name(i, "post_ffw_norm"), d);
  }
  return layers;
}

}  // namespace sluice::engine
