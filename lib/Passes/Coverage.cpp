//===- Coverage.cpp - the elements of a buffer its writes leave untouched ---===//
#include "Passes/Coverage.h"

#include "IR/Range.h"
#include "IR/Records.h"
#include "IR/ScalarOps.h"
#include "Passes/Symbolic/Symbolic.h"

#include <unordered_map>

namespace uopc {
namespace {

using namespace interp; // Word and the per-dtype scalar semantics

/// What one node is in one iteration: a known word, Invalid, or a value that depends on loaded data (or a
/// variable) and is not Invalid.
enum class Kind : uint8_t { Known, Invalid, Data };
struct Val {
  Kind kind = Kind::Data;
  Word w = 0;
};

/// The dtype a word of `dt` is computed in (weak dtypes have no storage of their own).
DType holdable(DType dt) {
  if (dt == DType::WeakInt) return DType::Int64;
  if (dt == DType::WeakFloat) return DType::Float64;
  return dt;
}

/// The nodes whose values decide whether and where a store writes, sources first: its index, gates and
/// value, not entering what only gives data (a REDUCE, a read's buffer).
std::vector<const UOp *> cone(const UOp *store) {
  auto children = [](const UOp *u, std::vector<const UOp *> &out) {
    out.clear();
    if (u->op == Op::REDUCE || u->op == Op::RANGE || u->op == Op::PARAM) return;
    size_t first = u->op == Op::INDEX ? 1 : 0; // an INDEX's index and gates, not its buffer
    for (size_t i = first; i < u->nsrc; ++i) out.push_back(u->src(i));
  };
  std::vector<const UOp *> order;
  std::unordered_map<const UOp *, bool> seen{{store, true}};
  std::vector<std::pair<const UOp *, size_t>> stack{{store, 0}};
  std::vector<std::vector<const UOp *>> pending(1);
  children(store, pending.back());
  while (!stack.empty()) {
    auto &[u, i] = stack.back();
    if (i < pending.back().size()) {
      const UOp *c = pending.back()[i++];
      if (seen[c]) continue;
      seen[c] = true;
      stack.push_back({c, 0});
      pending.emplace_back();
      children(c, pending.back());
      continue;
    }
    order.push_back(u);
    stack.pop_back();
    pending.pop_back();
  }
  return order;
}

/// Runs one store's loop nest and marks the elements it writes in `written`; false when that cannot be
/// known exactly. Each iteration evaluates the store's cone in order, every node reading its sources'
/// values by position.
class StoreRun {
public:
  StoreRun(const UOp *end, const UOp *store) : order_(cone(store)) {
    if (end)
      for (const UOp *r : end->src().subspan(1)) ranges_.push_back(r);
    std::unordered_map<const UOp *, uint32_t> pos;
    for (size_t i = 0; i < order_.size(); ++i) pos[order_[i]] = static_cast<uint32_t>(i);
    srcs_.resize(order_.size());
    rangeOf_.assign(order_.size(), -1);
    for (size_t i = 0; i < order_.size(); ++i) {
      for (const UOp *x : order_[i]->src()) {
        auto it = pos.find(x);
        srcs_[i].push_back(it == pos.end() ? kNone : it->second);
      }
      for (size_t k = 0; k < ranges_.size(); ++k)
        if (ranges_[k] == order_[i]) rangeOf_[i] = static_cast<int>(k);
    }
  }

