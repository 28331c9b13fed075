// indexRangeGivenGates (lib/Passes/Symbolic/Valid.cpp) lets the emitters drop the bounds check of a read
// whose gates imply it, so it must be sound: for random index expressions over two RANGEs and random gates
// (comparisons of a range, of a sum of ranges, of a variable, their negations and ANDs, as WHERE(c, i,
// Invalid) wrappers or INDEX gate sources), every value the index takes where all gates hold must lie in
// the returned range. Also counts how often the gates narrowed the range, so the test fails if they stop
// being used.
#include "IR/Records.h"
#include "Passes/Symbolic/Symbolic.h"

#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <unordered_map>

using namespace uopc;

namespace {

int64_t evalInt(const UOp *u, const std::unordered_map<const UOp *, int64_t> &env) {
  if (auto it = env.find(u); it != env.end()) return it->second;
  auto e = [&](size_t i) { return evalInt(u->src(i), env); };
  switch (u->op) {
  case Op::CONST: return u->arg->kind == ArgKind::Bool ? u->arg->b() : u->arg->i();
  case Op::ADD: return e(0) + e(1);
  case Op::MUL: return e(0) * e(1);
  case Op::CMPLT: return e(0) < e(1);
  case Op::CMPNE: return e(0) != e(1);
  case Op::AND: return e(0) & e(1);
  case Op::WHERE: return e(0) ? e(1) : e(2);
  default: FAIL("unexpected op " << opName(u->op)); return 0;
  }
}

} // namespace

TEST_CASE("indexRangeGivenGates is sound", "[symbolic][valid]") {
  std::mt19937_64 rng(1130);
  auto pick = [&](int n) { return int64_t(rng() % uint64_t(n)); };
  int narrowed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    Context c;
    SymbolicCtx sc;
    auto wi = [&](int64_t v) { return c.constInt(DType::WeakInt, v); };
    auto range = [&](int64_t n, int64_t id) {
      return c.make(Op::RANGE, DType::WeakInt, {wi(n)}, c.argTuple({c.argInt(id), c.argAxisType(AxisType::LOOP)}));
    };
    ParamArg pa;
    pa.slot = -1;
    pa.dtype = DType::WeakInt;
    pa.vminVmax = {-2, 6};
    pa.name = "v";
    const UOp *v = c.make(Op::PARAM, DType::WeakInt, {c.make(Op::STACK, DType::Void)}, pa.encode(c));
    int64_t n0 = 1 + pick(7), n1 = 1 + pick(7);
    const UOp *r0 = range(n0, 0), *r1 = range(n1, 1);
    auto op = [&](Op o, const UOp *a, const UOp *b) {
      return c.make(o, isComparison(o) ? DType::Bool : a->dtype, {a, b});
    };
    auto atom = [&]() -> const UOp * {
      switch (pick(5)) {
      case 0: return r0;
      case 1: return r1;
      case 2: return v;
      case 3: return op(Op::ADD, r0, r1);
      default: return op(Op::ADD, r0, wi(pick(5) - 2));
      }
    };
    std::function<const UOp *(int)> gate = [&](int d) -> const UOp * {
      switch (pick(d ? 5 : 3)) {
      case 0: return op(Op::CMPLT, atom(), wi(pick(9) - 2));
      case 1: return op(Op::CMPLT, wi(pick(9) - 2), atom());
      case 2: return op(Op::CMPNE, op(Op::CMPLT, atom(), wi(pick(9) - 2)), c.constBool(true));
      default: return op(Op::AND, gate(d - 1), gate(d - 1));
      }
    };
    const UOp *idx = op(Op::ADD, op(Op::MUL, atom(), wi(pick(4) + 1)), op(Op::ADD, atom(), wi(pick(7) - 3)));
    std::vector<const UOp *> gates;
    const UOp *ix = idx;
    if (pick(2)) ix = c.make(Op::WHERE, DType::WeakInt, {gate(1), ix, makeInvalid(c, DType::WeakInt)});
    if (pick(2)) gates.push_back(gate(1));
    VRange given = indexRangeGivenGates(sc, c, ix, gates);
    VRange plain = sc.ranges.range(idx);
    narrowed += given.lo > plain.lo || given.hi < plain.hi;
    std::vector<const UOp *> conds(gates);
    for (const UOp *w = ix; w->op == Op::WHERE; w = w->src(1)) conds.push_back(w->src(0));
    for (int64_t a = 0; a < n0; ++a)
      for (int64_t b = 0; b < n1; ++b)
        for (int64_t vv = -2; vv <= 6; ++vv) {
          std::unordered_map<const UOp *, int64_t> env{{r0, a}, {r1, b}, {v, vv}};
          bool all = true;
          for (const UOp *g : conds) all = all && evalInt(g, env);
          if (!all) continue;
          int64_t x = evalInt(idx, env);
          if (Bound(x) < given.lo || Bound(x) > given.hi)
            FAIL("index " << x << " outside [" << int64_t(given.lo) << ", " << int64_t(given.hi) << "] at r0=" << a
                          << " r1=" << b << " v=" << vv);
        }
  }
  INFO("narrowed " << narrowed << " of 4000");
  CHECK(narrowed > 500);
}
