//===- Choose.cpp - the optimize pass's choice at level 2: which opts a kernel gets ===//
// Per kernel shape (Opts.h), the opts Optimize.cpp's file comment describes: a padded loop's interior and
// borders, a concatenation's seams, a grouped convolution's blocks, the channel tile of convolutions (weights
// re-laid out once), the vector tile of a matmul-like reduction with its reuse axis, strips of column walks,
// partial accumulators, unrolls and packed panels. docs/lowering.md has what each was measured to do.
#include "Passes/Optimize/Opts.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_set>

namespace uopc::optimize {
namespace {

/// Where a read's conditions hold: its gates and the condition of a WHERE(c, i, Invalid) index.
/// The clauses of the ANDs in `work`, sorted and without repeats.
std::vector<const UOp *> andClauses(std::vector<const UOp *> work) {
  std::vector<const UOp *> conds;
  while (!work.empty()) {
    const UOp *g = work.back();
    work.pop_back();
    if (g->op == Op::AND && g->dtype == DType::Bool) work.insert(work.end(), {g->src(0), g->src(1)});
    else conds.push_back(g);
  }
  std::sort(conds.begin(), conds.end());
  conds.erase(std::unique(conds.begin(), conds.end()), conds.end());
  return conds;
}

/// Adds read `rd`'s conditions to `work`: its gates and the condition of a WHERE(c, i, Invalid) index.
void addReadConditions(const UOp *rd, std::vector<const UOp *> &work) {
  const UOp *i = rd->src(1);
  if (i->op == Op::WHERE && i->src(2)->op == Op::CONST && i->src(2)->arg && i->src(2)->arg->kind == ArgKind::Invalid)
    work.push_back(i->src(0));
  for (const UOp *g : rd->src().subspan(2)) work.push_back(g);
}

/// Whether condition g reads loaded data (a ReLU's x > 0: no padding gate).
bool readsData(const UOp *g) {
  auto cone = toposort(g);
  return std::any_of(cone.begin(), cone.end(), [](const UOp *u) { return u->op == Op::INDEX || u->op == Op::LOAD; });
}

} // namespace

std::vector<const UOp *> conditionsOf(const std::vector<const UOp *> &reads) {
  std::vector<const UOp *> work;
  for (const UOp *rd : reads) addReadConditions(rd, work);
  return andClauses(std::move(work));
}

namespace {

/// The interior of output loop r (size n): the values [lo, hi) of r for which every condition of
/// `conds` that depends on r surely holds, whatever the other ranges are (range analysis of the
/// condition with r a constant); nullopt when no condition depends on r, or the interior is empty, less
/// than half the loop or not one interval.
std::optional<std::pair<int64_t, int64_t>> interiorOf(Context &c, const std::vector<const UOp *> &conds, const UOp *r,
                                                      int64_t n) {
  std::vector<const UOp *> dep;
  for (const UOp *g : conds) {
    // a condition on loaded data (a ReLU fused into the read: x > 0) is no padding gate
    if (!readsData(g) && indexStride(g, r) != std::optional<int64_t>(0)) dep.push_back(g);
  }
  if (dep.empty() || n > 4096 || static_cast<int64_t>(dep.size()) * n > (1 << 16)) return std::nullopt;
  RangeInfo ri;
  int64_t lo = -1, hi = -1;
  for (int64_t v = 0; v < n; ++v) {
    bool holds = true;
    for (const UOp *g : dep) holds = holds && ri.vmin(substitute(c, g, {{r, c.constInt(r->dtype, v)}})) >= 1;
    if (holds && lo < 0) lo = v;
    else if (holds && hi >= 0) return std::nullopt; // a second interval
    else if (!holds && lo >= 0 && hi < 0) hi = v;
  }
  if (lo >= 0 && hi < 0) hi = n;
  // (an interior under half the loop is not one: a cumulative sum's triangle holds for one value of its
  // output loop whatever the reduction loop is, and its borders would be the whole kernel, gated)
  if (lo < 0 || (lo == 0 && hi == n) || 2 * (hi - lo) < n) return std::nullopt;
  return std::pair{lo, hi};
}

/// The interiors of a kernel's output loops (interiorOf), for conditions on one output loop each; a condition
/// on several (a padded read's bounds on its flat index, beside the bounds of each of its rows and columns)
/// must then hold wherever every loop is in its interior (range analysis, each loop r with an interior
/// [lo, hi) written as lo + r' over a loop r' of hi - lo iterations), else no loop gets one.
std::vector<std::optional<std::pair<int64_t, int64_t>>> interiors(Context &c, const std::vector<const UOp *> &conds,
                                                                  const std::vector<const UOp *> &axes,
                                                                  const std::vector<int64_t> &sizes) {
  std::vector<std::optional<std::pair<int64_t, int64_t>>> out(axes.size());
  std::vector<const UOp *> single, multi;
  for (const UOp *g : conds) {
    if (readsData(g)) continue; // (a ReLU's x > 0 is no padding gate)
    size_t deps = 0;
    for (const UOp *r : axes) deps += indexStride(g, r) != std::optional<int64_t>(0);
    (deps > 1 ? multi : single).push_back(g);
  }
  bool any = false;
  for (size_t a = 0; a < axes.size(); ++a) any |= (out[a] = interiorOf(c, single, axes[a], sizes[a])).has_value();
  if (!any || multi.empty()) return out;
  std::unordered_map<const UOp *, const UOp *> inside;
  int64_t number = 1 << 20; // (fresh range numbers: only range analysis sees these loops)
  for (size_t a = 0; a < axes.size(); ++a)
    if (out[a]) {
      const UOp *r = axes[a];
      const UOp *fresh = rangeLike(c, r, out[a]->second - out[a]->first, number++, std::nullopt);
      inside[r] = c.make(Op::ADD, r->dtype, {fresh, c.constInt(r->dtype, out[a]->first)});
    }
  RangeInfo ri;
  for (const UOp *g : multi)
    if (ri.vmin(substitute(c, g, inside)) < 1) return std::vector<std::optional<std::pair<int64_t, int64_t>>>(axes.size());
  return out;
}


/// x simplified (symbolic rules with range analysis), as the split pieces are.
const UOp *simplifiedExpr(Context &c, const UOp *x) {
  SymbolicCtx sc;
  return simplifyWith(c, x, symRules(), &sc);
}

} // namespace

/// The constant stride > 0 of read `rd` along range r when relayout can re-lay its buffer out with r's lanes
/// innermost: an ungated INDEX(PARAM, s*r + rest) whose rest lies in [0, s) whatever the other loops are
/// (so that row r of the buffer is the s elements from s*r on), the kernel's only read of that buffer.
std::optional<int64_t> relayoutStride(Context &c, const Shape &s, const UOp *rd, const UOp *r) {
  if (rd->nsrc != 2 || rd->src(0)->op != Op::PARAM) return std::nullopt;
  int64_t slot = ParamArg::slotOf(rd->src(0)->arg);
  if (slot == ParamArg::slotOf(s.store->src(0)->src(0)->arg)) return std::nullopt;
  for (const UOp *o : s.reads)
    if (o != rd && o->src(0)->op == Op::PARAM && ParamArg::slotOf(o->src(0)->arg) == slot) return std::nullopt;
  const UOp *idx = rd->src(1);
  auto st = indexStride(idx, r);
  if (!st || *st <= 0) return std::nullopt;
  for (const UOp *u : toposort(idx))
    if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Invalid) return std::nullopt;
  RangeInfo ri;
  // (a loop that moves the read by whole blocks of r's rows, a grouped convolution's group loop or the batch
  // of attention's keys, is no part of a row)
  auto n = constBound(r->src(0));
  std::unordered_map<const UOp *, const UOp *> zero{{r, c.constInt(r->dtype, 0)}};
  auto reduction = [&](const UOp *u) {
    return std::find(s.reduceRanges.begin(), s.reduceRanges.end(), u) != s.reduceRanges.end();
  };
  for (const UOp *u : toposort(idx))
    if (auto us = u->op == Op::RANGE && u != r && n && !reduction(u) ? indexStride(idx, u) : std::nullopt;
        us && *us != 0 && *us % (*st * static_cast<int64_t>(*n)) == 0)
      zero[u] = c.constInt(u->dtype, 0);
  const UOp *rest = substitute(c, idx, zero);
  if (ri.vmin(rest) < 0 || ri.vmax(rest) >= *st) return std::nullopt;
  return st;
}

