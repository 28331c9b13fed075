// Unit tests of graphRewrite and substitute (lib/Passes/Rewrite.h): orders, fixed points, memoization,
// depth, loop guards. The constant folder here is a test fixture, not the simplifier.
#include "IR/Error.h"
#include "Passes/Rewrite.h"

#include <catch2/catch.hpp>

#include <ctime>
#include <optional>
#include <random>
#include <vector>

using namespace uopc;

namespace {

const UOp *leaf(Context &c, const char *name, DType dt = DType::Int32) {
  return c.make(Op::PARAM, dt, {}, c.argString(name));
}
const UOp *bin(Context &c, Op op, const UOp *a, const UOp *b, DType dt = DType::Int32) {
  return c.make(op, dt, {a, b});
}
const UOp *i32(Context &c, int64_t v) { return c.constInt(DType::Int32, v); }

/// v wrapped to dt's width, two's complement (what an int32 add overflowing in tinygrad folds to).
int64_t wrapTo(DType dt, int64_t v) {
  if (dt == DType::Bool) return v != 0;
  unsigned bits = dtypeSize(dt) * 8;
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t(1) << bits) - 1, u = uint64_t(v) & mask;
  if (!isUnsigned(dt) && (u >> (bits - 1))) u |= ~mask;
  return int64_t(u);
}

/// Folds a binary op over two integer constants of dtype dt (unsigned arithmetic: wraps without UB).
std::optional<int64_t> foldBinary(Op op, DType dt, int64_t a, int64_t b) {
  uint64_t ua = uint64_t(a), ub = uint64_t(b);
  switch (op) {
  case Op::ADD: return wrapTo(dt, int64_t(ua + ub));
  case Op::SUB: return wrapTo(dt, int64_t(ua - ub));
  case Op::MUL: return wrapTo(dt, int64_t(ua * ub));
  case Op::MAX: return a > b ? a : b;
  case Op::CMPLT: return a < b;
  case Op::CMPNE: return a != b;
  case Op::CMPEQ: return a == b;
  case Op::AND: return wrapTo(dt, a & b);
  case Op::OR: return wrapTo(dt, a | b);
  case Op::XOR: return wrapTo(dt, a ^ b);
  default: return std::nullopt;
  }
}

bool isIntArg(const Arg *a) { return a && (a->kind == ArgKind::Int || a->kind == ArgKind::Bool); }
int64_t intOf(const UOp *u) { return u->arg->kind == ArgKind::Bool ? u->arg->b() : u->arg->i(); }
Pat iconst(const char *name) { return cvar(name).argIf(isIntArg); }

/// Integer constant folding plus the identities x+0, x*1, x*0.
const RuleSet &folding() {
  static const RuleSet rules{
      rule(pat({Op::ADD, Op::SUB, Op::MUL, Op::MAX, Op::CMPLT, Op::CMPNE, Op::CMPEQ, Op::AND, Op::OR, Op::XOR})
               .src(iconst("a"), iconst("b")),
           [](Match &m) -> const UOp * { // c0 op c1 -> fold(c0 op c1)
             auto v = foldBinary(m.root()->op, m["a"]->dtype, intOf(m["a"]), intOf(m["b"]));
             return v ? m.constLike(m.root(), *v) : nullptr;
           }),
      rule(-iconst("a"), [](Match &m) { // -c -> fold(-c)
        return m.constLike(m.root(), wrapTo(m.root()->dtype, int64_t(0 - uint64_t(intOf(m["a"])))));
      }),
      rule(where(iconst("c"), var("t"), var("f")), [](Match &m) { return intOf(m["c"]) ? m["t"] : m["f"]; }), // c?t:f
      rule(var("x") + 0, [](Match &m) { return m["x"]; }),                                                // x+0 -> x
      rule(var("x") * 1, [](Match &m) { return m["x"]; }),                                                // x*1 -> x
      rule(var("x") * 0, [](Match &m) { return m.constLike(m["x"], 0); }),                                // x*0 -> 0
  };
  return rules;
}

