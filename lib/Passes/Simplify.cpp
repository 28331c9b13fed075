//===- Simplify.cpp - the `simplify` pass: symbolic simplification --------===//
// Runs tinygrad's `sym` rule set (lib/Passes/Symbolic/Symbolic.h) over the whole graph, the bodies of
// CALLs and FUNCTIONs included: constant folding, algebra, range folds, div/mod of index math, valid
// masks and Invalid gates.
//
// Safe on tensor-level graphs: a rule may only rewrite a node whose shape is () or undefined (index
// math, scalar values, kernel-level nodes). A tensor-valued node is never folded to a scalar constant
// or rebuilt by a rule; its scalar operands (symbolic shapes, scalar consts) are still simplified.
// Precondition: the graph verifies (shape inference must succeed on it).
#include "IR/Error.h"
#include "IR/Shape.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

namespace uopc {

void runSimplify(Graph &g, const PassContext &) {
  ShapeInfo shapes(g);
  SymbolicCtx sc;
  sc.allow = [&shapes](const UOp *u) {
    try {
      const std::optional<Shape> &s = shapes.shape(u);
      return !s || s->empty();
    } catch (const Error &) {
      return false; // a node whose shape is undefined is left as it is
    }
  };
  RewriteOptions o;
  o.sourcesFirst = &symRules();
  o.user = static_cast<SymbolicCtx *>(&sc);
  o.enterCalls = true; // kernel bodies (CALL of a SINK) are where the index math is
  o.describe = [&g](const UOp *u) { return g.describe(u); };
  g.root = graphRewrite(*g.ctx, g.root, o);
}

} // namespace uopc
