//===- LowerIndex.cpp - the `lower-index` pass: every check a renderer would prove, made explicit ===//
// Runs on codegen's output. A renderer must not analyze ranges (what it renders is what the IR says), so
// the two decisions the emitters used to take from range analysis are taken here, once, in the IR:
//  - Bounds. INDEX(buf, i, gates...) reads or writes only where its gates hold; the access is also
//    guarded against i < 0 and i >= size(buf), unless the gates and i's range prove it in bounds. The
//    checks that are not proven become gate sources of the INDEX: CMPLT(-1, i) and CMPLT(i, size), in
//    int64. After this pass an INDEX's gates are its whole validity: a renderer ANDs them, nothing more.
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
    if (u->op == Op::INDEX && u->nsrc >= 2 && isBufferParam(u->src(0))) {
      // analyzed on the original node: the rebuilt sources mean the same
      VRange r = indexRangeGivenGates(sc, c, u->src(1), u->src().subspan(2));
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