const UOp *fold(Context &c, const UOp *root, RewriteMode mode = RewriteMode::SourcesFirst) {
  return graphRewrite(c, root, folding(), mode);
}

} // namespace

TEST_CASE("rewrite: integer constant folding with int32 wraparound", "[rewrite]") {
  Context c;
  CHECK(fold(c, bin(c, Op::ADD, i32(c, 2), i32(c, 3))) == i32(c, 5));
  CHECK(fold(c, bin(c, Op::ADD, i32(c, INT32_MAX), i32(c, 1))) == i32(c, INT32_MIN));
  CHECK(fold(c, bin(c, Op::SUB, i32(c, INT32_MIN), i32(c, 1))) == i32(c, INT32_MAX));
  CHECK(fold(c, bin(c, Op::MUL, i32(c, 65536), i32(c, 65536))) == i32(c, 0));
  CHECK(fold(c, c.make(Op::NEG, DType::Int32, {i32(c, INT32_MIN)})) == i32(c, INT32_MIN));
  const UOp *big = c.constInt(DType::Int64, INT32_MAX);
  CHECK(fold(c, bin(c, Op::ADD, big, c.constInt(DType::Int64, 1), DType::Int64)) ==
        c.constInt(DType::Int64, int64_t(INT32_MAX) + 1));
  CHECK(fold(c, bin(c, Op::MAX, i32(c, -1), i32(c, 2))) == i32(c, 2));
  CHECK(fold(c, bin(c, Op::CMPLT, i32(c, -1), i32(c, 2), DType::Bool)) == c.constBool(true));
  CHECK(fold(c, bin(c, Op::CMPNE, i32(c, 3), i32(c, 3), DType::Bool)) == c.constBool(false));
  const UOp *a = leaf(c, "a"), *b = leaf(c, "b");
  const UOp *cond = bin(c, Op::CMPLT, i32(c, 1), i32(c, 2), DType::Bool);
  CHECK(fold(c, c.make(Op::WHERE, DType::Int32, {cond, a, b})) == a);
  CHECK(fold(c, c.make(Op::WHERE, DType::Int32, {c.constBool(false), a, b})) == b);
  // not foldable: left alone, the same pointer back
  const UOp *keep = bin(c, Op::ADD, a, i32(c, 1));
  CHECK(fold(c, keep) == keep);
}

TEST_CASE("rewrite: (2+3)*x + 0 becomes 5*x, pointer-equal to the node built directly", "[rewrite]") {
  Context c;
  const UOp *x = leaf(c, "x");
  const UOp *e = bin(c, Op::ADD, bin(c, Op::MUL, bin(c, Op::ADD, i32(c, 2), i32(c, 3)), x), i32(c, 0));
  const UOp *want = bin(c, Op::MUL, i32(c, 5), x);
  CHECK(fold(c, e) == want);
  CHECK(fold(c, e, RewriteMode::NodeFirst) == want);
  // identities in both operand orders
  CHECK(fold(c, bin(c, Op::MUL, i32(c, 1), bin(c, Op::ADD, i32(c, 0), x))) == x);
  CHECK(fold(c, bin(c, Op::ADD, bin(c, Op::MUL, x, i32(c, 0)), i32(c, 7))) == i32(c, 7));
}

