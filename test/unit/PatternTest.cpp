// Unit tests of the pattern DSL (lib/Passes/Pattern.h): matching, captures, commutativity, dispatch.
#include "IR/Error.h"
#include "Passes/Pattern.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace uopc;

namespace {

/// A named leaf: a PARAM whose arg is its name, so distinct names are distinct nodes.
const UOp *leaf(Context &c, const char *name, DType dt = DType::Int32) {
  return c.make(Op::PARAM, dt, {}, c.argString(name));
}
const UOp *bin(Context &c, Op op, const UOp *a, const UOp *b, DType dt = DType::Int32) {
  return c.make(op, dt, {a, b});
}

/// Runs a one-rule set on u: the captures it saw (by name, in `names` order), or empty on no match.
std::vector<const UOp *> captures(Context &c, const Pat &p, const UOp *u, std::vector<std::string> names) {
  std::vector<const UOp *> got;
  RuleSet rs{rule(p, [&](Match &m) {
    for (auto &n : names) got.push_back(m[n]);
    return m.ctx().constInt(DType::Int32, 12345); // any result other than the node itself
  })};
  if (!rs.rewrite(c, u)) got.clear();
  return got;
}
bool matches(Context &c, const Pat &p, const UOp *u) {
  RuleSet rs{rule(p, [](Match &m) { return m.ctx().constInt(DType::Int32, 12345); })};
  return rs.rewrite(c, u) != nullptr;
}

} // namespace

TEST_CASE("pattern: op, op sets and op groups", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a"), *b = leaf(c, "b");
  const UOp *add = bin(c, Op::ADD, a, b), *mul = bin(c, Op::MUL, a, b), *sub = bin(c, Op::SUB, a, b);
  const UOp *neg = c.make(Op::NEG, DType::Int32, {a});
  CHECK(matches(c, pat(Op::ADD), add));
  CHECK_FALSE(matches(c, pat(Op::ADD), mul));
  CHECK(matches(c, pat({Op::ADD, Op::MUL}), mul));
  CHECK_FALSE(matches(c, pat({Op::ADD, Op::MUL}), sub));
  CHECK(matches(c, pat(isBinary), sub));
  CHECK_FALSE(matches(c, pat(isBinary), neg));
  CHECK(matches(c, var(), neg));
}

TEST_CASE("pattern: dtype and dtype sets", "[pattern]") {
  Context c;
  const UOp *i = leaf(c, "i", DType::Int32), *f = leaf(c, "f", DType::Float32), *h = leaf(c, "h", DType::Float16);
  CHECK(matches(c, var("x", DType::Int32), i));
  CHECK_FALSE(matches(c, var("x", DType::Int32), f));
  CHECK(matches(c, var("x", {DType::Float32, DType::Float16}), h));
  CHECK_FALSE(matches(c, var("x", {DType::Float32, DType::Float16}), i));
  // an ALU pattern takes the dtype of its last source; comparisons are bool
  const UOp *fadd = bin(c, Op::ADD, f, f, DType::Float32);
  CHECK(matches(c, var("x") + var("y", DType::Float32), fadd));
  CHECK_FALSE(matches(c, var("x") + var("y", DType::Int32), fadd));
  CHECK(matches(c, var("x") < var("y"), bin(c, Op::CMPLT, i, i, DType::Bool)));
  CHECK_FALSE(matches(c, var("x") < var("y"), bin(c, Op::CMPLT, i, i, DType::Int32)));
}

