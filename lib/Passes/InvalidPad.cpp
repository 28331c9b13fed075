//===- InvalidPad.cpp - the `invalid-pad` pass: internal PAD fills Invalid ===//
// Stage 0 of seed 000. Graph format v1 has one PAD op whose fill is a document-wide choice
// (Graph::padFill). This pass switches a `pad_fill: zero` graph to `pad_fill: invalid` without changing
// its meaning:
//   PAD(x, off, size)            -> where(PAD(ones_bool(x.shape), off, size), PAD(x, off, size), 0)
//   c ? (c ? t : f) : f2         -> c ? t : f2      (so an existing explicit mask folds to one gate)
// `pad(x)+1` therefore still reads 1 in the padding. After the pass the graph is PadFill::Invalid: a PAD
// fills Invalid ("no data here"), except a `bool` PAD, which fills False in both semantics (False is the
// bool reduce identity, and the masks themselves are bool PADs), so bool PADs are left alone.
//
// Left alone as well: PADs on a STORE's target chain (a pad of the destination means "not written",
// whatever the fill), and every PAD of a graph already in `pad_fill: invalid` (the pass does nothing).
// Precondition: the graph verifies (shape inference gives every PAD source a shape).
#include "IR/Error.h"
#include "IR/Shape.h"
#include "Passes/Multi/PadForms.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"

#include <unordered_set>

namespace uopc {
namespace {

struct InvalidPadState {
  Graph *g;
  ShapeInfo *shapes;
  std::unordered_set<const UOp *> storeTargets;
};

/// Nodes a STORE writes through: its target and the movement ops under it down to the buffer.
std::unordered_set<const UOp *> storeTargetChains(const UOp *root) {
  std::unordered_set<const UOp *> out;
  for (const UOp *u : toposort(root)) {
    if (u->op != Op::STORE || u->nsrc == 0) continue;
    for (const UOp *t = u->src(0); out.insert(t).second;) {
      if (!(isMovement(t->op) || t->op == Op::MULTI || t->op == Op::AFTER) || t->nsrc == 0) break;
      t = t->src(0);
    }
  }
  return out;
}

/// PAD(x) -> where(mask, PAD(x), 0) for every non-bool PAD off a store target.
const RuleSet &maskRules() {
  static const RuleSet rules{
      rule(pat(Op::PAD).named("p"), [](Match &m) -> const UOp * {
        auto &st = m.user<InvalidPadState>();
        const UOp *p = m["p"];
        if (p->dtype == DType::Bool || p->nsrc != 3 || st.storeTargets.count(p)) return nullptr;
        const auto &xs = st.shapes->shape(p->src(0));
        if (!xs) return nullptr;
        return padforms::zeroFilledPad(m.ctx(), p->src(0), *xs, p->src(1), p->src(2));
      }),
  };
  return rules;
}

/// Same-condition nested where collapse. Tensor-level WHEREs are outside the simplifier's reach (it
/// only rewrites scalars), so the rule lives here.
const RuleSet &collapseRules() {
  static const RuleSet rules{
      rule(where(var("c"), where(var("c"), var("t"), var("f")), var("f2")),
           [](Match &m) { return m.ctx().make(Op::WHERE, m.root()->dtype, {m["c"], m["t"], m["f2"]}); }), // c?(c?t:f):f2 -> c?t:f2
      rule(where(var("c"), var("t"), where(var("c"), var("f"), var("f2"))),
           [](Match &m) { return m.ctx().make(Op::WHERE, m.root()->dtype, {m["c"], m["t"], m["f2"]}); }), // c?t:(c?f:f2) -> c?t:f2
  };
  return rules;
}

} // namespace

void runInvalidPad(Graph &g, const PassContext &) {
  if (g.padFill == PadFill::Invalid) return;
  ShapeInfo shapes(g);
  InvalidPadState st{&g, &shapes, storeTargetChains(g.root)};
  RewriteOptions o;
  o.sourcesFirst = &maskRules();
  o.user = &st;
  o.walk = true; // the PAD inside the new mask form must not be masked again
  o.enterCalls = true;
  o.describe = [&g](const UOp *u) { return g.describe(u); };
  const UOp *root = graphRewrite(*g.ctx, g.root, o);
  RewriteOptions c;
  c.sourcesFirst = &collapseRules();
  c.enterCalls = true;
  c.describe = o.describe;
  g.root = graphRewrite(*g.ctx, root, c);
  g.padFill = PadFill::Invalid;
}

} // namespace uopc
