//===- KernelBound.cpp - rangeify's kernel size bound (rangeify{max-kernel-ops=N}) ===//
#include "Passes/Rangeify/KernelBound.h"

#include "Passes/Rangeify/Lower.h"

#include <algorithm>
#include <span>

namespace uopc::rangeify {
namespace {

bool isWeak(DType dt) { return dt == DType::WeakInt || dt == DType::WeakFloat; }

/// The sources a kernel computing `u` lowers (as Lowerer::lower does): a movement op's or a REDUCE's
/// first source only (the others are shape operands).
std::span<const UOp *const> loweredSources(const UOp *u) {
  auto s = u->src();
  bool first = isMovement(u->op) || u->op == Op::REDUCE || u->op == Op::BIND || u->op == Op::DETACH ||
               u->op == Op::CONTIGUOUS_BACKWARD;
  return first && !s.empty() ? s.first(1) : s;
}

} // namespace

int64_t kernelOps(const UOp *u) {
  if (isWeak(u->dtype) || u->dtype == DType::Void) return 0;
  if (isElementwise(u->op) || u->op == Op::REDUCE || u->op == Op::CUSTOM || u->op == Op::CUSTOMI) return 1;
  if (u->op == Op::STACK && u->nsrc > 1) return static_cast<int64_t>(u->nsrc) - 1; // a select per source
  return 0;
}

KernelBound::Slot *KernelBound::inCone(const UOp *u) {
  const Slot *x = t_.find(u);
  return x && x->inCone ? &t_.at(u) : nullptr;
}

bool KernelBound::leaf(const UOp *u) const {
  return isMat_(u) || Lowerer::isBuffer(u) || u->op == Op::AFTER || u->op == Op::CONST || u->op == Op::PARAM;
}

template <typename F> void KernelBound::forDistinct(const UOp *u, F f) {
  auto srcs = loweredSources(u);
  for (size_t i = 0; i < srcs.size(); ++i)
    if (std::find(srcs.begin(), srcs.begin() + static_cast<long>(i), srcs[i]) == srcs.begin() + static_cast<long>(i))
      f(srcs[i]);
}

bool KernelBound::stageable(const UOp *u) const {
  return (isElementwise(u->op) || u->op == Op::REDUCE) && !isWeak(u->dtype) && u->dtype != DType::Void &&
         !si_.device(u).empty() && si_.shape(u);
}

const std::vector<const UOp *> &KernelBound::cone(const UOp *root) {
  t_.clear();
  order_.clear();
  const UOp *top = root->op == Op::STORE ? root->src(1)
                   : root->op == Op::CONTIGUOUS || root->op == Op::STAGE ? root->src(0) : root;
  if (top != root && leaf(top)) return order_;
  t_.at(top).inCone = true;
  std::vector<std::pair<const UOp *, size_t>> work{{top, 0}};
  while (!work.empty()) {
    auto &[u, next] = work.back();
    auto srcs = loweredSources(u);
    if (next < srcs.size()) {
      const UOp *s = srcs[next++];
      if (!leaf(s) && !t_.at(s).inCone) {
        t_.at(s).inCone = true;
        work.push_back({s, 0});
      }
      continue;
    }
    order_.push_back(u);
    work.pop_back();
  }
  return order_;
}

int64_t KernelBound::ops(const std::vector<const UOp *> &cone) {
  int64_t n = 0;
  for (const UOp *u : cone) n += kernelOps(u);
  return n;
}

std::vector<const UOp *> KernelBound::cuts() {
  // Segments end where the fewest values are live (a waist: between two layers, one value) among the
  // places leaving the segment between N/2 and N ops: each value live across a segment end is staged.
  size_t n = order_.size();
  std::vector<int64_t> opsBefore(n + 1, 0), live(n + 1, 0);
  for (size_t k = 0; k < n; ++k) {
    t_.at(order_[k]).pos = static_cast<int64_t>(k);
    opsBefore[k + 1] = opsBefore[k] + kernelOps(order_[k]);
  }
  for (size_t k = 0; k < n; ++k)
    forDistinct(order_[k], [&](const UOp *s) {
      if (Slot *y = inCone(s)) y->lastUse = static_cast<int64_t>(k);
    });
  for (size_t k = 0; k < n; ++k) { // live[p]: values before p read at or after p
    const Slot &x = t_.at(order_[k]);
    if (x.lastUse > x.pos) {
      ++live[k + 1];
      --live[static_cast<size_t>(x.lastUse) + 1];
    }
  }
  for (size_t p = 1; p <= n; ++p) live[p] += live[p - 1];
  int32_t seg = 0;
  for (size_t start = 0; start < n; ++seg) {
    size_t end = n;
    if (opsBefore[n] - opsBefore[start] > max_) {
      end = start + 1;
      int64_t best = INT64_MAX;
      for (size_t p = start + 1; p < n && opsBefore[p] - opsBefore[start] <= max_; ++p)
        if (opsBefore[p] - opsBefore[start] >= max_ / 2 && live[p] <= best) {
          best = live[p];
          end = p;
        }
      if (best == INT64_MAX) // no place in [N/2, N]: the last one within N
        while (end + 1 < n && opsBefore[end + 1] - opsBefore[start] <= max_) ++end;
    }
    for (size_t k = start; k < end; ++k) t_.at(order_[k]).segment = seg;
    start = end;
  }
  std::vector<const UOp *> out;
  for (size_t k = order_.size(); k-- > 0;) {
    const UOp *u = order_[k];
    Slot &x = t_.at(u);
    bool root = k + 1 == order_.size();
    if (!root && (x.readLater || x.shared)) {
      if (stageable(u)) {
        root = true;
        out.push_back(u);
      } else {
        x.shared = true; // computed in every kernel reading it: its sources are asked the same
      }
    }
    const UOp *kernel = root ? u : x.shared ? nullptr : x.kernel;
    int32_t segment = x.segment;
    forDistinct(u, [&](const UOp *s) {
      Slot *y = inCone(s);
      if (!y) return;
      if (y->segment < segment) y->readLater = true;
      if (!kernel || (y->kernel && y->kernel != kernel)) y->shared = true;
      y->kernel = kernel;
    });
  }
  return out;
}

} // namespace uopc::rangeify
