//===- Optimize.cpp - the `optimize` pass: register tiles for reductions ---===//
// Runs after codegen, before lower-index and linearize, on CPU targets. Per kernel it chooses a list of
// opts in the spirit of tinygrad's (Opt(UPCAST, axis, amount)), applies them to the kernel SINK and
// records them in its KernelInfo's applied_opts, so that `--print-after=optimize`, the manifest and a
// later run with the same opts given by hand all say what was done.
//
// The main opt, "upcast:AXIS:AMOUNT": the kernel's output loop AXIS (its position among its END's
// ranges) of constant size N, AMOUNT dividing N, becomes a loop of N/AMOUNT (the same range number) and
// an UPCAST range of AMOUNT lanes (a new number, after every range of the kernel): r -> r_o * AMOUNT +
// r_u, the lanes innermost. linearize then gives every REDUCE that depends on a lane one accumulator per
// lane, and runs its reduction loops outside the lanes (IR/Kernel.h): a register tile, e.g. a matmul's
//   for k { for u < 8 { a = A[i*8+u, k]; for v < 16 { acc[u][v] += a * B[k, j*16+v] } } }
// where A is loaded once for 16 lanes and B once for 8: the C and LLVM compilers unroll the lane loops
// and vectorize the unit-stride one. Every output element is still reduced in the same order, so the
// results are those of the loops without opts up to the one rounding a fused multiply-add saves, where the
// compiler fuses in one loop shape and not in the other (-ffp-contract=fast, LLVM's contract flags).
//
// The choice (level 2, the default), per kernel that is one store over constant output loops with
// REDUCEs (none nested in another's body) whose buffer reads all have constant strides in its loops:
//   - the vector axis: the output loop along which the most reads of the reductions are consecutive
//     (stride 1; every other read stride 0 or 1), upcast by two vectors (16 float32 lanes on AVX2), or
//     one when that does not divide it;
//   - the reuse axis: another output loop along which a consecutive read of the vector axis does not
//     move (stride 0: it is reused across that loop's lanes), upcast by 8, 4 or 2;
//   - at most 128 accumulator lanes per REDUCE (16 AVX2 registers of float32);
//   - with no reuse axis, and reads that walk down columns (each reduction step a line further), a strip of
//     up to an eighth of L1 of lanes along the vector axis, its accumulators in L1 (stripLanes).
// A padded read's loop is first split into its interior and borders (split:AXIS:LO:HI); a kernel with no
// register tile may instead get partial accumulators for its reductions (partial:RAXIS:AMOUNT); a tile's
// reduction loop is unrolled by the target's tileUnroll (unroll:RAXIS:AMOUNT, tinygrad's UNROLL: the same
// order). pack:SLOT reads a tile's operand panel from a packed copy that a kernel of its own writes
// first (Packer::packRead; chosen by choosePacks where the operand's stride keeps too few of its lines in
// the L2, from the cache sizes the machine reports). block:AXIS:SIZE (a cache-block loop, outermost) is
// only given by hand. docs/lowering.md has each, with what was measured.
// Level 0 or 1 leaves kernels as they are (1 is reserved for cheaper choices). The option
// opts=NAME/OPT/OPT;NAME2 gives a kernel's opts by hand instead (none for NAME2), as tinygrad's
// opts_to_apply; kernels not named get the level's choice. GPU targets: no opts yet.
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Schedule.h"
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_set>

namespace uopc {
namespace {

/// upcast:AXIS:AMOUNT, split:AXIS:LO:HI (amount = LO, hi = HI), partial:RAXIS:AMOUNT, unroll:RAXIS:AMOUNT
/// (RAXIS: a reduction loop, by its position among the kernel's reduction ranges in range-number order) or
/// block:AXIS:SIZE (amount = SIZE), or pack:SLOT (axis = SLOT: the kernel argument whose read is packed), or
/// relayout:AXIS:SLOT (amount = SLOT: the read re-laid out with AXIS's lanes innermost, see relayoutPiece).
struct Opt {
  enum Kind { Upcast, Split, Partial, Block, Unroll, Pack, Relayout } kind = Upcast;
  /// Each kind's name, by Kind.
  static constexpr std::string_view kNames[] = {"upcast", "split", "partial", "block", "unroll", "pack", "relayout"};
  size_t axis = 0;
  int64_t amount = 1, hi = 0;
  std::string text() const {
    if (kind == Pack) return std::string(kNames[kind]) + ":" + std::to_string(axis);
    return std::string(kNames[kind]) + ":" + std::to_string(axis) + ":" + std::to_string(amount) +
           (kind == Split ? ":" + std::to_string(hi) : "");
  }
};

/// "upcast:A:N", "split:A:LO:HI", "partial:R:N", "unroll:R:N", "block:A:N" or "pack:S" -> Opt; throws Error
/// naming the text otherwise.
Opt parseOpt(std::string_view t) {
  auto bad = [&]() -> Opt {
    fail("pass 'optimize': opt '" + std::string(t) +
         "' is not upcast:AXIS:AMOUNT, split:AXIS:LO:HI, partial:RAXIS:AMOUNT, unroll:RAXIS:AMOUNT, block:AXIS:SIZE, "
         "pack:SLOT or relayout:AXIS:SLOT");
  };
  Opt o;
  size_t colon = t.find(':');
  std::string_view kind = t.substr(0, colon);
  const std::string_view *name = std::find(std::begin(Opt::kNames), std::end(Opt::kNames), kind);
  if (colon == std::string_view::npos || name == std::end(Opt::kNames)) return bad();
  o.kind = static_cast<Opt::Kind>(name - std::begin(Opt::kNames));
  std::vector<int64_t> nums;
  for (std::string_view rest = t.substr(colon + 1);;) {
    size_t c = rest.find(':');
    std::string_view f = rest.substr(0, c);
    int64_t x = -1;
    auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), x);
    if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || x < 0 || x > INT32_MAX) return bad();
    nums.push_back(x);
    if (c == std::string_view::npos) break;
    rest = rest.substr(c + 1);
  }
  if (nums.size() != (o.kind == Opt::Split ? 3u : o.kind == Opt::Pack ? 1u : 2u) || nums[0] > 64) return bad();
  o.axis = static_cast<size_t>(nums[0]);
  if (o.kind == Opt::Pack) return o;
  o.amount = nums[1];
  if (o.kind != Opt::Split && (o.amount < 1 || (o.kind != Opt::Block && o.amount > 4096))) return bad();
  if (o.kind == Opt::Split) {
    o.hi = nums[2];
    if (o.amount >= o.hi) return bad();
  }
  return o;
}

/// opts=NAME/OPT/OPT;NAME -> {NAME: [opts]}.
std::map<std::string, std::vector<Opt>, std::less<>> parseHandOpts(std::string_view text) {
  std::map<std::string, std::vector<Opt>, std::less<>> out;
  while (!text.empty()) {
    size_t semi = text.find(';');
    std::string_view entry = text.substr(0, semi);
    text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
    size_t slash = entry.find('/');
    std::string name(entry.substr(0, slash));
    if (name.empty()) fail("pass 'optimize': opts entry '" + std::string(entry) + "' names no kernel");
    if (out.count(name)) fail("pass 'optimize': kernel '" + name + "' is given opts twice");
    std::vector<Opt> &opts = out[name];
    while (slash != std::string_view::npos) {
      entry = entry.substr(slash + 1);
      slash = entry.find('/');
      opts.push_back(parseOpt(entry.substr(0, slash)));
    }
  }
  return out;
}

