//===- Reductions.cpp - which reductions the targets may split into partial sums ===//
#include "Targets/Reductions.h"

#include "IR/Types.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace uopc {
namespace {

/// The stride of index expression `root` in range `r`: how much it grows when r grows by one, when that
/// is a constant (sums, differences and constant multiples of r); 0 for what does not depend on r (a read
/// at an index that does not move with r included); nullopt otherwise. Iterative.
std::optional<int64_t> strideIn(const UOp *root, const UOp *r) {
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
    else if (u->op == Op::MUL && s[0] && s[1] && (*s[0] == 0 || *s[1] == 0)) {
      auto c0 = constOf(u->src(0)), c1 = constOf(u->src(1));
      if (*s[0] == 0 && c0) v = *c0 * *s[1];
      else if (*s[1] == 0 && c1) v = *c1 * *s[0];
    }
    done[u] = v;
  }
  return done[root];
}

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
    return !(isBufferRead(x) && strideIn(x->src(1), range) == std::optional<int64_t>(1));
  });
}

bool splittableSum(const UOp *u) {
  if (u->op != Op::REDUCE || u->nsrc < 2 || !u->arg || u->arg->kind != ArgKind::Tuple || u->arg->count == 0) return false;
  if (u->arg->elems()[0]->op() != Op::ADD || !isFloat(u->dtype)) return false;
  const UOp *r = u->src(u->nsrc - 1);
  if (r->op != Op::RANGE) return false;
  bool refused = stoppedIn(u->src(0), [&](const UOp *x) {
    if (x->op == Op::REDUCE) return false;
    if (!isBufferRead(x)) return true;
    auto s = strideIn(x->src(1), r);
    if (!s || (*s != 0 && *s != 1)) return false;
    for (const UOp *g : x->src().subspan(2)) // gates: a read gated by r may not happen in every lane
      if (strideIn(g, r) != std::optional<int64_t>(0)) return false;
    return true;
  });
  return !refused;
}

} // namespace uopc
