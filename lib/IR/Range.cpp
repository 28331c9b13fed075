//===- Range.cpp - vmin/vmax of integer nodes, computed iteratively -------===//
#include "IR/Range.h"

#include <algorithm>
#include <initializer_list>

namespace uopc {
namespace {

Bound clampB(Bound v) { return v > kBoundInf ? kBoundInf : v < -kBoundInf ? -kBoundInf : v; }
Bound minOf(std::initializer_list<Bound> v) { return *std::min_element(v.begin(), v.end()); }
Bound maxOf(std::initializer_list<Bound> v) { return *std::max_element(v.begin(), v.end()); }

bool isIntLike(DType dt) { return isInt(dt) || dt == DType::Bool; }

/// Which sources a node's range is computed from (all others are leaves for the analysis).
enum class Uses : uint8_t { None, First, Branches, All };
Uses usesOf(const UOp *u) {
  switch (u->op) {
  case Op::RANGE: case Op::SPECIAL: case Op::BIND: case Op::INDEX: case Op::CAST:
    return u->nsrc ? Uses::First : Uses::None;
  case Op::WHERE: return Uses::Branches;
  case Op::STACK: return Uses::All;
  default: return isBinary(u->op) || isUnary(u->op) || u->op == Op::MULACC ? Uses::All : Uses::None;
  }
}

/// [lo, hi] of the bitwise OR/XOR of two non-negative ranges: below the next power of two.
Bound bitCeilMask(Bound hi) {
  Bound m = 0;
  while (m < hi && m < kBoundInf) m = m * 2 + 1;
  return m;
}

} // namespace

Bound boundAdd(Bound a, Bound b) { return clampB(a + b); } // |a|,|b| <= 2^100: no overflow
Bound boundMul(Bound a, Bound b) {
  if (a == 0 || b == 0) return 0;
  Bound aa = a < 0 ? -a : a, bb = b < 0 ? -b : b;
  if (aa > kBoundInf / bb) return (a < 0) != (b < 0) ? -kBoundInf : kBoundInf;
  return clampB(a * b);
}
Bound boundFloorDiv(Bound a, Bound b) {
  Bound q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
Bound boundFloorMod(Bound a, Bound b) { return a - boundFloorDiv(a, b) * b; }
Bound boundCDiv(Bound a, Bound b) { return a / b; }

VRange dtypeRange(DType dt) {
  if (dt == DType::Bool) return {0, 1};
  if (!isInt(dt) || dt == DType::WeakInt || dtypeSize(dt) > 8) return {isUnsigned(dt) ? 0 : -kBoundInf, kBoundInf};
  unsigned bits = dtypeSize(dt) * 8;
  if (isUnsigned(dt)) return {0, (Bound(1) << bits) - 1};
  return {-(Bound(1) << (bits - 1)), (Bound(1) << (bits - 1)) - 1};
}

std::optional<Bound> constBound(const UOp *u) {
  if (u->op != Op::CONST || !u->arg) return std::nullopt;
  switch (u->arg->kind) {
  case ArgKind::Int: return Bound(u->arg->i());
  case ArgKind::UInt: return Bound(u->arg->u());
  case ArgKind::Bool: return Bound(u->arg->b() ? 1 : 0);
  default: return std::nullopt;
  }
}

const VRange &RangeInfo::compute(const UOp *root) {
  stack_.clear();
  stack_.push_back({root, false});
  while (!stack_.empty()) {
    auto [u, expanded] = stack_.back();
    stack_.pop_back();
    if (slot(u).known) continue;
    if (!expanded) {
      stack_.push_back({u, true});
      Uses uses = usesOf(u);
      size_t from = uses == Uses::Branches ? 1 : 0, to = uses == Uses::None ? 0 : uses == Uses::First ? 1 : u->nsrc;
      for (size_t i = from; i < to; ++i)
        if (!slot(u->src(i)).known) stack_.push_back({u->src(i), false});
      continue;
    }
    bool exact = true;
    VRange r = eval(u, exact);
    Slot &s = slot(u);
    s.r = r;
    s.exact = exact;
    s.known = true;
  }
  return slot(root).r;
}

VRange RangeInfo::eval(const UOp *u, bool &exact) {
  const DType dt = u->dtype;
  const VRange full = dtypeRange(dt);
  auto src = [&](size_t i) { return slot(u->src(i)).r; };
  if (u->op == Op::CONST) {
    if (auto v = constBound(u); v && isIntLike(dt)) return {*v, *v};
    return full;
  }
  if (u->op == Op::PARAM || u->op == Op::BUFFER) {
    const Arg *vv = u->arg ? u->arg->field("vmin_vmax") : nullptr;
    if (vv && vv->kind == ArgKind::Tuple && vv->count == 2 && vv->elems()[0] && vv->elems()[1] &&
        vv->elems()[0]->kind == ArgKind::Int && vv->elems()[1]->kind == ArgKind::Int)
      return {vv->elems()[0]->i(), vv->elems()[1]->i()};
    return full;
  }
  if (!isIntLike(dt)) return full;
  switch (u->op) {
  case Op::RANGE: case Op::SPECIAL:
    if (dt == DType::Void || u->nsrc == 0) return full;
    return {0, boundAdd(src(0).hi, -1)};
  case Op::BIND: case Op::INDEX: return u->nsrc ? src(0) : full;
  case Op::STACK: {
    if (u->nsrc == 0) return full;
    VRange r{kBoundInf, -kBoundInf};
    for (size_t i = 0; i < u->nsrc; ++i) r = {std::min(r.lo, src(i).lo), std::max(r.hi, src(i).hi)};
    return r;
  }
  case Op::WHERE: return {std::min(src(1).lo, src(2).lo), std::max(src(1).hi, src(2).hi)};
  case Op::CAST: {
    DType from = u->src(0)->dtype;
    if (!isIntLike(from)) return full;
    VRange s = src(0);
    if (dt == DType::Bool) return {s.lo > 0 || s.hi < 0 ? 1 : 0, s.lo == 0 && s.hi == 0 ? 0 : 1};
    if (s.lo >= full.lo && s.hi <= full.hi) return s;
    exact = false;
    return full;
  }
  default: break;
  }
  if (!isBinary(u->op) && !isUnary(u->op) && u->op != Op::MULACC) return full;
  // comparisons: bool results over int sources (float sources are not tracked)
  if (isComparison(u->op)) {
    if (!isIntLike(u->src(0)->dtype)) return {0, 1};
    VRange a = src(0), b = src(1);
    bool disjoint = a.hi < b.lo || b.hi < a.lo, same = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
    if (u->op == Op::CMPLT) return {a.hi < b.lo, a.lo < b.hi};
    if (u->op == Op::CMPNE) return {disjoint, !same};
    return {same, !disjoint};
  }
  VRange a = src(0), b = u->nsrc > 1 ? src(1) : VRange{0, 0};
  if (a.lo > a.hi || b.lo > b.hi) { // an empty source range (a RANGE of end 0, contradictory bounds)
    if (u->op == Op::FLOORDIV || u->op == Op::FLOORMOD) return {0, 0}; // tinygrad's choice
    return full;
  }
  if (dt == DType::Bool) {
    switch (u->op) {
    case Op::AND: case Op::MUL: return {a.lo && b.lo, a.hi && b.hi};
    case Op::OR: case Op::ADD: case Op::MAX: return {a.lo || b.lo, a.hi || b.hi};
    default: return full;
    }
  }
  VRange r = full;
  bool known = true; // r is the exact mathematical range (then checked against the dtype)
  auto fromCorners = [&](auto f) {
    Bound v[4] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
    return VRange{minOf({v[0], v[1], v[2], v[3]}), maxOf({v[0], v[1], v[2], v[3]})};
  };
  bool bConst = b.lo == b.hi;
  switch (u->op) {
  case Op::ADD: r = {boundAdd(a.lo, b.lo), boundAdd(a.hi, b.hi)}; break;
  case Op::SUB: r = {boundAdd(a.lo, -b.hi), boundAdd(a.hi, -b.lo)}; break;
  case Op::NEG: r = {-a.hi, -a.lo}; break;
  case Op::TRUNC: r = a; break;
  case Op::MUL: r = fromCorners(boundMul); break;
  case Op::MULACC: {
    VRange c = src(2), p = fromCorners(boundMul);
    r = {boundAdd(p.lo, c.lo), boundAdd(p.hi, c.hi)};
    break;
  }
  case Op::MAX: r = {std::max(a.lo, b.lo), std::max(a.hi, b.hi)}; break;
  case Op::SHL:
    if (bConst && b.lo >= 0 && b.lo < 64) {
      Bound p = Bound(1) << int(b.lo);
      r = {boundMul(a.lo, p), boundMul(a.hi, p)};
    } else {
      known = false;
    }
    break;
  case Op::SHR:
    if (bConst && b.lo >= 0 && b.lo < 64) r = {a.lo >> int(b.lo), a.hi >> int(b.lo)};
    else if (a.lo >= 0 && b.lo >= 0) r = {0, a.hi};
    else known = false;
    break;
  case Op::AND:
    if (a.lo >= 0 && b.lo >= 0) r = {0, std::min(a.hi, b.hi)};
    else if (bConst && b.lo >= 0) r = {0, b.lo};
    else if (a.lo == a.hi && a.lo >= 0) r = {0, a.lo};
    else known = false;
    break;
  case Op::OR: case Op::XOR:
    if (a.lo >= 0 && b.lo >= 0) r = {u->op == Op::OR ? std::max(a.lo, b.lo) : 0, bitCeilMask(std::max(a.hi, b.hi))};
    else if (u->op == Op::XOR && bConst && b.lo == -1) r = {-a.hi - 1, -a.lo - 1}; // x ^ -1 == ~x
    else known = false;
    break;
  case Op::FLOORDIV:
    if (b.lo > 0 || b.hi < 0) r = fromCorners(boundFloorDiv);
    else known = false;
    break;
  case Op::CDIV:
    if (b.lo > 0 || b.hi < 0) r = fromCorners(boundCDiv);
    else known = false;
    break;
  case Op::FLOORMOD:
    if (bConst && b.lo != 0) {
      Bound c = b.lo;
      if (boundFloorDiv(a.lo, c) == boundFloorDiv(a.hi, c)) r = {boundFloorMod(a.lo, c), boundFloorMod(a.hi, c)};
      else r = c > 0 ? VRange{0, c - 1} : VRange{c + 1, 0};
    } else if (b.lo > 0) r = {0, b.hi - 1};
    else if (b.hi < 0) r = {b.lo + 1, 0};
    else known = false;
    break;
  case Op::CMOD:
    if (bConst && b.lo > 0) {
      Bound c = b.lo;
      r = {a.lo > 0 ? 0 : a.lo > -c ? a.lo : -(c - 1), a.hi < 0 ? 0 : a.hi < c ? a.hi : c - 1};
    } else if (b.lo > 0) {
      r = a.lo >= 0 ? VRange{0, b.hi - 1} : a.hi <= 0 ? VRange{-(b.hi - 1), 0} : VRange{-(b.hi - 1), b.hi - 1};
    } else if (b.hi < 0) {
      Bound m = -b.lo - 1;
      r = a.lo >= 0 ? VRange{0, m} : a.hi <= 0 ? VRange{-m, 0} : VRange{-m, m};
    } else known = false;
    break;
  default: known = false; break;
  }
  if (!known) {
    exact = dt == DType::WeakInt; // weakint never wraps; a sized op of unknown range might
    return full;
  }
  if (r.lo < full.lo || r.hi > full.hi) {
    if (dt == DType::WeakInt || dtypeSize(dt) > 8) return {std::max(r.lo, full.lo), std::min(r.hi, full.hi)};
    exact = false; // the result may wrap around
    return full;
  }
  return r;
}

bool RangeInfo::exprFitsInt32(const UOp *root) {
  for (const UOp *u : toposort(root))
    if (u->dtype == DType::WeakInt && !fitsInt32(u)) return false;
  return true;
}

bool fitsInt32(const UOp *u) {
  RangeInfo r;
  return r.fitsInt32(u);
}

} // namespace uopc
