//===- Kernel.cpp - the accumulator lanes and index strides of a kernel ------===//
#include "IR/Kernel.h"

#include "IR/Error.h"
#include "IR/Range.h"
#include "IR/Records.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace uopc {

std::vector<size_t> writtenSlots(const UOp *call) {
  std::vector<size_t> out{0};
  if (const UOp *sink = kernelSink(call))
    for (const UOp *e : sink->src()) {
      const UOp *st = e->op == Op::END && e->nsrc ? e->src(0) : e;
      if (st->op != Op::STORE || st->nsrc < 1 || st->src(0)->op != Op::INDEX || st->src(0)->nsrc < 1) continue;
      const UOp *p = st->src(0)->src(0);
      if (p->op != Op::PARAM || !p->arg) continue;
      int64_t slot = ParamArg::slotOf(p->arg);
      if (slot > 0 && static_cast<size_t>(slot) + 1 < call->nsrc) out.push_back(static_cast<size_t>(slot));
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const UOp *blockBufferOf(const UOp *u) {
  while (u->op == Op::AFTER && u->nsrc > 0) u = u->src(0);
  if (u->op != Op::BUFFER || !u->arg) return nullptr;
  try {
    return ParamArg::decode(u->arg).addrspace == AddrSpace::LOCAL ? u : nullptr;
  } catch (const Error &) {
    return nullptr;
  }
}

const UOp *rangeLike(Context &c, const UOp *r, int64_t size, int64_t number, std::optional<AxisType> type) {
  std::vector<const Arg *> elems(r->arg->elems().begin(), r->arg->elems().end());
  elems[0] = c.argInt(number);
  if (type) elems[1] = c.argAxisType(*type);
  return c.make(Op::RANGE, r->dtype, {c.constInt(r->dtype, size)}, c.argTuple(elems), r->tag);
}

const UOp *combinedIndex(Context &c, const UOp *outer, int64_t amount, const UOp *inner) {
  DType dt = outer->dtype;
  return c.make(Op::ADD, dt, {c.make(Op::MUL, dt, {outer, c.constInt(dt, amount)}), inner});
}

const UOp *withAxisType(Context &c, const UOp *r, AxisType type) {
  if (r->op != Op::RANGE || !r->arg || r->arg->kind != ArgKind::Tuple || r->arg->count < 2) return r;
  std::vector<const Arg *> elems(r->arg->elems().begin(), r->arg->elems().end());
  elems[1] = c.argAxisType(type);
  return c.make(Op::RANGE, r->dtype, r->src(), c.argTuple(elems), r->tag);
}

bool storesMayRace(const UOp *body) {
  auto bufferParam = [](const UOp *p) {
    return p->op == Op::PARAM && p->nsrc > 0 && !(p->src(0)->op == Op::STACK && p->src(0)->nsrc == 0);
  };
  std::vector<int64_t> writes;
  std::vector<const UOp *> stores;
  for (const UOp *e : body->src()) {
    const UOp *st = e->op == Op::END && e->nsrc ? e->src(0) : e;
    stores.push_back(st);
    bool direct = st->op == Op::STORE && st->nsrc >= 1 && st->src(0)->op == Op::INDEX && st->src(0)->nsrc >= 1 &&
                  st->src(0)->src(0)->op == Op::PARAM;
    writes.push_back(direct ? ParamArg::slotOf(st->src(0)->src(0)->arg) : -1);
  }
  for (size_t k = 0; k < stores.size(); ++k) {
    const UOp *target = stores[k]->op == Op::STORE && stores[k]->nsrc ? stores[k]->src(0) : nullptr;
    for (const UOp *x : toposort(stores[k])) {
      if (x == target || x->op != Op::INDEX || x->nsrc < 2 || !bufferParam(x->src(0))) continue;
      int64_t slot = ParamArg::slotOf(x->src(0)->arg);
      for (size_t j = 0; j < writes.size(); ++j)
        if (writes[j] == slot && (j != k || !target || target->nsrc < 2 || x->src(1) != target->src(1))) return true;
    }
  }
  return false;
}

int64_t rangeNumber(const UOp *r) {
  return r->arg && r->arg->kind == ArgKind::Tuple && r->arg->count && r->arg->elems()[0]->kind == ArgKind::Int
             ? r->arg->elems()[0]->i()
             : static_cast<int64_t>(r->index);
}

namespace {
/// The strings of kernel SINK `sink`'s KernelInfo tuple field `field`, in order.
std::vector<std::string> infoStrings(const UOp *sink, std::string_view field) {
  std::vector<std::string> out;
  const Arg *info = sink && sink->arg && sink->arg->kind == ArgKind::Record ? sink->arg : nullptr;
  const Arg *opts = info ? info->field(field) : nullptr;
  if (opts && opts->kind == ArgKind::Tuple)
    for (const Arg *o : opts->elems())
      if (o->kind == ArgKind::String) out.emplace_back(o->str());
  return out;
}
} // namespace

std::vector<std::string> appliedOpts(const UOp *sink) { return infoStrings(sink, "applied_opts"); }

std::vector<std::string> blockedArgs(const UOp *sink) { return infoStrings(sink, "blocked"); }

const UOp *withInfoStrings(Context &c, const UOp *sink, std::string_view field, const std::vector<std::string> &entries) {
  std::vector<std::pair<std::string_view, const Arg *>> fields;
  const Arg *info = sink->arg;
  if (info && info->kind == ArgKind::Record)
    for (size_t k = 0; k < info->count; ++k)
      if (info->keys()[k] != field) fields.emplace_back(info->keys()[k], info->elems()[k]);
  std::vector<const Arg *> list;
  for (const std::string &e : entries) list.push_back(c.argString(e));
  if (!list.empty()) fields.emplace_back(field, c.argTuple(list));
  return c.make(Op::SINK, sink->dtype, sink->src(), makeRecord(c, "KernelInfo", fields), sink->tag);
}

const UOp *withBlockedArgs(Context &c, const UOp *sink, const std::vector<std::string> &entries) {
  return withInfoStrings(c, sink, "blocked", entries);
}

std::vector<const UOp *> accumulatorLanes(const UOp *reduce) {
  if (reduce->op != Op::REDUCE || reduce->nsrc == 0) return {};
  // the UPCAST ranges free in each node of the body, sources first (a nested REDUCE binds its own)
  std::unordered_map<const UOp *, std::vector<const UOp *>> free;
  for (const UOp *x : toposort(reduce)) {
    std::vector<const UOp *> f;
    if (isUpcastRange(x)) f.push_back(x);
    for (const UOp *s : x->src()) {
      const auto &fs = free[s];
      f.insert(f.end(), fs.begin(), fs.end());
    }
    if (x->op == Op::REDUCE || x->op == Op::END)
      std::erase_if(f, [&](const UOp *r) { auto own = x->src().subspan(1); return std::find(own.begin(), own.end(), r) != own.end(); });
    std::sort(f.begin(), f.end());
    f.erase(std::unique(f.begin(), f.end()), f.end());
    free[x] = std::move(f);
  }
  std::vector<const UOp *> lanes = free[reduce];
  std::sort(lanes.begin(), lanes.end(), [](const UOp *a, const UOp *b) {
    return rangeNumber(a) != rangeNumber(b) ? rangeNumber(a) < rangeNumber(b) : a->index < b->index;
  });
  return lanes;
}

int64_t laneCount(std::span<const UOp *const> lanes) {
  int64_t n = 1;
  for (const UOp *r : lanes) {
    auto b = r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
    if (!b || *b < 1 || *b > 4096 || n * static_cast<int64_t>(*b) > 4096)
      fail("UOp #" + std::to_string(r->index) + " (RANGE): an UPCAST range needs a constant size, at most 4096 lanes in all");
    n *= static_cast<int64_t>(*b);
  }
  return n;
}

std::optional<int64_t> indexStride(const UOp *root, const UOp *r, bool throughSelect) {
  std::unordered_map<const UOp *, std::optional<int64_t>> done;
  std::vector<std::pair<const UOp *, bool>> st{{root, false}};
  auto constOf = [](const UOp *u) -> std::optional<int64_t> {
    if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Int) return u->arg->i();
    return std::nullopt;
  };
  while (!st.empty()) {
    auto [u, expanded] = st.back();
    st.pop_back();
    if (done.count(u)) continue;
    if (u == r) {
      done[u] = 1;
      continue;
    }
    if (u->nsrc == 0) { // constants, variables, other ranges
      done[u] = 0;
      continue;
    }
    if (!expanded) {
      st.push_back({u, true});
      for (const UOp *s : u->src()) st.push_back({s, false});
      continue;
    }
    std::vector<std::optional<int64_t>> s;
    bool allZero = true;
    for (const UOp *x : u->src()) {
      s.push_back(done[x]);
      allZero &= s.back() && *s.back() == 0;
    }
    std::optional<int64_t> v;
    if (allZero) v = 0;
    else if (u->op == Op::ADD && s[0] && s[1]) v = *s[0] + *s[1];
    else if (u->op == Op::SUB && s[0] && s[1]) v = *s[0] - *s[1];
    else if (u->op == Op::WHERE && throughSelect && s[1] && u->src(2)->op == Op::CONST) v = *s[1];
    else if (u->op == Op::MUL && s[0] && s[1] && (*s[0] == 0 || *s[1] == 0)) {
      auto c0 = constOf(u->src(0)), c1 = constOf(u->src(1));
      if (*s[0] == 0 && c0) v = *c0 * *s[1];
      else if (*s[1] == 0 && c1) v = *c1 * *s[0];
    }
    done[u] = v;
  }
  return done[root];
}

bool kernelSplitByShares(const UOp *call) {
  if (kernelParallel(call) == 0) return false;
  const UOp *sink = kernelSink(call);
  if (!sink) return false;
  for (const std::string &o : appliedOpts(sink))
    if (o.rfind("relayout:", 0) == 0) return false;
  return true;
}

} // namespace uopc
