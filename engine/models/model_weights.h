#pragma once
// A model's weights as backend Tensors, checked against its architecture at load.
//
// Every tensor is required with the shape the hyperparameters imply, matrices in a
// dtype the backend's matmul takes and 1-D tensors in F32, so a file that does not
// fit fails here, naming the file and the tensor, and never inside a kernel. The
// bytes stay where the WeightSource keeps them (the mmap on CPU; a GPU backend
// copies them as they are), so the source must outlive these weights.
// Immutable after load; used by the engine thread of its model.
#include <memory>
#include <optional>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/weight_source.h"
#include "engine/models/architecture.h"

namespace sluice::engine {

// Shapes in the comments: d = embedding_length, q = num_heads * head_dim,
// kv = num_kv_heads * head_dim, f = ffn_length, hd = head_dim. Absent optional
// tensors are null views (operator bool false).
struct LayerWeights {
  backends::Tensor attn_norm;       // [d] F32
  backends::Tensor attn_q;          // [q, d]
  backends::Tensor attn_k;          // [kv, d]
  backends::Tensor attn_v;          // [kv, d]
  backends::Tensor attn_output;     // [d, q]
  backends::Tensor attn_q_norm;     // [hd] F32, qk_norm only
  backends::Tensor attn_k_norm;     // [hd] F32, qk_norm only
  backends::Tensor post_attn_norm;  // [d] F32, post_norms only
  backends::Tensor ffn_norm;        // [d] F32
  backends::Tensor ffn_gate;        // [f, d]
  backends::Tensor ffn_up;          // [f, d]
  backends::Tensor ffn_down;        // [d, f]
  backends::Tensor post_ffw_norm;   // [d] F32, post_norms only
};

// Device buffers of bound weights and the bytes made at load (quantized matrices,
// widened vectors) that some of them view. Tensors bound into it stay valid while
// it (and the weights' source) lives.
struct WeightStore {
  std::vector<std::unique_ptr<backends::Buffer>> buffers;  // one per tensor, owning the device side
  std::vector<std::vector<std::byte>> made;                // bytes made at load (buffers may view them)
};

struct ModelWeights {
  backends::Tensor token_embd;   // [vocab, d]
  backends::Tensor output_norm;  // [d] F32
  backends::Tensor output;       // [vocab, d]: token_embd itself when tied
  std::vector<LayerWeights> layers;
  WeightStore store;
};

// Throws loader::LoadError naming the source's file and the offending tensor.
// quantize_to (Q8_0 or Q4_0): F32/F16/BF16 matrices are quantized to it first
// (loader/quantize.h), token_embd to Q8_0, rows that are not whole blocks excepted.
ModelWeights load_model_weights(const loader::WeightSource& source, const Architecture& arch,
                                backends::Backend& backend,
                                std::optional<backends::DType> quantize_to = std::nullopt);

}  // namespace sluice::engine
