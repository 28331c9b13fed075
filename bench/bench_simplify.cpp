// Symbolic simplifier throughput (lib/Passes/Symbolic), in input nodes per second.
//
// What is measured:
//  1. corpus index math: for every load site of a perf corpus graph (a chain of movement ops read by a
//     non-movement op), the flat index expression that chain becomes, built as rangeify builds it: one
//     RANGE per axis of the site's shape, then RESHAPE -> (flat // stride) % dim per axis, PERMUTE ->
//     reordered axes, EXPAND -> 0 on broadcast axes, PAD -> idx - before with a valid mask, SHRINK ->
//     idx + begin, FLIP -> dim-1-idx, and at the base buffer sum(idx_k * stride_k), gated by the masks as
//     `valid.where(idx, Invalid)`. All sites of one graph go under one SINK, simplified with symRules()
//     (what the simplify pass applies) in a fresh Context each repetition;
//  2. generated index expressions: strided sums of variables, divided and reduced by typical shapes,
//     recombined, and gated by padding masks (like the differential test's index generator), 200 to a
//     graph (a kernel's worth), then all in one graph: the valid rules simplify inside a rule, and every
//     nested graphRewrite costs O(nodes in the Context) for its dense side tables, so the second figure
//     shows how that scales;
//  3. the simplify pass itself on the tensor-level perf graphs (it may only touch scalar nodes there).
// Nodes/s is the number of distinct input nodes divided by the CPU time of the simplification.
//
//   bench_simplify [--corpus DIR] [--exprs N] [--reps N] [--show K] [--quick]
//   (--show: print K corpus sites before/after; --quick: small sizes, one repetition)
#include "IR/GraphIO.h"
#include "IR/Shape.h"
#include "Passes/Passes.h"
#include "Passes/Symbolic/Symbolic.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace uopc;
namespace fs = std::filesystem;

namespace {

double cpuNow() { return double(std::clock()) / CLOCKS_PER_SEC; }

/// Builds the index expressions of the load sites of a tensor-level graph (see the file comment).
class IndexBuilder {
public:
  explicit IndexBuilder(Graph &g) : g_(g), c_(*g.ctx), shapes_(g) {}

  /// One expression per load site, or none when a shape along the chain is unknown.
  std::vector<const UOp *> sites() {
    std::vector<const UOp *> out, seen;
    for (const UOp *u : toposort(g_.root)) {
      if (isMovement(u->op)) continue;
      for (const UOp *s : u->src())
        if (isMovement(s->op) && std::find(seen.begin(), seen.end(), s) == seen.end()) {
          seen.push_back(s);
          if (const UOp *e = build(s)) out.push_back(e);
        }
    }
    return out;
  }

private:
  const UOp *k(int64_t v) { return c_.constInt(DType::WeakInt, v); }
  const UOp *bin(Op op, const UOp *a, const UOp *b) {
    return c_.make(op, isComparison(op) ? DType::Bool : a->dtype, {a, b});
  }
  std::vector<const UOp *> strides(const Shape &s) {
    std::vector<const UOp *> st(s.size());
    const UOp *acc = k(1);
    for (size_t i = s.size(); i-- > 0;) st[i] = acc, acc = bin(Op::MUL, acc, s[i]);
    return st;
  }
  const UOp *flatten(const std::vector<const UOp *> &idx, const Shape &s) {
    std::vector<const UOp *> st = strides(s);
    const UOp *flat = k(0);
    for (size_t i = 0; i < idx.size(); ++i) flat = bin(Op::ADD, flat, bin(Op::MUL, idx[i], st[i]));
    return flat;
  }

