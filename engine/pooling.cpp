#include "engine/pooling.h"

#include <cmath>

#include "backends/check.h"

namespace sluice::engine {

std::string_view to_string(Pooling pooling) {
  switch (pooling) {
    case Pooling::last: return "last";
    case Pooling::mean: return "mean";
  }
  return "unknown";
}

std::optional<Pooling> parse_pooling(std::string_view name) {
  if (name == "last") return Pooling::last;
  if (name == "mean") return Pooling::mean;
  return std::nullopt;
}

Pooling choose_pooling(std::string_view configured, std::optional<uint64_t> file_pooling_type) {
  if (std::optional<Pooling> named = parse_pooling(configured)) return *named;
  // The GGUF's pooling_type (llama.cpp's numbering): 1 is mean; 3 (last), none and
  // the others (cls, rank) fall back to last, a decoder model's natural summary.
  constexpr uint64_t kFileMean = 1;
  if (file_pooling_type == kFileMean) return Pooling::mean;
  return Pooling::last;
}

PooledEmbedding::PooledEmbedding(Pooling pooling, int64_t width)
    : pooling_(pooling), width_(width), sum_(static_cast<size_t>(width), 0.0) {
  SLUICE_CHECK(width > 0, "PooledEmbedding: width must be positive");
}

void PooledEmbedding::add(int64_t first_position, std::span<const float> rows, int64_t num_prompt_tokens) {
  const auto width = static_cast<size_t>(width_);
  SLUICE_CHECK(rows.size() % width == 0, "PooledEmbedding: rows are not a whole number of vectors");
  const auto num_rows = static_cast<int64_t>(rows.size() / width);
  SLUICE_CHECK(first_position <= next_position_ || pooling_ == Pooling::last,
               "PooledEmbedding: a gap in the mean-pooled positions");
  for (int64_t k = 0; k < num_rows; ++k) {
    const int64_t position = first_position + k;
    if (position < next_position_ || position >= num_prompt_tokens) continue;
    const std::span<const float> row = rows.subspan(static_cast<size_t>(k) * width, width);
    if (pooling_ == Pooling::mean) {
      for (size_t i = 0; i < width; ++i) sum_[i] += row[i];
    } else if (position == num_prompt_tokens - 1) {
      for (size_t i = 0; i < width; ++i) sum_[i] = row[i];
    }
    next_position_ = position + 1;
  }
}

std::vector<float> PooledEmbedding::finish(int64_t num_prompt_tokens) const {
  SLUICE_CHECK(is_complete(num_prompt_tokens) && num_prompt_tokens > 0, "PooledEmbedding: rows missing");
  const double scale = pooling_ == Pooling::mean ? 1.0 / static_cast<double>(num_prompt_tokens) : 1.0;
  std::vector<float> out(sum_.size());
  for (size_t i = 0; i < sum_.size(); ++i) out[i] = static_cast<float>(sum_[i] * scale);
  l2_normalize(out);
  return out;
}

void l2_normalize(std::span<float> x) {
  double squares = 0.0;
  for (float v : x) squares += static_cast<double>(v) * v;
  if (squares <= 0.0) return;
  const double inv = 1.0 / std::sqrt(squares);
  for (float& v : x) v = static_cast<float>(v * inv);
}

}  // namespace sluice::engine