/// Whether x's value depends on node r (r is in its cone).
bool dependsOn(const UOp *x, const UOp *r) {
  for (const UOp *u : toposort(x))
    if (u == r) return true;
  return false;
}

/// A kernel the opts apply to: SINK(END(STORE(INDEX(buffer, i), value), output ranges...)).
struct Shape {
  const UOp *end = nullptr, *store = nullptr;
  std::vector<const UOp *> axes; ///< the END's ranges
  std::vector<int64_t> sizes;
  std::vector<const UOp *> reduces, reads; ///< the REDUCEs of the value; the buffer reads of their bodies
  std::vector<const UOp *> reduceRanges;    ///< the ranges they reduce, by range number
};

std::optional<Shape> shapeOf(const UOp *sink) {
  if (sink->op != Op::SINK || sink->nsrc != 1 || sink->src(0)->op != Op::END) return std::nullopt;
  Shape s;
  s.end = sink->src(0);
  s.store = s.end->src(0);
  if (s.store->op != Op::STORE || s.store->src(0)->op != Op::INDEX || s.store->src(0)->src(0)->op != Op::PARAM)
    return std::nullopt;
  for (const UOp *r : s.end->src().subspan(1)) {
    auto n = r->op == Op::RANGE && r->nsrc == 1 && !isUpcastRange(r) && !isThreadRange(r) ? constBound(r->src(0))
                                                                                           : std::nullopt;
    if (!n || *n < 1 || *n > INT32_MAX) return std::nullopt;
    s.axes.push_back(r);
    s.sizes.push_back(static_cast<int64_t>(*n));
  }
  for (const UOp *u : toposort(s.store->src(1)))
    if (u->op == Op::REDUCE) {
      s.reduces.push_back(u);
      for (const UOp *r : u->src().subspan(1))
        if (std::find(s.reduceRanges.begin(), s.reduceRanges.end(), r) == s.reduceRanges.end()) s.reduceRanges.push_back(r);
    }
  std::sort(s.reduceRanges.begin(), s.reduceRanges.end(), [](const UOp *a, const UOp *b) { return rangeNumber(a) < rangeNumber(b); });
  std::unordered_set<const UOp *> seenReads;
  for (const UOp *red : s.reduces)
    for (const UOp *x : toposort(red->src(0))) {
      // nested: only a REDUCE that does not move with the outer one's loops (linearize hoists it)
      if (x != red && x->op == Op::REDUCE)
        for (const UOp *r : red->src().subspan(1))
          if (dependsOn(x, r)) return std::nullopt;
      if (x->op == Op::INDEX && x->nsrc >= 2 && x->src(0)->op == Op::PARAM && seenReads.insert(x).second)
        s.reads.push_back(x);
    }
  return s;
}

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

std::vector<const UOp *> conditionsOf(const std::vector<const UOp *> &reads) {
  std::vector<const UOp *> work;
  for (const UOp *rd : reads) addReadConditions(rd, work);
  return andClauses(std::move(work));
}

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

/// Partial accumulators for a kernel with no register tile: a reduction's innermost loop R whose reads
/// all move by 0 or 1 element along it, ungated by it, whose REDUCEs (none nested) all end in R and are a
/// sum or a max, of 2 vectors' lanes (or one) dividing it: partial:R:AMOUNT.
std::vector<Opt> choosePartial(const Shape &s, int64_t vec) {
  std::vector<Opt> opts;
  for (size_t k = 0; k < s.reduceRanges.size(); ++k) {
    const UOp *r = s.reduceRanges[k];
    auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
    if (!n) continue;
    bool ok = true;
    for (const UOp *red : s.reduces) {
      auto rs = red->src().subspan(1);
      if (std::find(rs.begin(), rs.end(), r) == rs.end()) continue;
      Op op = red->arg && red->arg->kind == ArgKind::Tuple && red->arg->count ? red->arg->elems()[0]->op() : Op::MUL;
      ok = ok && rs.back() == r && (op == Op::ADD || op == Op::MAX);
    }
    for (const UOp *rd : s.reads) {
      auto st = indexStride(rd->src(1), r);
      ok = ok && st && (*st == 0 || *st == 1);
      for (const UOp *g : rd->src().subspan(2)) ok = ok && indexStride(g, r) == std::optional<int64_t>(0);
    }
    if (!ok) continue;
    for (int64_t amt : {2 * vec, vec})
      if (static_cast<int64_t>(*n) % amt == 0 && static_cast<int64_t>(*n) > amt) {
        opts.push_back({Opt::Partial, k, amt});
        break;
      }
  }
  return opts;
}

/// Whether a register tile's read that moves `strideBytes` per step of its reduction loop (`steps`
/// iterations), reading `bytes` of consecutive lanes at each, keeps its lines in the target's L2 from one
/// use of the panel to the next: lines `strideBytes` apart fall in sets / gcd(sets, strideBytes / line) of
/// the L2's sets (a power-of-two stride: few), each holding `ways` of them.
bool panelStaysInL2(const PassTarget &t, int64_t strideBytes, int64_t steps, int64_t bytes) {
  int64_t line = t.lineBytes, ways = t.l2Ways, sets = t.l2Bytes / (ways * line);
  if (sets < 1 || strideBytes < line || strideBytes % line) return true; // consecutive, or spread over the sets
  int64_t perStep = (bytes + line - 1) / line;
  int64_t distinct = std::min(sets, sets / std::gcd(sets, strideBytes / line) * perStep);
  return steps * perStep <= distinct * ways;
}

/// pack:SLOT for the reads of a register tile (vector axis va, reuse axis ra, vAmount lanes of va) that
/// pay for their copy: consecutive along va, not moving along ra (so each element is read once per tile
/// row of the whole ra loop), ungated, the only read of their buffer, moving along one reduction loop only,
/// by a stride whose lines do not stay in the L2 (panelStaysInL2). The packed panel need not fit in the L2:
/// its consecutive lines stream. Measured on sp_mm_1024 (B's 4 KiB stride: 16 of the L2's 1024 sets) and a
/// 256x8192 @ 8192x1024 matmul (a 512 KiB panel): see docs/lowering.md.
std::vector<Opt> choosePacks(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides, size_t va,
                             size_t ra, int64_t vAmount, const PassTarget &target) {
  std::vector<Opt> opts;
  std::map<int64_t, int> readsOf; // slot -> INDEX nodes in the kernel
  for (const UOp *u : toposort(s.store))
    if (u->op == Op::INDEX && u->src(0)->op == Op::PARAM) ++readsOf[ParamArg::slotOf(u->src(0)->arg)];
  for (size_t k = 0; k < s.reads.size(); ++k) {
    const UOp *rd = s.reads[k];
    int64_t slot = ParamArg::slotOf(rd->src(0)->arg);
    // the reuse axis's operand whose rows lie 16 KiB and more apart (attention's context read back across the
    // heads, b*s rows of h*d: 384 KiB apart in the encoder's output projection): each row lane reads
    // another page each step; packed, they are consecutive (that matmul 19.8 -> 12.1 ms, its copy included)
    if (strides[k][va] == std::optional<int64_t>(0) && strides[k][ra] && *strides[k][ra] * static_cast<int64_t>(dtypeSize(rd->dtype)) >= (16 << 10) &&
        readsOf[slot] == 1 && conditionsOf({rd}).empty()) {
      opts.push_back({Opt::Pack, static_cast<size_t>(slot), 0});
      continue;
    }
    if (strides[k][va] != std::optional<int64_t>(1) || strides[k][ra] != std::optional<int64_t>(0) ||
        readsOf[slot] != 1 || !conditionsOf({rd}).empty())
      continue;
    std::optional<int64_t> stride;
    int64_t steps = 0, moving = 0;
    for (const UOp *r : s.reduceRanges) {
      auto st = indexStride(rd->src(1), r);
      auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
      if (!st || !n) moving = 2;
      else if (*st != 0) ++moving, stride = *st, steps = static_cast<int64_t>(*n);
    }
    int64_t elem = static_cast<int64_t>(dtypeSize(rd->dtype));
    if (moving != 1 || !stride || *stride < 0 || *stride > (int64_t(1) << 32)) continue;
    if (!panelStaysInL2(target, *stride * elem, steps, vAmount * elem)) opts.push_back({Opt::Pack, static_cast<size_t>(slot), 0});
  }
  return opts;
}

