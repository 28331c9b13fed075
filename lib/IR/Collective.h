//===- Collective.h - what the compiler and the runner agree on about an allreduce step ===//
// An allreduce that multi-lower keeps whole (docs/schedule.md) runs in the runner, not as kernels: in one
// process it reduces the shards in the order tinygrad's lowering would have (so the result is bitwise what
// the copies and sum kernels gave), under MPI as one MPI_Allreduce. This header holds the one piece of that
// order both sides compute: the chunks of tinygrad's ring allreduce.
#pragma once

#include <cstdint>
#include <vector>

namespace uopc {

/// tinygrad's ring allreduce cuts a buffer of `numel` elements into `ndev` chunks: factor = the first of
/// 32, 16, 8, 4, 2 dividing numel (else 1); base, left = divmod(numel / factor, ndev); chunk k has
/// (base + 1) * factor elements for k < left, base * factor after. Chunk k is [starts[k], starts[k + 1]);
/// ndev + 1 entries, empty chunks included. Its elements are reduced starting at device k, around the ring:
/// ((x_k op x_{k+1}) op x_{k+2}) ... op x_{k-1}.
inline std::vector<int64_t> ringChunkStarts(int64_t numel, int64_t ndev) {
  int64_t factor = 1;
  for (int64_t f : {32, 16, 8, 4, 2})
    if (numel % f == 0) {
      factor = f;
      break;
    }
  int64_t base = numel / factor / ndev, left = numel / factor % ndev;
  std::vector<int64_t> starts{0};
  for (int64_t k = 0; k < ndev; ++k) starts.push_back(starts.back() + (k < left ? base + 1 : base) * factor);
  return starts;
}

} // namespace uopc
