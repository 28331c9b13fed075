//===- Compare.cpp - comparisons, MAX and folds that the range analysis decides ===//
// Rules over CMPLT/CMPNE/CMPEQ, MAX, and tinygrad's "min == max -> CONST".
// The comparison rewrites that move terms across `<` assume no wraparound: they are limited to weakint
// (unbounded) or check that the sized op cannot wrap.
#include "Passes/Symbolic/Internal.h"

namespace uopc::sym {
namespace {

/// A node whose range is a single value is that constant (tinygrad folds CMPLT, CMPNE, FLOORDIV,
/// FLOORMOD, PARAM, BIND, SPECIAL and RANGE this way; every integer ALU op is folded here).
V foldConstRange(S &s) {
  V r = s.root();
  if (!isIntOrBool(r.dt())) return nullptr;
  const VRange &v = s.sym.ranges.range(r);
  if (!v.isConst() || !fitsDType(r.dt(), v.lo)) return nullptr;
  return r.k(int64_t(v.lo));
}

OpMask rangeFoldOps() {
  OpMask m;
  for (unsigned i = 0; i < kNumOps; ++i)
    if (isALU(Op(i))) m.set(Op(i));
  for (Op op : {Op::CAST, Op::PARAM, Op::BIND, Op::SPECIAL}) m.set(op);
  return m;
}

/// max(x, y) -> x when x >= y everywhere, y when y >= x everywhere.
V foldMax(S &s) {
  V x = s["x"], y = s["y"];
  if (s.vmin(x) >= s.vmax(y)) return x;
  if (s.vmax(x) <= s.vmin(y)) return y;
  return nullptr;
}

/// c0 + x < c1 -> x < c1 - c0 (the sum must not wrap, c1 - c0 must fit).
V ltAddConst(S &s) {
  auto c0 = intConst(s["c0"]), c1 = intConst(s["c1"]);
  if (!c0 || !c1 || !s.noWrap(s["a"])) return nullptr;
  Bound d = Bound(*c1) - *c0;
  if (!fitsDType(s["x"].dt(), d)) return nullptr;
  return s["x"] < int64_t(d);
}

/// c0*x < c1 -> x < ceil(c1/c0) for c0, c1 > 0; -x < -floor(-c1/-c0) for c0 < -1, c1 <= 0 (weakint).
V ltMulConst(S &s) {
  auto c0 = intConst(s["c0"]), c1 = intConst(s["c1"]);
  if (!c0 || !c1) return nullptr;
  if (*c0 > 0 && *c1 > 0) return s["x"] < int64_t(-boundFloorDiv(-Bound(*c1), *c0));
  if (*c0 < 0 && *c0 != -1 && *c1 <= 0) return -s["x"] < int64_t(-boundFloorDiv(-Bound(*c1), -Bound(*c0)));
  return nullptr;
}

/// x//d < c -> x < c*d for d > 0, c*d < x for d < 0 (weakint).
V ltDivConst(S &s) {
  auto d = intConst(s["d"]), c = intConst(s["c"]);
  if (!d || !c || *d == 0) return nullptr;
  Bound cd = Bound(*c) * *d;
  if (!fitsInt64(cd)) return nullptr;
  return *d > 0 ? s["x"] < int64_t(cd) : s["x"].k(int64_t(cd)) < s["x"];
}

/// tinygrad's lt_folding: x < c where x = P + N, every term of N a multiple of d = gcd(N's factors, c)
/// and 0 <= P < d: then x < c <-> N/d < c/d.
V ltFolding(S &s) {
  auto c = intConst(s["c"]);
  if (!c || *c <= 0) return nullptr;
  std::vector<const UOp *> p, np;
  for (const UOp *u : splitUOp(s["x"], Op::ADD)) (constFactor(u) == 1 ? p : np).push_back(u);
  if (np.empty()) return nullptr;
  int64_t d = *c;
  for (const UOp *u : np) d = gcd64(d, constFactor(u));
  if (d <= 1) return nullptr;
  Bound lo = 0, hi = 0;
  for (const UOp *u : p) lo = boundAdd(lo, s.vmin(u)), hi = boundAdd(hi, s.vmax(u));
  if (lo < 0 || hi >= d) return nullptr;
  const UOp *n = divides(s.ctx(), usum(s.ctx(), np), d);
  if (!n) return nullptr;
  return s.wrap(n) < *c / d;
}

/// tinygrad's canonicalize_simplex: a0*x0 + a1*x1 + ... >= 1 with ai > 0 and xi >= 0 irreducible is
/// x0 + x1 + ... >= 1.
V canonicalizeSimplex(S &s) {
  bool changed = false;
  std::vector<const UOp *> ret;
  for (const UOp *u : splitUOp(s["x"], Op::ADD)) {
    if (u->op == Op::MUL && u->nsrc == 2)
      if (auto c = intConst(u->src(1)); c && *c > 0) {
        changed = true;
        u = u->src(0);
      }
    bool irreducible = u->op == Op::CONST || u->op == Op::SPECIAL || u->op == Op::RANGE || u->op == Op::PARAM ||
                       u->op == Op::GETADDR;
    if (!irreducible || s.vmin(u) < 0) return nullptr;
    ret.push_back(u);
  }
  if (!changed) return nullptr;
  return (s.wrap(usum(s.ctx(), ret)) < 1).lnot();
}

/// cast(bool x) != c -> x (c == 0), !x (c == 1), True otherwise.
V castBoolNe(S &s) {
  auto c = intConst(s["c"]);
  if (!c) return nullptr;
  return *c == 0 ? s["x"] : *c == 1 ? s["x"].lnot() : s["x"].kBool(true);
}

V falseLikeRoot(S &s) { return s.root().kBool(false); }
V trueLikeRoot(S &s) { return s.root().kBool(true); }
V notOfX(S &s) { return s["x"].lnot(); }
V keepX(S &s) { return s["x"]; }
V keepR(S &s) { return s["r"]; }
V zeroLikeR(S &s) { return s["r"].k(0); }
V swapLt(S &s) { return s["y"] < s["x"]; }

} // namespace

const RuleSet &compareSimpleRules() {
  static const Pat notX = ne(boolean("x"), cst(1, DType::Bool));
  static const Pat intOfBool = pat(Op::CAST).src(boolean("x")).dtype({DType::WeakInt, DType::Int8, DType::UInt8,
      DType::Int16, DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64});
  static const RuleSet rules{
      srule(var("x") < var("x"), falseLikeRoot),                                        // x<x -> False (NaN too)
      srule(ne(intOrBool("x"), var("x")), falseLikeRoot),                               // x!=x -> False (ints)
      srule(ne(boolean("x"), cst(0, DType::Bool)), keepX),                              // x!=False -> x
      srule(ne(notX, cst(1, DType::Bool)), keepX),                                      // !!x -> x
      srule(ne(intOfBool, cvar("c")), castBoolNe),                                      // int(x)!=c -> x, !x or True
      srule(eq(intOrBool("x"), var("x")), trueLikeRoot),                                // x==x -> True (ints)
      srule(eq(boolean("x"), cst(1, DType::Bool)), keepX),                              // x==True -> x
      srule(eq(boolean("x"), cst(0, DType::Bool)), notOfX),                             // x==False -> !x
  };
  return rules;
}

const RuleSet &compareRules() {
  static const Pat r = pat(Op::RANGE).srcPrefix(var("end")).named("r");
  static const RuleSet rules{
      // ** min == max -> CONST **
      srule(pat(rangeFoldOps()), foldConstRange),                                       // x in [c, c] -> c
      srule(pat(Op::RANGE).src(cvar()), foldConstRange),                                // RANGE(1) -> 0
      srule(max(anyInt("x"), var("y")), foldMax),                                       // max(x,y) -> x if x >= y
      // ** lt **
      srule((cvar("c0") + anyInt("x")).named("a") < cvar("c1"), ltAddConst),            // c0+x<c1 -> x<c1-c0
      srule((cvar("c0") * weak("x")) < cvar("c1"), ltMulConst),                         // c0*x<c1 -> x<ceil(c1/c0)
      srule(floordiv(weak("x"), cvar("d")) < cvar("c"), ltDivConst),                    // x//d<c -> x<c*d (d>0)
      srule(weak("x") < cvar("c"), ltFolding),                                          // (d*n+p)<c -> n<c/d, 0<=p<d
      srule(weak("x") * -1 < var("y") * -1, swapLt),                                    // -x<-y -> y<x
      srule(ne(weak("x") < 1, cst(1, DType::Bool)), canonicalizeSimplex),               // sum(ai*xi)>=1 -> sum(xi)>=1
      // ** a RANGE is below its end **
      srule(floormod(r, var("end")), keepR),                                            // r%end -> r
      srule(floordiv(r, var("end")), zeroLikeR),                                        // r//end -> 0
  };
  return rules;
}

} // namespace uopc::sym
