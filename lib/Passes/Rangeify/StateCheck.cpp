//===- StateCheck.cpp - rejecting stale reads of overwritten buffers (seed 003's _check_state_cycles) ===//
#include "Passes/Rangeify/StateCheck.h"

#include "IR/Error.h"
#include "Passes/Rangeify/Lower.h"

#include <algorithm>
#include <map>

namespace uopc::rangeify {
namespace {

using BufSet = std::vector<const UOp *>; // sorted, unique

/// Buffer sets interned to small integers, so that a node's state is two ints and unions are memoized.
struct SetTable {
  std::vector<BufSet> sets{BufSet{}};
  std::map<BufSet, int> ids{{BufSet{}, 0}};
  std::map<std::pair<int, int>, int> unions;

  int intern(BufSet s) {
    auto [it, fresh] = ids.emplace(s, static_cast<int>(sets.size()));
    if (fresh) sets.push_back(std::move(s));
    return it->second;
  }
  int unite(int a, int b) {
    if (a == b || b == 0) return a;
    if (a == 0) return b;
    if (a > b) std::swap(a, b);
    if (auto it = unions.find({a, b}); it != unions.end()) return it->second;
    BufSet u;
    std::set_union(sets[a].begin(), sets[a].end(), sets[b].begin(), sets[b].end(), std::back_inserter(u));
    return unions[{a, b}] = intern(std::move(u));
  }
  bool contains(int s, const UOp *b) const { return std::binary_search(sets[s].begin(), sets[s].end(), b); }
  const UOp *common(int a, int b) const {
    BufSet i;
    std::set_intersection(sets[a].begin(), sets[a].end(), sets[b].begin(), sets[b].end(), std::back_inserter(i));
    return i.empty() ? nullptr : i.front();
  }
};

struct State {
  int raw = 0;      ///< buffers read as they were before any write on this path
  int assigned = 0; ///< buffers read after a write that replaced them
};

const UOp *bufOf(const UOp *u) {
  while (isMovement(u->op) || u->op == Op::AFTER) u = u->src(0);
  return u;
}

} // namespace

void checkStateCycles(const Graph &g, const UOp *root) {
  SetTable t;
  NodeMap<State> states(State{});
  for (const UOp *u : toposort(root)) {
    State st;
    if (Lowerer::isBuffer(u)) {
      st.raw = t.intern({u});
    } else if (u->op == Op::AFTER) {
      const UOp *key = bufOf(u);
      bool stores = false, selfUpdate = false;
      for (const UOp *x : u->src().subspan(1)) {
        if (x->op != Op::STORE || bufOf(x->src(0)) != key) continue;
        stores = true;
        // a write that reads the old value continues its lineage; one independent of it replaces the state
        selfUpdate |= t.contains(states[x->src(1)].raw, key) || t.contains(states[x->src(1)].assigned, key);
      }
      st = !stores || selfUpdate ? states[u->src(0)] : State{0, t.intern({key})};
    } else {
      for (const UOp *x : u->src()) {
        st.raw = t.unite(st.raw, states[x].raw);
        st.assigned = t.unite(st.assigned, states[x].assigned);
      }
      // CONTIGUOUS snapshots a raw read before a pending write (it cannot move a later read earlier)
      if (u->op == Op::CONTIGUOUS) st.raw = 0;
    }
    states[u] = st;
    if (!isALU(u->op)) continue;
    for (size_t i = 0; i < u->nsrc; ++i)
      for (size_t j = i + 1; j < u->nsrc; ++j) {
        const State &a = states[u->src(i)], &b = states[u->src(j)];
        const UOp *stale = t.common(a.raw, b.assigned);
        if (!stale) stale = t.common(a.assigned, b.raw);
        if (stale)
          fail("rangeify: " + g.describe(u) + ": cycle detected while combining buffer states: it reads " +
               g.describe(stale) + " both before and after a write that replaces it (a stale read)");
      }
  }
}

} // namespace uopc::rangeify
