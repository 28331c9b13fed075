//===- Valid.cpp - simplifying under a valid mask (padded loads) ----------===//
// tinygrad's simplify_valid / uop_given_valid: the clauses of a valid mask (X < c, c < X, !(X < c))
// bound expressions X; an expression gated by the mask is simplified with each X replaced by a fresh
// variable of the narrower range, then X is put back. The clauses of an AND are simplified under the
// clauses before them the same way.
#include "Passes/Symbolic/Internal.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace uopc::sym {
namespace {

/// A clause read as a bound on X: X <= c (upper) or X >= c.
struct Clause {
  const UOp *expr;
  bool upper;
  Bound c;
};

/// tinygrad's parse_valid.
std::optional<Clause> parseValid(RangeInfo &R, const UOp *v) {
  if (v->op == Op::CMPNE && v->nsrc == 2 && intConst(v->src(1)) == std::optional<int64_t>(1) &&
      v->src(0)->op == Op::CMPLT && isInt(v->src(0)->src(0)->dtype)) // !(X < c) -> X >= c
    return Clause{v->src(0)->src(0), false, R.vmin(v->src(0)->src(1))};
  if (v->op == Op::CMPLT && isInt(v->src(0)->dtype)) {
    if (auto c = intConst(v->src(0))) return Clause{v->src(1), false, Bound(*c) + 1}; // c < X -> X >= c+1
    return Clause{v->src(0), true, R.vmax(v->src(1)) - 1};                            // X < c -> X <= c-1
  }
  return std::nullopt;
}

int64_t clamp64(Bound v) { return v < Bound(INT64_MIN) ? INT64_MIN : v > Bound(INT64_MAX) ? INT64_MAX : int64_t(v); }

const UOp *fakeVar(Context &ctx, size_t i, Bound lo, Bound hi, DType dt) {
  return makeVariable(ctx, "fake" + std::to_string(i), clamp64(lo), clamp64(hi), dt);
}

bool isIrreducible(const UOp *u) {
  return u->op == Op::CONST || u->op == Op::SPECIAL || u->op == Op::RANGE || u->op == Op::PARAM || u->op == Op::GETADDR;
}

/// u with X replaced by newX, simplified, X put back, simplified again.
const UOp *throughVariable(SymbolicCtx &sc, Context &ctx, const UOp *u, const UOp *x, const UOp *nx) {
  const UOp *s = simplify(ctx, replaceNodes(ctx, u, {{x, nx}}), &sc);
  return simplify(ctx, replaceNodes(ctx, s, {{nx, x}}), &sc);
}

/// tinygrad's _valid_priority: clauses whose X appears in other clauses come first.
int validPriority(RangeInfo &R, const UOp *v, const std::vector<const UOp *> &valids) {
  auto p = parseValid(R, v);
  if (!p) return 0;
  int n = 0;
  for (const UOp *o : valids)
    if (reaches(o, p->expr, 4096)) --n;
  return n;
}

/// tinygrad's simplify_valid: each clause of an AND (sorted by tinygrad's priority, duplicates dropped)
/// simplified under the clauses before it.
V simplifyValid(S &s) {
  V valid = s["valid"];
  if (mayContain(valid, Op::INDEX, 4096)) return nullptr; // index gates only
  std::vector<const UOp *> valids = splitUOp(valid, Op::AND);
  std::vector<std::pair<int, const UOp *>> keyed;
  for (const UOp *v : valids) keyed.push_back({validPriority(s.sym.ranges, v, valids), v});
  std::stable_sort(keyed.begin(), keyed.end(), [](auto &a, auto &b) { return a.first < b.first; });
  std::vector<const UOp *> sorted, ret;
  for (auto &[p, v] : keyed)
    if (std::find(sorted.begin(), sorted.end(), v) == sorted.end()) sorted.push_back(v);
  for (const UOp *stmt : sorted) {
    if (!ret.empty()) stmt = uopGivenValid(s.sym, s.ctx(), uprod(s.ctx(), ret), stmt);
    ret.push_back(stmt);
  }
  // Unlike tinygrad, a result must be strictly smaller: a reordering alone, or a clause rewritten under
  // clauses that a nested AND of the result does not have, could be undone when the rewriter simplifies
  // that nested AND, and the two would alternate forever.
  const UOp *r = uprod(s.ctx(), ret);
  return localToposort(r).size() < localToposort(valid).size() ? s.wrap(r) : V();
}

/// cond.where(x, Invalid) with x simplified under cond (weakint x only).
V gatedGivenValid(S &s) {
  V x = s["x"];
  if (x.dt() != DType::WeakInt) return nullptr;
  const UOp *nx = uopGivenValid(s.sym, s.ctx(), s["cond"], x, false);
  if (localToposort(nx).size() >= localToposort(x).size()) return nullptr; // strictly smaller only (see above)
  return s["cond"].where(s.wrap(nx), s["i"]);
}

/// !(c1 & ... & cn) | ... | (d1 & ... & dm) with every d among the c: the second term holds whenever the
/// first does not, so the OR is true. This is the validity reduce-identity leaves when a zero-filled pad's
/// mask (the c) is split into its reduced and kept clauses (the d): padred_plus_one_sum's store is then
/// unconditional and the schedule can prove it covers its buffer.
V orOfImplied(S &s) {
  std::vector<const UOp *> terms = splitUOp(s["o"], Op::OR);
  for (const UOp *t : terms) {
    if (t->op != Op::CMPNE || t->nsrc != 2 || t->src(1)->op != Op::CONST || t->src(1)->dtype != DType::Bool ||
        !t->src(1)->arg || t->src(1)->arg->kind != ArgKind::Bool || !t->src(1)->arg->b())
      continue;
    std::vector<const UOp *> cs = splitUOp(t->src(0), Op::AND);
    for (const UOp *q : terms) {
      if (q == t) continue;
      std::vector<const UOp *> ds = splitUOp(q, Op::AND);
      if (std::all_of(ds.begin(), ds.end(), [&](const UOp *d) { return std::find(cs.begin(), cs.end(), d) != cs.end(); }))
        return s.wrap(s.ctx().constBool(true));
    }
  }
  return nullptr;
}

} // namespace

