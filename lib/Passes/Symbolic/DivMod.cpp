//===- DivMod.cpp - floor division and modulo of index expressions --------===//
// tinygrad's uop/divandmod.py (fold_divmod_general and its inline rules) and fold_add_divmod_recombine
// (x%c*m + (x//c)*c*m -> x*m). All of it is weakint-only: index math, exact and unbounded.
//
// The general folder tries, in order: a constant quotient (from the ranges); for a constant divisor
// c > 0: nested div/mod, congruence (the sum is congruent to a remainder whose range lies in one period),
// gcd with remainder, nesting by a factor; then for any divisor: dividing out a common gcd and
// factoring the remainder (d*x+y)//d -> x + y//d. Rules that divide by a symbolic value require its range
// to exclude 0.
#include "Passes/Symbolic/Internal.h"

#include <algorithm>
#include <set>

namespace uopc::sym {
namespace {

const UOp kNoFoldSentinel{};
const UOp *const kNoFold = &kNoFoldSentinel;

/// A weakint CONST for a Bound, or null when it does not fit int64.
const UOp *kw(Context &ctx, Bound v) { return fitsInt64(v) ? mkConst(ctx, DType::WeakInt, int64_t(v)) : nullptr; }

class DivModFolder {
public:
  DivModFolder(SymbolicCtx &sc, Context &ctx) : sc_(sc), ctx_(ctx), R(sc.ranges) {}

  /// fold_divmod_general(d), memoized per node.
  const UOp *fold(const UOp *d) {
    if (const UOp *m = sc_.divmodMemo.get(d)) return m == kNoFold ? nullptr : m;
    const UOp *r = compute(d);
    sc_.divmodMemo[d] = r ? r : kNoFold;
    return r;
  }

private:
  V w(const UOp *u) { return {u, ctx_}; }
  V k(Bound v) { return w(kw(ctx_, v)); }
  V mul(const UOp *t, Bound c) { return w(t) * k(c); }

  const UOp *compute(const UOp *d);
  const UOp *constDenominator(const UOp *d, int64_t c);
  const UOp *fallback(const UOp *d);