/// The lanes of a tile with no reuse axis whose consecutive reads walk down columns (a sum over axis 0):
/// each step of the innermost reduction loop moves every read that is consecutive along the vector axis
/// va by at least a cache line, so 16 lanes read one line per step, each from another page, and the
/// hardware prefetchers cannot keep up (sp_sum_ax0_4096: 9.6-13 ms, 6 GB/s, where a row sum streams at
/// 33 GB/s). A strip of lanes reads a stretch of each row instead, its accumulators in L1, not registers:
/// the largest multiple of vAmount dividing va's size, at most an eighth of L1 (1,024 float32 of 32 KiB),
/// leaving at least two outer iterations per host thread. Measured by hand on sp_sum_ax0_4096 (C, two
/// threads, two rounds): 16 lanes 9.6-13.3 ms, 64 4.1-4.3, 256 3.6-6.3, 1,024 2.7-3.3, 2,048 2.4-2.6; LLVM
/// 16 lanes 10.0-10.2, 512 3.4, 1,024 3.9, 2,048 3.5-3.5. Each output still sums its column in order.
int64_t stripLanes(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides, size_t va,
                   int64_t vAmount, int64_t size, int64_t elem, const PassTarget &target) {
  if (s.reduceRanges.empty()) return vAmount;
  const UOp *rr = s.reduceRanges.back();
  bool column = false;
  for (size_t k = 0; k < s.reads.size(); ++k) {
    if (strides[k][va] != std::optional<int64_t>(1)) continue;
    auto st = indexStride(s.reads[k]->src(1), rr, /*throughSelect=*/true);
    if (!st || std::abs(*st) * elem < target.lineBytes) return vAmount;
    column = true;
  }
  if (!column) return vAmount;
  int64_t others = 1;
  for (size_t a = 0; a < s.sizes.size(); ++a)
    if (a != va) others = std::min<int64_t>(others * s.sizes[a], INT32_MAX);
  int64_t best = vAmount, threads = std::max(1, target.hostThreads);
  for (int64_t m = vAmount; m <= size && m * elem <= target.l1Bytes / 8; m += vAmount)
    if (size % m == 0 && others * (size / m) >= 2 * threads) best = m;
  return best;
}

/// x simplified (symbolic rules with range analysis), as the split pieces are.
const UOp *simplifiedExpr(Context &c, const UOp *x) {
  SymbolicCtx sc;
  return simplifyWith(c, x, symRules(), &sc);
}

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

/// The channel tile: a kernel whose reductions read one or more buffers (weights) that move along an output
/// loop `oa` (a convolution's output channels, a dense layer's outputs) while every other read stays put along
/// it, and whose consecutive output loop is too short for the vector tile (a convolution's 56, 28, 14 or 7
/// pixels a row) or is read with a stride (stride 2). The lanes go along oa instead (64 where they divide
/// it, else 32, 16, 8): each weight read is re-laid out by a kernel of its own that runs once per load of the
/// inputs (relayout:oa:SLOT, oa's lanes innermost, so that the tile loads them as whole vectors), the other
/// reads load one element per reuse lane and broadcast it. The reuse axis is the innermost other output loop
/// that moves a non-weight read and no weight; its upcast (up to 8, within 448 accumulator lanes: 28 of
/// AVX-512's 32 registers) covers most of its interior, the borders and the rest pieces of their own (a row
/// of under 14 keeps its borders, gated). Measured on ResNet-50's 3x3 convolutions, one thread, this
/// machine: 64 lanes x 4-6 pixels 3.2-3.9 ms where 32 x 8 took 5.1-6.9. nullopt when no loop qualifies.
std::optional<std::vector<Opt>> chooseChannelTile(Context &c, const Shape &s,
                                                  const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                                  const std::vector<std::optional<std::pair<int64_t, int64_t>>> &interior,
                                                  int64_t vec) {
  for (size_t oa = 0; oa < s.axes.size(); ++oa) {
    if (interior[oa]) continue;
    int64_t n = s.sizes[oa];
    int64_t lanes = 0;
    for (int64_t l : {8 * vec, 4 * vec, 2 * vec, vec})
      if (!lanes && n % l == 0) lanes = l;
    // half a vector only for many channels none of those divide (ShuffleNet's groups of 68)
    if (!lanes && vec >= 2 && n >= 4 * vec && n % (vec / 2) == 0) lanes = vec / 2;
    if (!lanes) continue;
    std::vector<size_t> weights;
    bool ok = true;
    for (size_t k = 0; k < s.reads.size() && ok; ++k) {
      if (!strides[k][oa]) ok = false;
      else if (*strides[k][oa] == 0) continue;
      else if (auto st = relayoutStride(c, s, s.reads[k], s.axes[oa]); st && *st > 1) weights.push_back(k);
      else ok = false;
    }
    if (!ok || weights.empty() || weights.size() == s.reads.size()) continue;
    // the reuse axis: the innermost loop moving some other read and no weight
    std::optional<size_t> ra;
    for (size_t b = s.axes.size(); b-- > 0 && !ra;) {
      if (b == oa) continue;
      bool moves = false, fine = true;
      for (size_t k = 0; k < s.reads.size(); ++k) {
        bool w = std::find(weights.begin(), weights.end(), k) != weights.end();
        if (!strides[k][b] || (w && *strides[k][b] != 0)) fine = false;
        else if (!w && *strides[k][b] != 0) moves = true;
      }
      if (fine && moves) ra = b;
    }
    if (!ra) continue;
    // (the accumulators of reductions over different loops are not live at once: linearize runs each
    // reduction's loop to its end before the next begins, a finished one waiting in memory for the store;
    // only reductions over the same loops share the registers: a residual's main and downsample branches
    // get a whole tile each)
    std::map<std::vector<const UOp *>, int64_t> together;
    int64_t live = 1;
    for (const UOp *red : s.reduces) {
      std::vector<const UOp *> loops(red->src().begin() + 1, red->src().end());
      std::sort(loops.begin(), loops.end());
      live = std::max(live, ++together[loops]);
    }
    int64_t budget = 448 / (lanes * live);
    // a row of 7 keeps its borders in the tile, gated: its border pieces of one lane would be 2/7 of the work,
    // each streaming the whole weight panel once per pixel (ResNet-50's 7x7 3x3 convolution, 512 channels,
    // one thread: 4.5 ms whole, 5.5 split); from 14 on the borders are cut off (14x14, 256 channels: 6.0 ms
    // gated, 3.7 split)
    bool cutBorders = interior[*ra] && s.sizes[*ra] >= 14;
    int64_t lo = cutBorders ? interior[*ra]->first : 0, hi = cutBorders ? interior[*ra]->second : s.sizes[*ra];
    // the amount (4 to 8 lanes, fewer only for a shorter span) covering most of the span, the larger on a tie
    int64_t span = hi - lo, amt = 1, cut = 0;
    for (int64_t a = std::min<int64_t>(8, budget); a >= 2; --a)
      if (span >= a && span / a * a > cut && (a >= 4 || cut == 0)) amt = a, cut = span / a * a;
    std::vector<Opt> opts;
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (interior[a] && a != *ra) opts.push_back({Opt::Split, a, interior[a]->first, interior[a]->second});
    if (amt > 1 && (lo > 0 || lo + cut < s.sizes[*ra])) opts.push_back({Opt::Split, *ra, lo, lo + cut});
    if (amt > 1) opts.push_back({Opt::Upcast, *ra, amt});
    opts.push_back({Opt::Upcast, oa, lanes}); // last: the innermost lanes
    for (size_t k : weights)
      opts.push_back({Opt::Relayout, oa, ParamArg::slotOf(s.reads[k]->src(0)->arg)});
    return opts;
  }
  return std::nullopt;
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

/// The number of a shape's output elements.
double outputSize(const Shape &s) {
  double n = 1;
  for (int64_t x : s.sizes) n *= static_cast<double>(x);
  return n;
}

/// A concatenation's seams: an output loop a (of at most 4,096 iterations) along which the conditions of the
/// stored value that depend on a alone (no other loop, no reduction loop, no loaded data) change their truth
/// at one or two points lo < hi inside it. tinygrad concatenates by padding each part to the whole and
/// adding: a convolution written into 32 of DenseNet's 256 channels runs, unsplit, its reduction over all
/// 256, gated. split:a:lo:hi cuts the parts apart (the simplifier drops what a piece's gates rule out); for
/// one seam K the piece kept as the main one ([0, K) or [K, n)) is the one with the reductions left.
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
      if (!alone) continue;
      int prev = -1;
      for (int64_t v = 0; v < n && seams.size() <= 2; ++v) {
        const UOp *x = substitute(c, g, {{s.axes[a], c.constInt(s.axes[a]->dtype, v)}});
        int t = ri.vmin(x) >= 1 ? 1 : ri.vmax(x) <= 0 ? 0 : -2;
        if (t < 0) break;
        if (prev >= 0 && t != prev) seams.insert(v);
        prev = t;
      }
    }
    if (seams.empty() || seams.size() > 2) continue;
    int64_t lo = *seams.begin(), hi = seams.size() == 2 ? *seams.rbegin() : n;
    if (seams.size() == 1) { // the main piece: the side with the most reduction work
      auto right = pieceShape(c, s, a, lo, n), left = pieceShape(c, s, a, 0, lo);
      if (reductionWork(left) > reductionWork(right)) hi = lo, lo = 0;
    }
    return Opt{Opt::Split, a, lo, hi};
  }
  return std::nullopt;
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