TEST_CASE("rewrite: folding random constant expressions matches direct evaluation", "[rewrite]") {
  Context c;
  std::mt19937 rng(1234);
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  // builds a random int32 expression and its value computed with 32-bit unsigned arithmetic
  std::vector<std::pair<const UOp *, int32_t>> pool;
  for (int i = 0; i < 8; ++i) {
    int32_t v = int32_t(rng());
    if (i < 3) v = int32_t(i) - 1; // some small values, so comparisons and WHEREs go both ways
    pool.push_back({i32(c, v), v});
  }
  for (int i = 0; i < 3000; ++i) {
    auto [a, va] = pool[size_t(pick(int(pool.size())))];
    auto [b, vb] = pool[size_t(pick(int(pool.size())))];
    const UOp *n;
    int32_t v;
    switch (pick(6)) {
    case 0: n = bin(c, Op::ADD, a, b), v = int32_t(uint32_t(va) + uint32_t(vb)); break;
    case 1: n = bin(c, Op::SUB, a, b), v = int32_t(uint32_t(va) - uint32_t(vb)); break;
    case 2: n = bin(c, Op::MUL, a, b), v = int32_t(uint32_t(va) * uint32_t(vb)); break;
    case 3: n = bin(c, Op::MAX, a, b), v = va > vb ? va : vb; break;
    case 4: n = c.make(Op::NEG, DType::Int32, {a}), v = int32_t(0u - uint32_t(va)); break;
    default: {
      auto [d, vd] = pool[size_t(pick(int(pool.size())))];
      n = c.make(Op::WHERE, DType::Int32, {bin(c, Op::CMPLT, a, b, DType::Bool), d, a});
      v = va < vb ? vd : va;
    }
    }
    pool.push_back({n, v});
  }
  std::vector<const UOp *> all;
  for (auto &[n, v] : pool) all.push_back(n);
  const UOp *sink = c.make(Op::SINK, DType::Void, all);
  for (RewriteMode mode : {RewriteMode::SourcesFirst, RewriteMode::NodeFirst}) {
    const UOp *r = fold(c, sink, mode);
    REQUIRE(r->op == Op::SINK);
    REQUIRE(r->nsrc == pool.size());
    size_t bad = 0;
    for (size_t i = 0; i < pool.size(); ++i)
      if (r->src(i) != i32(c, pool[i].second)) ++bad;
    CHECK(bad == 0);
  }
}

TEST_CASE("rewrite: results are rewritten again, their new sources included", "[rewrite]") {
  Context c;
  const UOp *v = leaf(c, "v");
  // distribute a product over a sum: the new MUL(2,3) it makes must be folded too
  RuleSet distribute{rule((var("x") + var("y")) * var("z"), [](Match &m) {
    Context &cx = m.ctx();
    const UOp *r = m.root();
    return bin(cx, Op::ADD, bin(cx, Op::MUL, m["x"], m["z"], r->dtype), bin(cx, Op::MUL, m["y"], m["z"], r->dtype),
               r->dtype);
  })};
  RuleSet rules = folding() + distribute;
  const UOp *e = bin(c, Op::MUL, bin(c, Op::ADD, v, i32(c, 2)), i32(c, 3));
  CHECK(graphRewrite(c, e, rules) == bin(c, Op::ADD, bin(c, Op::MUL, v, i32(c, 3)), i32(c, 6)));
  // a chain of rules: MUL(x,2) -> ADD(x,x) -> SHL(x,1), each result visited again
  RuleSet twice{
      rule(var("x") * 2, [](Match &m) { return bin(m.ctx(), Op::ADD, m["x"], m["x"]); }),    // x*2 -> x+x
      rule(var("x") + var("x"), [](Match &m) { return bin(m.ctx(), Op::SHL, m["x"], i32(m.ctx(), 1)); }), // x+x -> x<<1
  };
  const UOp *m2 = bin(c, Op::MUL, v, i32(c, 2));
  const UOp *shl = bin(c, Op::SHL, v, i32(c, 1));
  CHECK(graphRewrite(c, m2, twice) == shl);
  CHECK(graphRewrite(c, m2, twice, RewriteMode::NodeFirst) == shl);
  // walk mode applies rules once and does not revisit a result
  RewriteOptions walk;
  walk.sourcesFirst = &twice;
  walk.walk = true;
  CHECK(graphRewrite(c, m2, walk) == bin(c, Op::ADD, v, v));
}

