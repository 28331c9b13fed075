//===- Work.cpp - the work model ------------------------------------------===//
#include "IR/Work.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Records.h"
#include "IR/Shape.h"

#include <algorithm>
#include <climits>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

int64_t satAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }
int64_t satMul(int64_t a, int64_t b) { return (b != 0 && a > INT64_MAX / b) ? INT64_MAX : a * b; }

std::optional<int64_t> constInt(const UOp *u) {
  if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Int) return u->arg->i();
  return std::nullopt;
}

Count extentOf(const UOp *e) {
  if (auto c = constInt(e)) return Count(std::max<int64_t>(*c, 0));
  return Count::symbol(sizeExpr(e));
}

} // namespace

Count &Count::operator+=(const Count &o) {
  for (const auto &[m, c] : o.terms_) terms_[m] = satAdd(terms_[m], c);
  return *this;
}

Count Count::operator*(const Count &o) const {
  Count r;
  for (const auto &[ma, ca] : terms_)
    for (const auto &[mb, cb] : o.terms_) {
      std::vector<std::string> m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      r.terms_[m] = satAdd(r.terms_[m], satMul(ca, cb));
    }
  return r;
}

std::optional<int64_t> Count::constant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

std::string Count::str() const {
  if (terms_.empty()) return "0";
  std::string s;
  // highest degree first, the constant last
  std::vector<std::pair<std::vector<std::string>, int64_t>> t(terms_.begin(), terms_.end());
  std::stable_sort(t.begin(), t.end(), [](const auto &a, const auto &b) { return a.first.size() > b.first.size(); });
  for (const auto &[m, c] : t) {
    if (!s.empty()) s += " + ";
    std::string term = (c != 1 || m.empty()) ? std::to_string(c) : "";
    for (const std::string &f : m) term += (term.empty() ? "" : "*") + f;
    s += term;
  }
  return s;
}

std::string sizeExpr(const UOp *root) {
  // post-order with an explicit stack: sizes can be expressions of any depth in a hostile graph
  std::unordered_map<const UOp *, std::string> done;
  std::vector<std::pair<const UOp *, bool>> st{{root, false}};
  while (!st.empty()) {
    auto [u, expanded] = st.back();
    st.pop_back();
    if (done.count(u)) continue;
    if (u->op == Op::CONST) {
      done[u] = u->arg && u->arg->kind == ArgKind::Int ? std::to_string(u->arg->i()) : "c";
      continue;
    }
    if (u->op == Op::PARAM || u->nsrc == 0) {
      std::string name;
      if (u->op == Op::PARAM) {
        try {
          ParamArg p = ParamArg::decode(u->arg);
          name = p.name ? *p.name : "p" + std::to_string(p.slot);
        } catch (const Error &) {
          name = "var";
        }
      } else {
        name = std::string(opName(u->op));
      }
      done[u] = name;
      continue;
    }
    if (!expanded) {
      st.push_back({u, true});
      for (const UOp *s : u->src()) st.push_back({s, false});
      continue;
    }
    auto a = [&](size_t i) { return done[u->src(i)]; };
    std::string r;
    switch (u->op) {
    case Op::ADD: r = "(" + a(0) + "+" + a(1) + ")"; break;
    case Op::SUB: r = "(" + a(0) + "-" + a(1) + ")"; break;
    case Op::MUL: r = "(" + a(0) + "*" + a(1) + ")"; break;
    case Op::FLOORDIV: r = "(" + a(0) + "//" + a(1) + ")"; break;
    case Op::FLOORMOD: r = "(" + a(0) + "%" + a(1) + ")"; break;
    case Op::MAX: r = "max(" + a(0) + "," + a(1) + ")"; break;
    case Op::BIND: case Op::CAST: r = a(0); break;
    default: {
      r = std::string(opName(u->op)) + "(";
      for (size_t i = 0; i < u->nsrc; ++i) r += (i ? "," : "") + a(i);
      r += ")";
    }
    }
    done[u] = r;
  }
  return done[root];
}