/// The opts of level 2 for kernel shape s (see the file comment).
std::vector<Opt> chooseOpts(Context &c, const Shape &s, const PassTarget &target, bool seams = true, bool groups = true) {
  if (s.reduces.empty() || s.reads.empty()) return {};
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
      std::vector<Opt> opts{*cut};
      for (const Opt &o : chooseOpts(c, *piece, target, false, true)) { // (a grouped part: blocked)
        if (o.kind == Opt::Split && o.axis == cut->axis) continue; // (one split a loop)
        opts.push_back(o);
      }
      return opts;
    }
  // then a grouped convolution's groups (groupSize), then the opts of one group's channels
  if (groups)
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (auto k = groupSize(s, a))
        if (auto blocked = blockedShape(c, s, a, *k)) {
          std::vector<Opt> inner = chooseOpts(c, *blocked, target, false, false);
          // (kept when the group's channels are tiled: laid out for the lanes or upcast as the reuse axis)
          if (std::any_of(inner.begin(), inner.end(), [&](const Opt &o) {
                return o.kind == Opt::Relayout || (o.kind == Opt::Upcast && o.axis == a);
              })) {
            inner.insert(inner.begin(), Opt{Opt::Block, a, *k});
            return inner;
          }
        }
  // strides[read][axis]
  std::vector<std::vector<std::optional<int64_t>>> strides;
  for (const UOp *rd : s.reads) {
    strides.emplace_back();
    for (const UOp *r : s.axes) strides.back().push_back(indexStride(rd->src(1), r, /*throughSelect=*/true));
  }
  std::vector<bool> used(s.axes.size(), false); // some reduction depends on the axis
  for (size_t a = 0; a < s.axes.size(); ++a)
    for (size_t k = 0; k < s.reads.size(); ++k) used[a] = used[a] || strides[k][a] != std::optional<int64_t>(0);
  size_t elem = 4;
  for (const UOp *red : s.reduces) elem = std::max<size_t>(elem, dtypeSize(red->dtype));
  int64_t vec = std::max<int64_t>(1, (target.vectorBytes > 0 ? target.vectorBytes : 16) / static_cast<int64_t>(elem));
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
    if (shortRow || padded)
      if (auto opts = chooseChannelTile(c, s, strides, interior, vec)) return *opts;
  }
  // the vector axis
  std::optional<size_t> va;
  size_t best = 0;
  for (size_t a = 0; a < s.axes.size(); ++a) {
    if (!used[a] || !laneAmount(sizes[a], vec, interior[a].has_value())) continue;
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
    // no tile: the interiors still pay (a depthwise convolution whose reads go through a channel shuffle and
    // the padding divides and takes remainders per term; in its interior the simplifier folds them:
    // ShuffleNet's 3x3 depthwise convolutions)
    if (opts.empty())
      for (size_t a = 0; a < s.axes.size(); ++a)
        if (interior[a]) opts.push_back({Opt::Split, a, interior[a]->first, interior[a]->second});
    return opts;
  }
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
  // (room for twice the accumulators: the vector axis's lanes doubled, the reuse axis's upcast kept, for a
  // reduction long enough to pay for them: a matmul's, not VGG-19's first convolution's 27)
  if (ra && !interior[*va] && target.accumulatorLanes >= 2 * 8 * vAmount && vAmount == 2 * vec &&
      sizes[*va] % (2 * vAmount) == 0 && sizes[*ra] % 8 == 0 && reductionWork(s) >= 64.0 * outputSize(s))
    vAmount *= 2;
  int64_t budget = target.accumulatorLanes / vAmount;
  if (ra)
    for (int64_t amt : {8, 4, 2})
      if (amt <= budget && sizes[*ra] % amt == 0) {
        opts.push_back({Opt::Upcast, *ra, amt});
        break;
      }
  opts.push_back({Opt::Upcast, *va, vAmount}); // last: the highest range number, the innermost lanes
  // the tile's reduction loop unrolled by the target's amount (tinygrad's UNROLL), when every REDUCE ends in it
  int64_t u = target.tileUnroll;
  const UOp *r = s.reduceRanges.empty() ? nullptr : s.reduceRanges.back();
  auto n = r && r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
  int64_t size = n && *n <= INT32_MAX ? static_cast<int64_t>(*n) : 0;
  bool innermost = r && std::all_of(s.reduces.begin(), s.reduces.end(), [&](const UOp *red) { return red->src().back() == r; });
  if (u > 1 && innermost && size > u && size % u == 0)
    opts.push_back({Opt::Unroll, s.reduceRanges.size() - 1, u});
  if (ra && std::none_of(interior.begin(), interior.end(), [](auto x) { return x.has_value(); }))
    for (const Opt &p : choosePacks(s, strides, *va, *ra, vAmount, target)) opts.push_back(p);
  return opts;
}

