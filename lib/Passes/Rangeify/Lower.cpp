//===- Lower.cpp - tensor values to index arithmetic on RANGEs ------------===//
#include "Passes/Rangeify/Lower.h"

#include "IR/Error.h"
#include "IR/Records.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <unordered_set>

namespace uopc::rangeify {
namespace {

std::optional<int64_t> constInt(const UOp *u) {
  if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Int) return u->arg->i();
  return std::nullopt;
}

/// The entries of a shape operand: a STACK's sources or a single CONST.
std::vector<const UOp *> operandEntries(const UOp *op) {
  if (op->op == Op::STACK) return {op->src().begin(), op->src().end()};
  return {op};
}

} // namespace

Lowerer::Lowerer(Graph &g, ShapeInfo &si) : g_(g), c_(*g.ctx), si_(si) {}

bool Lowerer::isBuffer(const UOp *u) {
  if (u->op == Op::BUFFER) return true;
  if (u->op != Op::PARAM || u->nsrc == 0) return false;
  if (u->src(0)->op == Op::STACK && u->src(0)->nsrc == 0) return false; // scalar variable
  return ParamArg::decode(u->arg).slot >= 0 || u->src(0)->op == Op::CONST;
}

const UOp *Lowerer::baseBuffer(const UOp *u) {
  while (isMovement(u->op) || u->op == Op::AFTER) u = u->src(0);
  return isBuffer(u) ? u : nullptr;
}

void Lowerer::beginKernel(int id, bool globalRanges) {
  kernel_ = id;
  if (!globalRanges) nextRange_ = 0;
  reduceDepth_ = 0;
  loops_.clear();
  work_ = 1;
  memo_.clear();
}

Shape Lowerer::shapeOf(const UOp *u) {
  const auto &s = si_.shape(u);
  if (!s) fail("rangeify: " + g_.describe(u) + " has no shape");
  return *s;
}

const UOp *Lowerer::cint(int64_t v) { return c_.constInt(DType::WeakInt, v); }

const UOp *Lowerer::add(const UOp *a, const UOp *b) {
  auto x = constInt(a), y = constInt(b);
  if (x && y) return cint(*x + *y);
  if (x && *x == 0) return b;
  if (y && *y == 0) return a;
  return c_.make(Op::ADD, DType::WeakInt, {a, b});
}

const UOp *Lowerer::mul(const UOp *a, const UOp *b) {
  auto x = constInt(a), y = constInt(b);
  if (x && y) return cint(*x * *y);
  if ((x && *x == 0) || (y && *y == 0)) return cint(0);
  if (x && *x == 1) return b;
  if (y && *y == 1) return a;
  return c_.make(Op::MUL, DType::WeakInt, {a, b});
}

const UOp *Lowerer::bin(Op op, const UOp *a, const UOp *b) {
  auto x = constInt(a), y = constInt(b);
  if (op == Op::FLOORDIV && y && *y == 1) return a;
  if (op == Op::FLOORMOD && y && *y == 1) return cint(0);
  if (x && y && *y != 0) {
    int64_t q = *x / *y, r = *x % *y;
    if (r != 0 && ((r < 0) != (*y < 0))) --q, r += *y;
    if (op == Op::FLOORDIV) return cint(q);
    if (op == Op::FLOORMOD) return cint(r);
  }
  if (op == Op::CMPLT && x && y) return c_.constBool(*x < *y);
  return c_.make(op, op == Op::CMPLT ? DType::Bool : DType::WeakInt, {a, b});
}

const UOp *Lowerer::flat(const Idx &idx, const Shape &shape) {
  if (idx.size() != shape.size()) fail("rangeify: index rank mismatch");
  const UOp *l = cint(0), *stride = cint(1);
  for (size_t k = shape.size(); k-- > 0;) {
    l = add(l, mul(idx[k], stride));
    stride = mul(stride, shape[k]);
  }
  return l;
}

