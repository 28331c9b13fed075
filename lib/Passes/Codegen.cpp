//===- Codegen.cpp - the `codegen` pass: target-independent lowering of each kernel ===//
// Runs on kernel-split's output. For every kernel CALL(SINK[KernelInfo](...), states...) the body is
// simplified with tinygrad's `sym` rules (lib/Passes/Symbolic/Symbolic.h): the index arithmetic that
// rangeify built from movement ops folds (div/mod of ranges, valid masks under their gates), and Invalid
// moves to the INDEX it gates (pm_data_invalid), so a padded read becomes one gated load and a padded
// store one gated store. Loops, accumulators and the final removal of Invalid are the emitter's: a
// RANGE is a loop, a REDUCE an accumulator initialized with its op's identity, and an Invalid lane is
// tracked as a validity flag that gates loads and stores (lib/Targets/CTarget.h), which keeps the
// interpreter's poisoning semantics exactly. The result is still a kernel graph the interpreter runs.
//
// Copies (CALL(COPY(...))) and the top-level graph are left as they are.
// Precondition: kernel-split ran.
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"


namespace uopc {

void runCodegen(Graph &g, const PassContext &) {
  SymbolicCtx sc;
  rewriteKernelBodies(g, [&](const UOp *call) { return simplifyWith(*g.ctx, call->src(0), symRules(), &sc); });
}

} // namespace uopc