  const UOp *build(const UOp *site) {
    const std::optional<Shape> os = shapes_.shape(site); // copies: the cache may move as it grows
    if (!os) return nullptr;
    std::vector<const UOp *> idx;
    for (const UOp *d : *os)
      idx.push_back(c_.make(Op::RANGE, DType::WeakInt, {d},
                            c_.argTuple({c_.argInt(rangeId_++), c_.argAxisType(AxisType::LOOP)})));
    const UOp *valid = c_.constBool(true);
    const UOp *u = site;
    while (isMovement(u->op)) {
      const std::optional<Shape> is = shapes_.shape(u->src(0));
      if (!is) return nullptr;
      const Shape &in = *is;
      std::vector<const UOp *> nidx(in.size());
      switch (u->op) {
      case Op::RESHAPE: {
        const UOp *flat = flatten(idx, Shape(*shapes_.shape(u)));
        std::vector<const UOp *> st = strides(in);
        for (size_t i = 0; i < in.size(); ++i) nidx[i] = bin(Op::FLOORMOD, bin(Op::FLOORDIV, flat, st[i]), in[i]);
        break;
      }
      case Op::PERMUTE:
        for (size_t i = 0; i < idx.size(); ++i) nidx[size_t(u->arg->elems()[i]->i())] = idx[i];
        break;
      case Op::EXPAND:
        for (size_t i = 0; i < in.size(); ++i) {
          auto d = ShapeInfo::constDim(in[i]);
          nidx[i] = d && *d == 1 ? k(0) : idx[i];
        }
        break;
      case Op::PAD:
      case Op::SHRINK:
        for (size_t i = 0; i < in.size(); ++i) {
          const UOp *off = u->src(1)->op == Op::STACK ? u->src(1)->src(i) : u->src(1); // a 1-D operand is a scalar
          if (u->op == Op::SHRINK) {
            nidx[i] = bin(Op::ADD, idx[i], off);
            continue;
          }
          nidx[i] = bin(Op::ADD, idx[i], bin(Op::MUL, off, k(-1)));
          const UOp *lo = bin(Op::CMPNE, bin(Op::CMPLT, idx[i], off), c_.constBool(true)); // idx >= before
          const UOp *hi = bin(Op::CMPLT, idx[i], bin(Op::ADD, off, in[i]));                // idx < before + dim
          valid = bin(Op::AND, bin(Op::AND, valid, lo), hi);
        }
        break;
      case Op::FLIP:
        for (size_t i = 0; i < in.size(); ++i)
          nidx[i] =
              u->arg->elems()[i]->b() ? bin(Op::ADD, bin(Op::ADD, in[i], k(-1)), bin(Op::MUL, idx[i], k(-1))) : idx[i];
        break;
      default: return nullptr;
      }
      idx = std::move(nidx);
      u = u->src(0);
    }
    const std::optional<Shape> base = shapes_.shape(u);
    if (!base) return nullptr;
    const UOp *flat = flatten(idx, *base);
    if (valid->op == Op::CONST) return flat;
    return c_.make(Op::WHERE, DType::WeakInt, {valid, flat, makeInvalid(c_, DType::WeakInt)});
  }

  Graph &g_;
  Context &c_;
  ShapeInfo shapes_;
  int64_t rangeId_ = 0;
};

/// A compact infix rendering of an index expression (for --show).
std::string render(const UOp *u, int depth = 0) {
  if (depth > 30) return "...";
  auto arg = [&](size_t i) { return render(u->src(i), depth + 1); };
  switch (u->op) {
  case Op::CONST:
    if (isInvalidConst(u)) return "Invalid";
    if (u->arg->kind == ArgKind::Bool) return u->arg->b() ? "True" : "False";
    return std::to_string(u->arg->i());
  case Op::RANGE: return "r" + std::to_string(u->arg->elems()[0]->i());
  case Op::ADD: return "(" + arg(0) + " + " + arg(1) + ")";
  case Op::MUL: return arg(0) + "*" + arg(1);
  case Op::FLOORDIV: return "(" + arg(0) + " // " + arg(1) + ")";
  case Op::FLOORMOD: return "(" + arg(0) + " % " + arg(1) + ")";
  case Op::CMPLT: return "(" + arg(0) + " < " + arg(1) + ")";
  case Op::CMPNE: return "(" + arg(0) + " != " + arg(1) + ")";
  case Op::AND: return arg(0) + " & " + arg(1);
  case Op::WHERE: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
  default: return std::string(opName(u->op)) + "(...)";
  }
}

struct Figures {
  size_t exprs = 0, nodesIn = 0, nodesOut = 0;
  double cpu = 0;
};

void print(const std::string &what, const Figures &f, int reps) {
  std::printf("%-30s %6zu exprs %8zu nodes -> %7zu  %8.3f ms  %7.3f M nodes/s\n", what.c_str(), f.exprs, f.nodesIn,
              f.nodesOut, f.cpu / reps * 1e3, double(f.nodesIn) * reps / f.cpu / 1e6);
}

/// The corpus figures of one graph file: `reps` fresh reads, the simplification timed; prints the first
/// `show` sites before and after.
Figures corpusIndex(const std::string &path, int reps, size_t show = 0) {
  Figures f;
  for (int r = 0; r < reps; ++r) {
    Graph g = readGraphFile(path);
    IndexBuilder b(g);
    std::vector<const UOp *> sites = b.sites();
    const UOp *sink = g.ctx->make(Op::SINK, DType::Void, sites);
    SymbolicCtx sc;
    double t0 = cpuNow();
    const UOp *out = simplifyWith(*g.ctx, sink, symRules(), &sc);
    f.cpu += cpuNow() - t0;
    if (r == 0) f.exprs = sites.size(), f.nodesIn = toposort(sink).size(), f.nodesOut = toposort(out).size();
    for (size_t i = 0; r == 0 && i < std::min(show, sites.size()); ++i)
      std::printf("  %s\n    -> %s\n", render(sites[i]).c_str(), render(out->src(i)).c_str());
  }
  return f;
}

/// Generated index expressions over 2-4 variables (strided sums, div/mod, recombination, padding masks).
const UOp *generated(Context &c, std::mt19937_64 &rng, size_t n) {
  auto pick = [&](uint64_t m) { return rng() % m; };
  auto k = [&](int64_t v) { return c.constInt(DType::WeakInt, v); };
  auto bin = [&](Op op, const UOp *a, const UOp *b) {
    return c.make(op, isComparison(op) ? DType::Bool : a->dtype, {a, b});
  };
  static const int64_t strides[] = {1, 2, 3, 4, 8, 16, 32, 64, 128, 768, 3072};
  static const int64_t shapes[] = {2, 3, 4, 8, 12, 16, 32, 64};
  std::vector<const UOp *> exprs;
  for (size_t e = 0; e < n; ++e) {
    std::vector<const UOp *> vars;
    for (int v = 2 + int(pick(3)); v > 0; --v)
      vars.push_back(
          makeVariable(c, "i" + std::to_string(e) + "_" + std::to_string(v), 0, int64_t(shapes[pick(8)]) - 1));
    const UOp *x = k(int64_t(pick(5)));
    for (const UOp *v : vars) x = bin(Op::ADD, x, bin(Op::MUL, v, k(strides[pick(11)])));
    for (int depth = 1 + int(pick(3)); depth > 0; --depth) {
      const UOp *s = k(shapes[pick(8)]);
      switch (pick(4)) {
      case 0: x = bin(Op::FLOORDIV, x, s); break;
      case 1: x = bin(Op::FLOORMOD, x, s); break;
      case 2: x = bin(Op::ADD, bin(Op::FLOORMOD, x, s), bin(Op::MUL, bin(Op::FLOORDIV, x, s), s)); break;
      default: {
        const UOp *v = vars[pick(vars.size())];
        const UOp *valid =
            bin(Op::AND, bin(Op::CMPNE, bin(Op::CMPLT, v, k(1)), c.constBool(true)), bin(Op::CMPLT, v, k(7)));
        x = c.make(Op::WHERE, DType::WeakInt, {valid, bin(Op::ADD, x, k(-1)), makeInvalid(c, DType::WeakInt)});
      }
      }
    }
    exprs.push_back(x);
  }
  return c.make(Op::SINK, DType::Void, exprs);
}

/// n generated expressions, `perGraph` of them under one SINK in a Context of their own (a kernel's worth).
Figures generatedIndex(size_t n, size_t perGraph, int reps) {
  Figures f;
  for (int r = 0; r < reps; ++r) {
    std::mt19937_64 rng(7);
    for (size_t done = 0; done < n; done += perGraph) {
      Context c;
      const UOp *sink = generated(c, rng, std::min(perGraph, n - done));
      SymbolicCtx sc;
      double t0 = cpuNow();
      const UOp *out = simplifyWith(c, sink, symRules(), &sc);
      f.cpu += cpuNow() - t0;
      if (r == 0) f.nodesIn += toposort(sink).size(), f.nodesOut += toposort(out).size();
    }
  }
  f.exprs = n;
  return f;
}

} // namespace