Lowerer::Idx Lowerer::unflat(const UOp *l, const Shape &shape) {
  Idx out(shape.size());
  const UOp *stride = cint(1);
  for (size_t k = shape.size(); k-- > 0;) {
    auto d = ShapeInfo::constDim(shape[k]);
    if (d && *d == 1) {
      out[k] = cint(0);
      continue;
    }
    const UOp *q = bin(Op::FLOORDIV, l, stride);
    out[k] = k == 0 ? q : bin(Op::FLOORMOD, q, shape[k]);
    stride = mul(stride, shape[k]);
  }
  return out;
}

const UOp *Lowerer::key(const Idx &idx) {
  if (idx.empty()) return c_.make(Op::STACK, DType::Void, {});
  return c_.make(Op::STACK, DType::WeakInt, std::span<const UOp *const>(idx.data(), idx.size()));
}

std::optional<int64_t> Lowerer::tripsAt(const Idx &idx) const {
  // the innermost enclosing loop the index expressions use (a short walk: indexes are small)
  size_t depth = 0;
  std::vector<const UOp *> st(idx.begin(), idx.end());
  std::unordered_set<const UOp *> seen;
  while (!st.empty()) {
    const UOp *u = st.back();
    st.pop_back();
    if (!seen.insert(u).second) continue;
    if (u->op == Op::RANGE) {
      for (size_t k = loops_.size(); k-- > depth;)
        if (loops_[k] == u) {
          depth = k + 1;
          break;
        }
      continue;
    }
    for (const UOp *s : u->src()) st.push_back(s);
  }
  int64_t t = 1;
  for (size_t k = 0; k < depth; ++k) {
    auto n = constInt(loops_[k]->src(0));
    if (!n) return std::nullopt;
    t *= *n;
  }
  return t;
}

const UOp *Lowerer::invalidOf(DType dt) {
  if (dt == DType::Bool || g_.padFill == PadFill::Zero) {
    if (dt == DType::Bool) return c_.constBool(false);
    return isFloat(dt) ? c_.constFloat(dt, 0.0) : c_.constInt(dt, 0);
  }
  return c_.make(Op::CONST, dt, {}, c_.argInvalid());
}

Lowerer::Idx Lowerer::outputRanges(const Shape &shape, std::vector<const UOp *> &ranges, AxisType at) {
  Idx idx;
  for (const UOp *d : shape) {
    auto cd = ShapeInfo::constDim(d);
    if (cd && *cd == 1) {
      idx.push_back(cint(0));
      continue;
    }
    const Arg *arg = c_.argTuple({c_.argInt(nextRange_++), c_.argAxisType(at)});
    const UOp *r = c_.make(Op::RANGE, DType::WeakInt, {d}, arg);
    idx.push_back(r);
    ranges.push_back(r);
  }
  return idx;
}

const UOp *Lowerer::read(const UOp *state, DType dt, const Idx &idx, const Shape &shape) {
  return c_.make(Op::INDEX, dt, {state, clean(flat(idx, shape))});
}

const UOp *Lowerer::clean(const UOp *index) {
  if (index->op == Op::CONST || index->op == Op::RANGE) return index;
  return simplify(c_, index, &sctx_);
}

const UOp *Lowerer::lower(const UOp *root, const Idx &rootIdx) {
  // An explicit stack instead of recursion (a kernel may be a value a million ops deep): plan() turns a
  // frame into its children's requests, or its result; combine() builds the result from the children's.
  std::vector<Frame> stack;
  Frame first;
  first.u = root;
  first.idx = rootIdx;
  stack.push_back(std::move(first));
  const UOp *result = nullptr;
  while (true) {
    Frame &f = stack.back();
    if (!f.planned) {
      f.planned = true;
      f.memoKey = std::make_pair(f.u, key(f.idx));
      if (auto it = memo_.find(f.memoKey); it != memo_.end()) f.result = it->second;
      else f.result = plan(f);
    }
    if (!f.result && f.results.size() < f.reqs.size()) {
      auto &[child, childIdx] = f.reqs[f.results.size()];
      Frame next;
      next.u = child;
      next.idx = std::move(childIdx);
      stack.push_back(std::move(next));
      continue;
    }
    if (!f.result) {
      f.result = combine(f);
      memo_[f.memoKey] = f.result;
    } else if (!memo_.count(f.memoKey)) {
      memo_[f.memoKey] = f.result;
    }
    result = f.result;
    stack.pop_back();
    if (stack.empty()) return result;
    stack.back().results.push_back(result);
  }
}