TEST_CASE("rewrite: node-first and sources-first differ", "[rewrite]") {
  Context c;
  const UOp *x = leaf(c, "x");
  RuleSet distribute{rule((var("a") + var("b")) * var("z"), [](Match &m) {
    Context &cx = m.ctx();
    return bin(cx, Op::ADD, bin(cx, Op::MUL, m["a"], m["z"]), bin(cx, Op::MUL, m["b"], m["z"]));
  })};
  RuleSet rules = folding() + distribute;
  const UOp *e = bin(c, Op::MUL, bin(c, Op::ADD, i32(c, 2), i32(c, 3)), x);
  // sources first: 2+3 folds before the product is seen, so there is nothing to distribute
  CHECK(graphRewrite(c, e, rules, RewriteMode::SourcesFirst) == bin(c, Op::MUL, i32(c, 5), x));
  // node first: the product is seen first and distributed, then its sources are visited
  CHECK(graphRewrite(c, e, rules, RewriteMode::NodeFirst) ==
        bin(c, Op::ADD, bin(c, Op::MUL, i32(c, 2), x), bin(c, Op::MUL, i32(c, 3), x)));

  // the order rules see nodes: post-order vs pre-order
  const UOp *a = leaf(c, "a"), *b = leaf(c, "b");
  const UOp *na = c.make(Op::NEG, DType::Int32, {a});
  const UOp *root = bin(c, Op::ADD, na, b);
  std::vector<const UOp *> order;
  RuleSet record{rule(var(), [](Match &m) -> const UOp * {
    m.user<std::vector<const UOp *>>().push_back(m.root());
    return nullptr;
  })};
  CHECK(graphRewrite(c, root, record, RewriteMode::SourcesFirst, &order) == root);
  CHECK(order == std::vector<const UOp *>{a, na, b, root});
  order.clear();
  CHECK(graphRewrite(c, root, record, RewriteMode::NodeFirst, &order) == root);
  CHECK(order == std::vector<const UOp *>{root, na, a, b});
}

TEST_CASE("rewrite: memoized: a shared node is rewritten once", "[rewrite]") {
  Context c;
  // 64 levels of n = n + n: 2^64 paths, 65 nodes
  const UOp *n = leaf(c, "x");
  for (int i = 0; i < 64; ++i) n = bin(c, Op::ADD, n, n);
  int calls = 0;
  RuleSet count{rule(var(), [](Match &m) -> const UOp * {
    ++m.user<int>();
    return nullptr;
  })};
  RewriteStats st;
  RewriteOptions o;
  o.sourcesFirst = &count;
  o.user = &calls;
  o.stats = &st;
  CHECK(graphRewrite(c, n, o) == n);
  CHECK(calls == 65);
  CHECK(st.nodesVisited == 65);
  // and a rewrite through the shared spine rebuilds each level once: x -> y everywhere
  const UOp *y = leaf(c, "y");
  const UOp *want = y;
  for (int i = 0; i < 64; ++i) want = bin(c, Op::ADD, want, want);
  size_t before = c.numNodes();
  RuleSet xy{rule(pat(Op::PARAM).arg(c.argString("x")), [y](Match &) { return y; })};
  CHECK(graphRewrite(c, n, xy) == want);
  CHECK(c.numNodes() == before); // every rebuilt node already existed
}

