// Rewrite throughput: graphRewrite over generated graphs, in input nodes per second.
#include "Passes/Rewrite.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

using namespace uopc;

namespace {

bool isIntArg(const Arg *a) { return a && a->kind == ArgKind::Int; }

/// A small simplifier-like table: integer folding of ADD/MUL and the identities x+0, x*1, x*0, -(-x).
RuleSet benchRules() {
  Pat ic = cvar().argIf(isIntArg);
  return RuleSet{
      rule(pat(Op::ADD).src(ic.named("a"), ic.named("b")),
           [](Match &m) { return m.constLike(m.root(), int64_t(uint64_t(m["a"]->arg->i()) + uint64_t(m["b"]->arg->i()))); }),
      rule(pat(Op::MUL).src(ic.named("a"), ic.named("b")),
           [](Match &m) { return m.constLike(m.root(), int64_t(uint64_t(m["a"]->arg->i()) * uint64_t(m["b"]->arg->i()))); }),
      rule(var("x") + 0, [](Match &m) { return m["x"]; }),                // x+0 -> x
      rule(var("x") * 1, [](Match &m) { return m["x"]; }),                // x*1 -> x
      rule(var("x") * 0, [](Match &m) { return m.constLike(m["x"], 0); }), // x*0 -> 0
      rule(-(-var("x")), [](Match &m) { return m["x"]; }),                // -(-x) -> x
      rule(floordiv(var("x"), var("x")), [](Match &m) { return m.constLike(m["x"], 1); }), // x//x -> 1
      rule(max(var("x"), var("x")), [](Match &m) { return m["x"]; }),     // max(x,x) -> x
  };
}

struct Times {
  double wall, cpu; ///< seconds; cpu is this process's CPU time, steadier on a shared machine
};
template <typename F> Times timeIt(F &&f) {
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
          double(std::clock() - c0) / CLOCKS_PER_SEC};
}

void report(const char *what, size_t nodes, Times t, const RewriteStats &st) {
  std::printf("%-44s %8zu nodes  wall %6.3f s  cpu %6.3f s  %6.2f M nodes/s (cpu)  visited %llu, rules tried %llu, "
              "rewrites %llu\n",
              what, nodes, t.wall, t.cpu, double(nodes) / t.cpu / 1e6, (unsigned long long)st.nodesVisited,
              (unsigned long long)st.rulesTried, (unsigned long long)st.rewrites);
}

void run(const char *what, Context &c, const UOp *root, size_t nodes, const RuleSet &rules, RewriteMode mode,
         const UOp *expect) {
  RewriteStats st;
  RewriteOptions o;
  (mode == RewriteMode::SourcesFirst ? o.sourcesFirst : o.nodeFirst) = &rules;
  o.stats = &st;
  const UOp *r = nullptr;
  Times t = timeIt([&] { r = graphRewrite(c, root, o); });
  if (expect && r != expect) {
    std::fprintf(stderr, "%s: unexpected result\n", what);
    std::exit(1);
  }
  report(what, nodes, t, st);
}

} // namespace