const UOp *Lowerer::plan(Frame &f) {
  const UOp *u = f.u;
  const Idx &idx = f.idx;
  if (u->op == Op::CONST) return u;
  if (isMaterialized && isMaterialized(u)) {
    bool allConst = true;
    for (const UOp *i : idx) allConst &= i->op == Op::CONST;
    uses.push_back({u, key(idx), kernel_, reduceDepth_ > 0, allConst, tripsAt(idx)});
    return read(stateOf(u), u->dtype, idx, shapeOf(u));
  }
  if (isBuffer(u) || u->op == Op::AFTER) return read(stateOf(u), u->dtype, idx, shapeOf(u));
  if (u->op == Op::PARAM) return u; // a scalar variable (a symbolic size, _device_num)
  if (u->op == Op::BIND || u->op == Op::DETACH || u->op == Op::CONTIGUOUS_BACKWARD) {
    f.reqs.push_back({u->src(0), idx});
    return nullptr;
  }

  Shape s = shapeOf(u);
  if (isMovement(u->op)) {
    Shape t = shapeOf(u->src(0));
    Idx j(t.size());
    const UOp *gate = nullptr;
    switch (u->op) {
    case Op::RESHAPE: {
      std::vector<size_t> sNon1, tNon1;
      for (size_t a = 0; a < s.size(); ++a)
        if (auto d = ShapeInfo::constDim(s[a]); !d || *d != 1) sNon1.push_back(a);
      for (size_t a = 0; a < t.size(); ++a)
        if (auto d = ShapeInfo::constDim(t[a]); !d || *d != 1) tNon1.push_back(a);
      bool same = sNon1.size() == tNon1.size();
      for (size_t a = 0; same && a < sNon1.size(); ++a) same = s[sNon1[a]] == t[tNon1[a]];
      if (same) { // only size-1 axes differ: no arithmetic
        for (auto &x : j) x = cint(0);
        for (size_t a = 0; a < sNon1.size(); ++a) j[tNon1[a]] = idx[sNon1[a]];
      } else {
        j = unflat(flat(idx, s), t);
      }
      break;
    }
    case Op::PERMUTE: {
      auto perm = u->arg->elems();
      for (size_t a = 0; a < perm.size(); ++a) j[static_cast<size_t>(perm[a]->i())] = idx[a];
      break;
    }
    case Op::EXPAND: {
      size_t off = s.size() - t.size();
      for (size_t a = 0; a < t.size(); ++a) {
        auto td = ShapeInfo::constDim(t[a]), sd = ShapeInfo::constDim(s[off + a]);
        j[a] = (td && *td == 1 && !(sd && *sd == 1)) ? cint(0) : idx[off + a];
      }
      break;
    }
    case Op::SHRINK: {
      auto off = operandEntries(u->src(1));
      for (size_t a = 0; a < t.size(); ++a) j[a] = add(idx[a], off[a]);
      break;
    }
    case Op::PAD: {
      auto off = operandEntries(u->src(1));
      for (size_t a = 0; a < t.size(); ++a) {
        j[a] = add(idx[a], mul(off[a], cint(-1)));
        auto o = constInt(off[a]);
        const UOp *lo = (o && *o == 0) ? nullptr : bin(Op::CMPLT, add(off[a], cint(-1)), idx[a]);
        const UOp *end = add(off[a], t[a]);
        const UOp *hi = end == s[a] ? nullptr : bin(Op::CMPLT, idx[a], end);
        for (const UOp *cnd : {lo, hi}) {
          if (!cnd) continue;
          if (cnd->op == Op::CONST) {
            if (cnd->arg->b()) continue;
            return invalidOf(u->dtype); // statically outside the source
          }
          gate = gate ? c_.make(Op::AND, DType::Bool, {gate, cnd}) : cnd;
        }
      }
      break;
    }
    case Op::FLIP: {
      auto fl = u->arg->elems();
      for (size_t a = 0; a < t.size(); ++a)
        j[a] = fl[a]->b() ? add(mul(idx[a], cint(-1)), add(s[a], cint(-1))) : idx[a];
      break;
    }
    default: fail("rangeify: unhandled movement op " + g_.describe(u));
    }
    f.gate = gate;
    f.reqs.push_back({u->src(0), std::move(j)});
    return nullptr;
  }
  if (u->op == Op::STACK) {
    Idx rest(idx.begin() + 1, idx.end());
    if (auto i0 = constInt(idx[0])) {
      f.reqs.push_back({u->src(static_cast<size_t>(*i0)), rest});
      return nullptr;
    }
    for (size_t k = u->nsrc; k-- > 0;) f.reqs.push_back({u->src(k), rest}); // last source first
    return nullptr;
  }
  if (isElementwise(u->op) || ((u->op == Op::CUSTOM || u->op == Op::CUSTOMI) && u->dtype != DType::Void)) {
    for (const UOp *x : u->src()) { // CUSTOM/CUSTOMI values are elementwise over their sources
      Shape t = x->op == Op::CONST ? Shape{} : shapeOf(x);
      size_t off = s.size() - t.size();
      Idx j(t.size());
      for (size_t a = 0; a < t.size(); ++a) {
        auto td = ShapeInfo::constDim(t[a]);
        j[a] = (td && *td == 1) ? cint(0) : idx[off + a];
      }
      f.reqs.push_back({x, std::move(j)});
    }
    return nullptr;
  }
  if (u->op == Op::REDUCE) {
    Shape t = shapeOf(u->src(0));
    size_t n = static_cast<size_t>(u->arg->elems()[1]->i());
    Idx j = outputRanges(Shape(t.begin(), t.begin() + static_cast<long>(n)), f.ranges, AxisType::REDUCE);
    j.insert(j.end(), idx.begin(), idx.end());
    ++reduceDepth_; // until combine(): the source is lowered under this reduction
    loops_.insert(loops_.end(), f.ranges.begin(), f.ranges.end());
    f.reqs.push_back({u->src(0), std::move(j)});
    return nullptr;
  }
  fail("rangeify: cannot lower " + g_.describe(u) + " into a kernel");
}

