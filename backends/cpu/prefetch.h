#pragma once
// Software prefetch for the weight streams of the matmul kernels.
//
// Decoding reads each weight once per step, from L3 or DRAM, in one long sequential
// stream per thread; the hardware prefetcher alone left a core at ~10 GB/s there.
// Asking for the bytes a few KB ahead made a one-stream decode step of SmolLM2 Q4_1
// ~25% faster and a 4-row one ~20% on the AVX-512 Xeon VM (the AVX2 kernels on the
// same machine: ~25%); prefill, which reuses each weight for many tokens, did not
// change. A prefetch is only a hint: past the end of a buffer it never faults.
#include <cstdint>

namespace sluice::backends::cpu {

inline void prefetch_bytes(const void* p, int64_t bytes) {
  const auto* c = static_cast<const char*>(p);
  for (int64_t line = 0; line < bytes; line += 64) __builtin_prefetch(c + line, 0, 3);
}

// The packed integer kernels: the block 16 blocks ahead (past a group's end, the next
// group's, which an item reads next).
template <int BlockBytes>
inline void prefetch_ahead(const uint8_t* block) {
  constexpr int kAheadBlocks = 16;
  prefetch_bytes(block + kAheadBlocks * BlockBytes, BlockBytes);
}

// The float kernels' decode path streams whole weight rows: this many rows ahead.
inline constexpr int64_t kPrefetchRowsAhead = 4;

}  // namespace sluice::backends::cpu