namespace {
/// The work of the loop nests under `sink` (a kernel SINK, or one of its ENDs), each range one loop.
KernelWork nestWork(const UOp *sink) {
  KernelWork w;
  // nodes by topological position; every map below is a vector over positions (this runs for every
  // kernel in linearize and the manifest, and for rangeify's fusion trials)
  std::vector<const UOp *> topo = toposort(sink);
  const size_t n = topo.size();
  struct PosSlot {
    uint32_t gen = 0, pos = 0;
  };
  thread_local StampedTable<PosSlot> pos; // (per thread: a call clears it in O(1))
  pos.clear();
  for (size_t i = 0; i < n; ++i) pos.at(topo[i]).pos = static_cast<uint32_t>(i);
  auto at = [&](const UOp *u) { return pos.find(u)->pos; };

  // the loops: depth and trip product (the loop and every loop around it) per RANGE
  struct Loop {
    int depth = 0;
    Count trips;
  };
  std::vector<int32_t> loopOf(n, -1); // position -> index in `loops`
  std::vector<Loop> loops;
  auto setLoop = [&](uint32_t r, Loop l) {
    loopOf[r] = static_cast<int32_t>(loops.size());
    loops.push_back(std::move(l));
  };
  // A GPU kernel's GLOBAL ranges come from the thread id: every thread runs every item, so they are
  // loops of one iteration around everything, and each count is multiplied by the launch's threads
  // (the most a store has; a store with fewer runs under a guard, counted as if it had as many).
  int64_t launch = 1;
  // A GPU block's ranges (LOCAL, GROUP_REDUCE) are threads as well: one iteration each, the launch
  // multiplied by the block's size (one dimension: the largest).
  int64_t block = 1;
  for (const UOp *u : topo)
    if (isBlockRange(u) && u->nsrc > 0) {
      auto c = constInt(u->src(0));
      block = std::max(block, c ? std::max<int64_t>(*c, 1) : 1);
      setLoop(at(u), Loop{0, Count(1)});
    }
  // An UPCAST range (optimize's lanes) is no loop: the targets give a value one lane per iteration of it
  // where the value is placed, among the loops it depends on. A node's count is the trips of the innermost
  // loop it depends on times the extents of the lanes it depends on (a row tile's sums, upcast:0:8 over rows
  // whose stores loop over the columns, run once per row, not once per column: sp_cumsum_1m's k1).
  std::vector<Count> lanesOf(n); // position -> the extent of an UPCAST range (empty: not one)
  for (size_t i = 0; i < n; ++i)
    if (isUpcastRange(topo[i]) && topo[i]->nsrc > 0) lanesOf[i] = extentOf(topo[i]->src(0));
  auto isLanes = [&](uint32_t r) { return !lanesOf[r].isZero(); };
  for (const UOp *u : topo) {
    if (u->op != Op::END) continue;
    Count p(1);
    int depth = 0;
    int64_t threads = 1;
    for (int global = 1; global >= 0; --global)
      for (size_t i = 1; i < u->nsrc; ++i) {
        const UOp *r = u->src(i);
        if (r->op != Op::RANGE || r->nsrc == 0 || isGlobalRange(r) != (global == 1) || isLanes(at(r))) continue;
        if (global) {
          auto c = constInt(r->src(0));
          threads = satMul(threads, c ? std::max<int64_t>(*c, 1) : 1);
        }
        if (int32_t placed = loopOf[at(r)]; placed >= 0) {
          // a loop another END closed too (the pieces of a split share the loops around them): the loops
          // inside it nest in it
          p = loops[static_cast<size_t>(placed)].trips;
          depth = loops[static_cast<size_t>(placed)].depth;
          continue;
        }
        if (!global) p = p * extentOf(r->src(0));
        setLoop(at(r), Loop{++depth, p});
      }
    launch = std::max(launch, threads);
  }

  // the ranges each node depends on (a REDUCE closes its own), as sorted positions: kernels have few ranges.
  // Most nodes depend on exactly what one of their sources does, so nodes share their sets (set 0: none).
  std::vector<std::vector<uint32_t>> sets(1);
  std::vector<uint32_t> setOf(n, 0);
  auto ownRanges = [&](const UOp *u) {
    std::vector<uint32_t> r;
    if (u->op == Op::REDUCE)
      for (size_t i = 1; i < u->nsrc; ++i) r.push_back(at(u->src(i)));
    return r;
  };
  for (size_t i = 0; i < n; ++i) {
    const UOp *u = topo[i];
    if (u->op != Op::RANGE && u->op != Op::REDUCE) {
      uint32_t only = 0;
      bool one = true;
      for (const UOp *s : u->src()) {
        uint32_t k = setOf[at(s)];
        if (k == 0 || k == only) continue;
        if (only == 0) only = k;
        else one = false;
      }
      if (one) {
        setOf[i] = only;
        continue;
      }
    }
    std::vector<uint32_t> d;
    if (u->op == Op::RANGE) d.push_back(static_cast<uint32_t>(i));
    auto own = ownRanges(u);
    for (const UOp *s : u->src())
      for (uint32_t r : sets[setOf[at(s)]])
        if (std::find(own.begin(), own.end(), r) == own.end()) d.push_back(r);
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    if (d.empty()) continue;
    setOf[i] = static_cast<uint32_t>(sets.size());
    sets.push_back(std::move(d));
  }
  auto depsOf = [&](size_t i) -> const std::vector<uint32_t> & { return sets[setOf[i]]; };
  auto innermost = [&](const std::vector<uint32_t> &d) -> const Loop * {
    const Loop *best = nullptr;
    for (uint32_t r : d)
      if (loopOf[r] >= 0 && (!best || loops[static_cast<size_t>(loopOf[r])].depth > best->depth))
        best = &loops[static_cast<size_t>(loopOf[r])];
    return best;
  };
  // a REDUCE's loops nest inside the loops its result depends on; outer reductions first (they
  // consume the inner ones, so they come later in topological order)
  for (size_t k = n; k-- > 0;) {
    const UOp *u = topo[k];
    if (u->op != Op::REDUCE) continue;
    const Loop *outer = innermost(depsOf(k));
    Loop cur = outer ? *outer : Loop{0, Count(1)};
    for (uint32_t r : ownRanges(u)) {
      const UOp *rr = topo[r];
      if (rr->op != Op::RANGE || rr->nsrc == 0 || loopOf[r] >= 0 || isLanes(r)) continue;
      cur = Loop{cur.depth + 1, cur.trips * extentOf(rr->src(0))};
      setLoop(r, cur);
    }
  }
  // ranges nobody placed (malformed kernels): loops of their own at the top
  for (size_t i = 0; i < n; ++i)
    if (topo[i]->op == Op::RANGE && loopOf[i] < 0 && topo[i]->nsrc > 0 && !isLanes(static_cast<uint32_t>(i)))
      setLoop(static_cast<uint32_t>(i), Loop{1, extentOf(topo[i]->src(0))});

  auto tripsOf = [&](const std::vector<uint32_t> &d) {
    const Loop *l = innermost(d);
    Count t = l ? l->trips : Count(1);
    for (uint32_t r : d)
      if (isLanes(r)) t = t * lanesOf[r];
    return t;
  };

  // which INDEX nodes are read as values (not a STORE's address, not a gated LOAD's address)
  std::vector<char> valueRead(n, 0);
  for (const UOp *u : topo)
    for (size_t i = 0; i < u->nsrc; ++i) {
      const UOp *s = u->src(i);
      if (s->op != Op::INDEX || s->dtype == DType::Void) continue;
      if ((u->op == Op::STORE || u->op == Op::LOAD) && i == 0) continue;
      if (u->op == Op::INDEX) continue; // an index of an index (not produced by uopc)
      valueRead[at(s)] = 1;
    }

  std::vector<char> data(n, 0);
  std::optional<int64_t> heaviest;
  for (size_t i = 0; i < n; ++i) {
    const UOp *u = topo[i];
    bool isLoad = u->op == Op::LOAD || valueRead[i];
    bool d = isLoad;
    if (!d && (isALU(u->op) || isElementwise(u->op) || u->op == Op::REDUCE || u->op == Op::CUSTOM || u->op == Op::CUSTOMI))
      for (const UOp *s : u->src()) d = d || data[at(s)];
    data[i] = d;
    if (isLoad) {
      Count t = tripsOf(depsOf(i));
      w.loads += t;
      w.loadBytes += t * static_cast<int64_t>(dtypeSize(u->dtype));
      continue;
    }
    if (u->op == Op::STORE && u->nsrc >= 2) {
      Count t = tripsOf(depsOf(i));
      w.stores += t;
      w.storeBytes += t * static_cast<int64_t>(dtypeSize(u->src(1)->dtype));
      continue;
    }
    if (!d) continue;
    Count t;
    if (u->op == Op::REDUCE) {
      std::vector<uint32_t> all = depsOf(i);
      for (uint32_t r : ownRanges(u)) all.push_back(r);
      t = tripsOf(all);
    } else if (isALU(u->op)) {
      t = tripsOf(depsOf(i));
    } else {
      continue; // CAST/BITCAST: conversions, not arithmetic
    }
    w.ops += t;
    auto c = t.constant();
    if (!w.heaviest || (c && heaviest && *c > *heaviest)) {
      w.heaviest = u;
      w.heaviestTrips = t;
      heaviest = c;
    }
  }
  launch = satMul(launch, block);
  if (launch > 1) {
    for (Count *c : {&w.ops, &w.loads, &w.loadBytes, &w.stores, &w.storeBytes, &w.heaviestTrips}) *c = *c * launch;
  }
  return w;
}
} // namespace