int main(int argc, char **argv) {
  std::string corpus = "../shared/corpus";
  size_t n = 20000, show = 0;
  int reps = 0; // 0: 20 per corpus graph, 3 for the generated expressions
  bool quick = false;
  CLI::App app{"bench_simplify: symbolic simplifier throughput on index math (figures only)"};
  app.add_option("--corpus", corpus, "tinygrad corpus directory (its perf/ cases are used)")->capture_default_str();
  app.add_option("--exprs", n, "generated index expressions")->check(CLI::Range(size_t(1), size_t(10000000)))
      ->capture_default_str();
  app.add_option("--reps", reps, "repetitions per figure")->check(CLI::Range(1, 1000000));
  app.add_option("--show", show, "print this many corpus sites before and after simplification");
  app.add_flag("--quick", quick, "small sizes, one repetition (checks that the benchmark runs)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    if (!app.count("--exprs")) n = 400;
    if (!reps) reps = 1;
  }
  const int corpusReps = reps ? reps : 20, genReps = reps ? reps : 3;
  try {
  std::vector<fs::path> cases;
  if (fs::is_directory(corpus + "/perf"))
    for (auto &e : fs::directory_iterator(corpus + "/perf")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  std::printf("== index expressions of the perf corpus load sites (symRules, per repetition)\n");
  for (auto &p : cases) print(p.filename().string(), corpusIndex((p / "graph.json").string(), corpusReps, show), corpusReps);
  if (cases.empty()) std::printf("(no perf corpus at %s: skipped)\n", corpus.c_str());
  std::printf("== generated index expressions (200 per graph, then all in one graph)\n");
  print("generated-" + std::to_string(n) + "/200", generatedIndex(n, 200, genReps), genReps);
  print("generated-" + std::to_string(n) + "/" + std::to_string(n), generatedIndex(n, n, 1), 1);
  std::printf("== the simplify pass on the tensor-level perf graphs (scalar nodes only)\n");
  for (auto &p : cases) {
    Figures f;
    for (int r = 0; r < corpusReps; ++r) {
      Graph g = readGraphFile((p / "graph.json").string());
      size_t before = toposort(g.root).size();
      double t0 = cpuNow();
      runSimplify(g, PassContext{PassTarget{}, PassOptions{}, "simplify"});
      f.cpu += cpuNow() - t0;
      if (r == 0) f.exprs = 1, f.nodesIn = before, f.nodesOut = toposort(g.root).size();
    }
    print(p.filename().string(), f, corpusReps);
  }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_simplify: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