struct Optimizer {
  Context &c;

  const UOp *simplified(const UOp *x) {
    SymbolicCtx sc;
    return simplifyWith(c, x, symRules(), &sc);
  }

  /// One store of the kernel being tiled: its value, loops (nullptr: upcast whole) and lanes.
  struct Piece {
    const UOp *store;
    std::vector<const UOp *> axes;
    std::vector<int64_t> sizes;
    std::vector<const UOp *> lanes;
    std::vector<const UOp *> blocks; ///< cache-block loops, outside every other (outermost first)
    /// per upcast output loop: its outer loop (nullptr when upcast whole) and its lanes' range
    std::map<size_t, std::pair<const UOp *, const UOp *>> upcastOf;
  };

  /// A read re-laid out by relayout:AXIS:SLOT (the buffer W of `rows` rows of `stride` elements: row r is the
  /// elements W[stride*r ...]): the copy kernel that runOptimize adds writes Q[(o*stride + k)*lanes + l] =
  /// W[(o*lanes + l)*stride + k], so that the tile's lanes along AXIS read consecutive elements.
  struct Relayout {
    int64_t slot, rows, stride, lanes;
    const UOp *param; ///< the kernel's PARAM of W
  };

  /// relayout:AXIS:SLOT in piece p, after its upcasts: each read W[stride*(o*lanes + l) + rest] (o AXIS's outer
  /// loop, l its lanes) becomes Q[o*stride*lanes + rest*lanes + l] of the re-laid-out copy Q.
  template <typename Bad>
  bool relayoutPiece(Piece &p, const Opt &o, std::vector<Relayout> &out, Bad bad) {
    bool reads = false;
    for (const UOp *u : toposort(p.store))
      reads |= u->op == Op::INDEX && u->src(0)->op == Op::PARAM && ParamArg::slotOf(u->src(0)->arg) == o.amount;
    if (!reads) return false;
    auto it = p.upcastOf.find(o.axis);
    if (it == p.upcastOf.end()) bad("the loop is not upcast in every piece that reads the buffer");
    auto [outer, lane] = it->second;
    int64_t n = static_cast<int64_t>(*constBound(lane->src(0)));
    std::unordered_map<const UOp *, const UOp *> sub;
    for (const UOp *u : toposort(p.store)) {
      if (u->op != Op::INDEX || u->src(0)->op != Op::PARAM || ParamArg::slotOf(u->src(0)->arg) != o.amount) continue;
      if (u->nsrc != 2) bad("the read is gated");
      const UOp *idx = u->src(1);
      auto st = indexStride(idx, lane);
      if (!st || *st <= 0 || (outer && indexStride(idx, outer) != std::optional<int64_t>(*st * n)))
        bad("the read does not move by a constant stride along the loop");
      DType dt = idx->dtype;
      // the row blocks: the loops that move the read by whole blocks of n rows (the lanes' outer loop, a
      // cache block, a group's loop or another output loop around them); the rest of the index is the row's
      // element
      std::unordered_map<const UOp *, const UOp *> zero{{lane, c.constInt(lane->dtype, 0)}};
      const UOp *blocks = c.constInt(dt, 0);
      for (const UOp *r : toposort(idx)) {
        if (r->op != Op::RANGE || r == lane ||
            (r != outer && std::find(p.blocks.begin(), p.blocks.end(), r) == p.blocks.end() &&
             std::find(p.axes.begin(), p.axes.end(), r) == p.axes.end()))
          continue;
        auto rs = indexStride(idx, r);
        if (!rs || *rs == 0 || *rs % (*st * n)) continue;
        zero[r] = c.constInt(r->dtype, 0);
        blocks = c.make(Op::ADD, dt, {blocks, c.make(Op::MUL, dt, {r, c.constInt(dt, *rs)})});
      }
      const UOp *rest = simplified(substitute(c, idx, zero));
      RangeInfo ri;
      if (ri.vmin(rest) < 0 || ri.vmax(rest) >= *st) bad("the read's row is not the stride's elements");
      blocks = simplified(blocks);
      int64_t rows = static_cast<int64_t>(ri.vmax(blocks) / (*st * n) + 1) * n;
      const UOp *W = u->src(0);
      auto size = constBound(W->src(0));
      if (!size || ri.vmin(blocks) < 0 || Bound(rows) * *st > *size) bad("the rows the loop reads go past the buffer");
      auto found = std::find_if(out.begin(), out.end(), [&](const Relayout &r) { return r.slot == o.amount; });
      if (found != out.end() && (found->stride != *st || found->lanes != n || found->rows != rows))
        bad("the pieces of the kernel read the buffer differently");
      if (found == out.end()) out.push_back({o.amount, rows, *st, n, W});
      const UOp *q = c.make(Op::PARAM, W->dtype, {c.constInt(W->src(0)->dtype, rows * *st)}, W->arg);
      const UOp *ni = c.make(Op::ADD, dt, {c.make(Op::MUL, dt, {rest, c.constInt(dt, n)}), lane});
      sub[u] = c.make(Op::INDEX, u->dtype, {q, simplified(c.make(Op::ADD, dt, {blocks, ni}))}, u->arg, u->tag);
    }
    p.store = substitute(c, p.store, sub);
    return true;
  }

  /// partial:R:A: each REDUCE whose last loop is reduction range R (size N, A dividing it) becomes
  /// REDUCE(REDUCE(x[r -> r_o * A + r_u], ..., r_o), r_u) over an UPCAST range r_u: A accumulators, each
  /// reducing every A-th element in order, then reduced into one in lane order (the only reassociation:
  /// a float sum's partial sums; a max is the same).
  /// unroll:R:A: each REDUCE over R becomes REDUCE(x[r -> r_o * A + r_u], ..., r_o, r_u) over an UNROLL
  /// range r_u (tinygrad's UNROLL): the same accumulator, the same order, A iterations of R per iteration
  /// of r_o, which the targets unroll.
  template <typename Bad>
  void reductionOpt(const Opt &o, const Shape &s, Piece &main, std::vector<Piece> &before, std::vector<Piece> &after,
                    int64_t &next, Bad bad) {
    if (o.axis >= s.reduceRanges.size())
      bad("the kernel has " + std::to_string(s.reduceRanges.size()) + " reduction loops");
    const UOp *r = s.reduceRanges[o.axis];
    auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
    if (!n || static_cast<int64_t>(*n) % o.amount || static_cast<int64_t>(*n) == o.amount)
      bad(std::to_string(o.amount) + " does not divide that loop into several parts");
    DType dt = r->dtype;
    const UOp *outer = c.make(Op::RANGE, dt, {c.constInt(dt, static_cast<int64_t>(*n) / o.amount)}, r->arg, r->tag);
    bool unroll = o.kind == Opt::Unroll;
    const UOp *lane = rangeLike(c, r, o.amount, next++, unroll ? AxisType::UNROLL : AxisType::UPCAST);
    const UOp *idx = combinedIndex(c, outer, o.amount, lane);
    auto rewrite = [&](Piece &p) {
      std::unordered_map<const UOp *, const UOp *> sub;
      for (const UOp *u : toposort(p.store)) {
        if (u->op != Op::REDUCE) continue;
        auto rs = u->src().subspan(1);
        if (std::find(rs.begin(), rs.end(), r) == rs.end()) continue;
        if (rs.back() != r) bad("a REDUCE over it has loops inside it");
        for (const UOp *x : toposort(u->src(0)))
          if (x->op == Op::REDUCE && dependsOn(x, r)) bad("a REDUCE over it has a REDUCE over it inside");
        std::vector<const UOp *> in{substitute(c, u->src(0), {{r, idx}})};
        in.insert(in.end(), rs.begin(), rs.end() - 1);
        in.push_back(outer);
        if (unroll) {
          in.push_back(lane);
          sub[u] = c.make(Op::REDUCE, u->dtype, in, u->arg, u->tag);
          continue;
        }
        const UOp *inner = c.make(Op::REDUCE, u->dtype, in, u->arg, u->tag);
        sub[u] = c.make(Op::REDUCE, u->dtype, {inner, lane}, u->arg, u->tag);
      }
      if (!sub.empty()) p.store = substitute(c, p.store, sub);
    };
    rewrite(main);
    for (Piece &p : before) rewrite(p);
    for (Piece &p : after) rewrite(p);
  }

