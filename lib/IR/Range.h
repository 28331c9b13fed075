//===- Range.h - integer range analysis: tinygrad's vmin/vmax -------------===//
// Every integer or bool node has a value range [vmin, vmax] that holds for all values its variables can
// take (tinygrad's UOp._min_max at the corpus commit). Bounds are exact integers held in __int128 and
// saturated at ±kBoundInf, so no bound computation can overflow.
//
// Representation choices:
//  - weakint is unbounded in tinygrad (a 800-bit type); here its own range is [-kBoundInf, kBoundInf],
//    and arithmetic on it is exact: a weakint expression never wraps. Any value a program can hold at run
//    time fits int64, far inside ±kBoundInf, so saturating a bound there keeps every range sound.
//  - sized integers wrap (two's complement). When the exact range of an op's result leaves its dtype, the
//    node may have wrapped and its range is the whole dtype; exact() tells which nodes cannot wrap, for the
//    rules (x+c<d -> x<d-c) that are only valid without wraparound.
//  - floats are not tracked: a float node's range is [-kBoundInf, kBoundInf] and comparisons of floats are
//    [0, 1] (NaN makes float bounds useless for folding).
//  - Invalid constants have their dtype's range; division by a divisor whose range contains 0 gives the
//    dtype's range (the evaluator defines x//0 = 0 and x%0 = x, tinygrad raises).
// Results are cached per node (NodeMap by UOp::index), computed iteratively in topological order.
#pragma once

#include "IR/UOp.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace uopc {

/// An integer bound. Values at or beyond ±kBoundInf stand for "unbounded".
using Bound = __int128;
inline constexpr Bound kBoundInf = Bound(1) << 100;

/// [lo, hi] of a node's possible values (lo > hi only for an empty range, e.g. a RANGE of end 0).
struct VRange {
  Bound lo = -kBoundInf, hi = kBoundInf;
  bool isConst() const { return lo == hi; }
};

/// The range a dtype can hold: bool [0,1], sized ints their two's complement range, weakint, uint128,
/// uint256 and floats [-kBoundInf, kBoundInf].
VRange dtypeRange(DType dt);
/// Saturating bound arithmetic (results clamped to ±kBoundInf).
Bound boundAdd(Bound a, Bound b);
Bound boundMul(Bound a, Bound b);
/// Floor division and modulo of bounds (b != 0).
Bound boundFloorDiv(Bound a, Bound b);
Bound boundFloorMod(Bound a, Bound b);
/// Truncating (C) division of bounds (b != 0).
Bound boundCDiv(Bound a, Bound b);
/// True when v fits in int64.
inline bool fitsInt64(Bound v) { return v >= Bound(INT64_MIN) && v <= Bound(INT64_MAX); }

/// The value of a CONST node as a bound, or nullopt when it is not an integer/bool constant (float,
/// Invalid, big int).
std::optional<Bound> constBound(const UOp *u);

/// Range analysis over the nodes of one Context. Cheap to query repeatedly: each node is computed once.
/// Use one RangeInfo per Context (node indices are its keys).
class RangeInfo {
public:
  /// The range of u (computed for u and every uncached node below it, iteratively).
  const VRange &range(const UOp *u) {
    if (const Slot *s = find(u); s && s->known) return s->r;
    return compute(u);
  }
  Bound vmin(const UOp *u) { return range(u).lo; }
  Bound vmax(const UOp *u) { return range(u).hi; }
  /// False when u is a sized-integer op whose exact result may leave its dtype (it may wrap around).
  bool exact(const UOp *u) {
    range(u);
    return slot(u).exact;
  }
  /// u's value fits in int32 for every value of its variables.
  bool fitsInt32(const UOp *u) {
    const VRange &r = range(u);
    return r.lo >= Bound(INT32_MIN) && r.hi <= Bound(INT32_MAX);
  }
  /// Every weakint node under root (root included) fits in int32: the expression can be rendered in
  /// 32-bit arithmetic without any intermediate overflowing.
  bool exprFitsInt32(const UOp *root);

private:
  struct Slot {
    VRange r;
    bool known = false;
    bool exact = true;
  };
  const VRange &compute(const UOp *u);
  /// u's range from its sources' (already known) ranges; sets exact.
  VRange eval(const UOp *u, bool &exact);
  // Slots by node index, in pages allocated on first use: an analysis of a few nodes of a large Context
  // (one kernel's index expression) costs those nodes' pages, not the Context's size.
  static constexpr size_t kPageBits = 8, kPageSize = size_t(1) << kPageBits;
  const Slot *find(const UOp *u) const {
    size_t page = u->index >> kPageBits;
    return page < pages_.size() && pages_[page] ? &pages_[page][u->index & (kPageSize - 1)] : nullptr;
  }
  Slot &slot(const UOp *u) {
    size_t page = u->index >> kPageBits;
    if (page >= pages_.size()) pages_.resize(page + 1);
    if (!pages_[page]) pages_[page] = std::make_unique<Slot[]>(kPageSize);
    return pages_[page][u->index & (kPageSize - 1)];
  }
  std::vector<std::unique_ptr<Slot[]>> pages_;
  std::vector<std::pair<const UOp *, bool>> stack_;
};

/// fitsInt32 on a fresh analysis (for one-off queries; keep a RangeInfo for many).
bool fitsInt32(const UOp *u);

} // namespace uopc
