#pragma once
// Embeddings: how a prompt's final (normed) hidden states become one vector. An
// embedding request is a prefill-only sequence; the model runner hands back the rows
// its pooling needs (last: the prompt's last row; mean: every prompt row, a chunk
// per step), and a PooledEmbedding per sequence folds them in position order, so
// the result depends neither on how the prompt was chunked nor on what else shared
// the step.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace sluice::engine {

enum class Pooling { last, mean };

std::string_view to_string(Pooling pooling);
// "last" | "mean"; nullopt for anything else.
std::optional<Pooling> parse_pooling(std::string_view name);

// A served model's pooling: the configured "last" | "mean", or for "auto" the model
// file's `<arch>.pooling_type` (llama.cpp's numbering: 1 mean, 3 last) when it names
// one of those, else last (a decoder LLM's, as vLLM pools them).
Pooling choose_pooling(std::string_view configured, std::optional<uint64_t> file_pooling_type);

class PooledEmbedding {
 public:
  PooledEmbedding(Pooling pooling, int64_t width);

  // Rows [num_rows, width] of the positions first_position, first_position + 1, ...
  // Positions folded before (a prefill computed again after preemption) are skipped,
  // as are rows the pooling does not use. Rows must come in position order.
  void add(int64_t first_position, std::span<const float> rows, int64_t num_prompt_tokens);

  // The pooled vector, L2-normalized (a zero vector stays zero). Requires every
  // needed row: the last position for `last`, all of them for `mean`.
  std::vector<float> finish(int64_t num_prompt_tokens) const;

  bool is_complete(int64_t num_prompt_tokens) const { return next_position_ >= num_prompt_tokens; }

 private:
  Pooling pooling_;
  int64_t width_;
  int64_t next_position_ = 0;  // positions [0, this) are folded in
  std::vector<double> sum_;    // mean: the running sum; last: the last row
};

// x / |x|_2 in place (a zero vector stays zero); the norm is summed in double, in order.
void l2_normalize(std::span<float> x);

}  // namespace sluice::engine