  /// Applies opts to kernel SINK `sink` (its shape s); throws Error naming the kernel for an opt that
  /// does not fit it. Splits come first: each cuts the main piece's loop AXIS into [0, LO), [LO, HI) and
  /// [HI, N), the outer two becoming stores of their own, the middle one staying the main piece,
  /// simplified (its gates fold where the split proves them). An upcast then acts on the main piece and
  /// on every other piece whose loop it divides (so that all keep one outer loop: the CPU thread split).
  /// Pack opts are only recorded here, in `packs` (their slots, in order): packRead applies them to the
  /// kernel this returns, since each adds a kernel of its own.
  const UOp *apply(const UOp *sink, const Shape &s, const std::vector<Opt> &opts, const std::string &name,
                   std::vector<int64_t> &packs, std::vector<Relayout> &relayouts) {
    int64_t next = 0;
    for (const UOp *u : toposort(sink))
      if (u->op == Op::RANGE) next = std::max(next, rangeNumber(u) + 1);
    std::vector<Piece> before, after;
    Piece main{s.store, s.axes, s.sizes, {}, {}};
    std::vector<bool> done(s.axes.size(), false), unrolled(s.reduceRanges.size(), false);
    std::vector<Opt> relayoutOpts;
    std::vector<const Arg *> texts;
    auto shifted = [&](const UOp *r, int64_t by) { return by ? c.make(Op::ADD, r->dtype, {r, c.constInt(r->dtype, by)}) : r; };
    for (const Opt &o : opts) {
      auto bad = [&](const std::string &why) {
        fail("pass 'optimize': kernel " + name + ": opt " + o.text() + ": " + why);
      };
      if (o.kind == Opt::Pack) {
        if (std::find(packs.begin(), packs.end(), static_cast<int64_t>(o.axis)) != packs.end()) bad("that read is packed already");
        packs.push_back(static_cast<int64_t>(o.axis));
        texts.push_back(c.argString(o.text()));
        continue;
      }
      if (o.kind == Opt::Relayout) { // after every upcast, below
        if (o.axis >= s.axes.size()) bad("the kernel has " + std::to_string(s.axes.size()) + " output loops");
        relayoutOpts.push_back(o);
        texts.push_back(c.argString(o.text()));
        continue;
      }
      bool onReduction = o.kind == Opt::Partial || o.kind == Opt::Unroll;
      if (!onReduction && o.axis >= s.axes.size()) bad("the kernel has " + std::to_string(s.axes.size()) + " output loops");
      if (!onReduction && done[o.axis]) bad("that loop is upcast already");
      texts.push_back(c.argString(o.text()));
      if (o.kind == Opt::Split) {
        if (!main.lanes.empty()) bad("splits come before the upcasts");
        const UOp *r = main.axes[o.axis];
        int64_t lo = o.amount, hi = o.hi, n = main.sizes[o.axis];
        if (hi > n) bad("the loop has " + std::to_string(n) + " iterations");
        auto piece = [&](int64_t a, int64_t b) {
          Piece p = main;
          p.axes[o.axis] = rangeLike(c, r, b - a, next++, std::nullopt);
          p.sizes[o.axis] = b - a;
          p.store = simplified(substitute(c, main.store, {{r, shifted(p.axes[o.axis], a)}}));
          return p;
        };
        if (lo > 0) before.push_back(piece(0, lo));
        if (hi < n) after.insert(after.begin(), piece(hi, n));
        const UOp *m = c.make(Op::RANGE, r->dtype, {c.constInt(r->dtype, hi - lo)}, r->arg, r->tag);
        main.store = simplified(substitute(c, main.store, {{r, shifted(m, lo)}}));
        main.axes[o.axis] = m;
        main.sizes[o.axis] = hi - lo;
        continue;
      }
      if (o.kind == Opt::Partial || o.kind == Opt::Unroll) {
        if (o.kind == Opt::Unroll && unrolled[o.axis]) bad("that loop is unrolled already");
        if (o.kind == Opt::Unroll) unrolled[o.axis] = true;
        reductionOpt(o, s, main, before, after, next, bad);
        continue;
      }
      if (o.kind == Opt::Block) {
        if (!main.lanes.empty()) bad("blocks come before the upcasts");
        // (the main piece alone: the others keep their loop, each piece its own outer loop for the threads)
        int64_t n = main.sizes[o.axis];
        if (n % o.amount || o.amount == n) bad(std::to_string(o.amount) + " does not divide its " + std::to_string(n) + " iterations into several blocks");
        const UOp *r = main.axes[o.axis];
        DType dt = r->dtype;
        const UOp *outer = rangeLike(c, r, n / o.amount, next++, std::nullopt);
        const UOp *inner = c.make(Op::RANGE, dt, {c.constInt(dt, o.amount)}, r->arg, r->tag);
        // (simplified: a grouped convolution's group, inner's counter divided by the block, is outer's)
        main.store = simplified(substitute(c, main.store, {{r, combinedIndex(c, outer, o.amount, inner)}}));
        main.axes[o.axis] = inner;
        main.sizes[o.axis] = o.amount;
        main.blocks.push_back(outer);
        continue;
      }
      if (main.sizes[o.axis] % o.amount)
        bad(std::to_string(o.amount) + " does not divide its " + std::to_string(main.sizes[o.axis]) + " iterations");
      done[o.axis] = true;
      if (o.amount == 1) continue;
      const UOp *lane = nullptr;
      auto upcast = [&](Piece &p) {
        const UOp *r = p.axes[o.axis];
        if (p.sizes[o.axis] % o.amount) return; // a border piece the amount does not divide
        DType dt = r->dtype;
        if (!lane) lane = rangeLike(c, r, o.amount, next++, AxisType::UPCAST);
        const UOp *outer = c.make(Op::RANGE, dt, {c.constInt(dt, p.sizes[o.axis] / o.amount)}, r->arg, r->tag);
        // (a loop upcast whole leaves no outer loop of one iteration)
        bool whole = o.amount == p.sizes[o.axis];
        const UOp *v = whole ? lane : combinedIndex(c, outer, o.amount, lane);
        p.store = substitute(c, p.store, {{r, v}});
        p.axes[o.axis] = whole ? nullptr : outer;
        p.lanes.push_back(lane);
        p.upcastOf[o.axis] = {whole ? nullptr : outer, lane};
      };
      upcast(main);
      for (Piece &p : before) upcast(p);
      for (Piece &p : after) upcast(p);
    }
    for (const Opt &o : relayoutOpts) {
      auto bad = [&](const std::string &why) {
        fail("pass 'optimize': kernel " + name + ": opt " + o.text() + ": " + why);
      };
      if (!done[o.axis]) bad("the loop is not upcast");
      // (each piece that reads the buffer: of a split loop, the piece's rows; they must agree)
      bool read = relayoutPiece(main, o, relayouts, bad);
      for (Piece &p : before) read |= relayoutPiece(p, o, relayouts, bad);
      for (Piece &p : after) read |= relayoutPiece(p, o, relayouts, bad);
      if (!read) bad("the kernel does not read that argument");
    }
    std::vector<const UOp *> ends;
    auto endOf = [&](const Piece &p) {
      std::vector<const UOp *> src{p.store};
      src.insert(src.end(), p.blocks.begin(), p.blocks.end());
      for (const UOp *r : p.axes)
        if (r) src.push_back(r);
      src.insert(src.end(), p.lanes.begin(), p.lanes.end());
      ends.push_back(c.make(Op::END, s.end->dtype, src, s.end->arg, s.end->tag));
    };
    for (const Piece &p : before) endOf(p);
    endOf(main);
    for (const Piece &p : after) endOf(p);
    // KernelInfo: the same fields, applied_opts added
    std::vector<std::pair<std::string_view, const Arg *>> fields;
    const Arg *info = sink->arg;
    if (info && info->kind == ArgKind::Record)
      for (size_t k = 0; k < info->count; ++k)
        if (info->keys()[k] != "applied_opts") fields.emplace_back(info->keys()[k], info->elems()[k]);
    fields.emplace_back("applied_opts", c.argTuple(texts));
    return c.make(Op::SINK, sink->dtype, ends, makeRecord(c, "KernelInfo", fields), sink->tag);
  }
};

