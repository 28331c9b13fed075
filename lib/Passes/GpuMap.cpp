//===- GpuMap.cpp - the `gpu-map` pass: which loops of a kernel become GPU threads ===//
// For a GPU grid (PassTarget::gpuGrid: ptx, llvm --grid-on-host; or gpu-map{grid=1}), per kernel SINK:
// which store ranges (a store's END ranges) the launch's thread id gives. They are marked AxisType GLOBAL
// (tinygrad's meaning: a range of the grid); linearize replaces them by the thread id and records the
// launch. A store's other ranges stay loops inside each thread. On a CPU target the pass does nothing.
//
// A candidate is an END range of constant size that the index of every store it ends moves (two threads
// never write one element), taken outermost first while a store has at most 2^31 - 1 threads. Not every
// candidate pays: a REDUCE that does not depend on a mapped range is computed again by every thread
// along it. A softmax computed in one kernel, out[i, j] = exp(x[i, j] - max_i) / sum_i, mapped on i and j,
// has each of a row's threads compute the row's max and sum again: 2,048 times the work for 2,048
// columns. A loop over j inside the row's thread computes them once. So two mappings are weighed with
// the work model (IR/Work.h, which counts a kernel with GLOBAL ranges as every thread running its items):
//   - all candidates;
//   - the lean one: no candidate that some REDUCE of a store it ends does not depend on.
// The lean one is taken unless all candidates cost at most 1.5 times its work (a reduction over a few
// elements computed again costs less than the threads a loop would lose), and whenever a work is not a
// constant. gpu-map{lean=0} maps every candidate: the mapping linearize made before this pass existed.
//
// A kernel whose stores may race (storesMayRace: a store reads what another thread may write) keeps no
// GLOBAL range: it runs on one thread.
// Runs after commit-weak, before linearize.
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Work.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"

#include <algorithm>
#include <climits>
#include <unordered_map>
#include <vector>