namespace {

/// A grouped convolution's groups: the size K of output loop a's groups when a read's index divides a's
/// counter by K (K dividing a's n iterations into 2 to 64 groups): block:a:K then makes the group a loop of
/// its own, outside, and a's loop the channels of one group, along which that read stays put.
std::optional<int64_t> groupSize(const Shape &s, size_t a) {
  for (const UOp *rd : s.reads)
    for (const UOp *u : toposort(rd->src(1)))
      if ((u->op == Op::CDIV || u->op == Op::FLOORDIV) && u->src(0) == s.axes[a])
        if (auto k = constBound(u->src(1)); k && *k > 1 && s.sizes[a] % static_cast<int64_t>(*k) == 0) {
          int64_t groups = s.sizes[a] / static_cast<int64_t>(*k);
          if (groups >= 2 && groups <= 64) return static_cast<int64_t>(*k);
        }
  return std::nullopt;
}

/// The kernel shape with output loop a blocked by K (block:a:K): a's counter outer*K + inner, the value
/// simplified, inner in a's place (outer a free loop around the kernel's).
std::optional<Shape> blockedShape(Context &c, const Shape &s, size_t a, int64_t k) {
  const UOp *r = s.axes[a];
  int64_t number = 1 << 21; // (a fresh range number: only the analysis sees this loop)
  const UOp *outer = rangeLike(c, r, s.sizes[a] / k, number, std::nullopt);
  const UOp *inner = c.make(Op::RANGE, r->dtype, {c.constInt(r->dtype, k)}, r->arg, r->tag);
  std::vector<const UOp *> src{simplifiedExpr(c, substitute(c, s.store, {{r, combinedIndex(c, outer, k, inner)}}))};
  for (size_t b = 0; b < s.axes.size(); ++b) src.push_back(b == a ? inner : s.axes[b]);
  return shapeOf(c.make(Op::SINK, DType::Void, {c.make(Op::END, s.end->dtype, src, s.end->arg, s.end->tag)}));
}

/// The kernel shape with output loops a and a + 1 merged (merge:a): one loop m of their product in a's place,
/// a's counter m // n and a + 1's m % n (n: a + 1's iterations), the value simplified; a + 1 a loop of one.
std::optional<Shape> mergedShape(Context &c, const Shape &s, size_t a) {
  const UOp *ry = s.axes[a], *rx = s.axes[a + 1], *m = nullptr;
  const UOp *one = c.make(Op::RANGE, rx->dtype, {c.constInt(rx->dtype, 1)}, rx->arg, rx->tag);
  std::vector<const UOp *> src{simplifiedExpr(c, mergedLoops(c, s.store, ry, rx, s.sizes[a], s.sizes[a + 1], m))};
  for (size_t b = 0; b < s.axes.size(); ++b) src.push_back(b == a ? m : b == a + 1 ? one : s.axes[b]);
  return shapeOf(c.make(Op::SINK, DType::Void, {c.make(Op::END, s.end->dtype, src, s.end->arg, s.end->tag)}));
}

/// The largest divisor of n from `least` to 28 whose tile of `lanes` lanes a channel the registers hold
/// (tileLanes: tileLanesOf), 0 where none (the channel upcast of channels that 8 does not divide).
int64_t channelDivisor(int64_t n, int64_t lanes, int64_t least, int64_t tileLanes) {
  for (int64_t d = std::min<int64_t>(28, n); d >= least; --d)
    if (n % d == 0 && d * lanes <= tileLanes) return d;
  return 0;
}

/// Whether a reduction's value selects between two reads by a condition on no data (a concatenation's
/// parts, read where the tile loads each input element).
bool selectsBuffers(const Shape &s) {
  for (const UOp *red : s.reduces)
    for (const UOp *x : toposort(red->src(0)))
      if (x->op == Op::WHERE && x->src(0)->dtype == DType::Bool && !readsData(x->src(0)) && readsData(x->src(1)) &&
          readsData(x->src(2)))
        return true;
  return false;
}

/// The steps of each read's index along each output loop: strides[read][axis] (nullopt where it is not one).
std::vector<std::vector<std::optional<int64_t>>> readStrides(const Shape &s) {
  std::vector<std::vector<std::optional<int64_t>>> strides;
  for (const UOp *rd : s.reads) {
    strides.emplace_back();
    for (const UOp *r : s.axes) strides.back().push_back(indexStride(rd->src(1), r, /*throughSelect=*/true));
  }
  return strides;
}

/// Whether output loops a and a + 1 read and store as one loop: every read's and the store's index moves
/// along a by a + 1's iterations times its step along a + 1 (a 1x1 convolution's rows and columns), and
/// nothing is gated.
bool mergeable(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides, size_t a) {
  auto fits = [&](std::optional<int64_t> outer, std::optional<int64_t> inner) {
    return outer && inner && *outer == *inner * s.sizes[a + 1];
  };
  for (size_t k = 0; k < s.reads.size(); ++k)
    if (!fits(strides[k][a], strides[k][a + 1])) return false;
  const UOp *idx = s.store->src(0)->src(1);
  auto inner = indexStride(idx, s.axes[a + 1]);
  if (!fits(indexStride(idx, s.axes[a]), inner) || inner == std::optional<int64_t>(0)) return false;
  if (!conditionsOf(s.reads).empty()) return false;
  for (const UOp *x : toposort(s.store->src(1)))
    if (x->op == Op::WHERE && x->src(0)->dtype == DType::Bool && !readsData(x->src(0)) &&
        (indexStride(x->src(0), s.axes[a]) != std::optional<int64_t>(0) || indexStride(x->src(0), s.axes[a + 1]) != std::optional<int64_t>(0)))
      return false; // (a selection by position along them; one by a group, constant along both, stays)
  return true;
}

/// The conditions of a kernel's stored value: its reads' gates (and WHERE(c, i, Invalid) indexes) and its
/// WHERE selections, split at their ANDs.
std::vector<const UOp *> valueConditions(const UOp *value) {
  std::vector<const UOp *> work;
  for (const UOp *x : toposort(value)) {
    if (x->op == Op::WHERE && x->src(0)->dtype == DType::Bool) work.push_back(x->src(0));
    if (x->op == Op::INDEX && x->nsrc >= 2) addReadConditions(x, work);
  }
  return andClauses(std::move(work));
}

/// The kernel shape of output loop a's iterations [lo, hi) alone (a split's piece): a's range of hi - lo
/// iterations, shifted by lo, the value simplified; nullopt when that is no shape the opts apply to.
std::optional<Shape> pieceShape(Context &c, const Shape &s, size_t a, int64_t lo, int64_t hi) {
  const UOp *r = s.axes[a];
  const UOp *m = c.make(Op::RANGE, r->dtype, {c.constInt(r->dtype, hi - lo)}, r->arg, r->tag);
  const UOp *shifted = lo ? c.make(Op::ADD, r->dtype, {m, c.constInt(r->dtype, lo)}) : m;
  std::vector<const UOp *> src{simplifiedExpr(c, substitute(c, s.store, {{r, shifted}}))};
  for (size_t k = 0; k < s.axes.size(); ++k) src.push_back(k == a ? m : s.axes[k]);
  const UOp *end = c.make(Op::END, s.end->dtype, src, s.end->arg, s.end->tag);
  return shapeOf(c.make(Op::SINK, DType::Void, {end}));
}

} // namespace

