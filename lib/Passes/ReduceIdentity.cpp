//===- ReduceIdentity.cpp - the `reduce-identity` pass: Invalid in a reduce is its identity ===//
// Stage 0.3 of seed 000 (tinygrad's pm_invalid_reduce_identity), at the tensor level. A REDUCE whose
// input is Invalid along a reduced axis ("this element has no data") gets the reduce identity there
// (ADD 0, MUL 1, MAX the dtype minimum), so one padded element does not poison the whole reduction; an
// Invalid that does not depend on a reduced axis still poisons its output lane (the gather with an
// Invalid index: the lane has no data, whatever the reduction).
//
// "Depends on a reduce range", decided on tensor shapes (there are no RANGEs before rangeify): REDUCE
// [op, k] reduces the first k axes of its input. Walking down the input through elementwise ops (operands
// right-aligned, so an operand of rank r sees the first k-(R-r) of its axes reduced), the pass rewrites
//   where(c, x, Invalid)   -> where(c, x, identity)   when c varies along a reduced axis: c is not a CONST,
//                             not an EXPAND/broadcast along it, and its size there is not 1 (conservative:
//                             anything else counts as varying, as any RANGE does in tinygrad);
//   PAD(x, off, size)      -> PAD(where(mask_R, PAD_R(x), identity), off_K, size)   (pad_fill invalid, not
//                             bool) when the padding touches a reduced axis: PAD_R pads only the reduced
//                             axes, whose padding becomes the identity; the padding of the kept axes stays
//                             Invalid (those lanes have no data at all).
// Gates on `_device_num` (MSELECT/MSTACK forms) are scalars, so they never depend on a reduced axis.
//
// Placement: after gate lifting (invalid-pad's masks, multi-lower's gates) and before anything builds an
// accumulator (rangeify, kernel split): there an Invalid element would poison the accumulator.
#include "IR/Error.h"
#include "IR/Shape.h"
#include "Passes/Multi/PadForms.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace uopc {
namespace {

using namespace padforms;

struct IdentityState {
  Graph *g = nullptr;
  ShapeInfo *shapes = nullptr;
  std::unordered_map<uint64_t, bool> varies;              // memo of varies(), by Key::id
  std::unordered_map<uint64_t, const UOp *> identity;     // memo of toIdentity() for one REDUCE
  int rank(const UOp *u) const {
    const auto &s = shapes->shape(u);
    return s ? static_cast<int>(s->size()) : 0;
  }
};

/// PAD (Invalid fill) whose source became `nx` (null: unchanged): its padding along the first kk axes
/// becomes the identity of `rop`, the padding of the kept axes stays Invalid; null if unchanged.
const UOp *identityPad(IdentityState &st, Context &ctx, const UOp *u, const UOp *nx, int kk, Op rop) {
  const UOp *x = nx ? nx : u->src(0);
  const auto &xs = st.shapes->shape(u->src(0));
  if (!xs) return nx ? ctx.withSrc(u, std::vector<const UOp *>{x, u->src(1), u->src(2)}) : nullptr;
  Shape off = u->src(1)->op == Op::STACK ? Shape(u->src(1)->src().begin(), u->src(1)->src().end()) : Shape{u->src(1)};
  Shape size = u->src(2)->op == Op::STACK ? Shape(u->src(2)->src().begin(), u->src(2)->src().end()) : Shape{u->src(2)};
  const UOp *zero = ctx.constInt(DType::WeakInt, 0);
  bool padR = false, padK = false;
  Shape offR = *xs, sizeR = *xs, offK = off;
  for (size_t j = 0; j < xs->size(); ++j) {
    auto o = ShapeInfo::constDim(off[j]);
    bool padded = !(o && *o == 0 && size[j] == (*xs)[j]);
    bool reduced = static_cast<int>(j) < kk;
    (reduced ? padR : padK) |= padded;
    offR[j] = reduced ? off[j] : zero;
    sizeR[j] = reduced ? size[j] : (*xs)[j];
    if (reduced) offK[j] = zero;
  }
  if (!padR) return nx ? ctx.withSrc(u, std::vector<const UOp *>{x, u->src(1), u->src(2)}) : nullptr;
  const UOp *oR = shapeOperand(ctx, offR), *sR = shapeOperand(ctx, sizeR);
  const UOp *inner = ctx.make(Op::PAD, u->dtype, {x, oR, sR});
  const UOp *masked = ctx.make(Op::WHERE, u->dtype, {padMask(ctx, u->dtype, *xs, oR, sR), inner,
                                                      reduceIdentityConst(ctx, rop, u->dtype)});
  if (!padK) return masked;
  return ctx.make(Op::PAD, u->dtype, {masked, shapeOperand(ctx, offK), u->src(2)});
}

/// A node seen with k of its leading axes reduced (k differs per path: operands are right-aligned).
struct Key {
  const UOp *u;
  int k;
  uint64_t id() const { return uint64_t(u->index) << 16 | uint16_t(k + 0x8000); }
};

/// Memoized post-order evaluation of f over (node, k) pairs without recursion: `children` lists the
/// pairs a pair's result depends on (evaluated first), `combine` computes a result from them. Graph
/// depth costs heap, not stack; shared subgraphs are evaluated once per k.
template <typename R, typename Children, typename Combine>
R postOrder(Key root, std::unordered_map<uint64_t, R> &memo, Children &&children, Combine &&combine) {
  std::vector<std::pair<Key, bool>> stack{{root, false}};
  std::vector<Key> kids;
  while (!stack.empty()) {
    auto [key, expanded] = stack.back();
    stack.pop_back();
    if (memo.count(key.id())) continue;
    kids.clear();
    children(key, kids);
    if (!expanded) {
      stack.push_back({key, true});
      for (const Key &c : kids)
        if (!memo.count(c.id())) stack.push_back({c, false});
      continue;
    }
    memo[key.id()] = combine(key, kids);
  }
  return memo.at(root.id());
}

/// Whether tensor c may take different values along its first kk axes: conservative (anything that is
/// not a CONST, a broadcast along those axes, or elementwise over such, counts as varying).
bool varies(IdentityState &st, const UOp *c, int kk) {
  auto leaf = [&](const Key &key) -> std::optional<bool> {
    if (key.k <= 0 || key.u->op == Op::CONST) return false;
    const auto &s = st.shapes->shape(key.u);
    if (!s) return true;
    bool allOne = true;
    for (int j = 0; j < key.k && j < static_cast<int>(s->size()); ++j) {
      auto d = ShapeInfo::constDim((*s)[static_cast<size_t>(j)]);
      if (!d || *d != 1) allOne = false;
    }
    if (allOne) return false;
    if (key.u->op != Op::EXPAND && !isElementwise(key.u->op)) return true;
    return std::nullopt;
  };
  auto children = [&](const Key &key, std::vector<Key> &out) {
    if (leaf(key)) return;
    int r = st.rank(key.u);
    size_t n = key.u->op == Op::EXPAND ? 1 : key.u->nsrc;
    for (size_t i = 0; i < n; ++i) out.push_back({key.u->src(i), key.k - (r - st.rank(key.u->src(i)))});
  };
  auto combine = [&](const Key &key, const std::vector<Key> &kids) {
    if (auto v = leaf(key)) return *v;
    for (const Key &c : kids)
      if (st.varies.at(c.id())) return true;
    return false;
  };
  return postOrder<bool>({c, kk}, st.varies, children, combine);
}

/// u with Invalid along its first kk axes replaced by the identity of `rop`; null if unchanged.
const UOp *toIdentity(IdentityState &st, Context &ctx, const UOp *root, int kk, Op rop) {
  auto sub = [&](const UOp *u, size_t i, int k) { return Key{u->src(i), k - (st.rank(u) - st.rank(u->src(i)))}; };
  auto invalidPad = [&](const UOp *u) {
    return u->op == Op::PAD && st.g->padFill == PadFill::Invalid && u->dtype != DType::Bool;
  };
  auto children = [&](const Key &key, std::vector<Key> &out) {
    const UOp *u = key.u;
    if (key.k <= 0) return;
    if (u->op == Op::WHERE) {
      out.push_back(sub(u, 1, key.k));
      if (!isInvalidConst(u->src(2))) out.push_back(sub(u, 2, key.k));
    } else if (invalidPad(u)) {
      out.push_back({u->src(0), key.k});
    } else if (isElementwise(u->op) && u->op != Op::BITCAST && u->op != Op::CAST) {
      for (size_t i = 0; i < u->nsrc; ++i) out.push_back(sub(u, i, key.k));
    }
  };
  auto result = [&](const Key &c) { return st.identity.at(c.id()); };
  auto combine = [&](const Key &key, const std::vector<Key> &kids) -> const UOp * {
    const UOp *u = key.u;
    int k = key.k;
    if (k <= 0) return nullptr;
    if (u->op == Op::WHERE) {
      const UOp *t = result(kids[0]), *f = nullptr;
      if (isInvalidConst(u->src(2))) {
        Key c = sub(u, 0, k);
        if (varies(st, c.u, c.k)) f = reduceIdentityConst(ctx, rop, u->dtype);
      } else {
        f = result(kids[1]);
      }
      if (!t && !f) return nullptr;
      return ctx.make(Op::WHERE, u->dtype, {u->src(0), t ? t : u->src(1), f ? f : u->src(2)});
    }
    if (invalidPad(u)) return identityPad(st, ctx, u, result(kids[0]), k, rop);
    if (kids.empty()) return nullptr;
    std::vector<const UOp *> srcs(u->src().begin(), u->src().end());
    bool changed = false;
    for (size_t i = 0; i < kids.size(); ++i)
      if (const UOp *n = result(kids[i])) srcs[i] = n, changed = true;
    return changed ? ctx.withSrc(u, srcs) : nullptr;
  };
  st.identity.clear(); // results depend on the reduce op
  return postOrder<const UOp *>({root, kk}, st.identity, children, combine);
}

const RuleSet &identityRules() {
  static const RuleSet rules{
      rule(pat(Op::REDUCE).named("r"), [](Match &m) -> const UOp * {
        auto &st = m.user<IdentityState>();
        const UOp *r = m["r"];
        if (r->nsrc != 1) return nullptr;
        Op rop = r->arg->elems()[0]->op();
        int k = static_cast<int>(r->arg->elems()[1]->i());
        const UOp *n = toIdentity(st, m.ctx(), r->src(0), k, rop);
        return n ? m.ctx().withSrc(r, std::vector<const UOp *>{n}) : nullptr;
      }),
  };
  return rules;
}

} // namespace

void runReduceIdentity(Graph &g, const PassContext &) {
  ShapeInfo shapes(g);
  IdentityState st;
  st.g = &g;
  st.shapes = &shapes;
  RewriteOptions o;
  o.sourcesFirst = &identityRules();
  o.user = &st;
  o.walk = true; // a rewritten REDUCE keeps Invalid only where it must: nothing to revisit
  o.enterCalls = true;
  o.describe = [&g](const UOp *u) { return g.describe(u); };
  g.root = graphRewrite(*g.ctx, g.root, o);
}

} // namespace uopc