const UOp *uopGivenValid(SymbolicCtx &sc, Context &ctx, const UOp *valid, const UOp *u, bool trySimplex) {
  RangeInfo &R = sc.ranges;
  // the clauses as bounds per expression, in order of first appearance
  std::vector<std::pair<const UOp *, std::pair<std::optional<Bound>, std::optional<Bound>>>> bounds;
  for (const UOp *stmt : splitUOp(valid, Op::AND)) {
    auto p = parseValid(R, stmt);
    if (!p) continue;
    auto it = std::find_if(bounds.begin(), bounds.end(), [&](auto &b) { return b.first == p->expr; });
    if (it == bounds.end()) it = bounds.insert(bounds.end(), {p->expr, {}});
    (p->upper ? it->second.second : it->second.first) = p->c;
  }
  std::unordered_map<const UOp *, const UOp *> all, back;
  for (size_t i = 0; i < bounds.size(); ++i) {
    const UOp *expr = bounds[i].first;
    Bound v0 = bounds[i].second.first.value_or(R.vmin(expr)), v1 = bounds[i].second.second.value_or(R.vmax(expr));
    const UOp *nx = fakeVar(ctx, i, v0, v1, expr->dtype);
    all[expr] = nx, back[nx] = expr;
    if (!trySimplex) continue;
    // every candidate is a set of constrained nodes; if every one simplifies u to the same result, take it
    std::vector<std::vector<std::pair<const UOp *, const UOp *>>> candidates{{{expr, nx}}};
    if (expr->op == Op::ADD && v0 == 1) { // a simplex X0 + X1 + ... >= 1: try each Xi >= 1
      std::vector<const UOp *> xs = splitUOp(expr, Op::ADD);
      if (std::all_of(xs.begin(), xs.end(), isIrreducible)) {
        candidates.emplace_back();
        for (const UOp *xi : xs) candidates.back().push_back({xi, fakeVar(ctx, i, 1, R.vmax(xi), xi->dtype)});
      }
    }
    for (auto &cand : candidates) {
      auto absent = [&](auto &p) { return !reaches(u, p.first, size_t(1) << 20); };
      if (std::any_of(cand.begin(), cand.end(), absent)) continue;
      std::vector<const UOp *> outs;
      for (auto &[x, nv] : cand) outs.push_back(throughVariable(sc, ctx, u, x, nv));
      if (std::all_of(outs.begin(), outs.end(), [&](const UOp *o) { return o == outs[0]; })) {
        u = outs[0];
      } else if (u->op == Op::STACK && u->nsrc == 2) {
        std::vector<const UOp *> src(u->src().begin(), u->src().end());
        for (size_t k = 0; k < 2; ++k)
          if (std::all_of(outs.begin(), outs.end(), [&](const UOp *o) {
                return o->op == Op::STACK && o->nsrc == 2 && o->src(k) == outs[0]->src(k);
              }))
            src[k] = outs[0]->src(k);
        u = ctx.withSrc(u, src);
      }
    }
  }
  // all the clauses together (whole expressions only)
  const UOp *su = replaceNodes(ctx, u, all);
  if (su != u) u = simplify(ctx, replaceNodes(ctx, simplify(ctx, su, &sc), back), &sc);
  return u;
}

} // namespace uopc::sym