  SymbolicCtx &sc_;
  Context &ctx_;
  RangeInfo &R;
};

const UOp *DivModFolder::compute(const UOp *d) {
  const bool isMod = d->op == Op::FLOORMOD;
  V x = w(d->src(0)), y = w(d->src(1));
  if (R.vmin(y) == 0 && R.vmax(y) == 0) return nullptr; // x//0 and x%0: left to the evaluator's definition
  // the quotient is a constant q: x//y -> q, x%y -> x - q*y
  const UOp *q = isMod ? (x / y).u : d;
  if (const VRange &qr = R.range(q); qr.isConst() && fitsInt64(qr.lo))
    return isMod ? (x - y * int64_t(qr.lo)).u : kw(ctx_, qr.lo);
  auto c = intConst(y);
  // PARAM // c is irreducible when c divides its multiple_of
  if (x->op == Op::PARAM && c && *c != 0) {
    const Arg *m = x->arg ? x->arg->field("multiple_of") : nullptr;
    if (m && m->kind == ArgKind::Int && m->i() % *c == 0) return isMod ? kw(ctx_, 0) : nullptr;
  }
  if (c && *c > 0)
    if (const UOp *r = constDenominator(d, *c)) return r;
  return fallback(d);
}

const UOp *DivModFolder::constDenominator(const UOp *d, int64_t c) {
  const bool isMod = d->op == Op::FLOORMOD;
  V x = w(d->src(0)), y = w(d->src(1));
  auto [peeled, cst] = popConst(x);
  std::vector<const UOp *> terms0 = splitUOp(peeled, Op::ADD);
  // nested_div: (x%(k*c))//c -> (x//c)%k, k > 0
  if (!isMod && x->op == Op::FLOORMOD)
    if (const UOp *kk = divides(ctx_, x->src(1), c); kk && R.vmin(kk) > 0) return ((x.src(0) / y) % w(kk)).u;
  // remove_nested_mod: (a%(k*c) + b)%c -> (a+b)%c
  if (isMod) {
    bool changed = false;
    std::vector<const UOp *> xs = terms0;
    for (const UOp *&u : xs)
      if (u->op == Op::FLOORMOD && divides(ctx_, u->src(1), c)) u = u->src(0), changed = true;
    if (changed) return ((w(usum(ctx_, xs)) + cst) % y).u;
  }
  // decompose every term into factor * term
  std::vector<int64_t> factors;
  std::vector<const UOp *> terms;
  for (const UOp *u : terms0) {
    int64_t f = constFactor(u);
    const UOp *t = f ? divides(ctx_, u, f) : nullptr;
    if (!t) return nullptr;
    factors.push_back(f), terms.push_back(t);
  }
  const size_t n = terms.size();
  // congruence: the sum is congruent to sum(r_i * t_i) + cst%c; fold when that lies within one period
  std::vector<std::vector<int64_t>> choices(n);
  size_t combos = 1;
  for (size_t i = 0; i < n; ++i) {
    int64_t r = floorMod(factors[i], c), r2 = r - c;
    if (Bound(r) * 2 == c || n == 1) choices[i] = {r, r2};
    else choices[i] = {(r <= -r2) ? r : r2}; // the smaller in magnitude (the first on a tie)
    combos *= choices[i].size();
  }
  if (combos <= 256) {
    std::vector<size_t> pick(n, 0);
    for (size_t combo = 0; combo < combos; ++combo) {
      for (size_t i = 0, v = combo; i < n; ++i) pick[i] = v % choices[i].size(), v /= choices[i].size();
      Bound lo = floorMod(cst, c), hi = lo;
      for (size_t i = 0; i < n; ++i) {
        Bound r = choices[i][pick[i]], a = boundMul(r, R.vmin(terms[i])), b = boundMul(r, R.vmax(terms[i]));
        lo = boundAdd(lo, std::min(a, b)), hi = boundAdd(hi, std::max(a, b));
      }
      Bound base = boundFloorDiv(lo, c);
      if (base != boundFloorDiv(hi, c) || lo <= -kBoundInf || hi >= kBoundInf) continue;
      std::vector<const UOp *> parts;
      for (size_t i = 0; i < n; ++i) {
        Bound r = choices[i][pick[i]];
        Bound coef = isMod ? r : (Bound(factors[i]) - r) / c;
        if (coef == 0) continue;
        if (!fitsInt64(coef)) return nullptr;
        parts.push_back(mul(terms[i], coef));
      }
      Bound rest = isMod ? Bound(floorMod(cst, c)) - base * c : Bound(floorDiv(cst, c)) + base;
      const UOp *kr = kw(ctx_, rest);
      if (!kr) return nullptr;
      parts.push_back(kr);
      return usum(ctx_, parts);
    }
  }
  // gcd_with_remainder: factor the common gcd g of the factors and c out of the numerator
  int64_t g = c;
  for (int64_t f : factors) g = gcd64(g, f);
  if (g > 1) {
    if (const UOp *dv = divides(ctx_, peeled, g)) {
      V nx = w(simplify(ctx_, dv, &sc_)) + floorMod(floorDiv(cst, g), c / g);
      if (R.vmin(nx) >= 0 && isMod) return ((nx % (c / g)) * g + floorMod(cst, g)).u;
      if (R.vmin(nx) >= 0) return (nx / (c / g) + floorDiv(cst, c)).u;
    }
  }
  // nest_by_factor: x//c -> (x//f)//(c//f), x%c -> ((x//f)%(c//f))*f + x%f for a factor f of c
  std::set<int64_t> divs;
  for (size_t i = 0; i < n; ++i) {
    int64_t f = factors[i] < 0 ? -factors[i] : factors[i];
    if (terms0[i]->op != Op::CONST && f > 1 && f < c && c % f == 0) divs.insert(f);
  }
  const UOp *best = nullptr;
  size_t bestSize = SIZE_MAX;
  for (int64_t div : divs) {
    const UOp *nxs = fold((x / div).u);
    if (!nxs) continue;
    const UOp *r = nullptr;
    if (!isMod) {
      r = (w(nxs) / (c / div)).u;
    } else if (R.vmin(x) >= 0 && R.vmin(nxs) >= 0) {
      std::vector<const UOp *> bParts;
      for (size_t i = 0; i < n; ++i)
        if (int64_t fm = floorMod(factors[i], div)) bParts.push_back(w(terms[i]) * fm);
      if (int64_t cm = floorMod(cst, div)) bParts.push_back(kw(ctx_, cm));
      V b = bParts.empty() ? k(0) : w(usum(ctx_, bParts));
      if (R.vmin(b) >= 0 && R.vmax(b) < div) r = ((w(nxs) % (c / div)) * div + b).u;
    }
    if (!r) continue;
    size_t size = localToposort(r).size();
    if (size < bestSize) best = r, bestSize = size;
  }
  return best;
}

const UOp *DivModFolder::fallback(const UOp *d) {
  const bool isMod = d->op == Op::FLOORMOD;
  V x = w(d->src(0)), y = w(d->src(1));
  if (R.vmin(y) <= 0 && R.vmax(y) >= 0) return nullptr; // both rules below divide by y: it must not be 0
  std::vector<const UOp *> all = splitUOp(x, Op::ADD);
  // divide_by_gcd: x//y -> (x/g)//(y/g), x%y -> ((x/g)%(y/g))*g
  std::vector<const UOp *> withY = all;
  withY.push_back(y);
  if (const UOp *g0 = gcdOf(ctx_, withY)) {
    V g = w(simplify(ctx_, g0, &sc_));
    if (intConst(g) != std::optional<int64_t>(1)) {
      const UOp *xd = divideExact(ctx_, x, g), *yd = divideExact(ctx_, y, g);
      if (xd && yd && R.vmin(g) != 0) {
        V ret = w(xd).alu(d->op, w(yd));
        return isMod ? (ret * g).u : ret.u;
      }
    }
  }
  // factor_remainder: (d*x+y)//d -> x + y//d
  if (R.vmin(y) < 0 || R.vmin(x) < 0) return nullptr;
  auto c = intConst(y);
  std::vector<const UOp *> quo, rem;
  for (const UOp *u : all) {
    if (const UOp *qq = divideExact(ctx_, u, y)) {
      quo.push_back(qq);
      continue;
    }
    int64_t f = c ? constFactor(u) : 0;
    if (c && f != 0 && floorMod(f, *c) != f) {
      const UOp *t = divides(ctx_, u, f);
      if (!t) return nullptr;
      rem.push_back(w(t) * floorMod(f, *c));
      quo.push_back(isMod ? kw(ctx_, 0) : (w(t) * floorDiv(f, *c)).u);
    } else {
      rem.push_back(u);
    }
  }
  if (quo.empty()) return nullptr;
  V nx = rem.empty() ? w(kw(ctx_, 0)) : w(usum(ctx_, rem));
  if (R.vmin(nx) < 0) return nullptr;
  return isMod ? (nx % y).u : (nx / y + w(usum(ctx_, quo))).u;
}

V foldDivMod(S &s) { return s.wrap(DivModFolder(s.sym, s.ctx()).fold(s.root())); }

/// (x//c + a)//d -> (x + a*c)//(c*d) for d > 0 (c != 0).
V nestedDivAdd(S &s) {
  auto c = intConst(s["c"]), a = intConst(s["a"]), d = intConst(s["d"]);
  if (!c || !a || !d || *d <= 0 || *c == 0) return nullptr;
  Bound ac = Bound(*a) * *c, cd = Bound(*c) * *d;
  if (!fitsInt64(ac) || !fitsInt64(cd)) return nullptr;
  return (s["x"] + int64_t(ac)) / int64_t(cd);
}

/// (x+c)//d -> (x + c%d)//d + c//d; (x+c)%d -> (x + c%d)%d (any d != 0).
V splitConstDivMod(S &s) {
  auto c = intConst(s["c"]), d = intConst(s["d"]);
  if (!c || !d || *d == 0 || floorMod(*c, *d) == *c) return nullptr;
  V inner = s["x"] + floorMod(*c, *d);
  return s.root().op() == Op::FLOORDIV ? inner / s["d"] + floorDiv(*c, *d) : inner % s["d"];
}

/// tinygrad's _quotient_base: the B with q == B//div and B%div == base%div, or null.
const UOp *quotientBase(Context &ctx, const UOp *qn, const UOp *base, int64_t div) {
  auto [q, sq] = popConst(qn);
  auto [num, a] = popConst(base);
  auto qd = q->op == Op::FLOORDIV ? intConst(q->src(1)) : std::nullopt;
  if (!qd) return nullptr;
  Bound A = a, D;
  auto nc = num->op == Op::FLOORDIV ? intConst(num->src(1)) : std::nullopt;
  if (div > 0 && nc && Bound(*qd) == Bound(*nc) * div) num = num->src(0), A = Bound(a) * *nc, D = Bound(*nc) * div;
  else if (*qd == div) D = div;
  else return nullptr;
  if (D == 0) return nullptr;
  auto [xx, xa] = popConst(num);
  auto [p, pa] = popConst(q->src(0));
  Bound t = Bound(xa) + A - pa;
  if (p != xx || t % D != 0) return nullptr;
  Bound kk = boundFloorDiv(t, D) - sq;
  if (kk == 0) return base;
  Bound kd = kk * div;
  if (!fitsInt64(kd)) return nullptr;
  return (V(base, ctx) - V(base, ctx).k(int64_t(kd))).u;
}

/// tinygrad's fold_add_divmod_recombine: (base%div)*mul + q*(div*mul) -> B*mul, or -> (B%(div*d))*mul.
V recombineDivMod(S &s) {
  std::vector<const UOp *> terms = splitUOp(s.root(), Op::ADD);
  for (size_t i = 0; i < terms.size(); ++i) {
    auto [mod, mul] = popConst(terms[i], Op::MUL);
    auto div = mod->op == Op::FLOORMOD ? intConst(mod->src(1)) : std::nullopt;
    if (!div) continue;
    const UOp *base = mod->src(0);
    for (size_t j = 0; j < terms.size(); ++j) {
      auto [q, scale] = popConst(terms[j], Op::MUL);
      if (i == j || Bound(scale) != Bound(*div) * mul) continue;
      std::vector<const UOp *> rest;
      for (size_t kk = 0; kk < terms.size(); ++kk)
        if (kk != i && kk != j) rest.push_back(terms[kk]);
      const UOp *b = quotientBase(s.ctx(), q, base, *div);
      V out;
      if (b) out = s.wrap(b) * mul;
      else if (auto dd = q->op == Op::FLOORMOD ? intConst(q->src(1)) : std::nullopt; dd && *dd > 0) {
        Bound wide = Bound(*div) * *dd;
        if (fitsInt64(wide) && (b = quotientBase(s.ctx(), q->src(0), base, *div)))
          out = (s.wrap(b) % int64_t(wide)) * mul;
      }
      if (!out.u) continue;
      rest.insert(rest.begin(), out);
      return s.wrap(usum(s.ctx(), rest));
    }
  }
  return nullptr;
}

} // namespace

const RuleSet &divModSimpleRules() {
  static const RuleSet rules{
      srule(pat(Op::ADD).dtype(DType::WeakInt), recombineDivMod),                       // (x%c)*m + (x//c)*c*m -> x*m
  };
  return rules;
}

const RuleSet &divModRules() {
  static const Pat divOrMod = pat({Op::FLOORDIV, Op::FLOORMOD});
  static const RuleSet rules{
      srule(floordiv(floordiv(weak("x"), cvar("c")) + cvar("a"), cvar("d")), nestedDivAdd), // (x//c+a)//d -> (x+ac)//cd
      srule(divOrMod.src(weak("x") + cvar("c"), cvar("d")), splitConstDivMod),          // (x+c)//d -> (x+c%d)//d + c//d
      srule(divOrMod.dtype(DType::WeakInt).src(var(), var()), foldDivMod),              // fold_divmod_general (above)
  };
  return rules;
}

} // namespace uopc::sym
