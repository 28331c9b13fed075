//===- CommitWeak.cpp - the `commit-weak` pass: weak dtypes made concrete in kernels ===//
// A weak dtype is a Python literal's: weakint or weakfloat, matching whatever it meets (the verifier
// lets weakint sit among integers and bool, weakfloat among floats). Until this pass the renderers
// decided what such an operand becomes (LLVM cast it to the op's strong operand, C left it to C's usual
// conversions, which differ from LLVM's on an int32 compared with a weakint outside int32's range).
// Per kernel body, in the IR, once:
//   - an elementwise op (not CAST/BITCAST) with weak and strong operands: each weak operand is cast to
//     the dtype of the first strong one (a WHERE's branches: its own dtype when both are weak), as
//     CAST(x) (tinygrad's lower_weak_srcs: the consumer absorbs the cast on its own edge);
//   - weakfloat becomes float64: the precision every target computed it in.
// What remains weak is weakint among weakints only: index arithmetic (RANGEs, INDEX offsets, loop
// bounds), tinygrad's dtypes.weakint, which the targets render as 64-bit integers that do not wrap
// (index math is bounded by the buffers it addresses). Narrowing it to int32 where its range fits
// (tinygrad's pm_lower_index_dtype, for GPUs) is not done.
// After it, KernelABI refuses a kernel where a weak operand still meets a strong one, or a weakfloat.
// Runs after lower-index, before linearize.
#include "IR/Error.h"
#include "IR/Types.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"

#include <unordered_map>
#include <vector>

namespace uopc {
namespace {

bool isWeak(DType d) { return d == DType::WeakInt || d == DType::WeakFloat; }

} // namespace

const UOp *commitWeakKernel(Context &c, const UOp *body) {
  return rebuildBottomUp(c, body, [&](const UOp *u, std::span<const UOp *const> rebuilt) -> const UOp * {
    std::vector<const UOp *> srcs(rebuilt.begin(), rebuilt.end());
    if (isElementwise(u->op) && u->op != Op::CAST && u->op != Op::BITCAST) {
      size_t first = u->op == Op::WHERE ? 1 : 0;
      DType strong = DType::Void;
      for (size_t k = first; k < u->nsrc && strong == DType::Void; ++k)
        if (!isWeak(u->src(k)->dtype)) strong = u->src(k)->dtype;
      if (strong == DType::Void && u->op == Op::WHERE && !isWeak(u->dtype)) strong = u->dtype;
      if (strong != DType::Void)
        for (size_t k = first; k < u->nsrc; ++k)
          if (isWeak(u->src(k)->dtype)) srcs[k] = c.make(Op::CAST, strong, {srcs[k]});
    }
    DType dt = u->dtype == DType::WeakFloat ? DType::Float64 : u->dtype;
    return dt == u->dtype ? c.withSrc(u, srcs) : c.make(u->op, dt, srcs, u->arg, u->tag);
  });
}

void runCommitWeak(Graph &g, const PassContext &) {
  Context &c = *g.ctx;
  rewriteKernelBodies(g, [&](const UOp *call) { return commitWeakKernel(c, call->src(0)); });
}

} // namespace uopc