const UOp *Lowerer::combine(Frame &f) {
  const UOp *u = f.u;
  const auto &r = f.results;
  if (u->op == Op::BIND || u->op == Op::DETACH || u->op == Op::CONTIGUOUS_BACKWARD) return r[0];
  if (isMovement(u->op)) {
    if (!f.gate) return r[0];
    const UOp *gate = clean(f.gate);
    if (gate->op == Op::CONST && gate->arg && gate->arg->kind == ArgKind::Bool)
      return gate->arg->b() ? r[0] : invalidOf(u->dtype); // the gate is decided by the ranges' bounds
    return c_.make(Op::WHERE, u->dtype, {gate, r[0], invalidOf(u->dtype)});
  }
  if (u->op == Op::STACK) {
    if (r.size() == 1) return r[0];
    const UOp *v = r[0]; // the last source's value; r[m] is source nsrc-1-m
    for (size_t k = u->nsrc - 1; k-- > 0;)
      v = c_.make(Op::WHERE, u->dtype, {c_.make(Op::CMPEQ, DType::Bool, {f.idx[0], cint(int64_t(k))}), r[u->nsrc - 1 - k], v});
    return v;
  }
  if (u->op == Op::REDUCE) {
    --reduceDepth_;
    loops_.resize(loops_.size() - f.ranges.size());
    if (f.ranges.empty()) return r[0];
    std::vector<const UOp *> srcs{r[0]};
    srcs.insert(srcs.end(), f.ranges.begin(), f.ranges.end());
    return c_.make(Op::REDUCE, u->dtype, srcs, c_.argTuple({u->arg->elems()[0], c_.argInt(0)}));
  }
  return c_.make(u->op, u->dtype, r, u->arg); // elementwise
}