TEST_CASE("pattern: source lists, prefixes and srcEach", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a"), *b = leaf(c, "b"), *k = c.constInt(DType::Int32, 7);
  const UOp *w = c.make(Op::WHERE, DType::Int32, {c.constBool(true), a, b});
  CHECK(matches(c, pat(Op::WHERE).src(cvar(), var(), var()), w));
  CHECK_FALSE(matches(c, pat(Op::WHERE).src(cvar(), var()), w)); // exact length
  CHECK(matches(c, pat(Op::WHERE).srcPrefix(cvar()), w));
  CHECK_FALSE(matches(c, pat(Op::WHERE).srcPrefix(var(), cvar()), w)); // second source is no CONST
  const UOp *sinkConsts = c.make(Op::SINK, DType::Void, {k, c.constInt(DType::Int32, 8)});
  const UOp *sinkMixed = c.make(Op::SINK, DType::Void, {k, a});
  const UOp *sinkEmpty = c.make(Op::SINK, DType::Void, {});
  CHECK(matches(c, pat(Op::SINK).srcEach(cvar()), sinkConsts));
  CHECK_FALSE(matches(c, pat(Op::SINK).srcEach(cvar()), sinkMixed));
  CHECK(matches(c, pat(Op::SINK).srcEach(cvar()), sinkEmpty));
  // a name inside srcEach binds one node for all sources
  const UOp *sinkSame = c.make(Op::SINK, DType::Void, {a, a, a});
  CHECK(matches(c, pat(Op::SINK).srcEach(var("x")), sinkSame));
  CHECK_FALSE(matches(c, pat(Op::SINK).srcEach(var("x")), c.make(Op::SINK, DType::Void, {a, b, a})));
  // a source pattern with alternatives that binds nothing only has to match somehow, for every source
  std::vector<const UOp *> many;
  for (int i = 0; i < 100000; ++i) many.push_back(i % 2 ? k : a);
  const UOp *big = c.make(Op::SINK, DType::Void, many);
  CHECK(matches(c, pat(Op::SINK).srcEach(anyOf({cvar(), pat(Op::PARAM)})), big));
  CHECK_FALSE(matches(c, pat(Op::SINK).srcEach(anyOf({cvar(), pat(Op::ADD)})), big));
}

TEST_CASE("pattern: args by pointer, predicate and value", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a");
  CHECK(matches(c, pat(Op::PARAM).arg(c.argString("a")), a));
  CHECK_FALSE(matches(c, pat(Op::PARAM).arg(c.argString("b")), a));
  CHECK_FALSE(matches(c, pat(Op::PARAM).arg(nullptr), a));
  CHECK(matches(c, pat(Op::SINK).arg(nullptr), c.make(Op::SINK, DType::Void, {})));
  auto isA = [](const Arg *x) { return x && x->kind == ArgKind::String && x->str() == "a"; };
  CHECK(matches(c, pat(Op::PARAM).argIf(isA), a));
  CHECK_FALSE(matches(c, pat(Op::PARAM).argIf(isA), leaf(c, "z")));
  // cst(0) is Python's `arg == 0`: int 0, float 0.0 and -0.0, False
  CHECK(matches(c, cst(0), c.constInt(DType::Int32, 0)));
  CHECK(matches(c, cst(0), c.constFloat(DType::Float32, 0.0)));
  CHECK(matches(c, cst(0), c.constFloat(DType::Float32, -0.0)));
  CHECK(matches(c, cst(0), c.constBool(false)));
  CHECK_FALSE(matches(c, cst(0), c.constInt(DType::Int32, 1)));
  CHECK_FALSE(matches(c, cst(0), a));
  CHECK(matches(c, cst(1.5), c.constFloat(DType::Float32, 1.5)));
  CHECK_FALSE(matches(c, cst(1.5), c.constInt(DType::Int32, 1)));
  CHECK(matches(c, cst(-3, DType::Int64), c.constInt(DType::Int64, -3)));
  CHECK_FALSE(matches(c, cst(-3, DType::Int64), c.constInt(DType::Int32, -3)));
  CHECK(matches(c, pat(Op::CONST).argNum(true), c.constInt(DType::Int32, 1)));
  CHECK_FALSE(matches(c, cst(0), c.make(Op::CONST, DType::Int32, {}, c.argString("0"))));
  // tags
  const UOp *tagged = c.make(Op::PARAM, DType::Int32, {}, c.argString("a"), c.argInt(3));
  auto tag3 = [](const Arg *t) { return t && t->isInt() && t->i() == 3; };
  CHECK(matches(c, pat(Op::PARAM).tagIf(tag3), tagged));
  CHECK_FALSE(matches(c, pat(Op::PARAM).tagIf(tag3), a));
}

