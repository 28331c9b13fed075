//===- Reduce.cpp - closed forms of kernel-level REDUCEs (tinygrad's reduce collapse) ===//
// tinygrad's pm_reduce_unparented, pm_reduce_collapse and pm_load_collapse (codegen/simplify.py), on the
// kernel form REDUCE(value, RANGE...) with arg (op):
//  - unparented ranges: a range the value does not use drops out; an ADD multiplies by its size; a range
//    of one element, which the simplifier folds to the constant 0, drops out of any reduction;
//  - counting: sum over r in [0, n) of (lower <= r < upper ? x : 0), x not using r, is
//    x * max(min(upper, n) - max(lower, 0), 0) (also with the branches swapped: n minus that count).
//    Comparisons are read as r + e < c (upper c - e) or c < r + e (lower c - e + 1), and ANDs and
//    negations of those. This is what makes tinygrad's arange (a sum of a comparison) O(1);
//  - gathering: sum over r in [0, n) of (idx != r ? 0 : expr(r)), idx not using r, is
//    (0 <= idx < n ? expr(idx) : 0): the one-hot sum of an embedding becomes one load.
// Float sums become products (x * count), as in tinygrad: exact for the integer sums of aranges, within
// rounding otherwise. Values holding an Invalid (lanes that poison the reduction) are left alone.
#include "Passes/Symbolic/Internal.h"

#include "IR/Records.h"

