// Differential test of the REDUCE closed forms (lib/Passes/Symbolic/Reduce.cpp): random kernel-level sums
// REDUCE(ADD, where(cond(r, v), x, 0) or its mirror, or a one-hot where(idx != r, 0, expr(r)), r) over a
// RANGE r of 0..7 elements and a variable v, simplified with symRules, then evaluated at every value of v
// (and of a second variable w), original against simplified. The conditions are the forms the rules read
// (r + e < c, c < r + e, their negations, ANDs of two) and forms they must leave alone (r * 2 < c, a
// condition on r in the value too); the test also counts how many sums were collapsed, so a rule that
// stops firing fails it.
#include "IR/Error.h"
#include "IR/Records.h"
#include "Passes/Symbolic/Symbolic.h"

#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <unordered_map>

using namespace uopc;

namespace {

struct Builder {
  Context c;
  const UOp *wi(int64_t v) { return c.constInt(DType::WeakInt, v); }
  const UOp *i32(int64_t v) { return c.constInt(DType::Int32, v); }
  const UOp *var(const char *name, int64_t lo, int64_t hi) {
    ParamArg p;
    p.slot = -1;
    p.dtype = DType::WeakInt;
    p.vminVmax = {lo, hi};
    p.name = name;
    return c.make(Op::PARAM, DType::WeakInt, {c.make(Op::STACK, DType::Void)}, p.encode(c));
  }
  const UOp *range(int64_t n, int64_t id) {
    return c.make(Op::RANGE, DType::WeakInt, {wi(n)}, c.argTuple({c.argInt(id), c.argAxisType(AxisType::REDUCE)}));
  }
  const UOp *op(Op o, const UOp *a, const UOp *b) {
    return c.make(o, isComparison(o) ? DType::Bool : a->dtype, {a, b});
  }
  const UOp *notB(const UOp *a) { return c.make(Op::CMPNE, DType::Bool, {a, c.constBool(true)}); }
  const UOp *where(const UOp *cnd, const UOp *t, const UOp *f) { return c.make(Op::WHERE, t->dtype, {cnd, t, f}); }
  const UOp *sum(const UOp *x, const UOp *r) {
    return c.make(Op::REDUCE, x->dtype, {x, r}, c.argTuple({c.argOp(Op::ADD)}));
  }
};

/// Integer evaluation of the ops these expressions use (every value fits int64 here).
struct Eval {
  std::unordered_map<const UOp *, int64_t> env;
  int64_t operator()(const UOp *u) {
    if (!u) FAIL("null node");
    if (auto it = env.find(u); it != env.end()) return it->second;
    switch (u->op) {
    case Op::CONST:
      if (!u->arg) FAIL("a CONST without a value");
      if (u->arg->kind == ArgKind::Bool) return u->arg->b();
      if (u->arg->kind != ArgKind::Int) FAIL("a CONST of arg kind " << int(u->arg->kind) << " dtype " << dtypeName(u->dtype));
      return u->arg->i();
    case Op::CAST: {
      int64_t x = (*this)(u->src(0));
      return u->dtype == DType::Int32 ? int64_t(int32_t(x)) : u->dtype == DType::Bool ? x != 0 : x;
    }
    case Op::ADD: return wrap(u, (*this)(u->src(0)) + (*this)(u->src(1)));
    case Op::SUB: return wrap(u, (*this)(u->src(0)) - (*this)(u->src(1)));
    case Op::MUL: return wrap(u, (*this)(u->src(0)) * (*this)(u->src(1)));
    case Op::NEG: return wrap(u, -(*this)(u->src(0)));
    case Op::MAX: return std::max((*this)(u->src(0)), (*this)(u->src(1)));
    case Op::CMPLT: return (*this)(u->src(0)) < (*this)(u->src(1));
    case Op::CMPNE: return (*this)(u->src(0)) != (*this)(u->src(1));
    case Op::CMPEQ: return (*this)(u->src(0)) == (*this)(u->src(1));
    case Op::AND: return (*this)(u->src(0)) & (*this)(u->src(1));
    case Op::OR: return (*this)(u->src(0)) | (*this)(u->src(1));
    case Op::XOR: return (*this)(u->src(0)) ^ (*this)(u->src(1));
    case Op::WHERE: return (*this)(u->src(0)) ? (*this)(u->src(1)) : (*this)(u->src(2));
    case Op::FLOORDIV: case Op::FLOORMOD: {
      int64_t a = (*this)(u->src(0)), b = (*this)(u->src(1));
      if (b == 0) return u->op == Op::FLOORDIV ? 0 : a;
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return u->op == Op::FLOORDIV ? q : a - q * b;
    }
    case Op::REDUCE: {
      const UOp *r = u->src(1);
      if (r->op != Op::RANGE) FAIL("a REDUCE over " << opName(r->op));
      int64_t n = (*this)(r->src(0)), acc = 0;
      for (int64_t i = 0; i < n; ++i) {
        Eval inner{env};
        inner.env[r] = i;
        acc = wrap(u, acc + inner(u->src(0)));
      }
      return acc;
    }
    default: FAIL("unexpected op " << opName(u->op)); return 0;
    }
  }
  static int64_t wrap(const UOp *u, int64_t v) { return u->dtype == DType::Int32 ? int64_t(int32_t(v)) : v; }
};

} // namespace