KernelWork kernelWork(const UOp *sink) {
  // The pieces of a split loop (optimize's interior and border, seam and channel cuts) are ENDs of their own
  // that share ranges in different nests: a column loop under a piece of one row and under the other rows'
  // piece, a reduction's ranges under each piece's REDUCE (a loop of its own in the code each time). One
  // placement of each range cannot say that, so such a kernel is counted piece by piece (what pieces share
  // outside their loops, index arithmetic and loads of the loops around them, is then counted in each).
  bool shared = false;
  if (sink->op == Op::SINK && sink->nsrc > 1) {
    std::unordered_map<const UOp *, const UOp *> owner;              // reduction range -> its REDUCE
    std::unordered_map<const UOp *, std::vector<const UOp *>> outer; // loop range -> the ranges around it
    for (const UOp *u : toposort(sink)) {
      if (u->op == Op::REDUCE)
        for (size_t i = 1; i < u->nsrc && !shared; ++i) shared = !owner.emplace(u->src(i), u).second;
      if (u->op == Op::END) {
        std::vector<const UOp *> around;
        for (size_t i = 1; i < u->nsrc && !shared; ++i) {
          auto [it, fresh] = outer.emplace(u->src(i), around);
          shared = !fresh && it->second != around;
          around.push_back(u->src(i));
        }
      }
      if (shared) break;
    }
  }
  if (!shared) return nestWork(sink);
  KernelWork w;
  std::optional<int64_t> heaviest;
  for (const UOp *piece : sink->src()) {
    KernelWork p = nestWork(piece);
    for (auto [to, from] : {std::pair{&w.ops, &p.ops}, {&w.loads, &p.loads}, {&w.loadBytes, &p.loadBytes},
                            {&w.stores, &p.stores}, {&w.storeBytes, &p.storeBytes}})
      *to += *from;
    auto c = p.heaviestTrips.constant();
    if (p.heaviest && (!w.heaviest || (c && heaviest && *c > *heaviest))) {
      w.heaviest = p.heaviest;
      w.heaviestTrips = p.heaviestTrips;
      heaviest = c;
    }
  }
  return w;
}