const UOp *Lowerer::lowerStore(const UOp *dst, const UOp *val, const UOp *dstState) {
  Shape s = shapeOf(dst);
  std::vector<const UOp *> ranges;
  Idx idx = outputRanges(s, ranges, AxisType::LOOP);
  for (const UOp *d : s)
    if (auto cd = ShapeInfo::constDim(d); work_ && cd) *work_ *= *cd;
    else work_.reset();
  loops_ = ranges;
  const UOp *v = lower(val, idx);
  // the address: the destination view's movement ops, then the flat buffer index
  const UOp *gate = nullptr;
  const UOp *cur = dst;
  Idx ci = idx;
  while (isMovement(cur->op)) {
    // reuse the value lowering for the view arithmetic by lowering a marker-free path by hand
    Shape cs = shapeOf(cur), ts = shapeOf(cur->src(0));
    Idx j(ts.size());
    switch (cur->op) {
    case Op::RESHAPE: j = unflat(flat(ci, cs), ts); break;
    case Op::PERMUTE: {
      auto perm = cur->arg->elems();
      for (size_t a = 0; a < perm.size(); ++a) j[static_cast<size_t>(perm[a]->i())] = ci[a];
      break;
    }
    case Op::SHRINK: {
      auto off = operandEntries(cur->src(1));
      for (size_t a = 0; a < ts.size(); ++a) j[a] = add(ci[a], off[a]);
      break;
    }
    case Op::PAD: {
      auto off = operandEntries(cur->src(1));
      for (size_t a = 0; a < ts.size(); ++a) {
        j[a] = add(ci[a], mul(off[a], cint(-1)));
        const UOp *cnd = c_.make(Op::AND, DType::Bool, {bin(Op::CMPLT, add(off[a], cint(-1)), ci[a]),
                                                         bin(Op::CMPLT, ci[a], add(off[a], ts[a]))});
        gate = gate ? c_.make(Op::AND, DType::Bool, {gate, cnd}) : cnd;
      }
      break;
    }
    case Op::FLIP: {
      auto fl = cur->arg->elems();
      for (size_t a = 0; a < ts.size(); ++a)
        j[a] = fl[a]->b() ? add(mul(ci[a], cint(-1)), add(cs[a], cint(-1))) : ci[a];
      break;
    }
    default: fail("kernel-split: cannot store through " + g_.describe(cur));
    }
    ci = j;
    cur = cur->src(0);
  }
  if (!isBuffer(cur) && cur->op != Op::AFTER) fail("kernel-split: store target " + g_.describe(dst) + " is not a buffer view");
  if (gate) gate = clean(gate);
  if (gate && !(gate->op == Op::CONST && gate->arg && gate->arg->kind == ArgKind::Bool && gate->arg->b()))
    v = c_.make(Op::WHERE, v->dtype, {gate, v, c_.make(Op::CONST, v->dtype, {}, c_.argInvalid())});
  const UOp *st = c_.make(Op::STORE, DType::Void, {read(dstState, cur->dtype, ci, shapeOf(cur)), v});
  if (ranges.empty()) return st;
  std::vector<const UOp *> srcs{st};
  srcs.insert(srcs.end(), ranges.begin(), ranges.end());
  return c_.make(Op::END, DType::Void, srcs);
}

