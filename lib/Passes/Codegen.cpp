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

#include <unordered_map>

namespace uopc {

void runCodegen(Graph &g, const PassContext &) {
  Context &c = *g.ctx;
  SymbolicCtx sc;
  // Rebuilt bottom-up: a CALL gets its simplified body, every user of a changed node is rebuilt on it.
  std::unordered_map<const UOp *, const UOp *> now;
  for (const UOp *u : toposort(g.root)) {
    std::vector<const UOp *> srcs;
    for (const UOp *s : u->src()) {
      auto it = now.find(s);
      srcs.push_back(it == now.end() ? s : it->second);
    }
    if (u->op == Op::CALL && u->src(0)->op == Op::SINK) srcs[0] = simplifyWith(c, u->src(0), symRules(), &sc);
    const UOp *n = c.withSrc(u, srcs);
    if (n != u) now[u] = n;
  }
  if (auto it = now.find(g.root); it != now.end()) g.root = it->second;
}

} // namespace uopc