namespace uopc {
namespace {

/// Per node of body, the RANGEs it depends on (a REDUCE or END less its own), sorted by pointer.
std::unordered_map<const UOp *, std::vector<const UOp *>> freeRangesOf(const UOp *body) {
  std::unordered_map<const UOp *, std::vector<const UOp *>> free;
  for (const UOp *u : toposort(body)) {
    std::vector<const UOp *> rs;
    if (u->op == Op::RANGE) rs.push_back(u);
    for (const UOp *s : u->src()) {
      const auto &sr = free[s];
      rs.insert(rs.end(), sr.begin(), sr.end());
    }
    if (u->op == Op::REDUCE || u->op == Op::END)
      for (const UOp *r : u->src().subspan(1)) std::erase(rs, r);
    std::sort(rs.begin(), rs.end());
    rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
    free[u] = std::move(rs);
  }
  return free;
}

bool dependsOn(const std::vector<const UOp *> &sortedRanges, const UOp *r) {
  return std::binary_search(sortedRanges.begin(), sortedRanges.end(), r);
}

struct Mapping {
  std::vector<const UOp *> all;  ///< every candidate
  std::vector<const UOp *> lean; ///< less those some REDUCE of their store does not depend on
};

Mapping candidates(const UOp *body) {
  auto free = freeRangesOf(body);
  // a range ended by a store whose index it does not move is no candidate anywhere
  std::vector<const UOp *> refused;
  for (const UOp *e : body->src()) {
    if (e->op != Op::END) continue;
    const UOp *st = e->src(0);
    bool direct = st->op == Op::STORE && st->src(0)->op == Op::INDEX && st->src(0)->nsrc >= 2;
    for (const UOp *r : e->src().subspan(1))
      if (!direct || !dependsOn(free.at(st->src(0)->src(1)), r)) refused.push_back(r);
  }
  Mapping m;
  std::vector<const UOp *> notLean;
  for (const UOp *e : body->src()) {
    if (e->op != Op::END) continue;
    const UOp *st = e->src(0);
    std::vector<const UOp *> reduces;
    for (const UOp *x : toposort(st))
      if (x->op == Op::REDUCE) reduces.push_back(x);
    int64_t threads = 1;
    for (const UOp *r : e->src().subspan(1)) {
      if (r->op != Op::RANGE || isUpcastRange(r) || isUnrollRange(r) || isThreadRange(r)) continue;
      if (std::find(refused.begin(), refused.end(), r) != refused.end()) continue;
      auto n = constBound(r->src(0));
      if (!n || *n < 1 || *n > INT32_MAX / threads) continue;
      threads *= static_cast<int64_t>(*n);
      if (std::find(m.all.begin(), m.all.end(), r) == m.all.end()) m.all.push_back(r);
      for (const UOp *red : reduces)
        if (!dependsOn(free.at(red), r)) notLean.push_back(r);
    }
  }
  // a range taken for one store may be another's too: drop the range at which a store passes 2^31 - 1
  // threads, until none does
  for (bool again = true; again;) {
    again = false;
    for (const UOp *e : body->src()) {
      if (e->op != Op::END) continue;
      int64_t threads = 1;
      for (const UOp *r : e->src().subspan(1)) {
        if (std::find(m.all.begin(), m.all.end(), r) == m.all.end()) continue;
        auto n = static_cast<int64_t>(*constBound(r->src(0)));
        if (n > INT32_MAX / threads) {
          std::erase(m.all, r);
          again = true;
          break;
        }
        threads *= n;
      }
    }
  }
  for (const UOp *r : m.all)
    if (std::find(notLean.begin(), notLean.end(), r) == notLean.end()) m.lean.push_back(r);
  return m;
}

const UOp *mark(Context &c, const UOp *body, const std::vector<const UOp *> &ranges) {
  if (ranges.empty()) return body;
  std::unordered_map<const UOp *, const UOp *> sub;
  for (const UOp *r : ranges) sub[r] = withAxisType(c, r, AxisType::GLOBAL);
  return substitute(c, body, sub);
}

std::optional<int64_t> workOf(const UOp *body) {
  KernelWork w = kernelWork(body);
  auto ops = w.ops.constant(), loads = w.loads.constant();
  if (!ops || !loads) return std::nullopt;
  return *ops > INT64_MAX - *loads ? INT64_MAX : *ops + *loads;
}

// ---- blocks: a block's threads share a reduction ---------------------------------------------------
// The lean mapping leaves a row's reduction to one thread: sp_sum_ax1_4096's 4,096 threads each read a
// row of 4,096 floats alone, a softmax's 2,048 threads each their row three times, and a whole-tensor
// reduction fused into its reader runs on one thread. blockMap spreads such a kernel over blocks of L
// threads (tinygrad's GROUP and LOCAL opts): one block per element of the stores' GLOBAL ranges, and in it
//   - each REDUCE that depends on no other range (computed once per block) split r = ro * L + rg: rg of
//     AxisType GROUP_REDUCE, the block's threads, each reducing its part over ro (group-reduce lowers
//     the parts into shared memory and a tree);
//   - a store's one remaining loop j split j = jo * L + jl, jl of AxisType LOCAL: the block's threads write
//     the row's elements, adjacent threads adjacent elements.
// Taken when the lean mapping has at most kBlockThreadsMax threads (fewer than a large GPU runs at once: an
// H200 holds 132 x 2,048), every store has the same GLOBAL ranges and at most that one loop, each such
// REDUCE (an ADD, MUL or MAX, not of bool) reads along its innermost range contiguously (a column's sum is
// better one thread per column, whose neighbours read neighbouring elements), its size and the loop's are
// multiples of L, and the work model says the block's work (the parts, the tree, every thread reading the
// total) is at most 1.5x the lean mapping's: L is the largest of 256, 128, 64, 32 for which it is.
constexpr int64_t kBlockThreadsMax = 65536;

/// Whether every load of REDUCE `red`'s body that moves with its range r moves by one element per step.
bool readsAlong(const UOp *red, const UOp *r) {
  for (const UOp *u : toposort(red->src(0))) {
    if (u->op != Op::INDEX || u->nsrc < 2 || u->src(0)->op != Op::PARAM) continue;
    auto s = indexStride(u->src(1), r, true);
    if (!s || (*s != 0 && *s != 1 && *s != -1)) return false;
  }
  return true;
}

/// `body` (mapped) spread over blocks of `block` threads, or nullptr where blockMap does not apply.
const UOp *blockMap(Context &c, const UOp *body, int64_t block) {
  auto free = freeRangesOf(body);
  std::vector<const UOp *> globals, loops;
  bool first = true;
  for (const UOp *e : body->src()) {
    const UOp *st = e->op == Op::END ? e->src(0) : e;
    if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || st->src(0)->nsrc < 2 || st->src(0)->src(0)->op != Op::PARAM)
      return nullptr;
    std::vector<const UOp *> g, l;
    if (e->op == Op::END)
      for (const UOp *r : e->src().subspan(1)) (isGlobalRange(r) ? g : l).push_back(r);
    if (!first && g != globals) return nullptr;
    first = false;
    globals = g;
    if (l.size() > 1) return nullptr;
    if (l.size() == 1) {
      const UOp *j = l[0];
      if (j->op != Op::RANGE || j->nsrc != 1 || !j->arg || j->arg->kind != ArgKind::Tuple || j->arg->count < 2 ||
          isBlockRange(j))
        return nullptr;
      auto n = constBound(j->src(0));
      if (!n || *n < block || *n % block != 0 || !dependsOn(free.at(st->src(0)->src(1)), j)) return nullptr;
      if (std::find(loops.begin(), loops.end(), j) == loops.end()) loops.push_back(j);
    }
  }
  int64_t threads = 1;
  for (const UOp *r : globals) threads *= static_cast<int64_t>(*constBound(r->src(0)));
  if (threads > kBlockThreadsMax) return nullptr;
  // the REDUCEs computed once per block
  std::vector<const UOp *> sortedGlobals(globals);
  std::sort(sortedGlobals.begin(), sortedGlobals.end());
  std::vector<const UOp *> grouped;
  const std::vector<const UOp *> topo = toposort(body);
  for (const UOp *u : topo) {
    if (u->op != Op::REDUCE) continue;
    const auto &fr = free.at(u);
    if (!std::includes(sortedGlobals.begin(), sortedGlobals.end(), fr.begin(), fr.end())) continue;
    const UOp *r = u->src().back();
    if (u->nsrc < 2 || r->op != Op::RANGE || r->nsrc != 1 || !r->arg || r->arg->kind != ArgKind::Tuple ||
        r->arg->count < 2)
      return nullptr;
    auto n = constBound(r->src(0));
    Op op = u->arg->elems()[0]->op();
    if (!n || *n < block || *n % block != 0 ||
        u->dtype == DType::Bool || (op != Op::ADD && op != Op::MUL && op != Op::MAX) || !readsAlong(u, r))
      return nullptr;
    grouped.push_back(u);
  }
  if (grouped.empty()) return nullptr;

