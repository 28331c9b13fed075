//===- Tune.cpp - uopc --tune: kernels timed with candidate opts, the database applied ===//
#include "Driver/Tune.h"

#include "Driver/TuneDb.h"
#include "Driver/TuneRun.h"
#include "IR/AsmPrinter.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "IR/Work.h"
#include "Passes/Optimize/Opts.h"
#include "Passes/Schedule.h"
#include "Runtime/KernelCache.h"
#include "Runtime/ManifestModel.h"
#include "Runtime/Sha256.h"
#include "Runtime/ThreadPool.h"
#include "Targets/KernelABI.h"
#include "Targets/LLVMJit.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include <dlfcn.h>

namespace uopc {
namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// What the search needs to know of a kernel before optimize.
struct KernelFacts : TuneKernelShape {
  std::string name, hash;
  bool tunable = false; ///< one store over constant loops (optimize::shapeOf), no variables
  double work = 1;      ///< ops + loads + stores of the work model (the budget's weight)
};

KernelFacts factsOf(Context &c, const UOp *call, const std::string &name) {
  KernelFacts f;
  f.name = name;
  f.hash = kernelHash(c, call);
  const UOp *sink = kernelSink(call);
  auto shape = optimize::shapeOf(sink);
  bool vars = false;
  std::set<int64_t> reads;
  for (const UOp *u : toposort(sink)) {
    vars |= u->op == Op::PARAM && isScalarParamNode(u);
    if (u->op == Op::INDEX && u->src(0)->op == Op::PARAM) reads.insert(ParamArg::slotOf(u->src(0)->arg));
  }
  f.tunable = shape && !vars;
  if (shape) {
    f.axes = shape->sizes;
    for (const UOp *r : shape->reduceRanges) {
      auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
      f.reduces.push_back(n ? static_cast<int64_t>(*n) : 0);
    }
  }
  f.readSlots.assign(reads.begin(), reads.end());
  KernelWork w = kernelWork(sink);
  for (const Count *x : {&w.ops, &w.loads, &w.stores})
    if (auto v = x->constant()) f.work += static_cast<double>(*v);
  return f;
}

/// The pipeline `p` with optimize's options changed: `level` (-1: as it is) and `opts` (replacing them).
std::vector<PipelineEntry> withOptimize(std::vector<PipelineEntry> p, int level, const std::string &opts) {
  for (PipelineEntry &e : p)
    if (e.pass->flag == "optimize") {
      if (level >= 0) e.options["level"] = std::to_string(level);
      if (opts.empty()) e.options.erase("opts");
      else e.options["opts"] = opts;
    }
  return p;
}

std::string joined(const std::vector<std::string> &v, const char *sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}
std::string listText(const std::vector<std::string> &opts) { return "[" + joined(opts, " ") + "]"; }
std::string ms(double ns) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(ns < 1e5 ? 4 : 3) << ns / 1e6 << " ms";
  return os.str();
}

using namespace tunerun;

// ---- the search ------------------------------------------------------------------------------------

/// The rank of an opt's kind in a list (optimize applies merges, then splits and blocks, before upcasts;
/// reduction opts after them; packs and re-layouts last).
int rankOf(const std::string &opt) {
  static const std::pair<const char *, int> kRanks[] = {{"merge", 0}, {"split", 1}, {"block", 2}, {"upcast", 3},
                                                        {"partial", 4}, {"unroll", 4}, {"pack", 5}, {"relayout", 6}};
  for (auto [k, r] : kRanks)
    if (opt.rfind(std::string(k) + ":", 0) == 0) return r;
  return 7;
}

std::vector<std::string> inserted(std::vector<std::string> l, const std::string &opt) {
  auto at = std::find_if(l.begin(), l.end(), [&](const std::string &o) { return rankOf(o) > rankOf(opt); });
  l.insert(at, opt);
  return l;
}

} // namespace

