//===- Coverage.h - which elements of a partly written buffer keep their contents ===//
// A buffer parameter whose stores may leave elements unwritten is `inout` (Schedule.cpp: the run keeps
// what it held there). keptElements says which elements those are, so a user can act on it: it runs every
// store's loop nest with the index arithmetic evaluated exactly (Interp-free: IR/ScalarOps), marks the
// elements written, and describes the rest as runs of equal length at a constant stride.
#pragma once

#include "IR/Graph.h"

#include <cstdint>
#include <vector>

namespace uopc {

/// The elements of one device's buffer that no step writes: `runs` (exact), or `known` false when they
/// cannot be computed (an index that depends on loaded data or a variable, a loop of symbolic size, more
/// than kMaxCoverageWork node evaluations, a buffer of more than kMaxCoverageElements elements, more than
/// kMaxKeptRuns runs).
struct KeptElements {
  bool known = false;
  int64_t elements = 0; ///< how many elements the runs hold
  /// [start + k*stride, start + k*stride + length) for k < count; increasing and disjoint
  struct Run {
    int64_t start = 0, length = 0, stride = 0, count = 0;
  };
  std::vector<Run> runs;
};

inline constexpr int64_t kMaxCoverageWork = int64_t(1) << 26; ///< node evaluations, all stores together
inline constexpr int64_t kMaxCoverageElements = int64_t(1) << 26;
inline constexpr size_t kMaxKeptRuns = 1024;

/// One write of a buffer: a kernel body (a SINK whose stores to argument `slot` write it) as it runs on
/// one device, with `_device_num` bound, or (body null) a copy that writes every element.
struct BufferWrite {
  const UOp *body = nullptr;
  int64_t deviceNum = 0;
  size_t slot = 0;
};

/// The elements of a buffer of `numel` elements that none of `writes` (all of one device) writes.
KeptElements keptElements(Context &ctx, const std::vector<BufferWrite> &writes, int64_t numel);

} // namespace uopc
