//===- ReduceIdentity.cpp - the `reduce-identity` pass: Invalid in a reduce is its identity ===//
// Stage 0.3 of seed 000 (tinygrad's pm_invalid_reduce_identity), at the tensor level. A REDUCE whose
// input is Invalid along a reduced axis ("this element has no data") gets the reduce identity there
// (ADD 0, MUL 1, MAX the dtype minimum), so one padded element does not poison the whole reduction; an
// Invalid that does not depend on a reduced axis still poisons its output lane (the gather with an
// Invalid index: the lane has no data, whatever the reduction).
//
// "Depends on a reduce range", decided on tensor shapes (there are no RANGEs before rangeify): REDUCE
// [op, k] reduces the first k axes of its input. Walking down the input through elementwise ops (operands
// right-aligned, so an operand of rank r sees the first k-(R-r) of its axes reduced), the pass rewrites
//   where(c, x, Invalid)   -> where(c, x, identity)   when c varies along a reduced axis: c is not a CONST,
//                             not an EXPAND/broadcast along it, and its size there is not 1 (conservative:
//                             anything else counts as varying, as any RANGE does in tinygrad);
//   PAD(x, off, size)      -> PAD(where(mask_R, PAD_R(x), identity), off_K, size)   (pad_fill invalid, not
//                             bool) when the padding touches a reduced axis: PAD_R pads only the reduced
//                             axes, whose padding becomes the identity; the padding of the kept axes stays
//                             Invalid (those lanes have no data at all).
// Gates on `_device_num` (MSELECT/MSTACK forms) are scalars, so they never depend on a reduced axis.
//
// Placement: after gate lifting (invalid-pad's masks, multi-lower's gates) and before anything builds an
// accumulator (rangeify, kernel split): there an Invalid element would poison the accumulator.
#include "IR/Error.h"
#include "IR/Shape.h"
#include "Passes/Multi/PadForms.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

