//===- Rangeify.cpp - the `rangeify` pass: where ranges start (what is materialized) ===//
// Seed 003's get_kernel_graph up to stage removal. A value gets its own ranges (becomes a STAGE, a
// buffer a kernel writes) when tinygrad would realize it:
//  - consumed more than once (consumes counted as in rangeify2: an EXPAND multiplies its source's
//    consumption by the expansion factor), for ALU and REDUCE values that live on a device;
//  - the source of a COPY or of multi-lower's kept ALLREDUCE (both move a buffer), unless it already is one.
// Then stages that do not pay for themselves are removed, one at a time, first qualifying candidate in
// topological order (rangeify2's loop), on the indexing each kernel really does (Rangeify/Lower.h); done
// incrementally (only the kernels and candidates a removal touches are looked at again), with the
// decisions of re-lowering every kernel after each removal:
//  - several distinct indexings: recompute when the stage is cheap (recompute_cost <= MAX_RECOMPUTE) and
//    the consumers' work is at most numel x indexings;
//  - one indexing: recompute when cheap and no more work than the stage itself, or scalar/small
//    (cost <= MAX_SCALAR_RECOMPUTE), or random bits (THREEFRY); a stage containing a reduction is fused
//    into its only consumer when that consumer evaluates each of its elements exactly once (never
//    duplicate a reduction).
// "Work" is the work model's (docs/rangeify.md): consumption counts implicit broadcasts, and each read
// knows how often it executes in its kernel's loops, so nothing expensive lands in a loop it does not need.
// Then the kernel size bound (option max-kernel-ops=N, default 20,000; 0: none): a kernel computing more
// than N data ops (elementwise ops and reductions on data: index math, movement ops and reads are free)
// has values of its cone staged, not removable, so that every kernel is within N and no op is computed in
// two kernels (Rangeify/KernelBound.h: segments of the cone ending where few values are live): a
// valid graph a million ops deep (one STORE of a chain, every value read once) would otherwise be one
// kernel that the C compiler cannot build (gcc 12's cc1 crashed on its 47 MB of C). Kernels within N are
// untouched, so ordinary graphs are as before (the largest corpus kernel has 1,542 ops).
// What stays is marked STAGE(x) (arg BufferizeOpts); kernel-split builds the kernels.
//
// Precondition: invalid-pad, multi-lower and reduce-identity ran (tensor-level graph, no MULTI forms; an
// ALLREDUCE only as multi-lower's collective, arg [op, devices, order], materialized like a COPY).
#include "IR/Error.h"
#include "IR/Records.h"
#include "IR/Work.h"
#include "Passes/Passes.h"
#include "Passes/Rangeify/KernelBound.h"
#include "Passes/Rangeify/Lower.h"
#include "Passes/Rangeify/StateCheck.h"
#include "Passes/Rewrite.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

using namespace rangeify;

constexpr int64_t kMaxRecompute = 8;
constexpr int64_t kMaxScalarRecompute = 64;
/// rangeify{max-kernel-ops}'s default: the most data ops one kernel computes. gcc 12 -O3 builds a
/// 20,000-op kernel in about 5 s and 140 MB (docs/rangeify.md).
constexpr int64_t kDefaultMaxKernelOps = 20000;
constexpr int kMaxBoundRounds = 8;

/// tinygrad's fix_store_hazard: a STORE whose value reads the buffer it writes through a PERMUTE or a FLIP
/// (or a SHRINK, when the target is itself a shrunk view) would, as one kernel, read elements it has
/// already overwritten (x = x.flip() in place). Its value is made CONTIGUOUS: computed into a buffer of its
/// own first, then copied into the target.
const UOp *fixStoreHazards(Context &c, const UOp *root) {
  std::unordered_map<const UOp *, const UOp *> repl;
  for (const UOp *st : toposort(root)) {
    if (st->op != Op::STORE || st->nsrc < 2) continue;
    const UOp *target = st->src(0), *value = st->src(1);
    bool targetShrinks = false;
    const UOp *base = target;
    while ((isMovement(base->op) || base->op == Op::AFTER) && base->nsrc > 0) {
      targetShrinks |= base->op == Op::SHRINK;
      base = base->src(0);
    }
    // post-order walk of the value, not into CONTIGUOUS (already its own buffer) nor an AFTER's
    // dependencies (the stores it waits for are not read)
    std::unordered_map<const UOp *, bool> reaches;
    std::vector<std::pair<const UOp *, size_t>> work{{value, 0}};
    bool hazard = false;
    while (!work.empty() && !hazard) {
      auto &[u, next] = work.back();
      size_t n = u->op == Op::CONTIGUOUS ? 0 : u->op == Op::AFTER ? std::min<size_t>(1, u->nsrc) : u->nsrc;
      if (next < n) {
        const UOp *s = u->src(next++);
        if (!reaches.count(s)) work.push_back({s, 0});
        continue;
      }
      bool r = u == base;
      for (size_t i = 0; i < n && !r; ++i) r = reaches[u->src(i)];
      reaches[u] = r;
      if (r && (u->op == Op::PERMUTE || u->op == Op::FLIP || (u->op == Op::SHRINK && targetShrinks && u != target)))
        hazard = true;
      work.pop_back();
    }
    if (hazard)
      repl[st] = c.make(Op::STORE, st->dtype, {target, c.make(Op::CONTIGUOUS, value->dtype, {value})}, st->arg, st->tag);
  }
  return repl.empty() ? root : substitute(c, root, repl);
}

