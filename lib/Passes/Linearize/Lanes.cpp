//===- Linearize/Lanes.cpp - loop shapes linearize chooses on CPUs (Lanes.h says what each does) ===//
#include "Passes/Linearize/Lanes.h"

#include "IR/Kernel.h"
#include "IR/Range.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <unordered_set>

namespace uopc::linearize {

const UOp *hoistLaneInvariants(Context &c, const UOp *body, const FreeRanges &free) {
  static const Op kCostly[] = {Op::SQRT, Op::RECIPROCAL, Op::EXP2, Op::LOG2, Op::SIN, Op::FDIV, Op::POW};
  auto costly = [](const UOp *u) { return std::find(std::begin(kCostly), std::end(kCostly), u->op) != std::end(kCostly); };
  const Arg *mul = c.argTuple({c.argOp(Op::MUL), c.argInt(0)});
  std::vector<const UOp *> ends;
  bool changed = false;
  for (const UOp *e : body->src()) {
    ends.push_back(e);
    if (e->op != Op::END || e->nsrc < 3 || e->src(0)->op != Op::STORE) continue;
    auto loops = e->src().subspan(1);
    size_t firstLane = loops.size();
    for (size_t k = 0; k < loops.size(); ++k)
      if (isUpcastRange(loops[k]) && firstLane == loops.size()) firstLane = k;
    if (loops.size() - firstLane < 2) continue;
    auto posOf = [&](const UOp *r) { return static_cast<size_t>(std::find(loops.begin(), loops.end(), r) - loops.begin()); };
    // what a node's cone holds: a costly op, a reduction, a read (memo: the walk below visits each once)
    std::unordered_map<const UOp *, bool> hasCostly;
    auto coneCostly = [&](const UOp *root) {
      std::vector<std::pair<const UOp *, size_t>> work{{root, 0}};
      while (!work.empty()) {
        auto &[x, i] = work.back();
        if (hasCostly.count(x)) {
          work.pop_back();
          continue;
        }
        if (x->op == Op::REDUCE || i == x->nsrc) {
          bool h = x->op != Op::REDUCE && costly(x);
          if (x->op != Op::REDUCE)
            for (const UOp *s : x->src()) h = h || hasCostly[s];
          hasCostly[x] = h;
          work.pop_back();
          continue;
        }
        work.push_back({x->src(i++), 0});
      }
      return hasCostly[root];
    };
    auto qualifies = [&](const UOp *x) {
      if (!isFloat(x->dtype) || x->op == Op::REDUCE || !coneCostly(x)) return false;
      std::vector<size_t> lanes;
      for (const UOp *r : free.at(x)) {
        size_t p = posOf(r);
        if (p == loops.size()) return false; // (a range of no loop of the store: a reduction's)
        if (p >= firstLane) {
          if (!isUpcastRange(r)) return false;
          lanes.push_back(p);
        }
      }
      if (lanes.empty()) return false;
      size_t deepest = *std::max_element(lanes.begin(), lanes.end());
      for (size_t p = firstLane; p < deepest; ++p)
        if (isUpcastRange(loops[p]) && std::find(lanes.begin(), lanes.end(), p) == lanes.end()) return true;
      return false;
    };
    std::unordered_map<const UOp *, const UOp *> sub;
    std::unordered_set<const UOp *> seen;
    std::vector<const UOp *> work{e->src(0)->src(1)};
    while (!work.empty()) {
      const UOp *x = work.back();
      work.pop_back();
      if (!seen.insert(x).second || x->op == Op::REDUCE) continue;
      if (qualifies(x)) {
        sub[x] = c.make(Op::REDUCE, x->dtype, {x}, mul);
        continue;
      }
      for (const UOp *s : x->src()) work.push_back(s);
    }
    if (sub.empty()) continue;
    const UOp *st = e->src(0);
    std::vector<const UOp *> src(e->src().begin(), e->src().end());
    src[0] = c.make(Op::STORE, st->dtype, {st->src(0), substitute(c, st->src(1), sub)}, st->arg, st->tag);
    ends.back() = c.make(Op::END, e->dtype, src, e->arg, e->tag);
    changed = true;
  }
  return changed ? c.make(body->op, body->dtype, ends, body->arg, body->tag) : body;
}

std::vector<int64_t> seamsOf(Context &c, const UOp *body, const UOp *r, const FreeRanges &free) {
  auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
  if (!n || *n < 2 || *n > 4096 || isUpcastRange(r)) return {};
  // the buffers a value reads
  auto buffers = [](const UOp *v) {
    std::set<const UOp *> b;
    for (const UOp *y : toposort(v))
      if (y->op == Op::INDEX && y->src(0)->op == Op::PARAM) b.insert(y->src(0));
    return b;
  };
  std::vector<const UOp *> conds;
  for (const UOp *x : toposort(body)) {
    if (x->op != Op::WHERE || x->src(0)->dtype != DType::Bool) continue;
    // (a selection between reads of different buffers: a padding's WHERE(valid, x, 0) is the optimizer's to
    // split, by its interiors)
    const auto &fr = free.at(x->src(0));
    if (fr.size() != 1 || fr[0] != r) continue;
    auto a = buffers(x->src(1)), b = buffers(x->src(2));
    if (a.empty() || b.empty() || a == b) continue;
    bool data = false;
    for (const UOp *y : toposort(x->src(0))) data = data || y->op == Op::INDEX || y->op == Op::LOAD;
    if (!data && std::find(conds.begin(), conds.end(), x->src(0)) == conds.end()) conds.push_back(x->src(0));
    if (conds.size() > 4) return {};
  }
  if (conds.empty()) return {};
  std::vector<int64_t> cuts;
  std::vector<int> prev;
  for (int64_t i = 0; i < static_cast<int64_t>(*n); ++i) {
    std::vector<int> now;
    for (const UOp *cond : conds) {
      const UOp *v = simplifyWith(c, substitute(c, cond, {{r, c.constInt(r->dtype, i)}}), symRules());
      if (v->op != Op::CONST || !v->arg || (v->arg->kind != ArgKind::Bool && v->arg->kind != ArgKind::Int)) return {};
      now.push_back(v->arg->kind == ArgKind::Bool ? v->arg->b() : v->arg->i() != 0);
    }
    if (i > 0 && now != prev) cuts.push_back(i);
    if (cuts.size() > 3) return {};
    prev = std::move(now);
  }
  return cuts;
}

} // namespace uopc::linearize
