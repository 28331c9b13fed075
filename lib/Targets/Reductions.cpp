//===- Reductions.cpp - which reductions the targets may split into partial sums ===//
#include "Targets/Reductions.h"

#include "IR/Kernel.h"
#include "IR/Types.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace uopc {
namespace {

/// Visits every node of `root`'s cone once (iteratively) until `visit` returns false; whether it did.
template <typename F> bool stoppedIn(const UOp *root, F visit) {
  std::vector<const UOp *> st{root};
  std::unordered_map<const UOp *, bool> seen;
  while (!st.empty()) {
    const UOp *x = st.back();
    st.pop_back();
    if (seen[x]) continue;
    seen[x] = true;
    if (!visit(x)) return true;
    for (const UOp *s : x->src()) st.push_back(s);
  }
  return false;
}

bool isBufferRead(const UOp *x) { return x->op == Op::INDEX && x->nsrc >= 2 && x->src(0)->op == Op::PARAM; }

} // namespace

bool readsConsecutiveIn(const UOp *u, const UOp *range) {
  if (u->op != Op::REDUCE || u->nsrc < 1 || !range || range->op != Op::RANGE) return false;
  return stoppedIn(u->src(0), [&](const UOp *x) {
    return !(isBufferRead(x) && indexStride(x->src(1), range) == std::optional<int64_t>(1));
  });
}

bool splittableSum(const UOp *u) {
  if (u->op != Op::REDUCE || u->nsrc < 2 || !u->arg || u->arg->kind != ArgKind::Tuple || u->arg->count == 0) return false;
  if (u->arg->elems()[0]->op() != Op::ADD || !isFloat(u->dtype)) return false;
  const UOp *r = u->src(u->nsrc - 1);
  if (r->op != Op::RANGE || isUpcastRange(r)) return false; // (the optimizer's partial sums, added in lane order)
  bool refused = stoppedIn(u->src(0), [&](const UOp *x) {
    if (x->op == Op::REDUCE) return false;
    if (!isBufferRead(x)) return true;
    auto s = indexStride(x->src(1), r);
    if (!s || (*s != 0 && *s != 1)) return false;
    for (const UOp *g : x->src().subspan(2)) // gates: a read gated by r may not happen in every lane
      if (indexStride(g, r) != std::optional<int64_t>(0)) return false;
    return true;
  });
  return !refused;
}

} // namespace uopc