const UOp *Lowerer::lowerMaterialize(const UOp *x, const UOp *state) {
  Shape s = shapeOf(x);
  std::vector<const UOp *> ranges;
  Idx idx = outputRanges(s, ranges, AxisType::LOOP);
  for (const UOp *d : s)
    if (auto cd = ShapeInfo::constDim(d); work_ && cd) *work_ *= *cd;
    else work_.reset();
  // x itself is the materialized value being computed here: lower its definition, not a read of it
  auto saved = isMaterialized;
  isMaterialized = [&, x](const UOp *u) { return u != x && saved && saved(u); };
  loops_ = ranges;
  const UOp *v = lower(x, idx);
  memo_.clear();
  isMaterialized = saved;
  const UOp *st = c_.make(Op::STORE, DType::Void, {read(state, state->dtype, idx, s), v});
  if (ranges.empty()) return st;
  std::vector<const UOp *> srcs{st};
  srcs.insert(srcs.end(), ranges.begin(), ranges.end());
  return c_.make(Op::END, DType::Void, srcs);
}

const UOp *normalizeAfters(Context &ctx, const UOp *root) {
  static const RuleSet rules{
      rule(pat(Op::AFTER).named("a"), [](Match &m) -> const UOp * {
        const UOp *a = m.root(), *v = a->src(0);
        if (!isMovement(v->op)) return nullptr;
        std::vector<const UOp *> as(a->src().begin(), a->src().end());
        as[0] = v->src(0);
        std::vector<const UOp *> vs(v->src().begin(), v->src().end());
        vs[0] = m.ctx().make(Op::AFTER, v->src(0)->dtype, as, a->arg, a->tag);
        return m.ctx().make(v->op, v->dtype, vs, v->arg, v->tag);
      }),
  };
  return graphRewrite(ctx, root, rules);
}

std::optional<int64_t> recomputeCost(const UOp *x, const std::function<bool(const UOp *)> &isMaterialized) {
  // Post-order over the value. Only ops on data count: masks built from constants (invalid-pad's
  // where(pad(ones), ...)) fold into index arithmetic and cost nothing at run time.
  std::unordered_map<const UOp *, bool> data; // node -> depends on a buffer read
  std::vector<std::pair<const UOp *, bool>> stack{{x, false}};
  int64_t cost = 0;
  while (!stack.empty()) {
    auto [u, expanded] = stack.back();
    stack.pop_back();
    if (data.count(u)) continue;
    bool leaf = (u != x && isMaterialized(u)) || Lowerer::isBuffer(u) || u->op == Op::AFTER;
    if (leaf || u->op == Op::CONST || u->op == Op::PARAM) {
      data[u] = leaf;
      continue;
    }
    if (u->op == Op::REDUCE) return std::nullopt;
    if (!expanded) {
      stack.push_back({u, true});
      for (const UOp *s : u->src())
        if (!data.count(s)) stack.push_back({s, false});
      continue;
    }
    bool d = false;
    for (const UOp *s : u->src()) d |= data[s];
    data[u] = d;
    if (d && (isElementwise(u->op) || u->op == Op::PAD || u->op == Op::CUSTOM || u->op == Op::CUSTOMI)) ++cost;
  }
  return cost;
}

std::pair<const UOp *, int64_t> copySource(const UOp *copy) {
  const UOp *s = copy->src(0);
  if (s->op == Op::WHERE && isInvalidConst(s->src(2)) && s->src(0)->op == Op::CMPEQ) {
    const UOp *a = s->src(0)->src(0), *b = s->src(0)->src(1);
    if (a->op == Op::CONST) std::swap(a, b);
    if (a->op == Op::PARAM && b->op == Op::CONST && b->arg && b->arg->kind == ArgKind::Int) {
      ParamArg p = ParamArg::decode(a->arg);
      if (p.name && *p.name == "_device_num") return {s->src(1), b->arg->i()};
    }
  }
  return {s, -1};
}

} // namespace uopc::rangeify
