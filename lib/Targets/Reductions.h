//===- Reductions.h - which reductions the targets may split into partial sums ===//
// A kernel REDUCE is an accumulator updated in order, one element per iteration. A floating-point sum may
// instead run as several partial accumulators (vector lanes, interleaved copies) added together at the
// end: tinygrad does the same (reductions unrolled by 4). The result then differs by a few units in the
// last place per partial sum: within every corpus tolerance, and the only reassociation uopc allows.
// The C target marks such a loop `UOPC_SIMD_SUM(acc)` (`#pragma omp simd reduction(+:acc)` when uopc-run
// builds it, nothing otherwise); the LLVM target gives its add the `reassoc` flag, so that the loop
// vectorizer may split it. Shared by both, so they decide the same.
#pragma once

#include "IR/UOp.h"

namespace uopc {

/// Whether REDUCE `reduce` may be split into partial sums over its innermost range: an ADD of a float
/// dtype (integer sums are exact and vectorize unasked; a max or a product is left in order), no REDUCE
/// nested in its body, and every buffer read of the body that moves with that range reads consecutive
/// elements (index stride 1: a strided or gathered read makes vector lanes cost more than they save, so a
/// matmul's column walk is left to the compiler's outer-loop vectorizer).
bool splittableSum(const UOp *reduce);

/// Whether a read in REDUCE `reduce`'s body moves by exactly one element per step of `range` (a loop around
/// the reduction): copies of the reduction for consecutive values of that range then read consecutive
/// elements, and run well side by side as vector lanes (a matmul's output column loop around its
/// reduction: the LLVM target unrolls it and jams the copies into one reduction loop).
bool readsConsecutiveIn(const UOp *reduce, const UOp *range);

} // namespace uopc