std::optional<int64_t> numelOf(ShapeInfo &si, const UOp *u) {
  const auto &s = si.shape(u);
  if (!s) return std::nullopt;
  int64_t n = 1;
  for (const UOp *d : *s) {
    auto c = ShapeInfo::constDim(d);
    if (!c) return std::nullopt;
    n *= *c;
  }
  return n;
}

// consumption counts saturate: only "more than once" matters, and broadcasts multiply
int64_t satMul(int64_t a, int64_t b) { return (b != 0 && a > INT64_MAX / b) ? INT64_MAX : a * b; }
int64_t satAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

bool isWeak(DType dt) { return dt == DType::WeakInt || dt == DType::WeakFloat; }

// What stage removal asks about a candidate's recompute cone (the nodes a kernel inlining it computes,
// up to materialized values): recomputeCost (capped: only <= kMaxScalarRecompute matters) and whether
// it holds a THREEFRY. Kept across removals, exactly: a cone only grows when a stage is removed, so a
// REDUCE or THREEFRY once in it stays; otherwise the answer is composed from the removed candidates the
// walk meets (their own answers, cached), and dropped when a materialized node the walk stopped at is
// removed, or when one of the composed answers is.
class ConeFacts {
public:
  static constexpr int64_t kCap = kMaxScalarRecompute + 1;
  std::function<bool(const UOp *)> isMat, isRemoved;
  std::function<void(const UOp *)> changed; ///< a staged candidate whose answer was dropped

  std::optional<int64_t> cost(const UOp *x) {
    if (auto it = cost_.find(x); it != cost_.end()) return it->second;
    std::vector<const UOp *> inner;
    std::unordered_set<const UOp *> seen;
    std::vector<const UOp *> st{x};
    bool reduce = false;
    while (!st.empty() && !reduce) {
      const UOp *u = st.back();
      st.pop_back();
      if (!seen.insert(u).second) continue;
      if (u != x && isMat(u)) {
        costDeps_.mat[u].push_back(x);
        continue;
      }
      if (u != x && isRemoved(u)) {
        inner.push_back(u);
        continue;
      }
      if (Lowerer::isBuffer(u) || u->op == Op::AFTER || u->op == Op::CONST || u->op == Op::PARAM) continue;
      if (u->op == Op::REDUCE) reduce = true;
      for (const UOp *s : u->src()) st.push_back(s);
    }
    std::optional<int64_t> r;
    bool capped = false;
    if (!reduce) {
      r = 0;
      for (const UOp *i : inner) {
        auto ci = cost(i);
        costDeps_.info[i].push_back(x);
        if (!ci) r.reset();
        else if (*ci >= kCap) capped = true;
        if (!r) break;
      }
    }
    if (r && capped) r = kCap;
    else if (r) r = recomputeCost(x, isMat); // the whole cone: no REDUCE in it (checked above)
    if (r) r = std::min(*r, kCap);
    cost_[x] = r;
    return r;
  }

  /// Whether the cone holds a THREEFRY (random bits: always recomputed, as tinygrad does).
  bool threefry(const UOp *x) { return contains(kThreefry, x); }
  /// Whether the cone holds a transcendental (EXP2, LOG2, SIN, POW): never placed where it would be
  /// evaluated more often than once per element.
  bool transcendental(const UOp *x) { return contains(kTranscendental, x); }

  /// `s` is no longer materialized: drop what depended on that.
  void removed(const UOp *s) {
    drop(cost_, costDeps_, s);
    for (int k = 0; k < kKinds; ++k) drop(has_[k], hasDeps_[k], s);
  }

private:
  enum { kThreefry, kTranscendental, kKinds };
  static bool isKind(int kind, Op op) {
    if (kind == kThreefry) return op == Op::THREEFRY;
    return op == Op::EXP2 || op == Op::LOG2 || op == Op::SIN || op == Op::POW;
  }
  bool contains(int kind, const UOp *x) {
    auto &cache = has_[kind];
    if (auto it = cache.find(x); it != cache.end()) return it->second;
    std::vector<const UOp *> inner;
    std::unordered_set<const UOp *> seen;
    std::vector<const UOp *> st{x};
    bool found = false;
    while (!st.empty() && !found) {
      const UOp *u = st.back();
      st.pop_back();
      if (!seen.insert(u).second) continue;
      if (u != x && isMat(u)) {
        hasDeps_[kind].mat[u].push_back(x);
        continue;
      }
      if (u != x && isRemoved(u)) {
        inner.push_back(u);
        continue;
      }
      if (isKind(kind, u->op)) found = true;
      for (const UOp *s : u->src()) st.push_back(s);
    }
    for (size_t i = 0; i < inner.size() && !found; ++i) {
      found = contains(kind, inner[i]);
      hasDeps_[kind].info[inner[i]].push_back(x);
    }
    cache[x] = found;
    return found;
  }