  /// `budget`: node evaluations left for this and later stores.
  bool run(std::vector<bool> &written, int64_t &budget) {
    std::vector<int64_t> sizes;
    int64_t trips = 1;
    for (const UOp *r : ranges_) {
      // (a CONST: a loop of one iteration the simplifier folded, its value that constant)
      auto n = r->op == Op::RANGE ? constBound(r->src(0)) : r->op == Op::CONST ? std::optional<Bound>(1) : std::nullopt;
      if (!n || *n < 0 || *n > kMaxCoverageWork) return false;
      sizes.push_back(static_cast<int64_t>(*n));
      trips *= sizes.back();
      if (trips > kMaxCoverageWork) return false;
    }
    if (trips > budget / static_cast<int64_t>(order_.size())) return false;
    budget -= trips * static_cast<int64_t>(order_.size());
    std::vector<int64_t> at(ranges_.size(), 0);
    vals_.assign(order_.size(), {});
    for (int64_t t = 0; t < trips; ++t) {
      for (size_t i = 0; i < order_.size(); ++i) vals_[i] = eval(i, at);
      if (!apply(written)) return false;
      for (size_t k = ranges_.size(); k-- > 0;) { // odometer, the last range fastest
        if (++at[k] < sizes[k]) break;
        at[k] = 0;
      }
    }
    return true;
  }

private:
  static constexpr uint32_t kNone = UINT32_MAX; ///< a source outside the cone (a read's buffer)
  std::vector<const UOp *> order_, ranges_;     ///< order_.back() is the STORE
  std::vector<std::vector<uint32_t>> srcs_;     ///< per node: its sources' positions in order_
  std::vector<int> rangeOf_;                    ///< per node: its index in ranges_, or -1
  std::vector<Val> vals_;

  const Val &in(size_t i, size_t k) const { return vals_[srcs_[i][k]]; }

  /// The store of this iteration: false when its effect cannot be known.
  bool apply(std::vector<bool> &written) const {
    size_t st = order_.size() - 1, ix = srcs_[st][0];
    const UOp *index = order_[ix];
    const Val &i = in(ix, 1), &v = in(st, 1);
    if (i.kind == Kind::Data) return false; // a scatter through loaded data
    if (i.kind == Kind::Invalid) return true;
    for (size_t g = 2; g < index->nsrc; ++g) {
      const Val &c = in(ix, g);
      if (c.kind != Kind::Known) return false;
      if (c.w == 0) return true;
    }
    if (v.kind == Kind::Invalid) return false; // (what a leftover Invalid stores is the target's business)
    int64_t e = asInt(i.w);
    if (e < 0 || e >= static_cast<int64_t>(written.size())) return false;
    written[static_cast<size_t>(e)] = true;
    return true;
  }