namespace uopc {
namespace {

/// u * scale as terms (node -> coefficient) plus a constant, through ADD and multiplication by a constant;
/// false where a coefficient or the constant leaves int64 or the sum is deeper than a few hundred nodes.
bool linearTerms(const UOp *u, Bound scale, std::map<const UOp *, Bound> &terms, Bound &constant) {
  std::vector<std::pair<const UOp *, Bound>> work{{u, scale}};
  for (size_t steps = 0; !work.empty(); ++steps) {
    if (steps > 512) return false;
    auto [x, k] = work.back();
    work.pop_back();
    if (!fitsInt64(k)) return false;
    if (auto c = constBound(x)) {
      constant = boundAdd(constant, boundMul(k, *c));
      if (!fitsInt64(constant)) return false;
    } else if (x->op == Op::ADD && x->nsrc == 2) {
      work.push_back({x->src(0), k});
      work.push_back({x->src(1), k});
    } else if (x->op == Op::MUL && x->nsrc == 2 && (constBound(x->src(0)) || constBound(x->src(1)))) {
      bool left = constBound(x->src(0)).has_value();
      work.push_back({x->src(left ? 1 : 0), boundMul(k, *constBound(x->src(left ? 0 : 1)))});
    } else if (x->op == Op::CAST && isInt(x->dtype) && isInt(x->src(0)->dtype) &&
               dtypeRange(x->src(0)->dtype).lo >= dtypeRange(x->dtype).lo &&
               dtypeRange(x->src(0)->dtype).hi <= dtypeRange(x->dtype).hi) {
      work.push_back({x->src(0), k}); // a widening cast keeps the value
    } else {
      Bound &t = terms[x];
      t = boundAdd(t, k);
      if (!fitsInt64(t)) return false;
      if (t == 0) terms.erase(x);
    }
  }
  return true;
}

} // namespace

VRange indexRangeGivenGates(SymbolicCtx &sc, Context &ctx, const UOp *ix, std::span<const UOp *const> gates) {
  std::vector<const UOp *> conds(gates.begin(), gates.end());
  while (ix->op == Op::WHERE && isInvalidConst(ix->src(2))) {
    conds.push_back(ix->src(0));
    ix = ix->src(1);
  }
  RangeInfo &R = sc.ranges;
  std::vector<std::pair<const UOp *, std::pair<Bound, Bound>>> bounds;
  for (const UOp *cond : conds)
    for (const UOp *stmt : sym::splitUOp(cond, Op::AND)) {
      auto p = sym::parseValid(R, stmt);
      if (!p || !isInt(p->expr->dtype)) continue;
      auto it = std::find_if(bounds.begin(), bounds.end(), [&](auto &b) { return b.first == p->expr; });
      if (it == bounds.end()) it = bounds.insert(bounds.end(), {p->expr, {R.vmin(p->expr), R.vmax(p->expr)}});
      if (p->upper) it->second.second = std::min(it->second.second, p->c);
      else it->second.first = std::max(it->second.first, p->c);
    }
  std::unordered_map<const UOp *, const UOp *> narrowed;
  for (size_t i = 0; i < bounds.size(); ++i) {
    auto [lo, hi] = bounds[i].second;
    if (lo > hi) return {0, 0}; // the gates never all hold: no access happens
    narrowed[bounds[i].first] = sym::fakeVar(ctx, i, lo, hi, bounds[i].first->dtype);
  }
  VRange plain = R.range(ix); // by value: computing another range may grow the table
  if (narrowed.empty()) return plain;
  VRange given = R.range(sym::replaceNodes(ctx, ix, narrowed));
  VRange out{std::max(plain.lo, given.lo), std::min(plain.hi, given.hi)};
  // A gated expression need not be a node of the index: the simplifier distributes (r + r4) * 12 into
  // r * 12 + r4 * 12. Read both as sums of terms with constant coefficients; a gated sum whose terms the index
  // holds k times each stands for k times its bounded value (a convolution's row gate 0 < r + r4, with its
  // column gate, proves the padded read in bounds).
  std::map<const UOp *, Bound> terms;
  Bound rest = 0;
  if (!linearTerms(ix, 1, terms, rest)) return out;
  Bound lo = rest, hi = rest;
  for (auto &[expr, b] : bounds) {
    std::map<const UOp *, Bound> xt;
    Bound xc = 0;
    if (!linearTerms(expr, 1, xt, xc) || xt.empty()) continue;
    auto first = terms.find(xt.begin()->first);
    if (first == terms.end() || first->second % xt.begin()->second != 0) continue;
    Bound k = first->second / xt.begin()->second;
    bool all = true;
    for (auto &[t, a] : xt) {
      auto it = terms.find(t);
      all = all && it != terms.end() && it->second == k * a;
    }
    if (!all) continue;
    for (auto &[t, a] : xt) terms.erase(t);
    Bound l = boundMul(k, boundAdd(b.first, -xc)), h = boundMul(k, boundAdd(b.second, -xc));
    if (k < 0) std::swap(l, h);
    lo = boundAdd(lo, l), hi = boundAdd(hi, h);
  }
  for (auto &[t, a] : terms) {
    VRange tr = R.range(t);
    Bound l = boundMul(a, tr.lo), h = boundMul(a, tr.hi);
    if (a < 0) std::swap(l, h);
    lo = boundAdd(lo, l), hi = boundAdd(hi, h);
  }
  return {std::max(out.lo, lo), std::min(out.hi, hi)};
}

} // namespace uopc

namespace uopc::sym {

const RuleSet &simplifyValidRulesImpl() {
  static const RuleSet rules{
      srule(pat(Op::AND).dtype(DType::Bool).named("valid"), simplifyValid), // a&b&c: each clause under the others
      srule(where(var("cond"), var("x"), invalidPat("i")), gatedGivenValid),            // c?x:I -> c?(x given c):I
      srule(pat(Op::OR).dtype(DType::Bool).named("o"), orOfImplied), // !(a&b) | b -> true
  };
  return rules;
}

} // namespace uopc::sym