  struct Deps {
    std::unordered_map<const UOp *, std::vector<const UOp *>> mat, info;
  };
  std::unordered_map<const UOp *, std::optional<int64_t>> cost_;
  std::unordered_map<const UOp *, bool> has_[kKinds];
  Deps costDeps_, hasDeps_[kKinds];

  template <typename M> void drop(M &cache, Deps &d, const UOp *s) {
    std::vector<const UOp *> work;
    if (auto it = d.mat.find(s); it != d.mat.end()) {
      work = std::move(it->second);
      d.mat.erase(it);
    }
    while (!work.empty()) {
      const UOp *t = work.back();
      work.pop_back();
      if (!cache.erase(t)) continue;
      changed(t);
      if (auto it = d.info.find(t); it != d.info.end()) {
        work.insert(work.end(), it->second.begin(), it->second.end());
        d.info.erase(it);
      }
    }
  }
};

/// Activation tops: a candidate x consumed only by a small elementwise function of it and constants (a ReLU,
/// WHERE(0 < x, x, 0), reads x twice: that is why x is a candidate) gets that function's result e as a
/// candidate too. The removal loop then fuses x into e's kernel (e reads each element of x once) and e is
/// what stays when its readers pay for it: a convolution reading e at 9 taps loads the activated value, where
/// with x staged it would apply the function at every read, inside its register tile, once per broadcast lane
/// group (DenseNet-121's 3x3 convolution 128->32, one thread: 5.7 ms with the ReLU at each read, 2.1-2.8
/// without: gcc spells the ReLU as compare + blend ahead of each broadcast). When e's readers do not pay
/// for it (an elementwise consumer, each element read once), the rules remove e as any other stage.
/// Candidates stay in topological order.
void addActivationTops(ShapeInfo &si, const std::vector<const UOp *> &topo, std::vector<const UOp *> &candidates) {
  constexpr size_t kMaxTopOps = 4;
  std::unordered_map<const UOp *, std::vector<const UOp *>> users;
  std::unordered_map<const UOp *, size_t> pos;
  for (size_t k = 0; k < topo.size(); ++k) {
    pos.emplace(topo[k], k);
    const UOp *u = topo[k];
    for (size_t i = 0; i < u->nsrc; ++i)
      if (std::find(u->src().begin(), u->src().begin() + static_cast<long>(i), u->src(i)) == u->src().begin() + static_cast<long>(i))
        users[u->src(i)].push_back(u);
  }
  std::unordered_set<const UOp *> isCand(candidates.begin(), candidates.end());
  std::vector<const UOp *> added;
  for (const UOp *x : candidates) {
    auto n = numelOf(si, x);
    if (!n) continue;
    // the elementwise nodes above x, of x's size, whose other sources are constants: a region R closed
    // under users except for one exit e (every user of R's other nodes is in R)
    std::vector<const UOp *> region;
    std::unordered_set<const UOp *> inRegion;
    std::vector<const UOp *> work{x};
    bool ok = true;
    size_t aluOps = 0;
    while (!work.empty() && ok) {
      const UOp *u = work.back();
      work.pop_back();
      auto it = users.find(u);
      if (it == users.end()) continue;
      for (const UOp *v : it->second) {
        if (inRegion.count(v)) continue;
        // (RESHAPEs of x before the first ALU op: a convolution's sum reshaped to NCHW before its ReLU when
        // it has no bias or batchnorm; not after, where the function's result is what gets reshaped)
        bool reshape = v->op == Op::RESHAPE && (v->src(0) == x || (inRegion.count(v->src(0)) && v->src(0)->op == Op::RESHAPE));
        if ((!isALU(v->op) && !reshape) || isWeak(v->dtype) || numelOf(si, v) != n || si.device(v) != si.device(x)) continue;
        bool constOthers = reshape || std::all_of(v->src().begin(), v->src().end(), [&](const UOp *s) {
          return s == x || inRegion.count(s) || s->op == Op::CONST;
        });
        if (!constOthers) continue;
        if (!reshape && ++aluOps > kMaxTopOps) {
          ok = false;
          break;
        }
        region.push_back(v);
        inRegion.insert(v);
        work.push_back(v);
      }
    }
    if (!ok || region.empty()) continue;
    // the exit: the one node of R (or x) with a user outside R
    std::vector<const UOp *> exits;
    for (const UOp *u : region) {
      auto it = users.find(u);
      bool out = it == users.end() || std::any_of(it->second.begin(), it->second.end(), [&](const UOp *v) { return !inRegion.count(v); });
      if (out) exits.push_back(u);
    }
    auto xu = users.find(x);
    bool xOut = xu != users.end() && std::any_of(xu->second.begin(), xu->second.end(), [&](const UOp *v) { return !inRegion.count(v); });
    if (exits.size() != 1 || xOut) continue;
    const UOp *e = exits[0];
    if (!isALU(e->op) || e->dtype == DType::Bool || isCand.count(e) || !si.shape(e)) continue;
    added.push_back(e);
    isCand.insert(e);
  }
  if (added.empty()) return;
  candidates.insert(candidates.end(), added.begin(), added.end());
  std::sort(candidates.begin(), candidates.end(), [&](const UOp *a, const UOp *b) { return pos.at(a) < pos.at(b); });
}

} // namespace