std::vector<std::vector<std::string>> tuneNeighbours(const std::vector<std::string> &l, const TuneKernelShape &f) {
  std::vector<std::vector<std::string>> out;
  std::vector<optimize::Opt> opts;
  for (const std::string &t : l) opts.push_back(optimize::parseOpt(t));
  std::vector<int64_t> sizes = f.axes;
  std::set<size_t> upcast, unrolled, partial;
  std::set<int64_t> packed;
  for (const optimize::Opt &o : opts) {
    if (o.kind == optimize::Opt::Split && o.axis < sizes.size()) sizes[o.axis] = o.hi - o.amount;
    if (o.kind == optimize::Opt::Merge && o.axis + 1 < sizes.size()) sizes[o.axis] *= sizes[o.axis + 1], sizes[o.axis + 1] = 1;
    if (o.kind == optimize::Opt::Upcast) upcast.insert(o.axis);
    if (o.kind == optimize::Opt::Unroll) unrolled.insert(o.axis);
    if (o.kind == optimize::Opt::Partial) partial.insert(o.axis);
    if (o.kind == optimize::Opt::Pack) packed.insert(static_cast<int64_t>(o.axis));
  }
  auto replaced = [&](size_t i, const std::string &opt) {
    std::vector<std::string> n = l;
    n[i] = opt;
    return n;
  };
  auto divides = [](int64_t d, int64_t n) { return n > 0 && d >= 1 && n % d == 0; };
  // the amounts tried for an upcast of `amount` on an axis of `size`: the powers of two, and the divisors of
  // the size within a factor of two of it (a 56-pixel row's tile of 14: 7 and 28 as well)
  auto amounts = [&](int64_t amount, int64_t size) {
    std::set<int64_t> ds;
    for (int64_t d : {2, 4, 8, 16, 32, 64})
      if (divides(d, size)) ds.insert(d);
    for (int64_t d = std::max<int64_t>(2, amount / 2); d <= std::min<int64_t>(64, 2 * amount); ++d)
      if (divides(d, size)) ds.insert(d);
    ds.erase(amount);
    return ds;
  };
  // another amount for an upcast, unroll, partial or block
  for (size_t i = 0; i < opts.size(); ++i) {
    const optimize::Opt &o = opts[i];
    std::string a = std::to_string(o.axis);
    if (o.kind == optimize::Opt::Upcast && o.axis < sizes.size()) {
      // a block of the axis exactly the upcast's (a 1x1 convolution's pixels, block:1:32 upcast:1:32) moves with it
      auto block = std::find_if(opts.begin(), opts.end(), [&](const optimize::Opt &b) {
        return b.kind == optimize::Opt::Block && b.axis == o.axis && b.amount == o.amount;
      });
      for (int64_t d : amounts(o.amount, sizes[o.axis])) {
        std::vector<std::string> n = replaced(i, "upcast:" + a + ":" + std::to_string(d));
        if (block != opts.end()) {
          if (d >= sizes[o.axis]) continue; // (a block must leave several)
          n[static_cast<size_t>(block - opts.begin())] = "block:" + a + ":" + std::to_string(d);
        }
        out.push_back(std::move(n));
      }
    }
    if ((o.kind == optimize::Opt::Unroll || o.kind == optimize::Opt::Partial) && o.axis < f.reduces.size())
      for (int64_t d : {2, 4, 8, 16})
        if (d != o.amount && divides(d, f.reduces[o.axis]) && d < f.reduces[o.axis])
          out.push_back(replaced(i, std::string(o.kind == optimize::Opt::Unroll ? "unroll:" : "partial:") + a + ":" + std::to_string(d)));
    if (o.kind == optimize::Opt::Block && o.axis < sizes.size())
      for (int64_t d : {o.amount / 2, o.amount * 2})
        if (d >= 1 && d < sizes[o.axis] && divides(d, sizes[o.axis])) out.push_back(replaced(i, "block:" + a + ":" + std::to_string(d)));
  }
  // an opt dropped
  for (size_t i = 0; i < l.size(); ++i) {
    std::vector<std::string> n = l;
    n.erase(n.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(n);
  }
  // an opt added
  for (size_t a = 0; a < sizes.size(); ++a)
    if (!upcast.count(a) && sizes[a] > 1)
      for (int64_t d : {4, 8, 16})
        if (divides(d, sizes[a])) out.push_back(inserted(l, "upcast:" + std::to_string(a) + ":" + std::to_string(d)));
  for (size_t r = 0; r < f.reduces.size(); ++r) {
    if (!unrolled.count(r))
      for (int64_t d : {2, 4})
        if (divides(d, f.reduces[r]) && d < f.reduces[r]) out.push_back(inserted(l, "unroll:" + std::to_string(r) + ":" + std::to_string(d)));
    if (!partial.count(r) && upcast.empty())
      for (int64_t d : {4, 8, 16})
        if (divides(d, f.reduces[r]) && d < f.reduces[r]) out.push_back(inserted(l, "partial:" + std::to_string(r) + ":" + std::to_string(d)));
  }
  if (!upcast.empty())
    for (int64_t slot : f.readSlots)
      if (slot > 0 && !packed.count(slot)) out.push_back(inserted(l, "pack:" + std::to_string(slot)));
  return out;
}

namespace {

/// One kernel's search: the reference outputs, the buffers, the candidates' times.
struct Search {
  const TuneRequest &req;
  const KernelFacts &facts;
  /// The opts= text of the other kernels: the user's --kernel-opts and every other kernel's heuristic list by
  /// hand (optimize applies a list faster than it chooses one: DenseNet-121's optimize 0.18 -> 0.06 s)
  const std::string &others;
  /// The graph as it was before optimize (writeGraphBinary) and the pipeline from optimize on: a candidate's
  /// compile starts there (the passes before it, 40% of DenseNet-121's compile, are the same for every
  /// candidate). DenseNet-121 (189 kernels): C searched 3 in a 10 s budget before; at 20 s, with this and the
  /// lists by hand, 11 (C) and 19 (LLVM, 16 before); without the empty list's climb too, 56 and 58.
  const std::string &preOptimize;
  const std::vector<PipelineEntry> &fromOptimize;
  Module &reference;
  ThreadPool &pool;
  const fs::path &scratch; ///< where C candidates are built

  std::map<BufKey, Mem> pristine, work;
  std::map<BufKey, std::vector<unsigned char>> expected; ///< the reference's outputs
  int64_t candidates = 0, refused = 0, wrong = 0;
  /// When a candidate's build must be done (the end of the kernel's share of the budget; none for the heuristic's
  /// list, the first built): a C compiler still running then is stopped and the candidate counted `slow`.
  std::optional<Clock::time_point> until;
  int64_t slow = 0;

  /// Runs the reference kernel (--opt-level 0) on the seeded inputs. Throws Error when it cannot.
  void start() {
    const Schedule &s = *reference.schedule();
    std::vector<size_t> which;
    for (size_t i = 0; i < s.steps.size(); ++i)
      if (s.steps[i].kind == SchedStep::Kind::Kernel && s.kernels[s.steps[i].kernel].name == facts.name) which.push_back(i);
    if (which.size() != 1) fail("the --opt-level 0 compile has no kernel " + facts.name);
    Steps g = prepare(reference, which, req.base.render.cpu, scratch);
    for (const auto &[key, sz] : g.sizes) {
      Mem &m = pristine[key];
      m.dtype = sz.second;
      m.resize(sz.first);
      fill(m, key);
    }
    std::map<BufKey, Mem> mem = pristine;
    relayoutBlocked(g, mem, true);
    runSteps(g, mem, pool, true);
    relayoutBlocked(g, mem, false);
    for (const BufKey &k : g.written) expected[k].assign(mem.at(k).data(), mem.at(k).data() + mem.at(k).bytes);
  }

  /// A candidate compiled and checked: its steps, ready to time again.
  using Compiled = std::shared_ptr<Steps>;

  /// Compiles and JIT-compiles the kernel with `opts`, runs it once on the seeded inputs and checks its outputs
  /// against the reference's. Null: refused (by the optimize pass or the target) or wrong.
  Compiled build(const std::vector<std::string> &opts) {
    ++candidates;
    auto g = std::make_shared<Steps>();
    try {
      CompileOptions co;
      co.target = req.base.target;
      co.render = req.base.render;
      co.render.allowCustom = false;
      std::string text = joined(opts, "/"), mine = facts.name + (opts.empty() ? "" : "/" + text);
      co.pipeline = withOptimize(fromOptimize, -1, others.empty() ? mine : others + ";" + mine);
      std::ostringstream out, err;
      Module m = compile(readGraphBinary(preOptimize, req.input), co, out, err);
      double seconds = until ? std::chrono::duration<double>(*until - Clock::now()).count() : 0;
      if (until && seconds <= 0) fail("no time left to build it");
      *g = prepare(m, stepsOf(*m.schedule(), facts.name), req.base.render.cpu, scratch, seconds);
    } catch (const Error &) {
      if (until && Clock::now() >= *until) ++slow;
      else ++refused;
      return nullptr;
    }
    for (const auto &[key, sz] : g->sizes) {
      auto it = pristine.find(key);
      if (it == pristine.end()) {
        Mem &m = g->own[key];
        m.dtype = sz.second;
        m.resize(sz.first);
        continue;
      }
      Mem &m = work[key];
      if (m.bytes != sz.first) m = it->second;
      else std::memcpy(m.data(), it->second.data(), sz.first);
    }
    try {
      relayoutBlocked(*g, work, true);
      runSteps(*g, work, pool, true);
      relayoutBlocked(*g, work, false);
    } catch (const Error &) {
      ++refused;
      return nullptr;
    }
    for (const auto &[key, want] : expected) {
      auto it = work.find(key);
      if (it == work.end() || it->second.bytes != want.size() || !matches(it->second.data(), want.data(), want.size(), it->second.dtype)) {
        ++wrong;
        return nullptr;
      }
    }
    return g;
  }

  /// The best of at least 5 runs, more while they took under 0.1 s in all (at most 50); stops early at 3 runs
  /// when even the best is 3x `against` (a candidate far slower than the best so far).
  /// Each run starts with the weights out of every cache, as in a network, where a layer's weights are read
  /// once a run and come from memory (ResNet-50's 3x3 convolution at 7x7, one thread: 2.1-2.3 ms so, 1.4-1.6 with
  /// them cached): the graph's parameters the kernel's steps read and what its once steps wrote from them
  /// (re-laid-out weights, packed panels) are flushed (x86: clflush, line by line) before the clock starts. Its
  /// input activations, which the layer before just wrote, stay where they are.
  double time(Steps &g, double against = 0) {
    double best = INFINITY;
    auto t = Clock::now();
    for (int rep = 0; rep < 50; ++rep) {
      if (rep >= 5 && secondsSince(t) > 0.1) break;
      if (rep >= 3 && against > 0 && best > 3 * against) break;
      flushWeights(g, work);
      auto r = Clock::now();
      runSteps(g, work, pool, false);
      best = std::min(best, secondsSince(r) * 1e9);
    }
    return best;
  }


  /// a and b timed in turns (3 rounds): the best time of each. The machine's load moves both alike.
  std::pair<double, double> alternate(Steps &a, Steps &b) {
    double ta = INFINITY, tb = INFINITY;
    for (int round = 0; round < 3; ++round) ta = std::min(ta, time(a)), tb = std::min(tb, time(b));
    return {ta, tb};
  }
};

/// A compile's kernels timed in the whole network: each kernel's time, the sum of its steps' best (the
/// kernel's, its packs' and re-layouts'; once steps left out), by name, and the sum of all steps' best.
struct NetworkTimes {
  std::map<std::string, double> kernels;
  double total = 0;
};

/// The graph compiled from optimize on with each of `optsTexts` as optimize's opts= (a network's kernels, their
/// re-laid-out buffers: one kernel's opts can change how its neighbours read), every kernel step built as for
/// the search, run on buffers of seeded values (the once steps first, then a run to warm up), then the compiles
/// timed in turns, step by step, at least 5 rounds and more while they took under 2 s (at most 30). A network
/// reads each layer's weights from memory once a run and its activations from where the layer before left
/// them: what a kernel timed alone only approximates. Throws Error (a kernel the target refuses, one with
/// variables).
std::vector<NetworkTimes> timeInNetwork(const TuneRequest &req, const std::string &preOptimize,
                                        const std::vector<PipelineEntry> &fromOptimize, ThreadPool &pool,
                                        const fs::path &scratch, const std::vector<std::string> &optsTexts,
                                        const std::vector<std::string> &names) {
  struct Net {
    Module m;
    Steps g;
    std::map<BufKey, Mem> mem;
    std::vector<double> best;
    explicit Net(Module &&mod) : m(std::move(mod)) {}
  };
  std::vector<std::unique_ptr<Net>> nets;
  for (const std::string &text : optsTexts) {
    CompileOptions co;
    co.target = req.base.target;
    co.render = req.base.render;
    co.render.allowCustom = false;
    co.pipeline = withOptimize(fromOptimize, -1, text);
    std::ostringstream out, err;
    auto n = std::make_unique<Net>(compile(readGraphBinary(preOptimize, req.input), co, out, err));
    const Schedule &s = *n->m.schedule();
    std::vector<size_t> which;
    for (size_t i = 0; i < s.steps.size(); ++i)
      if (s.steps[i].kind == SchedStep::Kind::Kernel) which.push_back(i);
    n->g = prepare(n->m, which, req.base.render.cpu, scratch);
    for (const auto &[key, sz] : n->g.sizes) {
      Mem &x = n->mem[key];
      x.dtype = sz.second;
      x.resize(sz.first);
      fill(x, key);
    }
    runSteps(n->g, n->mem, pool, true);
    n->best.assign(n->g.steps.size(), INFINITY);
    nets.push_back(std::move(n));
  }
  auto t = Clock::now();
  for (size_t round = 0; round < 30; ++round) {
    if (round >= 5 && secondsSince(t) > 2.0) break;
    for (size_t j = 0; j < nets.size(); ++j) { // (in turns, starting with another each round)
      Net &n = *nets[(j + round) % nets.size()];
      runSteps(n.g, n.mem, pool, false, &n.best);
    }
  }
  std::vector<NetworkTimes> r;
  for (const auto &n : nets) {
    const Schedule &s = *n->m.schedule();
    std::map<size_t, size_t> position; // schedule step -> index in n->g.steps
    for (size_t i = 0, k = 0; i < s.steps.size(); ++i)
      if (s.steps[i].kind == SchedStep::Kind::Kernel) position[i] = k++;
    NetworkTimes times;
    for (size_t k = 0; k < n->g.steps.size(); ++k)
      if (!n->g.steps[k].once) times.total += n->best[k];
    for (const std::string &name : names) {
      double sum = 0;
      for (size_t i : stepsOf(s, name))
        if (!n->g.steps[position.at(i)].once) sum += n->best[position.at(i)];
      times.kernels[name] = sum;
    }
    r.push_back(std::move(times));
  }
  return r;
}

} // namespace

std::string kernelHash(Context &c, const UOp *call) {
  Graph g; // (the caller's Context, borrowed: released, never freed, on the way out)
  g.ctx.reset(&c);
  struct Borrowed {
    Graph &g;
    ~Borrowed() { (void)g.ctx.release(); }
  } borrowed{g};
  g.root = canonicalKernelBody(c, kernelSink(call));
  AsmOptions o = AsmOptions::full();
  o.producer = false;
  return Sha256::hex(printGraphText(g, o));
}

TuneResult tuneKernels(const TuneRequest &req, std::ostream &log) {
  auto t0 = Clock::now();
  const std::string prefix = "uopc: tune: ";
  // the heuristic's compile: the kernels before optimize (names, hashes, shapes) and the opts it chose
  std::vector<KernelFacts> facts;
  CompileOptions co;
  co.target = req.base.target;
  co.render = req.base.render;
  co.pipeline = req.base.pipeline;
  std::string preOptimize; // (the graph before optimize, for the candidates' compiles)
  co.instrumentation.beforePass = [&](std::string_view pass, const Graph &g) {
    if (pass != "optimize" || !preOptimize.empty()) return;
    preOptimize = writeGraphBinary(g);
    for (const UOp *u : topLevelNodes(g.root))
      if (u->op == Op::CALL && u->nsrc > 0 && u->src(0)->op == Op::SINK) {
        const Arg *n = u->src(0)->arg && u->src(0)->arg->kind == ArgKind::Record ? u->src(0)->arg->field("name") : nullptr;
        if (n && n->kind == ArgKind::String) facts.push_back(factsOf(*g.ctx, u, std::string(n->str())));
      }
  };
  // (the lists as optimize applied them, not as the kernels end: the passes after it record what they add,
  // blocked-layout a pool's channel lanes, which optimize given them by hand would apply itself and so make no
  // lane reader of that pool: SqueezeNet with every kernel's final list by hand 2.85 -> 4.50 ms, its pools
  // and the convolutions around them reading planes)
  std::map<std::string, std::vector<std::string>> heuristic;
  co.instrumentation.afterPass = [&](std::string_view pass, const Graph &g, bool) {
    if (pass != "optimize") return;
    for (const UOp *u : topLevelNodes(g.root))
      if (u->op == Op::CALL && u->nsrc > 0 && u->src(0)->op == Op::SINK) {
        const Arg *n = u->src(0)->arg && u->src(0)->arg->kind == ArgKind::Record ? u->src(0)->arg->field("name") : nullptr;
        if (n && n->kind == ArgKind::String) heuristic[std::string(n->str())] = appliedOpts(u->src(0));
      }
  };
  {
    std::ostringstream out, err;
    Module m = compile(readGraphFile(req.input), co, out, err);
  }
  std::string userOpts;
  for (const PipelineEntry &e : req.base.pipeline)
    if (e.pass->flag == "optimize")
      if (auto it = e.options.find("opts"); it != e.options.end()) userOpts = it->second;
  auto hand = optimize::parseHandOpts(userOpts);

  // the distinct kernels, in order of first appearance
  struct Kernel {
    std::vector<size_t> members; ///< indices into facts
    std::string from;            ///< heuristic, hand, search or database
    std::vector<std::string> opts;
    bool given = false; ///< its opts go to optimize by hand (database, search)
  };
  std::vector<Kernel> kernels;
  std::map<std::string, size_t> byHash;
  for (size_t i = 0; i < facts.size(); ++i) {
    auto [it, fresh] = byHash.try_emplace(facts[i].hash, kernels.size());
    if (fresh) kernels.push_back({});
    kernels[it->second].members.push_back(i);
  }

  TuneDb db = readTuneDb(req.dbPath, req.search);
  MachineId machine = thisMachine(req.base.render.cpu);
  unsigned hw = std::thread::hardware_concurrency();
  int threads = hw ? static_cast<int>(hw) : 1;
  auto keyOf = [&](const Kernel &k) {
    return TuneKey{facts[k.members[0]].hash, std::string(req.base.target->name), machine.cpu, machine.features, threads};
  };
  std::vector<size_t> toSearch;
  size_t fromDb = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    Kernel &k = kernels[i];
    const KernelFacts &f = facts[k.members[0]];
    k.opts = heuristic[f.name];
    k.from = "heuristic";
    if (std::any_of(k.members.begin(), k.members.end(), [&](size_t m) { return hand.count(facts[m].name); })) {
      k.from = "hand";
      continue;
    }
    if (const TuneEntry *e = db.find(keyOf(k))) {
      k.opts = e->opts;
      k.from = e->searched ? "search" : "database";
      k.given = true;
      ++fromDb;
      log << prefix << "kernel " << i + 1 << "/" << kernels.size() << " " << f.name << ": " << listText(k.opts)
          << " from the database (no timing)\n";
      continue;
    }
    if (req.search && f.tunable) toSearch.push_back(i);
  }

  // optimize's opts= text: the user's --kernel-opts, then NAME/OPT/... of every kernel whose opts the database
  // or the search gave, but those in `plain` (left to the heuristic)
  auto text = [&](const std::set<size_t> &plain) {
    std::string t = userOpts;
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (!kernels[i].given || plain.count(i)) continue;
      for (size_t m : kernels[i].members)
        t += (t.empty() ? "" : ";") + facts[m].name + (kernels[i].opts.empty() ? "" : "/" + joined(kernels[i].opts, "/"));
    }
    return t;
  };
  double searchSeconds = 0;
  size_t unsearched = 0; // kernels left unsearched: the budget was spent
  if (!toSearch.empty()) {
    // the reference: every kernel as it is (--opt-level 0), for the llvm target
    CompileOptions ro;
    ro.target = findTarget("llvm");
    ro.render = req.base.render;
    ro.render.allowCustom = false;
    // (the pipeline from optimize on, run on the graph as it was before it)
    std::vector<PipelineEntry> fromOptimize = req.base.pipeline;
    auto at = std::find_if(fromOptimize.begin(), fromOptimize.end(), [](const PipelineEntry &e) { return e.pass->flag == "optimize"; });
    fromOptimize.erase(fromOptimize.begin(), at);
    const std::vector<PipelineEntry> wholeFromOptimize = fromOptimize; // (for the check in the network)
    // (without concat-in-place: a kernel is timed alone, on what it reads and writes; merged with its input, its
    // output would start with whatever that buffer held, and every candidate of a concatenating kernel, the
    // heuristic's too, be discarded as wrong. The compile with the chosen opts runs it as usual.)
    std::erase_if(fromOptimize, [](const PipelineEntry &e) { return e.pass->flag == "concat-in-place"; });
    ro.pipeline = withOptimize(fromOptimize, 0, "");
    std::ostringstream out, err;
    Module reference = compile(readGraphBinary(preOptimize, req.input), ro, out, err);
    ThreadPool pool(threads);
    // (a private directory for the C candidates' builds, removed on the way out)
    std::error_code tmpError;
    fs::path tmp = fs::temp_directory_path(tmpError);
    if (tmpError) tmp = "/tmp";
    std::string scratchName = (tmp / "uopc-tune-XXXXXX").string();
    if (!mkdtemp(scratchName.data())) fail("cannot create a directory for the tuning builds in '" + tmp.string() + "': " + std::strerror(errno));
    const fs::path scratch = scratchName;
    struct RemoveScratch {
      fs::path dir;
      ~RemoveScratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    } removeScratch{scratch};
    // the budget: what is left of it, shared by the kernels still to search by their estimated work (the
    // largest first)
    std::stable_sort(toSearch.begin(), toSearch.end(), [&](size_t a, size_t b) { return facts[kernels[a].members[0]].work > facts[kernels[b].members[0]].work; });
    double weightLeft = 0;
    for (size_t i : toSearch) weightLeft += facts[kernels[i].members[0]].work;
    for (size_t i : toSearch) {
      Kernel &k = kernels[i];
      const KernelFacts &f = facts[k.members[0]];
      double left = std::max(0.0, req.budgetSeconds - secondsSince(t0));
      if (left <= 0) { // (its entry stays out of the database: a later --tune searches it)
        ++unsearched;
        continue;
      }
      double share = weightLeft > 0 ? left * f.work / weightLeft : left;
      weightLeft -= f.work;
      // (a small kernel gets an even share, up to half a second, of what is left)
      size_t after = static_cast<size_t>(toSearch.end() - std::find(toSearch.begin(), toSearch.end(), i));
      share = std::max(share, std::min(0.5, left / static_cast<double>(after)));
      auto ks = Clock::now();
      std::string where = prefix + "kernel " + std::to_string(i + 1) + "/" + std::to_string(kernels.size()) + " " + f.name + ": ";
      if (auto found = req.testFound.find(f.name); found != req.testFound.end()) {
        log << where << "found " << listText(found->second) << " (--tune-test-found: not searched)\n";
        k.opts = found->second;
        k.from = "search";
        k.given = true;
        db.put({keyOf(k), k.opts, TuneSearched{0, 0, 0, 0}});
        continue;
      }
      // (every other kernel's heuristic list by hand, after the user's)
      std::string others = userOpts;
      for (const KernelFacts &o : facts)
        if (o.name != f.name && !hand.count(o.name))
          others += (others.empty() ? "" : ";") + o.name + (heuristic[o.name].empty() ? "" : "/" + joined(heuristic[o.name], "/"));
      Search s{req, f, others, preOptimize, fromOptimize, reference, pool, scratch, {}, {}, {}, 0, 0, 0, {}, 0};
      try {
        s.start();
      } catch (const Error &e) {
        log << where << "not searched (" << e.what() << ")\n";
        continue;
      }
      std::set<std::string> tried;
      auto attempt = [&](const std::vector<std::string> &opts) -> Search::Compiled {
        if (!tried.insert(joined(opts, "/")).second) return nullptr;
        return s.build(opts);
      };
      std::vector<std::string> best = k.opts;
      Search::Compiled heuristicSteps = attempt(k.opts), bestSteps = heuristicSteps;
      double heuristicNs = heuristicSteps ? s.time(*heuristicSteps) : 0, bestNs = heuristicNs;
      // (every later candidate's build ends with the share: one whose compiler would run past it is stopped)
      s.until = ks + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(share));
      log << where << "heuristic " << listText(k.opts) << " "
          << (heuristicSteps ? ms(heuristicNs) : s.wrong ? std::string("discarded: its outputs differ from --opt-level 0's") : std::string("refused"))
          << "\n";
      // a candidate 3% faster than the best so far is timed again in turns with it, and kept if it still is
      auto consider = [&](const std::vector<std::string> &opts) {
        Search::Compiled c = attempt(opts);
        if (!c) return false;
        double t = s.time(*c, bestNs);
        if (bestSteps && t >= 0.97 * bestNs) return false;
        if (bestSteps) {
          auto [tc, tb] = s.alternate(*c, *bestSteps);
          if (tc >= 0.97 * tb) return false;
          t = tc;
        }
        best = opts, bestSteps = c, bestNs = t;
        log << where << "best so far " << listText(best) << " " << ms(bestNs) << "\n";
        return true;
      };
      // (no opts at all only where the heuristic's list was refused or wrong: it never became the best so far in
      // the 20 searches of bench/networks.py --tune, 9c3b233, and as a convolution's first candidate it is the
      // slowest to run)
      if (!heuristicSteps) consider({});
      // hill climbing: move to the first neighbour that is faster, until none is or the share is spent
      bool moved = true;
      while (moved && secondsSince(ks) < share) {
        moved = false;
        for (const std::vector<std::string> &n : tuneNeighbours(best, f)) {
          if (secondsSince(ks) >= share) break;
          if (consider(n)) {
            moved = true;
            break;
          }
        }
      }
      // the heuristic's list is kept unless the best is still 3% faster timed in turns with it
      if (bestSteps && heuristicSteps && bestSteps != heuristicSteps) {
        auto [tb, th] = s.alternate(*bestSteps, *heuristicSteps);
        heuristicNs = th;
        if (tb >= 0.97 * th) {
          log << where << "the heuristic's " << listText(k.opts) << " " << ms(th) << " against " << ms(tb)
              << " timed in turns: kept\n";
          best = k.opts, bestSteps = heuristicSteps, bestNs = th;
        } else {
          bestNs = tb;
        }
      }
      if (!bestSteps) bestNs = 0;
      double took = secondsSince(ks);
      searchSeconds += took;
      if (bestNs <= 0) {
        log << where << "no candidate ran (" << s.refused << " refused, " << s.wrong << " wrong): the heuristic's opts kept\n";
        continue;
      }
      std::ostringstream line;
      line << where << "kept " << listText(best) << " " << ms(bestNs);
      if (heuristicNs > 0) line << std::fixed << std::setprecision(2) << " (" << heuristicNs / bestNs << "x the heuristic's)";
      line << ", " << s.candidates << " candidates (" << s.refused << " refused, " << s.wrong << " wrong";
      if (s.slow) line << ", " << s.slow << " stopped building at the budget";
      line << ") in "
           << std::setprecision(2) << took << " s";
      log << line.str() << "\n";
      k.opts = best;
      k.from = "search";
      k.given = true;
      db.put({keyOf(k), best, TuneSearched{s.candidates, took, bestNs, heuristicNs}});
    }
    // the check in the network: the lists kept for kernels timed alone are kept where the network runs faster
    // with them: first each kernel where its own steps are 3% faster in the network (the heuristic's list
    // restored for the others), then all of them where the whole network is 1% faster (else the heuristic's
    // lists for all: a kernel's opts can change how its neighbours read its output, SqueezeNet's searched
    // lists ran their network 6-26% slower, and faster alone)
    std::vector<size_t> changed;
    for (size_t i : toSearch)
      if (kernels[i].from == "search" && kernels[i].opts != heuristic[facts[kernels[i].members[0]].name]) changed.push_back(i);
    if (!changed.empty()) {
      auto ks = Clock::now();
      std::set<size_t> all(changed.begin(), changed.end()), restored;
      auto restore = [&](size_t i, double ns) {
        Kernel &k = kernels[i];
        const TuneEntry *e = db.find(keyOf(k));
        TuneSearched was = e && e->searched ? *e->searched : TuneSearched{};
        k.opts = heuristic[facts[k.members[0]].name];
        db.put({keyOf(k), k.opts, TuneSearched{was.candidates, was.seconds, ns, ns}});
        restored.insert(i);
      };
      try {
        std::vector<std::string> names;
        for (size_t i : changed)
          for (size_t m : kernels[i].members) names.push_back(facts[m].name);
        // (--tune-test-network-factor: the searched lists' times scaled, for tests)
        auto scaled = [&](std::vector<NetworkTimes> t) {
          if (req.testNetworkFactor > 0) {
            for (auto &[name, ns] : t[1].kernels) ns *= req.testNetworkFactor;
            t[1].total *= req.testNetworkFactor;
          }
          return t;
        };
        std::vector<NetworkTimes> t = scaled(timeInNetwork(req, preOptimize, wholeFromOptimize, pool, scratch, {text(all), text({})}, names));
        std::map<size_t, double> plainNs; // (each kernel's, with the heuristic's list, in the network)
        for (size_t i : changed) {
          const Kernel &k = kernels[i];
          const std::string &name = facts[k.members[0]].name;
          double tuned = 0, plain = 0;
          for (size_t m : k.members) tuned += t[1].kernels.at(facts[m].name), plain += t[0].kernels.at(facts[m].name);
          bool keep = tuned < 0.97 * plain;
          plainNs[i] = plain;
          log << prefix << "in the network: " << name << (k.members.size() > 1 ? " (" + std::to_string(k.members.size()) + " kernels)" : "")
              << " " << listText(k.opts) << " " << ms(tuned) << " against the heuristic's " << listText(heuristic[name]) << " "
              << ms(plain) << ": " << (keep ? "kept" : "the heuristic's restored") << "\n";
          if (!keep) restore(i, plain);
        }
        double plainTotal = t[0].total, tunedTotal = t[1].total;
        if (restored.size() < changed.size() && !restored.empty()) {
          t = scaled(timeInNetwork(req, preOptimize, wholeFromOptimize, pool, scratch, {text(all), text({})}, {}));
          plainTotal = t[0].total, tunedTotal = t[1].total;
        }
        if (restored.size() < changed.size()) {
          bool keep = tunedTotal < 0.99 * plainTotal;
          log << prefix << "in the network: " << changed.size() - restored.size() << " searched lists " << ms(tunedTotal)
              << " against the heuristic's " << ms(plainTotal) << ": " << (keep ? "kept" : "the heuristic's restored") << "\n";
          if (!keep)
            for (size_t i : changed)
              if (!restored.count(i)) restore(i, plainNs[i]);
        }
      } catch (const Error &e) {
        log << prefix << "the searched lists not checked in the network (" << e.what() << "): kept\n";
      }
      double took = secondsSince(ks);
      searchSeconds += took;
      std::ostringstream line;
      line << prefix << "checked in the network in " << std::fixed << std::setprecision(2) << took << " s";
      log << line.str() << "\n";
    }
  }

  TuneResult r;
  r.kernelOpts = text({});
  size_t kept = 0, byHand = 0;
  for (const Kernel &k : kernels) {
    for (size_t m : k.members) r.optsFrom[facts[m].name] = k.from;
    kept += k.from == "heuristic";
    byHand += k.from == "hand";
  }
  r.fromDatabase = fromDb > 0;
  size_t nSearched = 0;
  for (size_t i : toSearch) nSearched += kernels[i].from == "search";
  std::ostringstream summary;
  summary << prefix << kernels.size() << " kernels: " << fromDb << " from the database, ";
  if (nSearched) summary << nSearched << " searched in " << std::fixed << std::setprecision(1) << searchSeconds << " s, ";
  else summary << "none searched (no timing), ";
  summary << kept << " heuristic";
  if (unsearched) summary << " (" << unsearched << " not searched: the budget was spent; a later --tune searches them)";
  if (byHand) summary << ", " << byHand << " by hand";
  if (nSearched) {
    writeTuneDb(db, req.dbPath);
    summary << "; database " << req.dbPath << " written";
  }
  log << summary.str() << "\n";
  return r;
}

} // namespace uopc