  Val eval(size_t i, const std::vector<int64_t> &at) const {
    const UOp *u = order_[i];
    switch (u->op) {
    case Op::CONST: {
      const Arg *a = u->arg;
      DType dt = holdable(u->dtype);
      if (!a) return {};
      if (a->kind == ArgKind::Invalid) return {Kind::Invalid, 0};
      if (!isHoldable(dt)) return {};
      if (a->kind == ArgKind::Bool) return {Kind::Known, a->b() ? Word(1) : Word(0)};
      if (a->kind == ArgKind::Int) return {Kind::Known, intToWord(dt, a->i())};
      if (a->kind == ArgKind::Float) return {Kind::Known, floatToWord(dt, a->f())};
      return {};
    }
    case Op::RANGE:
      if (rangeOf_[i] < 0) return {};
      return {Kind::Known, intToWord(holdable(u->dtype), at[static_cast<size_t>(rangeOf_[i])])};
    case Op::INDEX: { // a read: Invalid where its index is Invalid or a gate is false, else data
      if (u->nsrc < 2) return {};
      if (in(i, 1).kind == Kind::Invalid) return {Kind::Invalid, 0};
      for (size_t g = 2; g < u->nsrc; ++g)
        if (const Val &c = in(i, g); c.kind == Kind::Known && c.w == 0) return {Kind::Invalid, 0};
      return {};
    }
    case Op::LOAD: // an Invalid read gives the alternative
      if (in(i, 0).kind == Kind::Invalid) return u->nsrc > 1 ? in(i, 1) : Val{Kind::Invalid, 0};
      return {};
    case Op::WHERE: {
      const Val &c = in(i, 0), &t = in(i, 1), &f = in(i, 2);
      if (c.kind == Kind::Known) return c.w ? t : f;
      if (c.kind == Kind::Invalid) return c;
      // an unknown condition: data, unless a side may be Invalid
      if (t.kind == Kind::Invalid || f.kind == Kind::Invalid) return {Kind::Invalid, 0};
      return {};
    }
    default:
      break;
    }
    if (u->op != Op::CAST && u->op != Op::BITCAST && !isALU(u->op)) return {};
    if (u->nsrc == 0 || u->nsrc > 3) return {};
    Word ws[3] = {};
    bool known = true;
    for (size_t k = 0; k < u->nsrc; ++k) {
      const Val &s = in(i, k);
      if (s.kind == Kind::Invalid) return s;
      known &= s.kind == Kind::Known;
      ws[k] = s.w;
    }
    if (!known) return {};
    DType out = holdable(u->dtype), dt = holdable(u->src(0)->dtype);
    if (!isHoldable(out) || !isHoldable(dt)) return {};
    if (u->op == Op::CAST) return {Kind::Known, castWord(dt, out, ws[0])};
    if (u->op == Op::BITCAST) return {Kind::Known, bitcastWord(dt, out, ws[0])};
    if (!aluSupported(u->op, dt)) return {};
    return {Kind::Known, aluWord(u->op, out, dt, ws)};
  }
};

/// Marks what one kernel writes into its `slot`; false when that cannot be known exactly.
bool markKernel(const UOp *body, size_t slot, std::vector<bool> &written, int64_t &budget) {
  for (const UOp *e : body->src()) {
    const UOp *st = e->op == Op::END ? e->src(0) : e;
    if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || st->src(0)->nsrc < 2) return false;
    const UOp *buf = st->src(0)->src(0);
    if (buf->op != Op::PARAM) return false;
    if (ParamArg::slotOf(buf->arg) != static_cast<int64_t>(slot)) continue;
    if (!StoreRun(e->op == Op::END ? e : nullptr, st).run(written, budget)) return false;
  }
  return true;
}

} // namespace

KeptElements keptElements(Context &ctx, const std::vector<BufferWrite> &writes, int64_t numel) {
  KeptElements k;
  if (numel < 0 || numel > kMaxCoverageElements) return k;
  std::vector<bool> written(static_cast<size_t>(numel), false);
  int64_t budget = kMaxCoverageWork;
  for (const BufferWrite &w : writes) {
    if (!w.body) return KeptElements{true, 0, {}}; // a copy writes every element
    SymbolicCtx sc;
    const UOp *body = bindVariables(ctx, w.body, {{"_device_num", w.deviceNum}}, &sc);
    if (!markKernel(simplifyWith(ctx, body, symRules(), &sc), w.slot, written, budget)) return k;
  }
  // the unwritten intervals, then runs of equal length at a constant stride
  std::vector<std::pair<int64_t, int64_t>> gaps; // [start, end)
  for (int64_t i = 0; i < numel;) {
    if (written[static_cast<size_t>(i)]) {
      ++i;
      continue;
    }
    int64_t j = i;
    while (j < numel && !written[static_cast<size_t>(j)]) ++j;
    gaps.push_back({i, j});
    k.elements += j - i;
    i = j;
  }
  for (size_t i = 0; i < gaps.size();) {
    KeptElements::Run r{gaps[i].first, gaps[i].second - gaps[i].first, gaps[i].second - gaps[i].first, 1};
    size_t j = i + 1;
    if (j < gaps.size() && gaps[j].second - gaps[j].first == r.length) {
      r.stride = gaps[j].first - r.start;
      while (j < gaps.size() && gaps[j].second - gaps[j].first == r.length &&
             gaps[j].first - gaps[j - 1].first == r.stride)
        ++j, ++r.count;
    }
    k.runs.push_back(r);
    i = j;
    if (k.runs.size() > kMaxKeptRuns) return KeptElements{}; // (the manifest stays linear in the buffers)
  }
  k.known = true;
  return k;
}

} // namespace uopc