TEST_CASE("rewrite: gate, call bodies and UOpRef args are left alone", "[rewrite]") {
  Context c;
  const UOp *add12 = bin(c, Op::ADD, i32(c, 1), i32(c, 2)), *add34 = bin(c, Op::ADD, i32(c, 3), i32(c, 4));
  // Match::gate() keeps a node and skips its sources in node-first rewriting
  RuleSet gated = RuleSet{rule(pat(Op::CONTIGUOUS), [](Match &m) { return m.gate(); })} + folding();
  const UOp *contig = c.make(Op::CONTIGUOUS, DType::Int32, {add12});
  const UOp *sink = c.make(Op::SINK, DType::Void, {contig, add34});
  CHECK(graphRewrite(c, sink, gated, RewriteMode::NodeFirst) == c.make(Op::SINK, DType::Void, {contig, i32(c, 7)}));
  CHECK_THROWS_AS(graphRewrite(c, sink, gated, RewriteMode::SourcesFirst), Error);

  // an opaque CALL body and a FUNCTION body are kept unless enterCalls
  const UOp *body = c.make(Op::SINK, DType::Void, {add12});
  const UOp *call = c.make(Op::CALL, DType::Void, {body, add34});
  CHECK(fold(c, call) == c.make(Op::CALL, DType::Void, {body, i32(c, 7)}));
  const UOp *tuple = c.make(Op::TUPLE, DType::Void, {add12});
  const UOp *func = c.make(Op::FUNCTION, DType::Void, {tuple, add34});
  CHECK(fold(c, func, RewriteMode::NodeFirst) == c.make(Op::FUNCTION, DType::Void, {tuple, i32(c, 7)}));
  RewriteOptions enter;
  enter.sourcesFirst = &folding();
  enter.enterCalls = true;
  CHECK(graphRewrite(c, call, enter) ==
        c.make(Op::CALL, DType::Void, {c.make(Op::SINK, DType::Void, {i32(c, 3)}), i32(c, 7)}));
  // a CALL of a value (not an opaque body) is ordinary dataflow
  const UOp *valueCall = c.make(Op::CALL, DType::Int32, {add12, add34});
  CHECK(fold(c, valueCall) == c.make(Op::CALL, DType::Int32, {i32(c, 3), i32(c, 7)}));

  // a node referenced from an arg is not a source: the reference stays on the original node
  const UOp *holder = c.make(Op::CUSTOM, DType::Int32, {add12}, c.argRef(add12));
  CHECK(fold(c, holder) == c.make(Op::CUSTOM, DType::Int32, {i32(c, 3)}, c.argRef(add12)));
}

TEST_CASE("rewrite: rules that never settle throw instead of hanging", "[rewrite]") {
  Context c;
  const UOp *a = leaf(c, "a"), *b = leaf(c, "b");
  const UOp *ab = bin(c, Op::ADD, a, b);
  // a+b -> b+a -> a+b ...
  RuleSet swap{rule(var("x") + var("y"), [](Match &m) { return bin(m.ctx(), Op::ADD, m["y"], m["x"]); })};
  using Catch::Contains;
  CHECK_THROWS_WITH(graphRewrite(c, ab, swap), Contains("rewrite did not reach a fixed point at") && Contains("(ADD)"));
  CHECK_THROWS_WITH(graphRewrite(c, ab, swap, RewriteMode::NodeFirst),
                    Contains("rewrite did not reach a fixed point at") && Contains("(ADD)"));
  // c -> c+1 forever: every step a new node
  RuleSet grow{rule(iconst("k"), [](Match &m) { return m.constLike(m["k"], intOf(m["k"]) + 1); })};
  CHECK_THROWS_WITH(graphRewrite(c, i32(c, 0), grow),
                    Contains("rewrite did not reach a fixed point at UOp #") && Contains("(CONST)") &&
                        Contains("more than 1000"));
  CHECK_THROWS_WITH(graphRewrite(c, i32(c, 0), grow, RewriteMode::NodeFirst), Contains("more than 1000"));
  // x -> -(-x) ... feeds on itself: the result depends on the node it replaces
  RuleSet wrap{rule(-var("x"), [](Match &m) {
    return m.ctx().make(Op::NEG, DType::Int32, {m.root()});
  })};
  CHECK_THROWS_WITH(graphRewrite(c, c.make(Op::NEG, DType::Int32, {a}), wrap),
                    Contains("rewrite did not reach a fixed point at") && Contains("(NEG)"));
  // a long but finite chain is fine; the bound is an option; describe names the node
  RuleSet to500{rule(iconst("k"), [](Match &m) -> const UOp * {
    return intOf(m["k"]) < 500 ? m.constLike(m["k"], intOf(m["k"]) + 1) : nullptr;
  })};
  CHECK(graphRewrite(c, i32(c, 0), to500) == i32(c, 500));
  // (nodes made by an earlier call count as old: only new nodes count towards the bound)
  Context fresh;
  RewriteOptions tight;
  tight.sourcesFirst = &to500;
  tight.maxRewritesPerNode = 100;
  tight.describe = [](const UOp *u) { return std::string("the zero"); };
  CHECK_THROWS_WITH(graphRewrite(fresh, i32(fresh, 0), tight), Contains("fixed point at the zero"));
  tight.maxRewritesPerNode = 500;
  CHECK(graphRewrite(fresh, i32(fresh, 0), tight) == i32(fresh, 500));
}

