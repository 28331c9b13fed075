//===- OnceCopy.h - once steps that uopc can run itself: copies between two arguments at affine indices ===//
// The optimizer's weight re-layouts (Passes/Optimize.cpp relayoutKernel, KernelInfo once) are kernels of one
// store, Q[(o*stride + k)*lanes + l] = W[(o*lanes + l)*stride + k]: a permutation of a weight. When the weight
// is baked into a library (--embed-params, --params-file), uopc applies it at compile time and bakes the
// re-laid-out bytes instead (Driver/Library.cpp), so the library never runs it. This file recognizes such a
// kernel from its SINK (any ungated copy of one argument into another at indices affine in the loops, not only
// the re-layout's shape) and evaluates it on bytes.
#pragma once

#include "Passes/Schedule.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace uopc {

/// A kernel that is one ungated store of one argument's element into another's: for every point x of its
/// loops (0 <= x_i < sizes[i], the first loop outermost), dst[dstBase + sum dstStrides[i]*x_i] =
/// src[srcBase + sum srcStrides[i]*x_i], elements of elemBytes bytes (the same dtype on both sides).
struct AffineCopy {
  size_t dstArg = 0, srcArg = 0; ///< the kernel's argument slots (SchedStep::args / manifest Step::args)
  int64_t elemBytes = 0;
  std::vector<int64_t> sizes, dstStrides, srcStrides;
  int64_t dstBase = 0, srcBase = 0;
};

/// The copy a kernel CALL (either body form, IR/Kernel.h) performs, or nullopt when its SINK is anything
/// else: more than one store, a gate, arithmetic on the value, an index that is not a sum of constant
/// multiples of its loops (constant trip counts), a cast between dtypes.
std::optional<AffineCopy> affineCopyOf(const UOp *call);

/// Per step of `s`: the AffineCopy of each once step (SchedStep::once) that is one, nullopt otherwise.
std::vector<std::optional<AffineCopy>> onceCopies(const Schedule &s);

/// Runs `c` on `src` (srcElems elements) into a destination of dstElems elements that starts zeroed, and
/// hands the destination's bytes to `emit` in order, in pieces. When the copy writes the destination densely
/// in some loop order (a permutation, as every re-layout is), it is produced piece by piece without holding
/// it whole; otherwise it is built in memory and handed over at once. Throws Error when an index of the copy
/// falls outside either buffer or a size overflows.
void runAffineCopy(const AffineCopy &c, std::string_view src, int64_t srcElems, int64_t dstElems,
                   const std::function<void(std::string_view)> &emit);

} // namespace uopc