TEST_CASE("pattern: captures and repeated names", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a"), *b = leaf(c, "b");
  auto got = captures(c, var("x") * var("y"), bin(c, Op::MUL, a, b), {"x", "y"});
  REQUIRE(got.size() == 2);
  CHECK(got[0] == a);
  CHECK(got[1] == b);
  // x//x matches only identical operands
  Pat xdivx = floordiv(var("x"), var("x"));
  CHECK(captures(c, xdivx, bin(c, Op::FLOORDIV, a, a), {"x"}) == std::vector<const UOp *>{a});
  CHECK_FALSE(matches(c, xdivx, bin(c, Op::FLOORDIV, a, b)));
  // the name may also sit deeper: x*y + x
  Pat fma = var("x") * var("y") + var("x");
  CHECK(matches(c, fma, bin(c, Op::ADD, bin(c, Op::MUL, a, b), a)));
  CHECK(matches(c, fma, bin(c, Op::ADD, a, bin(c, Op::MUL, b, a)))); // both ADD and MUL commute
  CHECK_FALSE(matches(c, fma, bin(c, Op::ADD, bin(c, Op::MUL, a, b), leaf(c, "z"))));
  // the same name on a node and on its source can never hold
  CHECK_FALSE(matches(c, (-var("x")).named("x"), c.make(Op::NEG, DType::Int32, {a})));
}

TEST_CASE("pattern: commutative ops match either source order", "[pattern]") {
  Context c;
  const UOp *x = leaf(c, "x"), *zero = c.constInt(DType::Int32, 0);
  Pat p = cst(0) + var("x");
  CHECK(captures(c, p, bin(c, Op::ADD, x, zero), {"x"}) == std::vector<const UOp *>{x});
  CHECK(captures(c, p, bin(c, Op::ADD, zero, x), {"x"}) == std::vector<const UOp *>{x});
  CHECK(captures(c, var("x") + 0, bin(c, Op::ADD, zero, x), {"x"}) == std::vector<const UOp *>{x});
  // SUB does not commute
  CHECK(matches(c, var("x") - 0, bin(c, Op::SUB, x, zero)));
  CHECK_FALSE(matches(c, var("x") - 0, bin(c, Op::SUB, zero, x)));
  // when the first order's rewrite declines, the other order is offered
  const UOp *k2 = c.constInt(DType::Int32, 2), *k3 = c.constInt(DType::Int32, 3);
  std::vector<std::pair<int64_t, int64_t>> seen;
  RuleSet rs{rule(cvar("a") + cvar("b"), [&](Match &m) -> const UOp * {
    seen.push_back({m["a"]->arg->i(), m["b"]->arg->i()});
    return m["a"]->arg->i() == 3 ? m["a"] : nullptr; // accept only a=3
  })};
  CHECK(rs.rewrite(c, bin(c, Op::ADD, k2, k3)) == k3);
  CHECK(seen == std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {3, 2}});
  // x+x is tried once, not once per order
  int calls = 0;
  RuleSet twice{rule(var("x") + var("x"), [&](Match &) -> const UOp * {
    ++calls;
    return nullptr;
  })};
  CHECK(twice.rewrite(c, bin(c, Op::ADD, x, x)) == nullptr);
  CHECK(calls == 1);
}

TEST_CASE("pattern: anyOf alternatives and backtracking into them", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a"), *f = leaf(c, "f", DType::Float32);
  const UOp *castA = c.make(Op::CAST, DType::Float32, {a});
  Pat orCasted = anyOf({var("x", DType::Int32), var("x", DType::Int32).cast(DType::Float32)}); // UPat.or_casted
  CHECK(captures(c, orCasted, a, {"x"}) == std::vector<const UOp *>{a});
  CHECK(captures(c, orCasted, castA, {"x"}) == std::vector<const UOp *>{a});
  CHECK_FALSE(matches(c, orCasted, f));
  // the first alternative binds y, the continuation rejects it, the second alternative is tried
  const UOp *neg = c.make(Op::NEG, DType::Int32, {a});
  Pat p = pat(Op::ADD).src(anyOf({var("y"), (-var("y")).named("n")}), var("y"));
  CHECK(matches(c, p, bin(c, Op::ADD, neg, a)));
  CHECK(matches(c, p, bin(c, Op::ADD, a, a)));
  CHECK_FALSE(matches(c, p, bin(c, Op::ADD, neg, leaf(c, "b"))));
}