void runRangeify(Graph &g, const PassContext &pc) {
  Context &c = *g.ctx;
  checkStateCycles(g, g.root);
  const UOp *root = fixStoreHazards(c, normalizeAfters(c, g.root));
  ShapeInfo si(g);
  std::vector<const UOp *> topo = toposort(root);
  for (const UOp *u : topo)
    if (u->op == Op::MULTI || u->op == Op::MSELECT || u->op == Op::MSTACK || (u->op == Op::ALLREDUCE && u->arg->count != 3) ||
        u->op == Op::CALL || u->op == Op::FUNCTION)
      fail("rangeify: " + g.describe(u) + " must be lowered first (run multi-lower)");

  // how often each value is consumed (rangeify2's consumes), and the stage candidates
  NodeMap<int64_t> consumes(0);
  std::vector<const UOp *> candidates;
  std::unordered_set<const UOp *> forced;
  for (size_t k = topo.size(); k-- > 0;) {
    const UOp *u = topo[k];
    int64_t n = consumes[u];
    bool onDevice = !si.device(u).empty();
    if ((isALU(u->op) || u->op == Op::REDUCE) && n > 1 && onDevice && !isWeak(u->dtype) && si.shape(u)) {
      candidates.push_back(u);
      n = 1;
    }
    if (u->op == Op::STORE) n = 1;
    if (u->op == Op::EXPAND) {
      auto a = numelOf(si, u), b = numelOf(si, u->src(0));
      if (a && b && *b > 0) n = satMul(n, *a / *b);
    }
    if (u->op == Op::COPY || u->op == Op::ALLREDUCE) { // (multi-lower's collective: it reads a buffer too)
      const UOp *src = u->op == Op::COPY ? copySource(u).first : u->src(0);
      if (!Lowerer::baseBuffer(src) && src->op != Op::CONTIGUOUS && src->op != Op::STAGE && src->op != Op::COPY)
        forced.insert(src);
    }
    consumes[u] = n;
    // an elementwise op broadcasts a source with fewer elements (size-1 axes): each of its elements is
    // consumed once per element it is broadcast to, exactly as through an explicit EXPAND
    int64_t out = isElementwise(u->op) ? numelOf(si, u).value_or(0) : 0;
    for (size_t i = 0; i < u->nsrc; ++i) {
      if (u->op == Op::STORE && i == 0) continue;
      int64_t m = n;
      if (out > 0 && u->src(i)->op != Op::CONST)
        if (int64_t b = numelOf(si, u->src(i)).value_or(0); b > 0 && out > b) m = satMul(n, out / b);
      consumes[u->src(i)] = satAdd(consumes[u->src(i)], m);
    }
  }
  std::reverse(candidates.begin(), candidates.end());
  if (pc.intOption("store-activations", 1, 0, 1) == 1) addActivationTops(si, topo, candidates);
  std::unordered_set<const UOp *> staged(candidates.begin(), candidates.end());
  for (const UOp *f : forced) staged.insert(f);
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(), [&](const UOp *u) { return forced.count(u); }),
                   candidates.end());

  auto isMat = [&](const UOp *u) {
    return staged.count(u) || u->op == Op::COPY || u->op == Op::ALLREDUCE || u->op == Op::CONTIGUOUS || u->op == Op::STAGE;
  };
  // Stage removal, rangeify2's loop: remove the first candidate (in topological order) that does not pay
  // for itself, re-decide, until none qualifies. Done incrementally with exactly the same decisions:
  //  - one Lowerer for the whole loop (ranges numbered globally, so kernels' indexings still differ);
  //    each kernel keeps the reads of candidates its current lowering does;
  //  - removing stage s touches only the kernels that read s: a reader that would inline no read of a
  //    staged candidate (s's own kernel reads none) just forgets its reads of s, any other is re-lowered;
  //  - a candidate's recompute cost (and THREEFRY) is cached with the materialized nodes its walk stopped
  //    at, and recomputed only when one of those is removed (its cone only grows when stages go);
  //  - a candidate is re-evaluated only when its reads or its cost changed: `pending` holds the
  //    candidates whose verdict is unknown, and every staged candidate outside it does not qualify now,
  //    so the lowest pending one that qualifies is the one the full loop would remove.
  std::unordered_map<const UOp *, size_t> candPos;
  for (size_t i = 0; i < candidates.size(); ++i) candPos.emplace(candidates[i], i);
  Lowerer L(g, si);
  L.isMaterialized = isMat;
  L.stateOf = [&](const UOp *u) -> const UOp * {
    if (Lowerer::isBuffer(u) || u->op == Op::AFTER) return u;
    return c.make(Op::STAGE, u->dtype, {u}); // a placeholder for the buffer holding u
  };
  struct Kernel {
    const UOp *node;                  // the STORE, or the staged/CONTIGUOUS/STAGE node
    std::optional<int64_t> work;
    std::vector<Use> uses;            // reads of staged candidates in its current lowering
    const UOp *body = nullptr;        // its current lowering
    std::optional<std::optional<int64_t>> ops; // its ops by the work model, once asked (fusedWithin)
  };
  std::vector<Kernel> kernels;
  std::unordered_map<const UOp *, int> kernelOf; // candidate -> its kernel
  // candidate -> kernels reading it (with the number of reads)
  std::unordered_map<const UOp *, std::map<int, int>> readers;
  /// Kernel k's body lowered as the stages stand now (node u: its STORE or materialized value); the reads
  /// of staged values it does are left in L.uses.
  auto lowerBody = [&](const UOp *u, int k) {
    L.uses.clear();
    L.beginKernel(k, true);
    if (u->op == Op::STORE) {
      const UOp *base = u->src(0);
      while (isMovement(base->op)) base = base->src(0);
      return L.lowerStore(u->src(0), u->src(1), base);
    }
    const UOp *x = staged.count(u) ? u : u->src(0);
    return L.lowerMaterialize(x, c.make(Op::STAGE, u->dtype, {u}));
  };
  auto lowerKernel = [&](int k) {
    Kernel &K = kernels[static_cast<size_t>(k)];
    for (const Use &us : K.uses) {
      auto &m = readers[us.value];
      if (--m[k] == 0) m.erase(k);
    }
    K.uses.clear();
    K.body = lowerBody(K.node, k);
    K.ops.reset();
    K.work = L.work();
    for (const Use &us : L.uses)
      if (candPos.count(us.value) && staged.count(us.value)) {
        K.uses.push_back(us);
        ++readers[us.value][k];
      }
    L.uses.clear();
  };
  for (const UOp *u : topo) {
    if (u->op == Op::STORE || staged.count(u) || u->op == Op::CONTIGUOUS || u->op == Op::STAGE) {
      if (candPos.count(u)) kernelOf[u] = static_cast<int>(kernels.size());
      kernels.push_back(Kernel{u, std::nullopt, {}, nullptr, std::nullopt});
    }
  }
  for (size_t k = 0; k < kernels.size(); ++k) lowerKernel(static_cast<int>(k));

  // A candidate whose cone holds a REDUCE has no recompute cost (reductions are never recomputed), unless
  // every REDUCE of its lowered form has a closed form (an arange: Symbolic/Reduce.cpp), as in tinygrad,
  // where the reduce collapse runs before bufferizes are removed. Its cost is then the value ops (not the
  // weakint index math) of the collapsed form.
  Lowerer scratch(g, si);
  scratch.isMaterialized = isMat;
  scratch.stateOf = L.stateOf;
  SymbolicCtx scratchSc;
  // Only a reduction of no data (an arange: tinygrad's "REDUCE without loads") has a closed form here:
  // a cone whose REDUCE reads a buffer or a materialized value is not lowered at all (matmuls, softmax).
  auto reducesLoadFree = [&](const UOp *s) {
    std::unordered_set<const UOp *> seen[2]; // outside / under a REDUCE
    std::vector<std::pair<const UOp *, bool>> work{{s, false}};
    while (!work.empty()) {
      auto [u, under] = work.back();
      work.pop_back();
      if (u != s && (isMat(u) || Lowerer::isBuffer(u) || u->op == Op::AFTER)) {
        if (under) return false;
        continue;
      }
      bool next = under || u->op == Op::REDUCE;
      for (const UOp *x : u->src())
        if (seen[next].insert(x).second) work.push_back({x, next});
    }
    return true;
  };
  auto collapsedCost = [&](const UOp *s) -> std::optional<int64_t> {
    if (!reducesLoadFree(s)) return std::nullopt;
    scratch.uses.clear();
    scratch.beginKernel(-1, true);
    const UOp *body = scratch.lowerMaterialize(s, c.make(Op::STAGE, s->dtype, {s}));
    scratch.uses.clear();
    body = simplifyWith(c, body, symRules(), &scratchSc);
    // walk the kernel, not into the placeholders of materialized values (STAGE(x) wraps tensor-level x)
    int64_t n = 0;
    std::vector<const UOp *> stack{body};
    std::unordered_set<const UOp *> seen{body};
    while (!stack.empty()) {
      const UOp *u = stack.back();
      stack.pop_back();
      if (u->op == Op::REDUCE) return std::nullopt;
      if (isALU(u->op) && u->dtype != DType::WeakInt && u->dtype != DType::Bool) ++n;
      if (u->op == Op::STAGE) continue;
      for (const UOp *x : u->src())
        if (seen.insert(x).second) stack.push_back(x);
    }
    return n;
  };

  ConeFacts cone;
  cone.isMat = isMat;
  cone.isRemoved = [&](const UOp *u) { return candPos.count(u) && !staged.count(u); };
  std::set<size_t> pending;
  cone.changed = [&](const UOp *t) {
    if (staged.count(t)) pending.insert(candPos.at(t));
  };

  // A value holding a reduction, read by one kernel at several indexings (layernorm's x - mean(x), read by
  // the variance's reduction and by the output): its elementwise top (the ops above its reductions) is
  // recomputed at each indexing, so it must be cheap: at most kFusedTop ops, no transcendental (softmax's
  // exp(x - max) stays staged). The reader is then lowered with the value inlined, and that is kept when
  // the work model (IR/Work.h) finds the fused kernel doing at most the two kernels' ops plus the top once
  // more per element and extra indexing: a reduction recomputed per element of the reader would cost its
  // whole loop again. It saves writing the value and reading it back. Symbolic work keeps the stage.
  constexpr int64_t kFusedTop = 4;
  auto cheapTop = [&](const UOp *s) -> std::optional<int64_t> {
    int64_t ops = 0;
    std::vector<const UOp *> st{s};
    std::unordered_set<const UOp *> seen{s};
    while (!st.empty()) {
      const UOp *u = st.back();
      st.pop_back();
      if ((u != s && isMat(u)) || u->op == Op::REDUCE || Lowerer::isBuffer(u) || u->op == Op::AFTER) continue;
      if (u->op == Op::EXP2 || u->op == Op::LOG2 || u->op == Op::SIN || u->op == Op::POW) return std::nullopt;
      if (isALU(u->op) && ++ops > kFusedTop) return std::nullopt;
      for (const UOp *x : u->src())
        if (seen.insert(x).second) st.push_back(x);
    }
    return ops;
  };
  auto opsOf = [&](const UOp *body) { return kernelWork(c.make(Op::SINK, DType::Void, {body})).ops.constant(); };
  auto fusedWithin = [&](const UOp *s, int reader, int64_t numel, int64_t indexings) {
    auto top = cheapTop(s);
    if (!top) return false;
    auto opsOfKernel = [&](int k) {
      Kernel &K = kernels[static_cast<size_t>(k)];
      if (!K.body) {
        K.body = lowerBody(K.node, k);
        L.uses.clear();
      }
      if (!K.ops) K.ops = opsOf(K.body);
      return *K.ops;
    };
    const UOp *readerNode = kernels[static_cast<size_t>(reader)].node;
    auto own = opsOfKernel(kernelOf.at(s));
    auto before = opsOfKernel(reader);
    staged.erase(s);
    auto fused = opsOf(lowerBody(readerNode, reader));
    L.uses.clear();
    staged.insert(s);
    if (!own || !before || !fused) return false;
    int64_t limit = satAdd(satAdd(*own, *before), satMul(satMul(numel, indexings - 1), *top));
    return *fused <= limit;
  };

  // uses per stage: distinct indexings, each with the kernels it happens in
  // The work model decides. Inlining a stage at a read computes its value there as often as the read
  // executes (Use::trips: the loop nest around the read, reduction loops included); materializing it
  // computes it numel times. A cheap value (cost <= MAX_RECOMPUTE, no transcendental) is recomputed as
  // tinygrad does: at most once per output element of each reading kernel and indexing (so a padding
  // mask or an index fix-up still fuses into a convolution or a gather). Anything else, and every
  // reduction, is inlined only where each element is evaluated at most once: an expensive value is never
  // placed inside a loop it does not depend on, and a reduction only into one consumer that reads each
  // of its elements once, outside any reduction of that consumer.
  struct Indexing {
    std::set<int> kernels;
    bool underReduce = false, constIndex = true;
  };
  // whether an indexing moves along a reduction loop of its kernel
  auto movesAlongReduce = [](const UOp *key) {
    for (const UOp *u : toposort(key))
      if (u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 2 &&
          u->arg->elems()[1]->kind == ArgKind::AxisType && u->arg->elems()[1]->axisType() == AxisType::REDUCE)
        return true;
    return false;
  };
  // whether an indexing is valid only where a condition holds (WHERE(c, i, Invalid): a padded read)
  auto gated = [](const UOp *key) {
    for (const UOp *u : toposort(key))
      if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Invalid) return true;
    return false;
  };
  auto qualifies = [&](const UOp *s) -> bool {
    auto rit = readers.find(s);
    if (rit == readers.end() || rit->second.empty()) return true;
    std::map<const UOp *, Indexing> idxs;
    // evaluations if inlined, per (indexing, kernel) and per kernel: the most frequent read there
    std::map<std::pair<const UOp *, int>, std::optional<int64_t>> siteTrips;
    std::map<int, std::optional<int64_t>> kernelTrips;
    auto maxInto = [](auto &m, const auto &key, const std::optional<int64_t> &t) {
      auto [it, fresh] = m.try_emplace(key, t);
      if (fresh) return;
      if (!it->second || !t) it->second.reset();
      else it->second = std::max(*it->second, *t);
    };
    for (auto &[k, cnt] : rit->second)
      for (const Use &us : kernels[static_cast<size_t>(k)].uses) {
        if (us.value != s) continue;
        Indexing &ix = idxs[us.key];
        ix.kernels.insert(us.kernel);
        ix.underReduce |= us.underReduce;
        ix.constIndex &= us.constIndex;
        maxInto(siteTrips, std::make_pair(us.key, us.kernel), us.trips);
        maxInto(kernelTrips, us.kernel, us.trips);
      }
    auto numel = numelOf(si, s);
    if (!numel) return false;
    auto cost = cone.cost(s);
    if (!cost) cost = collapsedCost(s);
    bool cheap = cost && *cost <= kMaxRecompute && !cone.transcendental(s);
    // Totals as int64 with -1 for "unknown" (a symbolic size): output elements of the reading kernels
    // per indexing and per distinct kernel (tinygrad's recompute_work, for cheap values), and trips.
    constexpr int64_t kUnknown = -1;
    auto total = [](int64_t acc, const std::optional<int64_t> &w) {
      return acc == kUnknown || !w ? kUnknown : satAdd(acc, *w);
    };
    int64_t outWork = 0, outKernelWork = 0, maxOutWork = 0, tripWork = 0, tripKernelWork = 0, maxTrips = 0;
    for (auto &[k, ix] : idxs) {
      auto w = ix.kernels.size() == 1 ? kernels[static_cast<size_t>(*ix.kernels.begin())].work : std::nullopt;
      outWork = total(outWork, w);
    }
    for (auto &[k, t] : kernelTrips) {
      const auto &w = kernels[static_cast<size_t>(k)].work;
      outKernelWork = total(outKernelWork, w);
      maxOutWork = maxOutWork == kUnknown || !w ? kUnknown : std::max(maxOutWork, *w);
      tripKernelWork = total(tripKernelWork, t);
    }
    for (auto &[site, t] : siteTrips) {
      tripWork = total(tripWork, t);
      maxTrips = maxTrips == kUnknown || !t ? kUnknown : std::max(maxTrips, *t);
    }
    auto within = [](int64_t w, int64_t limit) { return w != kUnknown && w <= limit; };
    bool underReduce = false;
    for (auto &[k, ix] : idxs) underReduce |= ix.underReduce;
    int64_t n = static_cast<int64_t>(idxs.size());
    bool threefry = cost && cone.threefry(s);
    bool tiny = cost && *cost <= kMaxScalarRecompute && *numel <= 8 && within(maxOutWork, 8) && within(maxTrips, 8);
    // each element evaluated at most once at each indexing (no loop around a read it does not depend on)
    bool bounded = within(maxTrips, *numel);
    // each element evaluated at most once, in its only kernel: inlining duplicates nothing, whatever the cost
    bool once = cost && kernelTrips.size() == 1 &&
                (cheap ? !underReduce && within(outKernelWork, *numel) : within(tripKernelWork, *numel));
    if (n > 1) {
      int64_t limit = satMul(*numel, n);
      bool recompute = cost && *cost <= kMaxRecompute &&
                       ((cheap && (within(outWork, limit) || within(outKernelWork, limit))) ||
                        (bounded && (within(tripWork, limit) || within(tripKernelWork, limit))));
      // a reduction's cheap top, read in one kernel at several indexings (Use::trips counts a read under a
      // reduction as if that reduction ran inside every output loop: kernelWork places it exactly)
      return recompute || threefry || tiny ||
             (!cost && kernelTrips.size() == 1 && fusedWithin(s, kernelTrips.begin()->first, *numel, n));
    }
    const Indexing &ix = idxs.begin()->second;
    bool scalar = *numel == 1 && cost && *cost <= kMaxScalarRecompute && ix.constIndex;
    bool small = cost && *cost <= kMaxScalarRecompute && *numel <= 8 && (cheap || bounded);
    if (cost)
      return threefry || scalar || small || once ||
             (*cost <= kMaxRecompute && ((cheap && within(outWork, *numel)) || bounded));
    // a reduction is fused into its only consumer when that evaluates each of its elements exactly once:
    // even under the consumer's own reduction (argmax's row max), where the value sits outside that loop.
    // Not where the read moves along the consumer's reduction (a convolution summed by a global average
    // pool): the two reductions would nest, and a nest of reductions gets no register tile (optimize)
    // Nor where the read is gated (a concatenation's slice: the consumer's loops run over every element of
    // the concatenation, and a reduction inlined under the gate runs its loop for all of them, DenseNet's
    // 3x3 convolution into 32 of 256 channels doing 8x its work)
    for (auto &[k, cnt] : rit->second)
      for (const Use &us : kernels[static_cast<size_t>(k)].uses)
        if (us.value == s && ((us.underReduce && movesAlongReduce(us.key)) || gated(us.key))) return false;
    return tripWork == *numel && kernelTrips.size() == 1;
  };

  for (size_t i = 0; i < candidates.size(); ++i) pending.insert(i);
  auto dirty = [&](const UOp *t) {
    if (staged.count(t)) pending.insert(candPos.at(t));
  };
  while (!pending.empty()) {
    const UOp *s = candidates[*pending.begin()];
    pending.erase(pending.begin());
    if (!staged.count(s) || !qualifies(s)) continue;
    // remove s: its kernel goes, its readers inline it
    staged.erase(s);
    Kernel &SK = kernels[static_cast<size_t>(kernelOf.at(s))];
    int sk = kernelOf.at(s);
    std::vector<Use> inner = std::move(SK.uses);
    SK.uses.clear();
    for (const Use &us : inner) {
      auto &m = readers[us.value];
      if (--m[sk] == 0) m.erase(sk);
      dirty(us.value);
    }
    std::vector<int> rk;
    if (auto it = readers.find(s); it != readers.end())
      for (auto &[k, cnt] : it->second) rk.push_back(k);
    for (int k : rk) {
      Kernel &K = kernels[static_cast<size_t>(k)];
      if (inner.empty()) {
        K.uses.erase(std::remove_if(K.uses.begin(), K.uses.end(), [&](const Use &us) { return us.value == s; }),
                     K.uses.end());
        K.body = nullptr; // (it read s's buffer: lowered again when its ops are asked)
        K.ops.reset();
        continue;
      }
      for (const Use &us : K.uses) dirty(us.value);
      lowerKernel(k);
      for (const Use &us : K.uses) dirty(us.value);
    }
    readers.erase(s);
    cone.removed(s);
  }

  // The kernel size bound: stage values of kernels over max-kernel-ops (0: no bound) until none is,
  // measured again after each round: one round leaves every kernel within the bound, unless an op that
  // cannot be staged (a weak-int or device-less value) is recomputed in several; the rounds stop there.
  // A kernel's ops are distinct nodes of the graph: when the whole graph has no more, no kernel is measured.
  int64_t maxOps = pc.intOption("max-kernel-ops", kDefaultMaxKernelOps, 0, INT64_MAX), graphOps = 0;
  for (const UOp *u : topo) graphOps = satAdd(graphOps, kernelOps(u));
  if (maxOps > 0 && graphOps > maxOps) {
    KernelBound bound(si, maxOps, isMat);
    std::vector<const UOp *> roots;
    for (const UOp *u : topo)
      if (u->op == Op::STORE || staged.count(u) || u->op == Op::CONTIGUOUS || u->op == Op::STAGE) roots.push_back(u);
    for (int round = 0; round < kMaxBoundRounds && !roots.empty(); ++round) {
      std::vector<const UOp *> added;
      for (const UOp *r : roots) {
        if (KernelBound::ops(bound.cone(r)) <= maxOps) continue;
        for (const UOp *t : bound.cuts())
          if (staged.insert(t).second) {
            forced.insert(t); // not removable: the bound needs it
            added.push_back(t);
          }
      }
      // measure every kernel again (linear in the graph): the new ones, and those they were cut from
      if (added.empty()) break;
      roots.clear();
      for (const UOp *u : topo)
        if (u->op == Op::STORE || staged.count(u) || u->op == Op::CONTIGUOUS || u->op == Op::STAGE) roots.push_back(u);
    }
  }

  // mark what stays: x -> STAGE(x), rebuilt bottom-up so that stages nest
  std::unordered_map<const UOp *, const UOp *> repl;
  for (const UOp *u : topo) {
    std::vector<const UOp *> srcs;
    bool changed = false;
    for (const UOp *s : u->src()) {
      auto it = repl.find(s);
      srcs.push_back(it == repl.end() ? s : it->second);
      changed |= srcs.back() != s;
    }
    const UOp *n = changed ? c.withSrc(u, srcs) : u;
    if (staged.count(u)) {
      BufferizeOpts o;
      o.devices = si.device(u);
      o.deviceIsTuple = o.devices.size() > 1;
      o.removable = !forced.count(u);
      n = c.make(Op::STAGE, u->dtype, {n}, o.encode(c));
    }
    if (n != u) repl[u] = n;
  }
  auto it = repl.find(root);
  g.root = it == repl.end() ? root : it->second;
}

} // namespace uopc