TEST_CASE("REDUCE closed forms keep the sum's value", "[symbolic][reduce]") {
  std::mt19937_64 rng(20261130);
  auto pick = [&](int n) { return int(rng() % uint64_t(n)); };
  int collapsed = 0, kept = 0, cases = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Builder b;
    const UOp *v = b.var("v", -3, 9), *w = b.var("w", -2, 6);
    int64_t n = pick(8);
    const UOp *r = b.range(n, 0);
    auto term = [&]() -> const UOp * { // something not using r
      switch (pick(4)) {
      case 0: return b.wi(pick(11) - 3);
      case 1: return v;
      case 2: return b.op(Op::ADD, v, b.wi(pick(5) - 2));
      default: return b.op(Op::ADD, w, v);
      }
    };
    std::function<const UOp *(int)> cond = [&](int depth) -> const UOp * {
      int k = pick(depth ? 6 : 4);
      const UOp *lhs = pick(2) ? b.op(Op::ADD, r, term()) : r;
      switch (k) {
      case 0: return b.op(Op::CMPLT, lhs, term());                       // r + e < c
      case 1: return b.op(Op::CMPLT, term(), lhs);                       // c < r + e
      case 2: return b.op(Op::CMPLT, b.op(Op::MUL, r, b.wi(2)), term()); // not read: left alone
      case 3: return b.notB(b.op(Op::CMPLT, lhs, term()));               // !(r + e < c)
      case 4: return b.op(Op::AND, cond(depth - 1), cond(depth - 1));
      default: return b.notB(cond(depth - 1));
      }
    };
    const UOp *e;
    bool i32 = pick(2);
    auto val = [&]() -> const UOp * {
      const UOp *x = pick(3) ? term() : b.op(Op::ADD, r, b.wi(1)); // r in the value: not a count
      return i32 ? b.c.make(Op::CAST, DType::Int32, {x}, b.c.argDType(DType::Int32)) : x;
    };
    const UOp *zero = i32 ? b.i32(0) : b.wi(0);
    switch (pick(4)) {
    case 0: e = b.where(cond(1), val(), zero); break;
    case 1: e = b.where(cond(1), zero, val()); break;
    case 2: { // one-hot: (idx != r + e ? 0 : expr(r))
      const UOp *idx = term(), *side = pick(2) ? r : b.op(Op::ADD, r, b.wi(pick(3) - 1));
      const UOp *expr = pick(2) ? b.op(Op::MUL, b.op(Op::ADD, r, v), b.wi(3)) : b.op(Op::ADD, r, w);
      if (i32) expr = b.c.make(Op::CAST, DType::Int32, {expr}, b.c.argDType(DType::Int32));
      e = pick(2) ? b.where(b.op(Op::CMPNE, idx, side), zero, expr) : b.where(b.op(Op::CMPEQ, side, idx), expr, zero);
      break;
    }
    default: e = b.where(cond(0), val(), zero); break;
    }
    const UOp *red = b.sum(e, r);
    const UOp *simple = simplifyWith(b.c, red, symRules());
    bool gone = true;
    for (const UOp *x : toposort(simple)) gone &= x->op != Op::REDUCE;
    (gone ? collapsed : kept) += 1;
    for (int64_t vv = -3; vv <= 9; ++vv)
      for (int64_t ww = -2; ww <= 6; ww += 2) {
        Eval ev;
        ev.env[v] = vv;
        ev.env[w] = ww;
        Eval ev2 = ev;
        int64_t want = ev(red), got = ev2(simple);
        ++cases;
        if (want != got) FAIL("v=" << vv << " w=" << ww << " n=" << n << ": sum " << want << ", closed form " << got);
      }
  }
  INFO("collapsed " << collapsed << ", kept " << kept << ", evaluations " << cases);
  CHECK(collapsed > 1000);
  CHECK(kept > 100);
}