/// pack:SLOT, applied to a kernel after its other opts: see packRead.
struct Packer {
  Context &c;
  int64_t nextBuffer; ///< the slot of the next intermediate BUFFER

  /// The kernel SINK `sink` (called with `args`, the CALL's sources after the SINK) reads the buffer in
  /// argument SLOT once, INDEX(PARAM SLOT, idx), ungated, idx depending on constant-size loops D only
  /// (in the order the kernel nests them: output loops, then reduction loops, then lanes). It then reads
  /// instead a new buffer Q in that slot, Q[lin(D)] (row-major over D), and a kernel of its own,
  /// NAME_packSLOT, copies Q[lin(D)] = P[idx(D)] before it: the element the kernel reads at a step of its
  /// loops is the one after the element of the step before. Throws Error (via bad) otherwise.
  template <typename Bad>
  std::pair<const UOp *, std::vector<const UOp *>> packRead(const UOp *sink, std::vector<const UOp *> args, int64_t slot,
                                                           const std::string &name, Bad bad) {
    if (slot >= static_cast<int64_t>(args.size())) bad("the kernel has " + std::to_string(args.size()) + " arguments");
    const UOp *read = nullptr;
    const std::vector<const UOp *> nodes = toposort(sink);
    for (const UOp *u : nodes) {
      if (u->op != Op::INDEX || u->src(0)->op != Op::PARAM || ParamArg::slotOf(u->src(0)->arg) != slot) continue;
      if (read && read != u) bad("the kernel indexes that argument more than once (or writes it)");
      read = u;
    }
    if (!read) bad("the kernel does not read that argument");
    for (const UOp *u : nodes)
      if (u->op == Op::STORE && u->src(0) == read) bad("the kernel writes that argument");
    if (read->nsrc != 2) bad("the read is gated");
    const UOp *idx = read->src(1);
    std::unordered_set<const UOp *> used;
    for (const UOp *u : toposort(idx)) {
      if (u->op == Op::RANGE) used.insert(u);
      else if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Invalid) bad("the read is gated");
      else if (u->op != Op::CONST && (u->nsrc == 0 || u->op == Op::INDEX))
        bad("the read's index depends on more than the kernel's loops");
    }
    // the loops in the order the kernel nests them
    const UOp *end = nullptr;
    for (const UOp *e : sink->src())
      for (const UOp *u : toposort(e))
        if (u == read && !end) end = e;
    std::vector<const UOp *> order, lanes;
    auto add = [&](const UOp *r) {
      if (std::find(order.begin(), order.end(), r) == order.end() && std::find(lanes.begin(), lanes.end(), r) == lanes.end())
        (isUpcastRange(r) ? lanes : order).push_back(r);
    };
    for (const UOp *r : end->src().subspan(1)) add(r);
    for (const UOp *u : toposort(end->src(0)))
      if (u->op == Op::REDUCE)
        for (const UOp *r : u->src().subspan(1)) add(r);
    order.insert(order.end(), lanes.begin(), lanes.end());
    std::vector<const UOp *> dims;
    std::vector<int64_t> sizes;
    int64_t numel = 1;
    for (const UOp *r : order) {
      if (!used.count(r)) continue;
      auto n = r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
      if (!n || *n < 1 || static_cast<int64_t>(*n) > (int64_t(1) << 28) / numel) bad("the read's loops are not of constant sizes of at most 2^28 elements in all");
      dims.push_back(r);
      sizes.push_back(static_cast<int64_t>(*n));
      numel *= sizes.back();
    }
    if (dims.size() != used.size()) bad("the read's index depends on a loop the kernel does not run");
    auto lin = [&](const std::vector<const UOp *> &rs) {
      const UOp *x = c.constInt(DType::WeakInt, 0);
      for (size_t d = 0; d < rs.size(); ++d)
        x = d == 0 ? rs[d] : c.make(Op::ADD, DType::WeakInt, {c.make(Op::MUL, DType::WeakInt, {x, c.constInt(DType::WeakInt, sizes[d])}), rs[d]});
      return x;
    };
    const UOp *p = read->src(0);
    ParamArg pa = ParamArg::decode(p->arg), qa;
    qa.dtype = pa.dtype;
    qa.devices = pa.devices;
    qa.deviceIsTuple = pa.deviceIsTuple;
    qa.addrspace = pa.addrspace;
    const UOp *n = c.constInt(DType::WeakInt, numel);
    auto param = [&](ParamArg a, int64_t at, const UOp *size) {
      a.slot = at;
      return c.make(Op::PARAM, p->dtype, {size}, a.encode(c));
    };
    if (nextBuffer > INT32_MAX) bad("the graph's buffer numbers are used up");
    qa.slot = nextBuffer++;
    const UOp *q = c.make(Op::BUFFER, p->dtype, {n}, qa.encode(c));
    // the copy: Q[lin(D')] = P[idx(D')] over loops D' like D
    std::vector<const UOp *> loops;
    std::unordered_map<const UOp *, const UOp *> to;
    for (size_t d = 0; d < dims.size(); ++d) {
      std::vector<const Arg *> elems(dims[d]->arg->elems().begin(), dims[d]->arg->elems().end());
      elems[0] = c.argInt(static_cast<int64_t>(d));
      elems[1] = c.argAxisType(AxisType::LOOP);
      loops.push_back(c.make(Op::RANGE, dims[d]->dtype, {c.constInt(dims[d]->dtype, sizes[d])}, c.argTuple(elems), dims[d]->tag));
      to[dims[d]] = loops.back();
    }
    const UOp *from = c.make(Op::INDEX, read->dtype, {param(pa, 1, p->src(0)), substitute(c, idx, to)});
    const UOp *store = c.make(Op::STORE, DType::Void, {c.make(Op::INDEX, read->dtype, {param(qa, 0, n), lin(loops)}), from});
    std::vector<const UOp *> endSrc{store};
    endSrc.insert(endSrc.end(), loops.begin(), loops.end());
    const Arg *info = makeRecord(c, "KernelInfo", {{"name", c.argString(name + "_pack" + std::to_string(slot))}});
    const UOp *copy = c.make(Op::SINK, DType::Void, {c.make(Op::END, DType::Void, endSrc, end->arg, end->tag)}, info);
    const UOp *call = c.make(Op::CALL, DType::Void, {copy, q, args[static_cast<size_t>(slot)]});
    args[static_cast<size_t>(slot)] = c.make(Op::AFTER, q->dtype, {q, call});
    const UOp *packed = c.make(Op::INDEX, read->dtype, {param(qa, slot, n), lin(dims)});
    return {substitute(c, sink, {{read, packed}}), std::move(args)};
  }
};