TEST_CASE("rewrite: 1,000,000-deep chains, no recursion", "[rewrite]") {
  constexpr int kDepth = 1000000;
  Context c;
  const UOp *x = leaf(c, "x");
  const UOp *zero = i32(c, 0);
  const UOp *addChain = x, *negChain = x, *incChain = zero;
  for (int i = 0; i < kDepth; ++i) {
    addChain = bin(c, Op::ADD, addChain, zero);
    negChain = c.make(Op::NEG, DType::Int32, {negChain});
    incChain = bin(c, Op::ADD, incChain, i32(c, 1));
  }
  RuleSet negneg{rule(-(-var("x")), [](Match &m) { return m["x"]; })}; // -(-x) -> x
  for (RewriteMode mode : {RewriteMode::SourcesFirst, RewriteMode::NodeFirst}) {
    CHECK(fold(c, addChain, mode) == x); // ((x+0)+0)... -> x
    CHECK(graphRewrite(c, negChain, negneg, mode) == x);
    CHECK(fold(c, incChain, mode) == i32(c, kDepth)); // every level folds to a new constant
  }
  // substitute at the bottom of the chain rebuilds every level
  const UOp *y = leaf(c, "y");
  const UOp *want = y;
  for (int i = 0; i < kDepth; ++i) want = c.make(Op::NEG, DType::Int32, {want});
  CHECK(substitute(c, negChain, {{x, y}}) == want);
}

TEST_CASE("rewrite: substitute replaces nodes and rebuilds their users", "[rewrite]") {
  Context c;
  const UOp *x = leaf(c, "x"), *y = leaf(c, "y"), *z = leaf(c, "z");
  const UOp *e = bin(c, Op::ADD, bin(c, Op::MUL, x, i32(c, 2)), x);
  CHECK(substitute(c, e, {{x, y}}) == bin(c, Op::ADD, bin(c, Op::MUL, y, i32(c, 2)), y));
  CHECK(substitute(c, e, {}) == e);
  CHECK(substitute(c, e, {{x, x}}) == e);
  CHECK(substitute(c, e, {{z, y}}) == e); // key not in the graph
  // a whole subtree as key, matched before its sources are replaced
  const UOp *mul = bin(c, Op::MUL, x, i32(c, 2));
  CHECK(substitute(c, e, {{mul, z}, {x, y}}) == bin(c, Op::ADD, z, y));
  // values are used as they are: {x: x+1} works, {a: b, b: c} does not chain
  const UOp *x1 = bin(c, Op::ADD, x, i32(c, 1));
  CHECK(substitute(c, bin(c, Op::MUL, x, x), {{x, x1}}) == bin(c, Op::MUL, x1, x1));
  const UOp *sink = c.make(Op::SINK, DType::Void, {x, y});
  CHECK(substitute(c, sink, {{x, y}, {y, z}}) == c.make(Op::SINK, DType::Void, {y, z}));
  // the unordered_map form
  std::unordered_map<const UOp *, const UOp *> m{{y, x}};
  CHECK(substitute(c, sink, m) == c.make(Op::SINK, DType::Void, {x, x}));
}

