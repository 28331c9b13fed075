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

} // namespace

const UOp *gpuMapKernel(Context &c, const UOp *body, bool lean) {
  if (body->op != Op::SINK || storesMayRace(body)) return body;
  for (const UOp *u : toposort(body))
    if (isGlobalRange(u)) return body; // mapped already (a graph printed after this pass)
  Mapping m = candidates(body);
  if (!lean || m.lean.size() == m.all.size()) return mark(c, body, m.all);
  const UOp *all = mark(c, body, m.all), *leanBody = mark(c, body, m.lean);
  auto wAll = workOf(all), wLean = workOf(leanBody);
  if (wAll && wLean && static_cast<double>(*wAll) <= 1.5 * static_cast<double>(*wLean)) return all;
  return leanBody;
}

void runGpuMap(Graph &g, const PassContext &pc) {
  bool grid = pc.target.gpuGrid;
  if (auto o = pc.option("grid"); !o.empty()) {
    if (o != "0" && o != "1") fail("pass 'gpu-map': option grid=" + std::string(o) + " is not 0 or 1");
    grid = o == "1";
  }
  bool lean = pc.intOption("lean", 1, 0, 1) == 1;
  if (!grid) return;
  Context &c = *g.ctx;
  rewriteKernelBodies(g, [&](const UOp *call) { return gpuMapKernel(c, call->src(0), lean); });
}

} // namespace uopc
