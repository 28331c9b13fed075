//===- Rangeify.cpp - the `rangeify` pass: where ranges start (what is materialized) ===//
// Seed 003's get_kernel_graph up to stage removal. A value gets its own ranges (becomes a STAGE, a
// buffer a kernel writes) when tinygrad would realize it:
//  - consumed more than once (consumes counted as in rangeify2: an EXPAND multiplies its source's
//    consumption by the expansion factor), for ALU and REDUCE values that live on a device;
//  - the source of a COPY (a copy moves a buffer), unless it already is one.
// Then stages that do not pay for themselves are removed, one at a time, re-lowering every kernel after
// each removal (rangeify2's loop), on the indexing each kernel really does (Rangeify/Lower.h):
//  - several distinct indexings: recompute when the stage is cheap (recompute_cost <= MAX_RECOMPUTE) and
//    the consumers' work is at most numel x indexings;
//  - one indexing: recompute when cheap and no more work than the stage itself, or scalar/small
//    (cost <= MAX_SCALAR_RECOMPUTE), or random bits (THREEFRY); a stage containing a reduction is fused
//    into its only consumer when that consumer indexes it with its own ranges, does the same work and
//    does not reduce it again (never nest or duplicate a reduction).
// What stays is marked STAGE(x) (arg BufferizeOpts); kernel-split builds the kernels.
//
// Precondition: invalid-pad, multi-lower and reduce-identity ran (tensor-level graph, no MULTI forms).
#include "IR/Error.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rangeify/Lower.h"
#include "Passes/Rangeify/StateCheck.h"

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

bool hasThreefry(const UOp *x, const std::function<bool(const UOp *)> &isMat) {
  std::unordered_set<const UOp *> seen;
  std::vector<const UOp *> st{x};
  while (!st.empty()) {
    const UOp *u = st.back();
    st.pop_back();
    if (!seen.insert(u).second || (u != x && isMat(u))) continue;
    if (u->op == Op::THREEFRY) return true;
    for (const UOp *s : u->src()) st.push_back(s);
  }
  return false;
}

bool isWeak(DType dt) { return dt == DType::WeakInt || dt == DType::WeakFloat; }

} // namespace