/// The copy kernel of relayout:AXIS:SLOT (Optimizer::Relayout): Q[(o*stride + k)*lanes + l] =
/// W[(o*lanes + l)*stride + k] over loops o < rows/lanes, k < stride, l < lanes, into a new BUFFER Q that
/// the kernel reads in W's place (args[slot] becomes Q after the copy).
std::vector<const UOp *> relayoutKernel(Context &c, int64_t &nextBuffer, std::vector<const UOp *> args, const Optimizer::Relayout &r,
                                        const std::string &name, const UOp *end, DType rangeType) {
  const UOp *p = r.param;
  ParamArg pa = ParamArg::decode(p->arg), qa;
  qa.dtype = pa.dtype;
  qa.devices = pa.devices;
  qa.deviceIsTuple = pa.deviceIsTuple;
  qa.addrspace = pa.addrspace;
  qa.slot = nextBuffer++;
  const UOp *n = c.constInt(DType::WeakInt, r.rows * r.stride);
  const UOp *q = c.make(Op::BUFFER, p->dtype, {n}, qa.encode(c));
  auto loop = [&](int64_t number, int64_t size) {
    return c.make(Op::RANGE, rangeType, {c.constInt(rangeType, size)},
                  c.argTuple({c.argInt(number), c.argAxisType(AxisType::LOOP)}));
  };
  const UOp *o = loop(0, r.rows / r.lanes), *k = loop(1, r.stride), *l = loop(2, r.lanes);
  auto cst = [&](int64_t v) { return c.constInt(rangeType, v); };
  auto add = [&](const UOp *a, const UOp *b) { return c.make(Op::ADD, rangeType, {a, b}); };
  auto mul = [&](const UOp *a, int64_t b) { return c.make(Op::MUL, rangeType, {a, cst(b)}); };
  const UOp *to = add(mul(add(mul(o, r.stride), k), r.lanes), l);
  const UOp *from = add(mul(add(mul(o, r.lanes), l), r.stride), k);
  auto param = [&](ParamArg a, int64_t at, const UOp *size) {
    a.slot = at;
    return c.make(Op::PARAM, p->dtype, {size}, a.encode(c));
  };
  DType elem = p->dtype;
  const UOp *store = c.make(Op::STORE, DType::Void, {c.make(Op::INDEX, elem, {param(qa, 0, n), to}),
                                                     c.make(Op::INDEX, elem, {param(pa, 1, p->src(0)), from})});
  // once: a re-layout of a parameter the function only reads runs once per load of the inputs (Schedule)
  const Arg *info = makeRecord(c, "KernelInfo", {{"name", c.argString(name + "_relayout" + std::to_string(r.slot))},
                                                 {"once", c.argBool(true)}});
  const UOp *copy = c.make(Op::SINK, DType::Void, {c.make(Op::END, DType::Void, {store, o, k, l}, end->arg, end->tag)}, info);
  const UOp *call = c.make(Op::CALL, DType::Void, {copy, q, args[static_cast<size_t>(r.slot)]});
  args[static_cast<size_t>(r.slot)] = c.make(Op::AFTER, q->dtype, {q, call});
  return args;
}

std::string nameOf(const UOp *sink) {
  const Arg *n = sink->arg && sink->arg->kind == ArgKind::Record ? sink->arg->field("name") : nullptr;
  return n && n->kind == ArgKind::String ? std::string(n->str()) : "";
}

} // namespace

void runOptimize(Graph &g, const PassContext &pc) {
  int64_t level = pc.intOption("level", 2, 0, 2);
  auto hand = parseHandOpts(pc.option("opts"));
  if (pc.target.gpuGrid && hand.empty()) return;
  Context &c = *g.ctx;
  Optimizer o{c};
  Packer packer{c, 1000};
  std::vector<const UOp *> nodes = topLevelNodes(g.root);
  for (const UOp *u : nodes)
    if (u->op == Op::BUFFER) packer.nextBuffer = std::max(packer.nextBuffer, std::min<int64_t>(ParamArg::slotOf(u->arg), INT32_MAX) + 1);
  std::set<std::string, std::less<>> seen;
  bool packed = false;
  std::unordered_map<const UOp *, const UOp *> now;
  for (const UOp *u : nodes) {
    std::vector<const UOp *> srcs(u->src().begin(), u->src().end());
    bool kernel = u->op == Op::CALL && u->nsrc > 0 && u->src(0)->op == Op::SINK;
    for (size_t i = kernel ? 1 : 0; i < srcs.size(); ++i)
      if (auto it = now.find(srcs[i]); it != now.end()) srcs[i] = it->second;
    if (kernel) {
      const UOp *sink = srcs[0];
      std::string name = nameOf(sink);
      seen.insert(name);
      auto it = hand.find(name);
      auto s = shapeOf(sink);
      std::vector<Opt> opts;
      if (it != hand.end()) {
        if (!it->second.empty() && !s)
          fail("pass 'optimize': kernel " + name + " is not one store over constant loops: no opts apply to it");
        opts = it->second;
      } else if (level >= 2 && s && !pc.target.gpuGrid) {
        opts = chooseOpts(c, *s, pc.target);
      }
      if (!opts.empty()) {
        std::vector<int64_t> packs;
        std::vector<Optimizer::Relayout> relayouts;
        srcs[0] = o.apply(sink, *s, opts, name, packs, relayouts);
        std::vector<const UOp *> args(srcs.begin() + 1, srcs.end());
        for (const Optimizer::Relayout &r : relayouts) {
          if (r.slot < 0 || r.slot >= static_cast<int64_t>(args.size()))
            fail("pass 'optimize': kernel " + name + ": opt relayout: the kernel has " + std::to_string(args.size()) + " arguments");
          args = relayoutKernel(c, packer.nextBuffer, args, r, name, s->end, s->axes.front()->dtype);
          packed = true;
        }
        for (int64_t slot : packs) {
          auto bad = [&](const std::string &why) {
            fail("pass 'optimize': kernel " + name + ": opt pack:" + std::to_string(slot) + ": " + why);
          };
          std::tie(srcs[0], args) = packer.packRead(srcs[0], args, slot, name, bad);
          packed = true;
        }
        srcs.resize(1);
        srcs.insert(srcs.end(), args.begin(), args.end());
      }
    }
    const UOp *n = c.make(u->op, u->dtype, srcs, u->arg, u->tag);
    if (n != u) now[u] = n;
  }
  if (auto it = now.find(g.root); it != now.end()) g.root = it->second;
  for (const auto &[name, opts] : hand)
    if (!seen.count(name)) fail("pass 'optimize': opts for kernel '" + name + "', which the graph does not have");
  // a packed read added kernels and buffers: order and place them as the schedule pass does
  if (packed) runSchedule(g, pc);
}

} // namespace uopc