  int64_t next = 0;
  for (const UOp *u : topo)
    if (u->op == Op::RANGE) next = std::max(next, rangeNumber(u) + 1);
  // r cut into (outer, inner): r = outer * block + inner, the outer keeping r's AxisType
  auto cut = [&](const UOp *r, AxisType inner) {
    const UOp *o = rangeLike(c, r, static_cast<int64_t>(*constBound(r->src(0))) / block, next++, std::nullopt);
    return std::pair{o, rangeLike(c, r, block, next++, inner)};
  };
  std::unordered_map<const UOp *, std::pair<const UOp *, const UOp *>> split; // j -> (jo, jl)
  for (const UOp *j : loops) split[j] = cut(j, AxisType::LOCAL);
  return rebuildBottomUp(c, body, [&](const UOp *u, std::span<const UOp *const> srcs) -> const UOp * {
    if (auto it = split.find(u); it != split.end()) return combinedIndex(c, it->second.first, block, it->second.second);
    if (u->op == Op::END) { // its loops: jo and jl for a split j
      std::vector<const UOp *> es{srcs[0]};
      for (const UOp *r : u->src().subspan(1)) {
        auto it = split.find(r);
        if (it == split.end()) es.push_back(r);
        else es.insert(es.end(), {it->second.first, it->second.second});
      }
      return c.withSrc(u, es);
    }
    if (std::find(grouped.begin(), grouped.end(), u) == grouped.end()) return nullptr;
    const UOp *r = u->src().back();
    auto [ro, rg] = cut(r, AxisType::GROUP_REDUCE);
    std::vector<const UOp *> rs(srcs.begin(), srcs.end());
    rs[0] = substitute(c, srcs[0], {{r, combinedIndex(c, ro, block, rg)}});
    rs.back() = ro;
    rs.push_back(rg);
    return c.withSrc(u, rs);
  });
}

} // namespace

/// `mapped` spread over blocks (blockMap) with the largest block whose work is at most 1.5x its own, or
/// `mapped` itself (also when !enabled).
const UOp *blocks(Context &c, const UOp *mapped, bool enabled) {
  if (!enabled) return mapped;
  auto w = workOf(mapped);
  if (!w) return mapped;
  for (int64_t block : {256, 128, 64, 32}) {
    const UOp *b = blockMap(c, mapped, block);
    if (!b) continue;
    auto wb = workOf(groupReduceKernel(c, b));
    if (wb && static_cast<double>(*wb) <= 1.5 * static_cast<double>(*w)) return b;
  }
  return mapped;
}

const UOp *gpuMapKernel(Context &c, const UOp *body, bool lean, bool withBlocks) {
  if (body->op != Op::SINK || storesMayRace(body)) return body;
  for (const UOp *u : toposort(body))
    if (isGlobalRange(u) || isBlockRange(u)) return body; // mapped already (a graph printed after this pass)
  Mapping m = candidates(body);
  if (!lean || m.lean.size() == m.all.size()) return blocks(c, mark(c, body, m.all), lean && withBlocks);
  const UOp *all = mark(c, body, m.all), *leanBody = mark(c, body, m.lean);
  auto wAll = workOf(all), wLean = workOf(leanBody);
  if (wAll && wLean && static_cast<double>(*wAll) <= 1.5 * static_cast<double>(*wLean)) return blocks(c, all, withBlocks);
  return blocks(c, leanBody, withBlocks);
}

void runGpuMap(Graph &g, const PassContext &pc) {
  bool grid = pc.target.gpuGrid;
  if (auto o = pc.option("grid"); !o.empty()) {
    if (o != "0" && o != "1") fail("pass 'gpu-map': option grid=" + std::string(o) + " is not 0 or 1");
    grid = o == "1";
  }
  bool lean = pc.intOption("lean", 1, 0, 1) == 1;
  bool withBlocks = pc.intOption("blocks", 1, 0, 1) == 1;
  if (!grid) return;
  Context &c = *g.ctx;
  rewriteKernelBodies(g, [&](const UOp *call) { return gpuMapKernel(c, call->src(0), lean, withBlocks); });
}

} // namespace uopc
