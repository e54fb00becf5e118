#pragma once
// Helpers shared by the ops_*.cpp kernels (not part of any interface).
#include <algorithm>
#include <cstdint>

#include "backends/check.h"
#include "backends/cpu/thread_pool.h"
#include "backends/tensor.h"

namespace sluice::backends::cpu {

// Calls fn(row) for rows [0, num_rows), in parallel chunks of at least ~16K
// elements so that small ops (one decode token) run on the calling thread alone.
template <class Fn>
void for_each_row(ThreadPool& pool, int64_t num_rows, int64_t cols, Fn&& fn) {
  constexpr int64_t kMinElementsPerChunk = 16384;
  const int64_t rows_per_chunk = std::max<int64_t>(1, kMinElementsPerChunk / std::max<int64_t>(1, cols));
  const int64_t num_chunks = (num_rows + rows_per_chunk - 1) / rows_per_chunk;
  pool.parallel_for(num_chunks, [&](int64_t begin, int64_t end) {
    const int64_t row_end = std::min(num_rows, end * rows_per_chunk);
    for (int64_t r = begin * rows_per_chunk; r < row_end; ++r) fn(r);
  });
}

}  // namespace sluice::backends::cpu