int main(int argc, char **argv) {
  int n = 1000000, calls = 20000;
  bool quick = false;
  CLI::App app{"bench_rewrite: graphRewrite throughput over generated graphs (figures only)"};
  app.add_option("--nodes", n, "nodes of each generated graph")->check(CLI::Range(1, 100000000))->capture_default_str();
  app.add_option("--calls", calls, "rewrites of small graphs in the last figure")->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  app.add_flag("--quick", quick, "small sizes (checks that the benchmark runs)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    if (!app.count("--nodes")) n = 10000;
    if (!app.count("--calls")) calls = 200;
  }
  RuleSet rules = benchRules();
  for (RewriteMode mode : {RewriteMode::SourcesFirst, RewriteMode::NodeFirst}) {
    const char *m = mode == RewriteMode::SourcesFirst ? "sources-first" : "node-first";
    std::printf("== %s, %d nodes\n", m, n);
    {
      Context c;
      const UOp *x = c.make(Op::PARAM, DType::Int32, {}, c.argString("x")), *zero = c.constInt(DType::Int32, 0);
      const UOp *e = x;
      for (int i = 0; i < n; ++i) e = c.make(Op::ADD, DType::Int32, {e, zero});
      run("chain ((x+0)+0)... -> x", c, e, size_t(n), rules, mode, x);
    }
    {
      Context c;
      const UOp *e = c.constInt(DType::Int32, 0), *one = c.constInt(DType::Int32, 1);
      for (int i = 0; i < n; ++i) e = c.make(Op::ADD, DType::Int32, {e, one});
      run("chain ((0+1)+1)... -> n (new node per level)", c, e, size_t(n), rules, mode, c.constInt(DType::Int32, n));
    }
    {
      Context c;
      const UOp *x = c.make(Op::PARAM, DType::Int32, {}, c.argString("x"));
      const UOp *e = x;
      for (int i = 0; i < n; ++i) e = c.make(Op::SQRT, DType::Int32, {e});
      run("chain sqrt(sqrt(...)) (no rule applies)", c, e, size_t(n), rules, mode, e);
    }
    {
      // a random DAG: each node an op over two earlier nodes, some of them identities to remove
      Context c;
      std::mt19937 rng(7);
      std::vector<const UOp *> pool;
      for (int i = 0; i < 64; ++i) pool.push_back(c.make(Op::PARAM, DType::Int32, {}, c.argInt(i)));
      for (int i = 0; i < 4; ++i) pool.push_back(c.constInt(DType::Int32, i));
      const Op ops[] = {Op::ADD, Op::MUL, Op::MAX, Op::FLOORDIV, Op::SUB, Op::CMPNE};
      while (c.numNodes() < size_t(n)) {
        const UOp *a = pool[pool.size() - 1 - rng() % std::min<size_t>(pool.size(), 1000)];
        const UOp *b = pool[rng() % pool.size()];
        Op op = ops[rng() % 6];
        pool.push_back(c.make(op, op == Op::CMPNE ? DType::Bool : DType::Int32, {a, b}));
      }
      const size_t roots = std::min<size_t>(pool.size(), 1000);
      const UOp *sink = c.make(Op::SINK, DType::Void, std::vector<const UOp *>(pool.end() - ptrdiff_t(roots), pool.end()));
      run("random DAG, up to 1000 roots", c, sink, toposort(sink).size(), rules, mode, nullptr);
    }
  }
  {
    Context c;
    const UOp *x = c.make(Op::PARAM, DType::Int32, {}, c.argString("x"));
    const UOp *y = c.make(Op::PARAM, DType::Int32, {}, c.argString("y"));
    const UOp *e = x;
    for (int i = 0; i < n; ++i) e = c.make(Op::NEG, DType::Int32, {e});
    const UOp *r = nullptr;
    Times t = timeIt([&] { r = substitute(c, e, {{x, y}}); });
    std::printf("== substitute x -> y at the bottom of a %d-deep NEG chain: wall %.3f s, cpu %.3f s, %.2f M nodes/s "
                "(cpu)%s\n",
                n, t.wall, t.cpu, n / t.cpu / 1e6, r->op == Op::NEG ? "" : " (WRONG)");
  }
  {
    // many rewrites of small graphs in one big Context (what the simplifier's nested rewrites do): the
    // cost of a call should follow the graph's size, not the Context's
    Context c;
    const UOp *x = c.make(Op::PARAM, DType::Int32, {}, c.argString("x")), *zero = c.constInt(DType::Int32, 0);
    const UOp *cur = x;
    while (c.numNodes() < size_t(n)) cur = c.make(Op::NEG, DType::Int32, {cur});
    std::vector<const UOp *> roots;
    for (int i = 0; i < calls; ++i) { // 10 nodes each: p_i + 0 + 0 ... (the +0s fold away)
      const UOp *e = c.make(Op::PARAM, DType::Int32, {}, c.argInt(1000 + i));
      for (int k = 0; k < 4; ++k) e = c.make(Op::ADD, DType::Int32, {c.make(Op::ADD, DType::Int32, {e, zero}), x});
      roots.push_back(e);
    }
    RewriteStats st;
    RewriteOptions o;
    o.sourcesFirst = &rules;
    o.stats = &st;
    Times t = timeIt([&] {
      for (const UOp *r : roots) graphRewrite(c, r, o);
    });
    std::printf("== %d rewrites of 10-node graphs in a %zu-node Context: wall %.3f s, cpu %.3f s, %.2f us a call (cpu), "
                "visited %llu\n",
                calls, c.numNodes(), t.wall, t.cpu, t.cpu / calls * 1e6, (unsigned long long)st.nodesVisited);
  }
  return 0;
}