/// The iterations of a piece's reduction loops: its output size times, per REDUCE, its loops' trip count
/// (0 for no piece).
double reductionWork(const std::optional<Shape> &s) {
  if (!s) return 0;
  double out = 1, inner = 0;
  for (int64_t n : s->sizes) out *= static_cast<double>(n);
  for (const UOp *red : s->reduces) {
    double trips = 1;
    for (const UOp *r : red->src().subspan(1))
      if (auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt) trips *= static_cast<double>(*n);
    inner += trips;
  }
  return out * inner;
}

namespace {

} // namespace

/// The number of a shape's output elements.
double outputSize(const Shape &s) {
  double n = 1;
  for (int64_t x : s.sizes) n *= static_cast<double>(x);
  return n;
}

namespace {

/// Where condition g, on loop r of n iterations alone, changes its truth: each such iteration added to `seams`
/// while it holds at most `most` of them; false where g's truth is not known at some iteration (the
/// iterations before it added).
bool truthChanges(Context &c, RangeInfo &ri, const UOp *g, const UOp *r, int64_t n, std::set<int64_t> &seams, size_t most) {
  int prev = -1;
  for (int64_t v = 0; v < n && seams.size() <= most; ++v) {
    const UOp *x = substitute(c, g, {{r, c.constInt(r->dtype, v)}});
    int t = ri.vmin(x) >= 1 ? 1 : ri.vmax(x) <= 0 ? 0 : -2;
    if (t < 0) return false;
    if (prev >= 0 && t != prev) seams.insert(v);
    prev = t;
  }
  return true;
}

/// A concatenation's seams: an output loop a (of at most 4,096 iterations) along which the conditions of the
/// stored value that depend on a alone (no other loop, no reduction loop, no loaded data) change their truth
/// at one or two points lo < hi inside it. tinygrad concatenates by padding each part to the whole and
/// adding: a convolution written into 32 of DenseNet's 256 channels runs, unsplit, its reduction over all
/// 256, gated. split:a:lo:hi cuts the parts apart (the simplifier drops what a piece's gates rule out); the
/// piece kept as the main one is the one with the most reduction work: for one seam K [0, K) or [K, n), for two
/// lo < hi [0, lo), [lo, hi) or [hi, n) (Inception v2's concatenation of two convolutions' outputs and a max
/// pool: the pool, where the middle part, a copy, was kept before and the pool ran with no opts, 142 -> 48 us).
std::optional<Opt> seamSplit(Context &c, const Shape &s) {
  std::vector<const UOp *> conds = valueConditions(s.store->src(1));
  RangeInfo ri;
  for (size_t a = 0; a < s.axes.size(); ++a) {
    int64_t n = s.sizes[a];
    if (n > 4096) continue;
    std::set<int64_t> seams;
    for (const UOp *g : conds) {
      if (readsData(g) || indexStride(g, s.axes[a]) == std::optional<int64_t>(0)) continue;
      auto cone = toposort(g);
      bool alone = true;
      for (size_t b = 0; b < s.axes.size(); ++b)
        alone = alone && (b == a || indexStride(g, s.axes[b]) == std::optional<int64_t>(0));
      for (const UOp *rr : s.reduceRanges) alone = alone && indexStride(g, rr) == std::optional<int64_t>(0);
      for (const UOp *u : cone) alone = alone && (u->op != Op::RANGE || u == s.axes[a]);
      if (alone) truthChanges(c, ri, g, s.axes[a], n, seams, 2);
    }
    if (seams.empty() || seams.size() > 2) continue;
    int64_t lo = *seams.begin(), hi = seams.size() == 2 ? *seams.rbegin() : n;
    if (seams.size() == 1) { // the main piece: the side with the most reduction work
      auto right = pieceShape(c, s, a, lo, n), left = pieceShape(c, s, a, 0, lo);
      if (reductionWork(left) > reductionWork(right)) hi = lo, lo = 0;
    } else { // of three parts, the one with the most reduction work
      double left = reductionWork(pieceShape(c, s, a, 0, lo)), mid = reductionWork(pieceShape(c, s, a, lo, hi)),
             right = reductionWork(pieceShape(c, s, a, hi, n));
      if (left > mid && left >= right) hi = lo, lo = 0;
      else if (right > mid && right > left) lo = hi, hi = n;
    }
    return Opt{Opt::Split, a, lo, hi};
  }
  return std::nullopt;
}

/// A kernel with no reduction's shape with the reads of its stored value (shapeOf takes a reduction's).
Shape withValueReads(const Shape &shape) {
  Shape s = shape;
  for (const UOp *x : toposort(s.store->src(1)))
    if (x->op == Op::INDEX && x->nsrc >= 2 && x->src(0)->op == Op::PARAM) s.reads.push_back(x);
  return s;
}

/// The lanes of one of the target's vectors of elements of `elem` bytes (16-byte vectors where it says none).
int64_t vectorLanes(const PassTarget &target, size_t elem) {
  return std::max<int64_t>(1, (target.vectorBytes > 0 ? target.vectorBytes : 16) / static_cast<int64_t>(std::max<size_t>(1, elem)));
}

/// A copy's opts (a kernel with no reduction: a concatenation's parts, a padding), nullopt where none applies.
/// A concatenation (the stored value a sum of reads, each gated by a condition on one output loop a alone:
/// tinygrad pads each part to the whole and adds) is cut at every seam along a, a split each (split:a:LO:N cuts
/// the main piece's [0, LO) off; the main piece is then the rest), so that each piece copies one part with no
/// gate; its two innermost loops merged first where every read and the store move along them as one (a
/// 13x13 plane, one loop of 169: the copy's inner loop whole vectors). Inception v1's concatenation of four
/// parts into 832 channels at 13x13 (k81), 2 threads: gcc had unswitched the four gated loads along rows of 13.
/// Every condition on no data must depend on that loop alone (a padding's, on rows and columns, is none).
std::optional<std::vector<Opt>> chooseCopyOpts(Context &c, const Shape &shape) {
  Shape s = withValueReads(shape);
  // (two parts or more: a padding of one buffer along its channels, an LRN's window, gained nothing cut
  // at its two seams, ZFNet-512's 240 -> 265 us)
  if (s.reads.size() < 2) return std::nullopt;
  std::vector<const UOp *> conds = valueConditions(s.store->src(1));
  if (conds.empty()) return std::nullopt;
  RangeInfo ri;
  for (size_t a = 0; a < s.axes.size(); ++a) {
    int64_t n = s.sizes[a];
    if (n > 4096) continue;
    std::set<int64_t> seams;
    bool other = false; // a condition that depends on another loop (a padding's)
    for (const UOp *g : conds) {
      if (readsData(g)) continue;
      bool alone = true;
      for (const UOp *u : toposort(g)) alone = alone && (u->op != Op::RANGE || u == s.axes[a]);
      if (!alone) {
        other = true;
        break;
      }
      if (!truthChanges(c, ri, g, s.axes[a], n, seams, 16)) seams.clear();
    }
    if (other || seams.empty() || seams.size() > 16) continue;
    std::vector<Opt> opts;
    // (the two innermost other loops merged where they copy as one: strides that fit, conditions constant
    // along both)
    size_t k = s.axes.size();
    if (k >= 2 && a < k - 2) {
      std::vector<std::vector<std::optional<int64_t>>> strides = readStrides(s);
      size_t m = k - 2;
      auto fits = [&](std::optional<int64_t> outer, std::optional<int64_t> inner) {
        return outer && inner && *inner != 0 && *outer == *inner * s.sizes[m + 1];
      };
      bool ok = s.sizes[m] > 1 && s.sizes[m + 1] > 1 && fits(indexStride(s.store->src(0)->src(1), s.axes[m]), indexStride(s.store->src(0)->src(1), s.axes[m + 1]));
      for (size_t r = 0; r < s.reads.size() && ok; ++r) ok = fits(strides[r][m], strides[r][m + 1]);
      for (const UOp *g : conds)
        ok = ok && indexStride(g, s.axes[m]) == std::optional<int64_t>(0) && indexStride(g, s.axes[m + 1]) == std::optional<int64_t>(0);
      if (ok && s.sizes[m] * s.sizes[m + 1] <= INT32_MAX) opts.push_back({Opt::Merge, m, 1, 0});
    }
    int64_t from = 0;
    for (int64_t cut : seams) {
      opts.push_back({Opt::Split, a, cut - from, n - from});
      from = cut;
    }
    return opts;
  }
  // (a padding keeps its loops: cut at its interior, its copy no longer wrote its output in blocks for the
  // channel tile after it, blocked-layout's laneReader: DenseNet-121's 14x14 3x3 convolutions)
  return std::nullopt;
}

/// An elementwise kernel's opts (no reduction, no concatenation's seams): its two innermost loops merged
/// (merge:a) where every read and the store move along them as one and nothing is gated, when the inner one
/// is no whole number of vectors (a plane of 56x56, 28x28, 14x14 or 7x7: the compiler's vector loop along a
/// row of 56 had a tail of 8, a row of 14 none at all; merged, a plane of 3136 is 196 whole vectors).
/// DenseNet-121's batch normalizations with ReLU over its concatenations (58 kernels, 7% of its time).
std::vector<Opt> chooseElementwiseOpts(const Shape &shape, const PassTarget &target) {
  Shape s = withValueReads(shape);
  size_t k = s.axes.size();
  if (target.gpuGrid || k < 2 || s.reads.empty()) return {};
  int64_t vec = vectorLanes(target, dtypeSize(s.store->src(1)->dtype));
  size_t m = k - 2;
  if (s.sizes[m] < 2 || s.sizes[m + 1] % vec == 0 || s.sizes[m] * s.sizes[m + 1] > INT32_MAX) return {};
  if (!mergeable(s, readStrides(s), m)) return {};
  return {{Opt::Merge, m, 1, 0}};
}

/// The lanes of a vector tile along a loop of n iterations (its interior's when `inside`, whose remainder
/// becomes border), 0 when none fits: two vectors or one that divide it (inside, any n >= vec: two unless one
/// leaves less border); else a short
/// row whole when it is a multiple of 4 up to four vectors (a 28-pixel row: 28 lanes, the compiler's 8+8+8+4);
/// else half a vector that divides it, or an interior of at least half a vector cut to whole ones.
int64_t laneAmount(int64_t n, int64_t vec, bool inside) {
  if (n >= 2 * vec && (inside ? n / (2 * vec) * 2 >= n / vec : n % (2 * vec) == 0)) return 2 * vec;
  if (n >= vec && (inside || n % vec == 0)) return vec;
  if (n % 4 == 0 && n <= 4 * vec && n > vec) return n;
  int64_t half = vec / 2;
  if (half >= 4 && n >= half && (inside || n % half == 0)) return half;
  return 0;
}

/// A 1x1 convolution's rows and columns merged into one loop (merge:a) whose pixels are not a whole number
/// of vectors, for a kernel whose channel tile would have under a vector of lanes (ShuffleNet's groups of 34
/// and 68 channels: 2 and 4 lanes): the merged loop cut at its last whole vector (two where that leaves a
/// rest: 196 = 192 + 4 pixels), that piece vector-tiled along the pixels, the rest a piece of its own. The opts
/// (merge, split, the pixels' block, the tile's), nullopt where no loop pair qualifies or the tile is no
/// plain one.
std::optional<std::vector<Opt>> remainderMergedTile(Context &c, const Shape &s,
                                                    const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                                    int64_t vec, const PassTarget &target) {
  for (size_t a = s.axes.size() - 1; a-- > 0;) {
    if (s.sizes[a] == 1 || s.sizes[a + 1] == 1) continue;
    int64_t merged = s.sizes[a] * s.sizes[a + 1];
    if (merged < 8 * vec || !mergeable(s, strides, a)) continue;
    std::optional<Shape> m = mergedShape(c, s, a);
    int64_t main = merged % vec == 0 ? merged : merged / (2 * vec) * (2 * vec);
    if (m && main < merged) m = pieceShape(c, *m, a, 0, main);
    if (!m) continue;
    std::vector<Opt> tile = chooseOpts(c, *m, target, false, false, false);
    tile.erase(std::remove_if(tile.begin(), tile.end(), [](const Opt &o) { return o.kind == Opt::Block; }), tile.end());
    auto up = std::find_if(tile.begin(), tile.end(), [&](const Opt &o) { return o.kind == Opt::Upcast && o.axis == a; });
    bool plain = std::all_of(tile.begin(), tile.end(), [](const Opt &o) { return o.kind == Opt::Upcast || o.kind == Opt::Unroll; });
    // (a register tile: the pixels' vectors and the channels' reuse; not a strip of one loop, a local
    // response normalization's window)
    bool reuse = std::any_of(tile.begin(), tile.end(), [&](const Opt &o) { return o.kind == Opt::Upcast && o.axis != a; });
    if (up == tile.end() || !plain || !reuse || up->amount < vec || up->amount > 4 * vec) continue;
    std::vector<Opt> opts{{Opt::Merge, a, 1, 0}};
    if (main < merged) opts.push_back({Opt::Split, a, 0, main});
    if (up->amount < main) opts.push_back({Opt::Block, a, up->amount, 0});
    opts.insert(opts.end(), tile.begin(), tile.end());
    return opts;
  }
  return std::nullopt;
}

/// The merged tile for a 1x1 convolution whose channel tile of one vector would select between buffers once
/// a pixel a reduction step (selectsBuffers: a concatenation's parts), its pixels too few for
/// remainderMergedTile's choice (ShuffleNet's 7x7 planes, 49 = 48 + 1): the rows and columns merged, cut at
/// their last two whole vectors, blocked and upcast by two vectors of pixels, the channels (loop oa) by their
/// largest divisor up to 28 that the registers hold (136: 17 x 16 lanes). ShuffleNet's first 7x7 unit after
/// its stride-2 one, 2 threads, in the network, alternating 5 rounds: 240-304 -> 136-145 us; its units reading
/// one buffer keep the channel tile (merged, they took 124-144 us where it takes 90-107). nullopt where no loop
/// pair qualifies.
std::optional<std::vector<Opt>> selectMergedTile(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                                 size_t oa, int64_t vec, const PassTarget &target) {
  int64_t reuse = channelDivisor(s.sizes[oa], 2 * vec, 2, tileLanesOf(s, target));
  if (!reuse) return std::nullopt;
  for (size_t a = s.axes.size() - 1; a-- > 0;) {
    if (a == oa || a + 1 == oa || s.sizes[a] == 1 || s.sizes[a + 1] == 1) continue;
    int64_t merged = s.sizes[a] * s.sizes[a + 1], main = merged / (2 * vec) * (2 * vec);
    if (main < 2 * vec || !mergeable(s, strides, a)) continue;
    std::vector<Opt> opts{{Opt::Merge, a, 1, 0}};
    if (main < merged) opts.push_back({Opt::Split, a, 0, main});
    if (2 * vec < main) opts.push_back({Opt::Block, a, 2 * vec, 0});
    opts.push_back({Opt::Upcast, oa, reuse});
    opts.push_back({Opt::Upcast, a, 2 * vec});
    return opts;
  }
  return std::nullopt;
}

/// The opts of level 2 for kernel shape s (see the file comment).
} // namespace