TEST_CASE("pattern: rule errors and rewrite-function contract", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a");
  RuleSet typo{rule(var("x"), [](Match &m) { return m["y"]; })};
  CHECK_THROWS_AS(typo.rewrite(c, a), Error);
  CHECK_THROWS_WITH(typo.rewrite(c, a), Catch::Contains("no capture named 'y'") && Catch::Contains("PatternTest.cpp"));
  Pat big = pat(Op::SINK).src(var("n0"), var("n1"), var("n2"), var("n3"), var("n4"), var("n5"), var("n6"), var("n7"),
                              var("n8"), var("n9"), var("n10"), var("n11"), var("n12"), var("n13"), var("n14"),
                              var("n15"), var("n16"));
  CHECK_THROWS_AS(rule(big, [](Match &) { return nullptr; }), Error);
  // returning the matched node is no rewrite: the next rule gets its turn
  RuleSet rs{rule(var("x"), [](Match &m) { return m["x"]; }),
             rule(pat(Op::PARAM), [](Match &m) { return m.constLike(m.root(), 9); })};
  CHECK(rs.rewrite(c, a) == c.constInt(DType::Int32, 9));
  // constLike follows the dtype
  Match m(c, a, nullptr);
  CHECK(m.constLike(leaf(c, "f", DType::Float32), 2) == c.constFloat(DType::Float32, 2.0));
  CHECK(m.constLike(leaf(c, "p", DType::Bool), 1) == c.constBool(true));
  CHECK(m.constLikeFloat(a, 2.0) == c.constInt(DType::Int32, 2));
  // gating belongs to node-first rewriting
  RuleSet gate{rule(var(), [](Match &m) { return m.gate(); })};
  CHECK_THROWS_AS(gate.rewrite(c, a), Error);
}

TEST_CASE("pattern: rule sets dispatch on op and keep rule order", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a"), *b = leaf(c, "b");
  RuleSet rs;
  for (int i = 0; i < 100; ++i) rs.add(rule(var("x") * var("y"), [](Match &) { return nullptr; }));
  int addCalls = 0, anyCalls = 0;
  rs.add(rule(var("x") + var("y"), [&](Match &) -> const UOp * {
    ++addCalls;
    return nullptr;
  }));
  rs.add(rule(var("x"), [&](Match &) -> const UOp * {
    ++anyCalls;
    return nullptr;
  }));
  CHECK(rs.size() == 102);
  CHECK(rs.rulesFor(Op::ADD).size() == 2);
  CHECK(rs.rulesFor(Op::MUL).size() == 101);
  CHECK(rs.rulesFor(Op::NEG).size() == 1);
  RewriteStats st;
  CHECK(rs.rewrite(c, bin(c, Op::ADD, a, b), nullptr, &st) == nullptr);
  CHECK(st.rulesTried == 2); // none of the 100 MUL rules ran
  CHECK(addCalls == 2);      // x+y declined, so y+x was offered too
  CHECK(anyCalls == 1);
  // early reject: a rule whose source names CONST is not even tried on a node without CONST sources
  RuleSet consts{rule(var("x") + cvar("c"), [](Match &m) { return m["x"]; })};
  RewriteStats st2;
  CHECK(consts.rewrite(c, bin(c, Op::ADD, a, b), nullptr, &st2) == nullptr);
  CHECK(st2.rulesTried == 0);
  CHECK(consts.rewrite(c, bin(c, Op::ADD, a, c.constInt(DType::Int32, 1)), nullptr, &st2) == a);
  CHECK(st2.rulesTried == 1);
  CHECK(st2.rewrites == 1);
  // first matching rule wins; `+` keeps the left set's rules first
  RuleSet first{rule(pat(Op::PARAM), [](Match &m) { return m.constLike(m.root(), 1); })};
  RuleSet second{rule(pat(Op::PARAM), [](Match &m) { return m.constLike(m.root(), 2); })};
  CHECK((first + second).rewrite(c, a) == c.constInt(DType::Int32, 1));
  CHECK((second + first).rewrite(c, a) == c.constInt(DType::Int32, 2));
  // a top-level anyOf is indexed under every op of its alternatives
  RuleSet alt{rule(anyOf({pat(Op::NEG), pat(Op::SQRT)}), [](Match &) { return nullptr; })};
  CHECK(alt.rulesFor(Op::NEG).size() == 1);
  CHECK(alt.rulesFor(Op::SQRT).size() == 1);
  CHECK(alt.rulesFor(Op::ADD).empty());
}

TEST_CASE("pattern: user context reaches the rewrite function", "[pattern]") {
  Context c;
  const UOp *a = leaf(c, "a");
  int hits = 0;
  RuleSet rs{rule(pat(Op::PARAM), [](Match &m) -> const UOp * {
    ++m.user<int>();
    return nullptr;
  })};
  rs.rewrite(c, a, &hits);
  rs.rewrite(c, a, &hits);
  CHECK(hits == 2);
}