namespace uopc::sym {
namespace {

/// True when r may be in the graph below hay (true when unsure: the walk is bounded).
bool mayUse(const UOp *hay, const UOp *r) { return reaches(hay, r, 8192, true); }

bool holdsInvalid(const UOp *u) {
  for (const UOp *x : localToposort(u))
    if (isInvalidConst(x)) return true;
  return false;
}

/// side == r + e with e not using r (e null when side is r itself): e, or nullopt.
std::optional<const UOp *> offsetOf(Context &c, const UOp *side, const UOp *r) {
  if (side == r) return nullptr;
  if (side->op != Op::ADD || side->dtype != r->dtype) return std::nullopt;
  std::vector<const UOp *> rest;
  bool found = false;
  for (const UOp *t : splitUOp(side, Op::ADD)) {
    if (t == r && !found) found = true;
    else if (mayUse(t, r)) return std::nullopt;
    else rest.push_back(t);
  }
  if (!found) return std::nullopt;
  return usum(c, rest);
}

/// lower <= r < upper (either may be absent).
struct Bounds {
  std::optional<V> lower, upper;
};

/// cond as bounds on r, or nullopt when it is not of a form read here.
std::optional<Bounds> boundsOf(S &s, const UOp *cond, const UOp *r, bool negate) {
  Context &c = s.ctx();
  // !x spelled x != True
  if (cond->op == Op::CMPNE && cond->src(0)->dtype == DType::Bool && intConst(cond->src(1)) == 1)
    return boundsOf(s, cond->src(0), r, !negate);
  if (cond->op == Op::AND && cond->dtype == DType::Bool && !negate) {
    auto a = boundsOf(s, cond->src(0), r, false), b = boundsOf(s, cond->src(1), r, false);
    if (!a || !b) return std::nullopt;
    auto pick = [&](std::optional<V> x, std::optional<V> y, bool isLower) -> std::optional<V> {
      if (!x) return y;
      if (!y) return x;
      return isLower ? x->max(*y) : (x->lt(*y)).where(*x, *y);
    };
    return Bounds{pick(a->lower, b->lower, true), pick(a->upper, b->upper, false)};
  }
  if (cond->op != Op::CMPLT) return std::nullopt;
  const UOp *L = cond->src(0), *R = cond->src(1);
  bool usesL = mayUse(L, r), usesR = mayUse(R, r);
  if (usesL == usesR || L->dtype != r->dtype || R->dtype != r->dtype) return std::nullopt;
  if (usesL) { // r + e < R  <=>  r < R - e
    auto e = offsetOf(c, L, r);
    if (!e) return std::nullopt;
    V bound = *e ? s.wrap(R) - s.wrap(*e) : s.wrap(R);
    return negate ? Bounds{bound, std::nullopt} : Bounds{std::nullopt, bound}; // !(r < b)  <=>  b <= r
  }
  // L < r + e  <=>  r >= L - e + 1
  auto e = offsetOf(c, R, r);
  if (!e) return std::nullopt;
  V bound = (*e ? s.wrap(L) - s.wrap(*e) : s.wrap(L)) + 1;
  return negate ? Bounds{std::nullopt, bound} : Bounds{bound, std::nullopt}; // !(b <= r)  <=>  r < b
}

bool isZero(const UOp *u) {
  if (u->op != Op::CONST || !u->arg) return false;
  if (u->arg->kind == ArgKind::Float) return u->arg->f() == 0.0;
  return intConst(u) == 0;
}

V collapseReduce(S &s) {
  V red = s.root();
  Context &c = s.ctx();
  const Arg *a = red->arg;
  if (!a || a->kind != ArgKind::Tuple || a->count < 1 || !a->elems()[0] || a->elems()[0]->kind != ArgKind::OpName)
    return nullptr;
  Op op = a->elems()[0]->op();
  const UOp *val = red->src(0);
  if (red->nsrc < 2 || val->dtype != red->dtype) return nullptr;
  // a range of one element folds to the constant 0 (its only value, already in the value): one iteration
  std::vector<const UOp *> ranges;
  for (const UOp *r : red->src().subspan(1)) {
    if (r->op == Op::CONST && intConst(r) == 0) continue;
    if (r->op != Op::RANGE) return nullptr;
    ranges.push_back(r);
  }
  if (ranges.size() + 1 < red->nsrc) {
    if (ranges.empty()) return s.wrap(val);
    std::vector<const UOp *> srcs{val};
    srcs.insert(srcs.end(), ranges.begin(), ranges.end());
    return s.wrap(c.make(Op::REDUCE, red->dtype, srcs, a));
  }
  if (red->dtype == DType::Bool) return nullptr;

  // unparented ranges
  std::vector<const UOp *> used, unused;
  for (const UOp *r : red->src().subspan(1)) (mayUse(val, r) ? used : unused).push_back(r);
  if (!unused.empty() && (op == Op::ADD || op == Op::MAX)) {
    std::vector<const UOp *> srcs{val};
    srcs.insert(srcs.end(), used.begin(), used.end());
    V rest = used.empty() ? s.wrap(val) : s.wrap(c.make(Op::REDUCE, red->dtype, srcs, a));
    if (op == Op::ADD)
      for (const UOp *r : unused) rest = rest * s.wrap(r->src(0)).cast(red->dtype);
    return rest;
  }
  if (op != Op::ADD || red->nsrc != 2) return nullptr;
  const UOp *r = red->src(1), *cond = nullptr, *t = nullptr, *f = nullptr;
  if (val->op == Op::WHERE && !holdsInvalid(val)) {
    cond = val->src(0), t = val->src(1), f = val->src(2);
  } else if (val->op == Op::LOAD && val->nsrc == 2 && val->src(0)->op == Op::INDEX && val->src(0)->nsrc >= 2 &&
             val->src(0)->src(1)->op == Op::WHERE && isInvalidConst(val->src(0)->src(1)->src(2))) {
    // a read under a condition (the where moved onto the load): c ? x[i] : z
    const UOp *index = val->src(0), *gated = index->src(1);
    std::vector<const UOp *> srcs(index->src().begin(), index->src().end());
    srcs[1] = gated->src(1);
    cond = gated->src(0), t = c.withSrc(index, srcs), f = val->src(1);
    if (holdsInvalid(t) || holdsInvalid(f) || holdsInvalid(cond)) return nullptr;
  } else {
    return nullptr;
  }
  while (cond->op == Op::CMPNE && cond->src(0)->dtype == DType::Bool && intConst(cond->src(1)) == 1) {
    cond = cond->src(0); // !x ? t : f  ==  x ? f : t
    std::swap(t, f);
  }
  V n = s.wrap(r->src(0));

  // counting: (cond ? x : 0) or (cond ? 0 : x), x not using r
  bool positive = isZero(f) && !mayUse(t, r), negative = isZero(t) && !mayUse(f, r);
  if (positive || negative) {
    if (auto b = boundsOf(s, cond, r, false)) {
      V hi = b->upper ? (b->upper->lt(n)).where(*b->upper, n) : n;
      V lo = b->lower ? b->lower->max(s.wrap(r).k(0)) : s.wrap(r).k(0);
      V count = (hi - lo).max(s.wrap(r).k(0));
      if (negative) count = n - count;
      return s.wrap(positive ? t : f) * count.cast(red->dtype);
    }
  }

  // gathering: (idx != r ? 0 : expr) or (idx == r ? expr : 0), idx not using r. A side of the comparison
  // may be r' + e, r' being r or r cast to a wider-or-equal integer (exact), e not using r: then the
  // index is the other side minus e (modular arithmetic keeps the equivalence).
  const UOp *idx = nullptr, *expr = nullptr;
  auto other = [&](const UOp *x, const UOp *y) -> const UOp * {
    if (mayUse(y, r)) std::swap(x, y);
    if (mayUse(y, r) || !isInt(x->dtype) || x->dtype != y->dtype) return nullptr;
    std::vector<const UOp *> rest;
    bool found = false;
    for (const UOp *t : x->op == Op::ADD ? splitUOp(x, Op::ADD) : std::vector<const UOp *>{x}) {
      bool isR = t == r || (t->op == Op::CAST && t->src(0) == r && isInt(t->dtype) && s.noWrap(t));
      if (isR && !found) found = true;
      else if (mayUse(t, r)) return nullptr;
      else rest.push_back(t);
    }
    if (!found) return nullptr;
    return rest.empty() ? y : (s.wrap(y) - s.wrap(usum(c, rest))).u;
  };
  if (cond->op == Op::CMPNE && isZero(t)) {
    idx = other(cond->src(0), cond->src(1));
    expr = f;
  } else if (cond->op == Op::CMPEQ && isZero(f)) {
    idx = other(cond->src(0), cond->src(1));
    expr = t;
  }
  if (!idx || !isInt(idx->dtype)) return nullptr;
  V i = s.wrap(idx).cast(r->dtype);
  V inRange = i.lt(s.wrap(r).k(0)).lnot() & i.lt(n);
  // r becomes idx gated by the range (tinygrad's idx.valid(v)): the loads in expr get a gated index, whose
  // gate the emitters know implies their bounds
  V at = s.wrap(replaceNodes(c, expr, {{r, i.valid(inRange)}}));
  return inRange.where(at, s.wrap(expr).k(0));
}

} // namespace

const RuleSet &reduceCollapseRules() {
  static const RuleSet rules{
      srule(pat(Op::REDUCE), collapseReduce), // closed forms: unparented ranges, counting, gathering
  };
  return rules;
}

} // namespace uopc::sym