Count tensorWork(const Graph &g) {
  ShapeInfo si(g);
  std::vector<const UOp *> topo = toposort(g.root);
  std::unordered_set<const UOp *> data;
  auto numel = [&](const UOp *u) -> Count {
    const auto &s = si.shape(u);
    if (!s) return Count(1);
    Count n(1);
    for (const UOp *d : *s) n = n * extentOf(d);
    return n;
  };
  auto isBufferLeaf = [](const UOp *u) {
    if (u->op == Op::BUFFER || u->op == Op::AFTER) return true;
    if (u->op != Op::PARAM || u->nsrc == 0) return false;
    if (u->src(0)->op == Op::STACK && u->src(0)->nsrc == 0) return false; // a scalar variable
    return true;
  };
  Count total;
  for (const UOp *u : topo) {
    if (u->op == Op::CALL || u->op == Op::FUNCTION) continue;
    bool d = isBufferLeaf(u);
    if (!d)
      for (size_t i = 0; i < u->nsrc && !d; ++i) d = data.count(u->src(i)) > 0;
    if (!d) continue;
    data.insert(u);
    if (u->dtype == DType::WeakInt || u->dtype == DType::WeakFloat) continue;
    // a value on several devices (a sharded or replicated tensor after multi-lower) is computed on each
    int64_t copies = std::max<int64_t>(1, static_cast<int64_t>(si.device(u).size()));
    if (isALU(u->op)) total += numel(u) * copies;
    else if (u->op == Op::REDUCE && u->nsrc > 0) total += numel(u->src(0)) * copies;
  }
  return total;
}

} // namespace uopc