namespace {
/// True when `needle` is reachable from `root` through sources (call bodies included).
bool reachable(const UOp *root, const UOp *needle) {
  for (const UOp *u : toposort(root))
    if (u == needle) return true;
  return false;
}
} // namespace

TEST_CASE("rewrite: substitute of a node reached through several parents leaves no path to it", "[rewrite]") {
  Context c;
  const UOp *x = leaf(c, "x"), *y = leaf(c, "y"), *a = leaf(c, "a"), *b = leaf(c, "b");
  // x under two different parents, one of them also under the other, and x directly under the root
  const UOp *p1 = bin(c, Op::ADD, x, a), *p2 = bin(c, Op::MUL, b, x);
  const UOp *p3 = bin(c, Op::SUB, p1, p2);
  const UOp *root = c.make(Op::SINK, DType::Void, {p3, p2, x, p1});
  REQUIRE(reachable(root, x));
  const UOp *r = substitute(c, root, {{x, y}});
  CHECK_FALSE(reachable(r, x));
  const UOp *q1 = bin(c, Op::ADD, y, a), *q2 = bin(c, Op::MUL, b, y);
  CHECK(r == c.make(Op::SINK, DType::Void, {bin(c, Op::SUB, q1, q2), q2, y, q1}));

  // kernels: CALLs whose result is ordered through AFTER, the first one reached directly and through
  // the AFTER the second kernel reads
  const UOp *buf = c.make(Op::PARAM, DType::Int32, {}, c.argString("buf"));
  const UOp *k1 = c.make(Op::SINK, DType::Void, {a}), *k2 = c.make(Op::SINK, DType::Void, {b});
  const UOp *call1 = c.make(Op::CALL, DType::Void, {k1, buf});
  const UOp *after1 = c.make(Op::AFTER, DType::Int32, {buf, call1});
  const UOp *call2 = c.make(Op::CALL, DType::Void, {k2, after1});
  const UOp *after2 = c.make(Op::AFTER, DType::Int32, {after1, call2});
  const UOp *graph = c.make(Op::SINK, DType::Void, {after2, call1, after1});
  const UOp *newCall1 = c.make(Op::CALL, DType::Void, {c.make(Op::SINK, DType::Void, {y}), buf});
  for (bool enter : {false, true}) {
    const UOp *g = substitute(c, graph, {{call1, newCall1}}, enter);
    CHECK_FALSE(reachable(g, call1));
    CHECK(reachable(g, newCall1));
    // both CALLs replaced: the second one's replacement is built on the new graph, so neither old
    // CALL is left
    const UOp *g2 = substitute(c, graph, {{call1, newCall1}, {call2, c.make(Op::CALL, DType::Void, {k1, after1})}}, enter);
    CHECK_FALSE(reachable(g2, call2));
    // ...but a value is inserted as it is: one that holds another key keeps that key reachable (a
    // caller replacing several nodes must build each value on the substituted sources, or substitute twice)
    CHECK(reachable(g2, call1));
    CHECK_FALSE(reachable(substitute(c, g2, {{call1, newCall1}}, enter), call1));
  }

  // a node that is an opaque call body and also an ordinary source elsewhere: the body is kept, the
  // other path is replaced, whichever the walk meets first
  const UOp *kNew = c.make(Op::SINK, DType::Void, {y});
  for (int order = 0; order < 2; ++order) {
    const UOp *call = c.make(Op::CALL, DType::Void, {k1, buf});
    const UOp *user = c.make(Op::NOOP, DType::Void, {k1});
    const UOp *g = order ? c.make(Op::SINK, DType::Void, {call, user}) : c.make(Op::SINK, DType::Void, {user, call});
    const UOp *want = order ? c.make(Op::SINK, DType::Void, {call, c.make(Op::NOOP, DType::Void, {kNew})})
                            : c.make(Op::SINK, DType::Void, {c.make(Op::NOOP, DType::Void, {kNew}), call});
    CHECK(substitute(c, g, {{k1, kNew}}) == want);
    // and a key inside such a body is replaced on the other paths only
    const UOp *user2 = c.make(Op::NOOP, DType::Void, {a});
    const UOp *g2 = order ? c.make(Op::SINK, DType::Void, {call, user2}) : c.make(Op::SINK, DType::Void, {user2, call});
    const UOp *want2 = order ? c.make(Op::SINK, DType::Void, {call, c.make(Op::NOOP, DType::Void, {y})})
                             : c.make(Op::SINK, DType::Void, {c.make(Op::NOOP, DType::Void, {y}), call});
    CHECK(substitute(c, g2, {{a, y}}) == want2);
  }
}