void runRangeify(Graph &g) {
  Context &c = *g.ctx;
  checkStateCycles(g, g.root);
  const UOp *root = normalizeAfters(c, g.root);
  ShapeInfo si(g);
  std::vector<const UOp *> topo = toposort(root);
  for (const UOp *u : topo)
    if (u->op == Op::MULTI || u->op == Op::MSELECT || u->op == Op::MSTACK || u->op == Op::ALLREDUCE ||
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
      if (a && b && *b > 0) n *= *a / *b;
    }
    if (u->op == Op::COPY) {
      const UOp *src = copySource(u).first;
      if (!Lowerer::baseBuffer(src) && src->op != Op::CONTIGUOUS && src->op != Op::STAGE && src->op != Op::COPY)
        forced.insert(src);
    }
    consumes[u] = n;
    for (size_t i = 0; i < u->nsrc; ++i)
      if (u->op != Op::STORE || i > 0) consumes[u->src(i)] += n;
  }
  std::reverse(candidates.begin(), candidates.end());
  std::unordered_set<const UOp *> staged(candidates.begin(), candidates.end());
  for (const UOp *f : forced) staged.insert(f);
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(), [&](const UOp *u) { return forced.count(u); }),
                   candidates.end());

  auto isMat = [&](const UOp *u) {
    return staged.count(u) || u->op == Op::COPY || u->op == Op::CONTIGUOUS || u->op == Op::STAGE;
  };
  while (true) {
    Lowerer L(g, si);
    L.isMaterialized = isMat;
    L.stateOf = [&](const UOp *u) -> const UOp * {
      if (Lowerer::isBuffer(u) || u->op == Op::AFTER) return u;
      return c.make(Op::STAGE, u->dtype, {u}); // a placeholder for the buffer holding u
    };
    std::vector<std::optional<int64_t>> works;
    int kernel = 0;
    for (const UOp *u : topo) {
      if (u->op == Op::STORE) {
        const UOp *base = u->src(0);
        while (isMovement(base->op)) base = base->src(0);
        L.beginKernel(kernel++, true);
        L.lowerStore(u->src(0), u->src(1), base);
      } else if (staged.count(u) || u->op == Op::CONTIGUOUS || u->op == Op::STAGE) {
        const UOp *x = staged.count(u) ? u : u->src(0);
        L.beginKernel(kernel++, true);
        L.lowerMaterialize(x, c.make(Op::STAGE, u->dtype, {u}));
      } else {
        continue;
      }
      works.push_back(L.work());
    }

    // uses per stage: distinct indexings, each with the kernels it happens in
    struct Indexing {
      std::set<int> kernels;
      bool underReduce = false, constIndex = true;
    };
    std::map<const UOp *, std::map<const UOp *, Indexing>> usesOf;
    for (const Use &us : L.uses) {
      Indexing &ix = usesOf[us.value][us.key];
      ix.kernels.insert(us.kernel);
      ix.underReduce |= us.underReduce;
      ix.constIndex &= us.constIndex;
    }
    const UOp *remove = nullptr;
    for (const UOp *s : candidates) {
      if (!staged.count(s)) continue;
      auto it = usesOf.find(s);
      if (it == usesOf.end()) {
        remove = s;
        break;
      }
      auto &idxs = it->second;
      auto numel = numelOf(si, s);
      if (!numel) continue;
      auto cost = recomputeCost(s, isMat);
      // work per indexing (the seed's recompute_work: each indexing happens in exactly one kernel), and
      // work per distinct kernel (several sites in one kernel share its output loop)
      std::optional<int64_t> work = int64_t(0), kernelWork = int64_t(0), maxKernelWork = int64_t(0);
      std::set<int> kernels;
      bool underReduce = false;
      for (auto &[k, ix] : idxs) {
        underReduce |= ix.underReduce;
        kernels.insert(ix.kernels.begin(), ix.kernels.end());
        if (!work) continue;
        if (ix.kernels.size() != 1 || !works[static_cast<size_t>(*ix.kernels.begin())]) work.reset();
        else *work += *works[static_cast<size_t>(*ix.kernels.begin())];
      }
      for (int k : kernels) {
        const auto &w = works[static_cast<size_t>(k)];
        if (!w || !kernelWork) {
          kernelWork.reset(), maxKernelWork.reset();
          break;
        }
        *kernelWork += *w;
        *maxKernelWork = std::max(*maxKernelWork, *w);
      }
      int64_t n = static_cast<int64_t>(idxs.size());
      bool threefry = cost && hasThreefry(s, isMat);
      bool tiny = cost && *cost <= kMaxScalarRecompute && *numel <= 8 && maxKernelWork && *maxKernelWork <= 8;
      // read once per output element of its only kernel: inlining duplicates nothing, whatever the cost
      bool once = cost && kernels.size() == 1 && !underReduce && kernelWork && *kernelWork <= *numel;
      if (n > 1) {
        bool cheap = cost && *cost <= kMaxRecompute &&
                     ((work && *work <= *numel * n) || (kernelWork && *kernelWork <= *numel * n));
        if (cheap || threefry || tiny) remove = s;
      } else {
        const Indexing &ix = idxs.begin()->second;
        bool scalar = *numel == 1 && cost && *cost <= kMaxScalarRecompute && ix.constIndex;
        bool small = cost && *cost <= kMaxScalarRecompute && *numel <= 8;
        if (cost) {
          if (threefry || scalar || small || once || (*cost <= kMaxRecompute && work && *work <= *numel)) remove = s;
        } else if (work && !ix.underReduce && *work == *numel) {
          remove = s;
        }
      }
      if (remove) break;
    }
    if (!remove) break;
    staged.erase(remove);
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
