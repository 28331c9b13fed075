//===- LowerIndex.cpp - the `lower-index` pass: every check a renderer would prove, made explicit ===//
// Runs on codegen's output. A renderer must not analyze ranges (what it renders is what the IR says), so
// the two decisions the emitters used to take from range analysis are taken here, once, in the IR:
//  - Bounds. INDEX(buf, i, gates...) reads or writes only where its gates hold; the access is also
//    guarded against i < 0 and i >= size(buf), unless the gates and i's range prove it in bounds. The
//    checks that are not proven become gate sources of the INDEX: CMPLT(-1, i) and CMPLT(i, size), in
//    int64. After this pass an INDEX's gates are its whole validity: a renderer ANDs them, nothing more.
//    An index that is valid only where c holds, WHERE(c, i, Invalid), becomes index i with gate c (the
//    same access: the renderers and the interpreter treat an Invalid index as a false gate), so that the
//    index stays affine in the loops.
//  - Loads gated on their own value. LOAD(INDEX(buf, WHERE(c, i, Invalid)), alt) whose condition c reads
//    buf[i] itself (a ReLU read in its consumer: x > 0 ? x : 0, codegen's gated load) is WHERE(c, buf[i],
//    alt): the element is loaded unconditionally to evaluate c anyway, and a select of it is branch-free
//    where a gated load on data is a branch the CPU mispredicts (ResNet-50's 3x3 convolutions).
//  - Division. A signed FLOORDIV/FLOORMOD whose dividend is never negative and whose divisor is a positive
//    constant is the C-style CDIV/CMOD (they agree there), which every target spells as one machine
//    division; the floor forms keep their helper calls.
// The result is still a kernel graph the interpreter runs (gates and CDIV/CMOD mean the same there).
// Precondition: codegen ran. Copies and the top-level graph are left as they are.
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <unordered_map>

namespace uopc {
namespace {

bool isBufferParam(const UOp *p) {
  return p->op == Op::PARAM && p->nsrc > 0 && !(p->src(0)->op == Op::STACK && p->src(0)->nsrc == 0);
}

/// For LOAD(INDEX(buf, WHERE(c, i, Invalid)), alt): the ungated INDEX(buf, i) that c itself reads, else nullptr.
const UOp *loadOfOwnCondition(const UOp *load) {
  const UOp *ix = load->src(0);
  if (ix->op != Op::INDEX || ix->nsrc != 2 || !isBufferParam(ix->src(0))) return nullptr;
  const UOp *w = ix->src(1);
  if (w->op != Op::WHERE || w->src(2)->op != Op::CONST || !w->src(2)->arg || w->src(2)->arg->kind != ArgKind::Invalid)
    return nullptr;
  for (const UOp *x : toposort(w->src(0)))
    if (x->op == Op::INDEX && x->nsrc == 2 && x->src(0) == ix->src(0) && x->src(1) == w->src(1) && x->dtype == load->dtype)
      return x;
  return nullptr;
}

const UOp *asInt64(Context &c, const UOp *x) {
  return x->dtype == DType::Int64 ? x : c.make(Op::CAST, DType::Int64, {x});
}

} // namespace

const UOp *lowerIndexKernel(Context &c, const UOp *body) {
  SymbolicCtx sc;
  std::unordered_map<const UOp *, const UOp *> now;
  for (const UOp *u : toposort(body)) {
    std::vector<const UOp *> srcs;
    bool changed = false;
    for (const UOp *s : u->src()) {
      auto it = now.find(s);
      srcs.push_back(it == now.end() ? s : it->second);
      changed |= it != now.end();
    }
    const UOp *n = changed ? c.withSrc(u, srcs) : u;
    if (const UOp *own = u->op == Op::LOAD && u->nsrc == 2 ? loadOfOwnCondition(u) : nullptr) {
      auto get = [&](const UOp *x) {
        auto it = now.find(x);
        return it == now.end() ? x : it->second;
      };
      const UOp *w = u->src(0)->src(1);
      now[u] = c.make(Op::WHERE, u->dtype, {get(w->src(0)), get(own), get(u->src(1))});
      continue;
    }
    if (u->op == Op::INDEX && u->nsrc >= 2 && isBufferParam(u->src(0))) {
      // an index valid where c holds, WHERE(c, i, Invalid), is index i gated by c: the same access, with
      // an index that stays affine (a padded read's lanes then load consecutive elements)
      const UOp *w = u->src(1);
      std::vector<const UOp *> given(u->src().begin() + 2, u->src().end());
      if (w->op == Op::WHERE && w->src(2)->op == Op::CONST && w->src(2)->arg && w->src(2)->arg->kind == ArgKind::Invalid &&
          w->src(1)->op != Op::WHERE) {
        const UOp *cond = srcs[1]->src(0), *idx = srcs[1]->src(1);
        srcs.erase(srcs.begin() + 1);
        srcs.insert(srcs.begin() + 1, {idx, cond});
        given.insert(given.begin(), w->src(0));
        w = w->src(1);
        n = c.make(Op::INDEX, u->dtype, srcs, u->arg, u->tag);
      }
      // analyzed on the original nodes: the rebuilt sources mean the same
      VRange r = indexRangeGivenGates(sc, c, w, given);
      const UOp *size = u->src(0)->src(0);
      auto bound = constBound(size);
      std::vector<const UOp *> gates;
      if (r.lo < 0) gates.push_back(c.make(Op::CMPLT, DType::Bool, {c.constInt(DType::Int64, -1), asInt64(c, srcs[1])}));
      if (!(bound && r.hi < *bound)) gates.push_back(c.make(Op::CMPLT, DType::Bool, {asInt64(c, srcs[1]), asInt64(c, srcs[0]->src(0))}));
      if (!gates.empty()) {
        std::vector<const UOp *> s(srcs.begin(), srcs.end());
        s.insert(s.end(), gates.begin(), gates.end());
        n = c.make(Op::INDEX, u->dtype, s, u->arg, u->tag);
      }
    }
    if ((u->op == Op::FLOORDIV || u->op == Op::FLOORMOD) && isInt(u->dtype) && !isUnsigned(u->dtype)) {
      auto d = constBound(u->src(1));
      if (d && *d > 0 && sc.ranges.vmin(u->src(0)) >= 0)
        n = c.make(u->op == Op::FLOORDIV ? Op::CDIV : Op::CMOD, n->dtype, n->src(), n->arg, n->tag);
    }
    if (n != u) now[u] = n;
  }
  auto it = now.find(body);
  return it == now.end() ? body : it->second;
}

void runLowerIndex(Graph &g, const PassContext &) {
  rewriteKernelBodies(g, [&](const UOp *call) { return lowerIndexKernel(*g.ctx, call->src(0)); });
}

} // namespace uopc