TEST_CASE("rewrite: a call costs O(nodes touched), not O(nodes of the Context)", "[rewrite]") {
  Context c;
  const UOp *x = leaf(c, "x");
  // a 10-node graph made first (low indices), then 1,000,000 unrelated nodes, then a 10-node graph
  // made last (high indices)
  auto small = [&](const char *name) {
    const UOp *e = leaf(c, name);
    for (int i = 0; i < 4; ++i) e = bin(c, Op::ADD, bin(c, Op::ADD, e, i32(c, 0)), x); // e+0 folds away
    return e;
  };
  const UOp *early = small("early");
  const UOp *cur = x;
  while (c.numNodes() < 1000000) cur = c.make(Op::NEG, DType::Int32, {cur});
  const UOp *late = small("late");
  REQUIRE(toposort(late).size() <= 12);

  auto want = [&](const char *name) {
    const UOp *e = leaf(c, name);
    for (int i = 0; i < 4; ++i) e = bin(c, Op::ADD, e, x);
    return e;
  };
  const UOp *wantEarly = want("early"), *wantLate = want("late");
  // a rule that rewrites the sub-expression it sees with a nested graphRewrite (as the simplifier
  // does): the nested call must not disturb the outer call's tables
  static const RuleSet nested{
      rule(pat(Op::ADD).src(var("a"), var("b")), [](Match &m) -> const UOp * {
        if (m.root()->src(1)->op != Op::CONST) return nullptr;
        return graphRewrite(m.ctx(), m["a"], folding(), RewriteMode::SourcesFirst);
      }),
  };
  for (const RuleSet *rules : {&folding(), &nested})
    for (RewriteMode mode : {RewriteMode::SourcesFirst, RewriteMode::NodeFirst}) {
      // the first call may grow the Context's scratch tables to its size: amortized over later calls
      CHECK(graphRewrite(c, late, *rules, mode) == wantLate);
      Context::ScratchStats before = c.scratchStats();
      for (int rep = 0; rep < 100; ++rep) {
        CHECK(graphRewrite(c, late, *rules, mode) == wantLate);
        CHECK(graphRewrite(c, early, *rules, mode) == wantEarly);
      }
      const Context::ScratchStats &after = c.scratchStats();
      INFO("slots reset " << after.slotsReset - before.slotsReset << ", grown " << after.slotsGrown - before.slotsGrown);
      CHECK(after.slotsReset - before.slotsReset <= 200 * 2 * 40); // two tables, ~20 nodes a call, some slack
      CHECK(after.slotsGrown == before.slotsGrown);                // tables reused, not reallocated
      CHECK(after.created == before.created);
    }
  // substitute and toposort too
  const UOp *y = leaf(c, "y");
  CHECK(reachable(substitute(c, late, {{x, y}}), y));
  Context::ScratchStats before = c.scratchStats();
  for (int rep = 0; rep < 100; ++rep) CHECK(reachable(substitute(c, late, {{x, y}}), y));
  CHECK(c.scratchStats().slotsReset - before.slotsReset <= 100 * 3 * 40);
  CHECK(c.scratchStats().slotsGrown == before.slotsGrown);
}