std::optional<int64_t> innermostReductionSize(const Shape &s) {
  const UOp *r = s.reduceRanges.empty() ? nullptr : s.reduceRanges.back();
  auto n = r && r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
  if (!n || *n > INT32_MAX) return std::nullopt;
  return static_cast<int64_t>(*n);
}

std::optional<Opt> innermostUnroll(const Shape &s, int64_t amount) {
  const UOp *r = s.reduceRanges.empty() ? nullptr : s.reduceRanges.back();
  int64_t size = innermostReductionSize(s).value_or(0);
  bool innermost = r && std::all_of(s.reduces.begin(), s.reduces.end(), [&](const UOp *red) { return red->src().back() == r; });
  if (amount > 1 && innermost && size > amount && size % amount == 0) return Opt{Opt::Unroll, s.reduceRanges.size() - 1, amount};
  return std::nullopt;
}

std::vector<Opt> chooseOpts(Context &c, const Shape &s, const PassTarget &target, bool seams, bool groups, bool merges) {
  if (s.reduces.empty()) {
    if (!seams) return {};
    std::optional<std::vector<Opt>> copy = chooseCopyOpts(c, s);
    return copy ? *copy : chooseElementwiseOpts(s, target);
  }
  if (s.reads.empty()) return {};
  // a concatenation's parts first (seamSplit), then the opts of the main piece (a grouped convolution's
  // part blocked by its groups: ShuffleNet's concatenation of a pooled input and a grouped convolution)
  // (a seam between parts of like work, a channel shuffle's halves read from two buffers, leaves the
  // grouped convolution whole: only the main piece would be tiled)
  std::optional<Opt> cut = seams ? seamSplit(c, s) : std::nullopt;
  if (cut && groups) {
    int64_t n = s.sizes[cut->axis];
    double main = reductionWork(pieceShape(c, s, cut->axis, cut->amount, cut->hi)), rest = 0;
    if (cut->amount > 0) rest += reductionWork(pieceShape(c, s, cut->axis, 0, cut->amount));
    if (cut->hi < n) rest += reductionWork(pieceShape(c, s, cut->axis, cut->hi, n));
    bool grouped = false;
    for (size_t a = 0; a < s.axes.size(); ++a) grouped = grouped || groupSize(s, a).has_value();
    if (grouped && main < 2 * rest) cut.reset();
  }
  if (cut)
    if (auto piece = pieceShape(c, s, cut->axis, cut->amount, cut->hi)) {
      std::vector<Opt> inner = chooseOpts(c, *piece, target, false, true, merges); // (a grouped part: blocked)
      // (a piece left with no tile or partial sums: the whole loop's independent rows instead, where they apply)
      if (std::none_of(inner.begin(), inner.end(), [](const Opt &o) { return o.kind == Opt::Upcast || o.kind == Opt::Partial; }))
        if (auto rows = chooseRowChains(s)) return {*rows};
      // (a merge of other loops than the cut one first, as the opts must come; one of the cut loop, none)
      if (std::any_of(inner.begin(), inner.end(), [&](const Opt &o) {
            return o.kind == Opt::Merge && (o.axis == cut->axis || o.axis + 1 == cut->axis);
          }))
        inner = chooseOpts(c, *piece, target, false, true, false);
      std::vector<Opt> opts;
      for (const Opt &o : inner)
        if (o.kind == Opt::Merge) opts.push_back(o);
      opts.push_back(*cut);
      for (const Opt &o : inner) {
        if (o.kind == Opt::Merge || (o.kind == Opt::Split && o.axis == cut->axis)) continue; // (one split a loop)
        opts.push_back(o);
      }
      return opts;
    }
  // then a grouped convolution's groups (groupSize), then the opts of one group's channels
  if (groups)
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (auto k = groupSize(s, a))
        if (auto blocked = blockedShape(c, s, a, *k)) {
          std::vector<Opt> inner = chooseOpts(c, *blocked, target, false, false, merges);
          // (kept when the group's channels are tiled: laid out for the lanes or upcast as the reuse axis;
          // the block after a merge of the pixels, which comes first)
          if (std::any_of(inner.begin(), inner.end(), [&](const Opt &o) {
                return o.kind == Opt::Relayout || (o.kind == Opt::Upcast && o.axis == a);
              })) {
            auto at = std::find_if(inner.begin(), inner.end(), [](const Opt &o) { return o.kind != Opt::Merge; });
            inner.insert(at, Opt{Opt::Block, a, *k});
            return inner;
          }
        }
  std::vector<std::vector<std::optional<int64_t>>> strides = readStrides(s);
  std::vector<bool> used(s.axes.size(), false); // some reduction depends on the axis
  for (size_t a = 0; a < s.axes.size(); ++a)
    for (size_t k = 0; k < s.reads.size(); ++k) used[a] = used[a] || strides[k][a] != std::optional<int64_t>(0);
  size_t elem = 4;
  for (const UOp *red : s.reduces) elem = std::max<size_t>(elem, dtypeSize(red->dtype));
  int64_t vec = vectorLanes(target, elem);
  // interiors: where a padded read's conditions surely hold
  std::vector<const UOp *> conds = conditionsOf(s.reads);
  // a padded value selected by its position (WHERE(inside, x, 0): a ReLU's padding read in its consumer)
  for (const UOp *red : s.reduces)
    for (const UOp *x : toposort(red->src(0)))
      if (x->op == Op::WHERE && x->src(0)->dtype == DType::Bool && !readsData(x->src(0)))
        for (const UOp *g : andClauses({x->src(0)})) conds.push_back(g);
  std::vector<std::optional<std::pair<int64_t, int64_t>>> interior(s.axes.size());
  std::vector<int64_t> sizes = s.sizes; // as the upcasts see them (the interior's)
  interior = interiors(c, conds, s.axes, s.sizes);
  for (size_t a = 0; a < s.axes.size(); ++a)
    if (interior[a]) sizes[a] = interior[a]->second - interior[a]->first;
  // a convolution's short or strided rows: the channel tile (chooseChannelTile)
  {
    std::optional<size_t> rowAxis;
    for (size_t a = 0; a < s.axes.size(); ++a)
      for (size_t k = 0; k < s.reads.size(); ++k)
        if (strides[k][a] && *strides[k][a] != 0) rowAxis = a; // the innermost loop a read moves along
    bool shortRow = rowAxis && (sizes[*rowAxis] < 8 * vec || std::any_of(strides.begin(), strides.end(), [&](auto &st) {
                                  return st[*rowAxis] && *st[*rowAxis] > 1;
                                }));
    // (a padded convolution too, whatever its rows: VGG-19's 3x3 convolution 64->64 at 224x224, one
    // thread, took 104 ms with the vector tile, 51 with the channel tile)
    bool padded = std::any_of(interior.begin(), interior.end(), [](auto x) { return x.has_value(); });
    // a 1x1 convolution's rows and columns, one loop (merge), of whole pairs of vectors: the vector tile
    // along its pixels then stores whole vectors of each channel, where the channel tile's lanes, channels,
    // scatter each pixel's vector across the channels' rows; the pixels blocked by the tile's lanes (block),
    // so that a block of the input stays in the L1 while every channel's tile reads it. ResNet-50 on Sapphire
    // Rapids, one thread, against the channel tile: the 1x1 convolutions 64 -> 256 at 56x56 2.24 -> 0.75 ms,
    // 256 -> 64 1.98 -> 0.92, 512 -> 128 at 28x28 0.89 -> 0.69 (unblocked, 256 -> 64 took 2.16: each
    // channel tile streamed the whole 3.2 MB input from the L3). Rows of 14 and 7 (196 and 49 pixels) keep
    // the channel tile: their vector tile had 4 lanes, 2.5x slower.
    if (shortRow && !padded && groups)
      for (size_t a = s.axes.size() - 1; a-- > 0;)
        if (int64_t merged = s.sizes[a] * s.sizes[a + 1]; merged >= 8 * vec && merged % (2 * vec) == 0 && mergeable(s, strides, a)) {
          // (the tile of a merged shape, less its blocks: the merged loop's own block below, by the tile's
          // lanes, in place of a panel's; with its lanes along the merged loop, 0 where it is no plain tile)
          auto tileOf = [&](const std::optional<Shape> &m) -> std::pair<std::vector<Opt>, int64_t> {
            if (!m) return {{}, 0};
            std::vector<Opt> tile = chooseOpts(c, *m, target, false, false, false);
            tile.erase(std::remove_if(tile.begin(), tile.end(), [](const Opt &o) { return o.kind == Opt::Block; }), tile.end());
            auto up = std::find_if(tile.begin(), tile.end(), [&](const Opt &o) { return o.kind == Opt::Upcast && o.axis == a; });
            bool plain = std::all_of(tile.begin(), tile.end(), [](const Opt &o) { return o.kind == Opt::Upcast || o.kind == Opt::Unroll; });
            return {tile, up != tile.end() && plain ? up->amount : 0};
          };
          std::optional<Shape> m = mergedShape(c, s, a);
          auto [tile, lanes] = tileOf(m);
          if (lanes < 2 * vec) continue;
          // pixels of an odd number of the tile's lanes (28x28: 784 = 48 x 16 + 16) cut where twice as many
          // lanes divide them, the rest a piece of its own, where the piece's tile is the wider (one vector's
          // tile loads a broadcast weight a multiply-add: ResNet-50's 1x1 convolutions 128 -> 512 at 28x28, 2
          // threads, in the network, 464-480 -> 368-372 us); whole vectors only (a 1x1 convolution 32 -> 64 at
          // 28x28 whose piece took 24 lanes, 8 + 8 + 8 where its vectors are 16, ran 20 -> 94 us)
          int64_t main = merged / (2 * lanes) * (2 * lanes);
          if (main >= 8 * vec && main < merged) {
            auto [wide, wideLanes] = tileOf(pieceShape(c, *m, a, 0, main));
            if (wideLanes > lanes && wideLanes % lanes == 0) tile = wide, lanes = wideLanes;
            else main = merged;
          } else main = merged;
          std::vector<Opt> opts{{Opt::Merge, a, 1, 0}};
          if (main < merged) opts.push_back({Opt::Split, a, 0, main});
          if (lanes < main) opts.push_back({Opt::Block, a, lanes, 0});
          opts.insert(opts.end(), tile.begin(), tile.end());
          return opts;
        }
    // (and a convolution's window along its rows, over a reduction of 64 terms or more, whatever its rows: a
    // read moving along a reduction loop as along the row, a 3x3's columns. VGG-19's 3x3 convolution 64 -> 128
    // at 112x112 reads its pool's padded output, no gate: vector tile 6.3 ms, channel tile 4.7, 2 threads in the
    // network; its first, 3 -> 64 over 27 terms, keeps the vector tile: 0.85 ms, channel tile 6.4)
    bool window = false;
    if (rowAxis && reductionWork(s) >= 64.0 * outputSize(s))
      for (size_t k = 0; k < s.reads.size() && !window; ++k)
        if (auto st = strides[k][*rowAxis]; st && *st != 0)
          for (const UOp *r : s.reduceRanges)
            if (indexStride(s.reads[k]->src(1), r) == st) window = true;
    if (shortRow || padded || window) {
      std::optional<std::vector<Opt>> opts = chooseChannelTile(c, s, strides, interior, vec, target);
      // (no channel tile or one of under a vector of lanes, channels none of them divide: the pixels' vector
      // tile instead, a remainder cut off)
      auto lanes = opts ? std::find_if(opts->rbegin(), opts->rend(), [](const Opt &o) { return o.kind == Opt::Upcast; })
                        : std::vector<Opt>::reverse_iterator();
      if (merges && shortRow && !padded) {
        if (!opts || (lanes != opts->rend() && lanes->amount < vec))
          if (auto m = remainderMergedTile(c, s, strides, vec, target)) return *m;
        // (a tile of one vector whose reduction selects between buffers: selectMergedTile; not on LLVM, where
        // ShuffleNet's k47 gained 35 us and k45, which writes its input, lost 16: docs/lowering.md)
        if (target.name != "llvm" && opts && lanes != opts->rend() && lanes->amount == vec && selectsBuffers(s))
          if (auto m = selectMergedTile(s, strides, lanes->axis, vec, target)) return *m;
      }
      if (opts) return *opts;
    }
  }
  // the vector axis (a loop no whole vectors divide, 55 pixels a row, cut at its last whole vector like an interior)
  std::optional<size_t> va;
  size_t best = 0;
  for (size_t a = 0; a < s.axes.size(); ++a) {
    if (!used[a] || !laneAmount(sizes[a], vec, interior[a].has_value() || sizes[a] >= vec)) continue;
    size_t ones = 0;
    bool ok = true;
    for (size_t k = 0; k < s.reads.size(); ++k) {
      if (!strides[k][a] || (*strides[k][a] != 0 && *strides[k][a] != 1)) ok = false;
      else ones += *strides[k][a] == 1;
    }
    if (ok && ones > best) best = ones, va = a;
  }
  if (!va && seams && std::any_of(interior.begin(), interior.end(), [](auto x) { return x.has_value(); })) {
    // the interior's own tile: its reads' strides may be constant only there (a depthwise convolution read
    // through a channel shuffle: its padding divides and takes remainders per term, which the interior folds)
    auto interiorPiece = [&] {
      std::optional<Shape> inside = s;
      for (size_t a = 0; a < s.axes.size() && inside; ++a)
        if (interior[a]) inside = pieceShape(c, *inside, a, interior[a]->first, interior[a]->second);
      return inside;
    };
    std::optional<Shape> inside = interiorPiece();
    // the innermost loop a read moves along by one: its interior cut to whole lanes, the rest border
    for (size_t a = s.axes.size(); inside && a-- > 0;) {
      bool unit = std::any_of(inside->reads.begin(), inside->reads.end(), [&](const UOp *rd) {
        return indexStride(rd->src(1), inside->axes[a], true) == std::optional<int64_t>(1);
      });
      if (!unit || !interior[a]) continue;
      int64_t n = interior[a]->second - interior[a]->first, lanes = laneAmount(n, vec, true);
      if (lanes && n % lanes && !laneAmount(n, vec, false)) {
        interior[a]->second = interior[a]->first + n / lanes * lanes;
        inside = interiorPiece();
      }
      break;
    }
    std::vector<Opt> opts;
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (interior[a]) opts.push_back({Opt::Split, a, interior[a]->first, interior[a]->second});
    if (inside) {
      std::vector<Opt> tile = chooseOpts(c, *inside, target, false, false);
      if (std::any_of(tile.begin(), tile.end(), [](const Opt &o) { return o.kind == Opt::Upcast; })) {
        for (const Opt &o : tile)
          if (o.kind != Opt::Split) opts.push_back(o);
        return opts;
      }
    }
  }
  if (!va) {
    std::vector<Opt> opts = choosePartial(s, vec);
    if (opts.empty())
      if (auto rows = chooseRowChains(s)) return {*rows};
    // no tile: the interiors still pay (a depthwise convolution whose reads go through a channel shuffle and
    // the padding divides and takes remainders per term; in its interior the simplifier folds them:
    // ShuffleNet's 3x3 depthwise convolutions)
    if (opts.empty())
      for (size_t a = 0; a < s.axes.size(); ++a)
        if (interior[a]) opts.push_back({Opt::Split, a, interior[a]->first, interior[a]->second});
    return opts;
  }
  if (!interior[*va] && !laneAmount(sizes[*va], vec, false)) interior[*va] = {0, sizes[*va]};
  int64_t vAmount = laneAmount(sizes[*va], vec, interior[*va].has_value());
  if (interior[*va]) { // an interior of whole vectors; the rest is border
    interior[*va]->second = interior[*va]->first + sizes[*va] / vAmount * vAmount;
    sizes[*va] = interior[*va]->second - interior[*va]->first;
  }
  // the reuse axis: a consecutive read along va does not move along it
  std::optional<size_t> ra;
  for (size_t a = 0; a < s.axes.size() && !ra; ++a) {
    if (a == *va || !used[a] || sizes[a] % 2) continue;
    for (size_t k = 0; k < s.reads.size(); ++k)
      if (strides[k][*va] == std::optional<int64_t>(1) && strides[k][a] == std::optional<int64_t>(0) &&
          std::all_of(strides[k].begin(), strides[k].end(), [](auto x) { return x.has_value(); }))
        ra = a;
  }
  std::vector<Opt> opts;
  for (size_t a = 0; a < s.axes.size(); ++a) // the splits first, the vector axis's last
    if (interior[a] && a != *va) opts.push_back({Opt::Split, a, interior[a]->first, interior[a]->second});
  if (interior[*va]) opts.push_back({Opt::Split, *va, interior[*va]->first, interior[*va]->second});
  if (!ra && !interior[*va]) vAmount = stripLanes(s, strides, *va, vAmount, sizes[*va], static_cast<int64_t>(elem), target);
  // (no reuse axis over a padded row's interior, a depthwise convolution's or a 3x3 max pool's: the
  // interior's whole vectors in one upcast, up to four. C, 2 threads on Zen 5, alternating: ShuffleNet's 3x3
  // depthwise convolutions at 28x28 63-67 -> 60-65 us (8 lanes a loop of 3 -> 24 lanes), Inception v1's and
  // v2's 3x3 max pools at 28x28 76-91 -> 68-88)
  if (!ra && interior[*va] && sizes[*va] % vAmount == 0 && sizes[*va] > vAmount && sizes[*va] <= 4 * vec)
    vAmount = sizes[*va];
  // (no reuse axis, the default lanes and a long reduction: twice the lanes are twice the chains of adds, which
  // wait on each other's latency otherwise. sp_cumsum_1m's within-block sums, 256 terms a value: uopc --tune kept
  // upcast:1:32 for 16, 1.35x)
  if (!ra && !interior[*va] && vAmount == 2 * vec && sizes[*va] % (2 * vAmount) == 0 && reductionWork(s) >= 64.0 * outputSize(s))
    vAmount *= 2;
  // (room for twice the accumulators: the vector axis's lanes doubled, the reuse axis's upcast kept, for a
  // reduction long enough to pay for them: a matmul's, not VGG-19's first convolution's 27)
  if (ra && !interior[*va] && target.accumulatorLanes >= 2 * 8 * vAmount && vAmount == 2 * vec &&
      sizes[*va] % (2 * vAmount) == 0 && sizes[*ra] % 8 == 0 && reductionWork(s) >= 64.0 * outputSize(s))
    vAmount *= 2;
  int64_t budget = target.accumulatorLanes / vAmount, reuse = 0;
  if (ra)
    for (int64_t amt : {8, 4, 2})
      if (amt <= budget && sizes[*ra] % amt == 0) {
        reuse = amt;
        break;
      }
  // (24 or more channels that 8 does not divide: their largest divisor up to 28 that the tile's registers
  // hold over two vectors of lanes, else one. ShuffleNet's groups of 34 and 68 channels: 17 x 2 vectors where 2
  // and 4 were all that divide; its 1x1 convolution 34 -> 34 per group at 28x28, 2 threads, C: 2 x 16 lanes
  // 86-96 us, 17 x 8 101-131, 17 x 16 73-84. Its groups of 28: 28 x 16 lanes for 4 x 16, whose four chains
  // of adds wait on each other's latency: 112 -> 112 in 4 groups at 28x28, one thread, 42-68 -> 34-36 us.
  // On LLVM too, since its emitter keeps the loop vectorizer off the loops around the lanes (LLVMEmitter.cpp's
  // loopEnd; before, it took the 17 channels for its vector, 2x slower), with the lanes of an ungated tile:
  // ShuffleNet's 34 -> 34 per group at 28x28, in the network, 2 threads, alternating, 2 x 16 lanes 119-121 ->
  // 17 x 16 45-47 us. There only for a reduction of 16 steps or more: its 1x1 convolution over 6 input channels
  // a group, 4 x 16 47-48 us, 28 x 16 80-84 (on C 60-63 either way), where the one over all 24, 91 -> 68)
  int64_t lanesCap = 0;
  if (ra && reuse < 8 && !interior[*va] && sizes[*ra] >= 24 && sizes[*ra] % 8 && vAmount <= 2 * vec &&
      sizes[*va] % vec == 0 && (target.name != "llvm" || reductionWork(s) >= 16.0 * outputSize(s)))
    if (int64_t d = channelDivisor(sizes[*ra], vec, 9, lanesCap = tileLanesOf(s, target))) {
      reuse = d;
      vAmount = sizes[*va] % (2 * vec) == 0 && d * 2 * vec <= lanesCap ? 2 * vec : vec;
    }
  // (registers the tile leaves empty: three vectors of lanes where they fill the budget and divide the axis,
  // AVX2's 4 x 24 tile, 12 of its 16 registers, where 4 x 16 took 8: the encoder's feed-forward matmuls, one
  // thread on Zen 3, 88-105 -> 81-84 ms)
  if (reuse && !interior[*va] && vAmount == 2 * vec && reuse * 3 * vec <= target.accumulatorLanes &&
      reuse * vAmount < target.accumulatorLanes && sizes[*va] % (3 * vec) == 0)
    vAmount = 3 * vec;
  if (reuse) opts.push_back({Opt::Upcast, *ra, reuse});
  opts.push_back({Opt::Upcast, *va, vAmount}); // last: the highest range number, the innermost lanes
  // the tile's reduction loop unrolled by the target's amount (tinygrad's UNROLL), when every REDUCE ends in it;
  // by twice that over 768 terms or more (LLVM: the encoder's matmuls, 768 and 3072 deep, on a Xeon with AVX-512,
  // 2 threads, in the network, alternating: 2 -> 4 the encoder 132.3 -> 119.2 ms, where the search had kept 4 for
  // its projections, 1.36x a kernel with the panel's 64 columns; every unrolled tile by 4, the CNNs' 1x1
  // convolutions over 64-512 channels too, moved ResNet-50, DenseNet-121, ShuffleNet 1-2% the other way)
  int64_t unroll = target.tileUnroll;
  if (unroll > 1 && innermostReductionSize(s).value_or(0) >= 768) unroll *= 2;
  if (auto u = innermostUnroll(s, unroll)) opts.push_back(*u);
  if (ra && std::none_of(interior.begin(), interior.end(), [](auto x) { return x.has_value(); })) {
    int64_t rowTiles = 1; // the tiles along the other output loops, each of which passes over the panel
    for (size_t a = 0; a < sizes.size(); ++a)
      if (a != *va) rowTiles = std::min<int64_t>(rowTiles * sizes[a], INT32_MAX);
    rowTiles /= std::max<int64_t>(reuse, 1);
    std::vector<Opt> packs = choosePacks(s, strides, *va, *ra, vAmount, rowTiles, target);
    for (const Opt &p : packs) opts.push_back(p);
    if (auto b = choosePanelBlock(s, strides, sizes, *va, *ra, vAmount, reuse, packs, target)) opts.insert(opts.begin(), *b);
  }
  return opts;
}

} // namespace uopc::optimize