namespace uopc {
namespace {

using namespace padforms;

struct IdentityState {
  Graph *g;
  ShapeInfo *shapes;
  int rank(const UOp *u) const {
    const auto &s = shapes->shape(u);
    return s ? static_cast<int>(s->size()) : 0;
  }
};

/// Whether tensor c may take different values along its first kk axes.
bool varies(IdentityState &st, const UOp *c, int kk) {
  if (kk <= 0 || c->op == Op::CONST) return false;
  const auto &s = st.shapes->shape(c);
  if (!s) return true;
  bool allOne = true;
  for (int j = 0; j < kk && j < static_cast<int>(s->size()); ++j) {
    auto d = ShapeInfo::constDim((*s)[static_cast<size_t>(j)]);
    if (!d || *d != 1) allOne = false;
  }
  if (allOne) return false;
  if (c->op == Op::EXPAND) return varies(st, c->src(0), kk - (static_cast<int>(s->size()) - st.rank(c->src(0))));
  if (isElementwise(c->op)) {
    for (const UOp *x : c->src())
      if (varies(st, x, kk - (static_cast<int>(s->size()) - st.rank(x)))) return true;
    return false;
  }
  return true;
}

/// u with Invalid along its first kk axes replaced by the identity `ident` (a scalar CONST); null if unchanged.
const UOp *toIdentity(IdentityState &st, Context &ctx, const UOp *u, int kk, Op rop) {
  if (kk <= 0) return nullptr;
  int r = st.rank(u);
  if (u->op == Op::WHERE) {
    const UOp *t = toIdentity(st, ctx, u->src(1), kk - (r - st.rank(u->src(1))), rop), *f = nullptr;
    if (isInvalidConst(u->src(2))) {
      if (varies(st, u->src(0), kk - (r - st.rank(u->src(0))))) f = reduceIdentityConst(ctx, rop, u->dtype);
    } else {
      f = toIdentity(st, ctx, u->src(2), kk - (r - st.rank(u->src(2))), rop);
    }
    if (!t && !f) return nullptr;
    return ctx.make(Op::WHERE, u->dtype, {u->src(0), t ? t : u->src(1), f ? f : u->src(2)});
  }
  if (u->op == Op::PAD && st.g->padFill == PadFill::Invalid && u->dtype != DType::Bool) {
    const UOp *x = u->src(0);
    const UOp *nx = toIdentity(st, ctx, x, kk, rop);
    if (nx) x = nx;
    const auto &xs = st.shapes->shape(u->src(0));
    if (!xs) return nx ? ctx.withSrc(u, std::vector<const UOp *>{x, u->src(1), u->src(2)}) : nullptr;
    Shape off = u->src(1)->op == Op::STACK ? Shape(u->src(1)->src().begin(), u->src(1)->src().end()) : Shape{u->src(1)};
    Shape size = u->src(2)->op == Op::STACK ? Shape(u->src(2)->src().begin(), u->src(2)->src().end()) : Shape{u->src(2)};
    const UOp *zero = ctx.constInt(DType::WeakInt, 0);
    bool padR = false, padK = false;
    Shape offR = *xs, sizeR = *xs, offK = off;
    for (size_t j = 0; j < xs->size(); ++j) {
      auto o = ShapeInfo::constDim(off[j]);
      bool padded = !(o && *o == 0 && size[j] == (*xs)[j]);
      bool reduced = static_cast<int>(j) < kk;
      (reduced ? padR : padK) |= padded;
      offR[j] = reduced ? off[j] : zero;
      sizeR[j] = reduced ? size[j] : (*xs)[j];
      if (reduced) offK[j] = zero;
    }
    if (!padR) return nx ? ctx.withSrc(u, std::vector<const UOp *>{x, u->src(1), u->src(2)}) : nullptr;
    const UOp *oR = shapeOperand(ctx, offR), *sR = shapeOperand(ctx, sizeR);
    const UOp *inner = ctx.make(Op::PAD, u->dtype, {x, oR, sR});
    const UOp *masked = ctx.make(Op::WHERE, u->dtype, {padMask(ctx, u->dtype, *xs, oR, sR), inner,
                                                        reduceIdentityConst(ctx, rop, u->dtype)});
    if (!padK) return masked;
    return ctx.make(Op::PAD, u->dtype, {masked, shapeOperand(ctx, offK), u->src(2)});
  }
  if (isElementwise(u->op) && u->op != Op::BITCAST && u->op != Op::CAST) {
    std::vector<const UOp *> srcs(u->src().begin(), u->src().end());
    bool changed = false;
    for (auto &s : srcs)
      if (const UOp *n = toIdentity(st, ctx, s, kk - (r - st.rank(s)), rop)) s = n, changed = true;
    return changed ? ctx.withSrc(u, srcs) : nullptr;
  }
  return nullptr;
}

const RuleSet &identityRules() {
  static const RuleSet rules{
      rule(pat(Op::REDUCE).named("r"), [](Match &m) -> const UOp * {
        auto &st = m.user<IdentityState>();
        const UOp *r = m["r"];
        if (r->nsrc != 1) return nullptr;
        Op rop = r->arg->elems()[0]->op();
        int k = static_cast<int>(r->arg->elems()[1]->i());
        const UOp *n = toIdentity(st, m.ctx(), r->src(0), k, rop);
        return n ? m.ctx().withSrc(r, std::vector<const UOp *>{n}) : nullptr;
      }),
  };
  return rules;
}

} // namespace

void runReduceIdentity(Graph &g) {
  ShapeInfo shapes(g);
  IdentityState st{&g, &shapes};
  RewriteOptions o;
  o.sourcesFirst = &identityRules();
  o.user = &st;
  o.walk = true; // a rewritten REDUCE keeps Invalid only where it must: nothing to revisit
  o.enterCalls = true;
  o.describe = [&g](const UOp *u) { return g.describe(u); };
  g.root = graphRewrite(*g.ctx, g.root, o);
}

} // namespace uopc
