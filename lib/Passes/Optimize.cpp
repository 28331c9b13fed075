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
// first (chosen by choosePacks where the operand's stride keeps too few of its lines in the L2, from the
// cache sizes the machine reports): this pass only records it, the `pack` pass after it applies it (Pack.cpp).
// relayout:AXIS:SLOT (a channel tile's weights re-laid out with its lanes innermost) is applied here, since
// it rewrites the tile's reads as the other opts do: it adds its copy kernel and buffer (relayoutKernel) and
// leaves them to the `schedule` pass to order and place. block:AXIS:SIZE (a cache-block loop, outermost) is
// only given by hand. docs/lowering.md has each, with what was measured.
// Level 0 or 1 leaves kernels as they are (1 is reserved for cheaper choices). The option
// opts=NAME/OPT/OPT;NAME2 gives a kernel's opts by hand instead (none for NAME2), as tinygrad's
// opts_to_apply; kernels not named get the level's choice. GPU targets: no opts yet.
// This file applies opts (Optimizer, the relayout kernels) and runs the pass; Optimize/Choose.cpp
// chooses them at level 2; Optimize/Opts.h has the opts and kernel shapes both use.
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Schedule.h" // (topLevelNodes)
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>

#include "Passes/Optimize/Opts.h"

namespace uopc {
namespace {

using namespace optimize;

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

  /// Whether piece p reads a buffer under a condition (a padded border: conditionsOf its INDEXes).
  static bool gatedReads(const Piece &p) {
    std::vector<const UOp *> reads;
    for (const UOp *u : toposort(p.store))
      if (u->op == Op::INDEX && u->src(0)->op == Op::PARAM) reads.push_back(u);
    return !conditionsOf(reads).empty();
  }
  /// Whether piece p stores a value with no reduction (a concatenation's copy beside the tiled part).
  static bool copyPiece(const Piece &p) {
    for (const UOp *u : toposort(p.store))
      if (u->op == Op::REDUCE) return false;
    return true;
  }

  /// A read re-laid out by relayout:AXIS:SLOT (the buffer W of `rows` rows of `stride` elements: row r is the
  /// elements W[stride*r ...]): the copy kernel that runOptimize adds writes Q[(o*stride + k)*lanes + l] =
  /// W[(first + o*lanes + l)*stride + k], so that the tile's lanes along AXIS read consecutive elements.
  struct Relayout {
    int64_t slot, rows, stride, lanes;
    const UOp *param; ///< the kernel's PARAM of W
    int64_t restSlot = -1; ///< the argument a rest piece reads W itself through (relayoutRestPiece), -1: none
    int64_t first = 0;     ///< W's first row it copies (a split's rest piece: the rows after the main piece's)
    int64_t source = -1;   ///< the argument W is (-1: `slot`); another slot: the copy is an argument of its own
  };

  /// relayout:AXIS:SLOT in piece p, after its upcasts: each read W[stride*(o*lanes + l) + rest] (o AXIS's outer
  /// loop, l its lanes) becomes Q[o*stride*lanes + rest*lanes + l] of the re-laid-out copy Q. A split's rest
  /// piece upcast whole (fewer channels than the lanes: SqueezeNet's classifier, 1000 = 992 + 8), reading
  /// W[stride*(first + l) + rest], reads a copy of its own rows, Q'[rest*lanes + l], through an argument of its
  /// own (`nargs`, appended): read as they are, its lanes gathered one row apart (8 scalar loads a reduction
  /// step for 13 x 8 multiply-adds), it took 124 of the kernel's 924 us (one thread) for 0.8% of its work.
  template <typename Bad>
  bool relayoutPiece(Piece &p, const Opt &o, std::vector<Relayout> &out, size_t &nargs, Bad bad) {
    bool reads = false;
    for (const UOp *u : toposort(p.store))
      reads |= u->op == Op::INDEX && u->src(0)->op == Op::PARAM && ParamArg::slotOf(u->src(0)->arg) == o.amount;
    if (!reads) return false;
    auto it = p.upcastOf.find(o.axis);
    if (it == p.upcastOf.end()) return relayoutRestPiece(p, o, out, nargs, bad);
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
      // (a piece upcast whole, no outer loop: its rows may start past W's first, `first`)
      int64_t first = outer || ri.vmin(rest) < 0 ? 0 : static_cast<int64_t>(ri.vmin(rest) / *st);
      if (first > 0) rest = simplified(c.make(Op::ADD, dt, {rest, c.constInt(dt, -first * *st)}));
      if (ri.vmin(rest) < 0 || ri.vmax(rest) >= *st) bad("the read's row is not the stride's elements");
      blocks = simplified(blocks);
      int64_t rows = static_cast<int64_t>(ri.vmax(blocks) / (*st * n) + 1) * n;
      const UOp *W = u->src(0);
      auto size = constBound(W->src(0));
      if (!size || ri.vmin(blocks) < 0 || Bound(first + rows) * *st > *size) bad("the rows the loop reads go past the buffer");
      auto sourceOf = [](const Relayout &r) { return r.source < 0 ? r.slot : r.source; };
      auto found = std::find_if(out.begin(), out.end(), [&](const Relayout &r) { return sourceOf(r) == o.amount && r.first == first; });
      if (found != out.end() && (found->stride != *st || found->lanes != n || found->rows != rows))
        bad("the pieces of the kernel read the buffer differently");
      int64_t slot = o.amount;
      if (found != out.end()) {
        slot = found->slot;
      } else if (std::any_of(out.begin(), out.end(), [&](const Relayout &r) { return sourceOf(r) == o.amount; })) {
        slot = static_cast<int64_t>(nargs++); // (another piece's rows: a copy of their own, appended)
        out.push_back({slot, rows, *st, n, W, -1, first, o.amount});
      } else {
        out.push_back({o.amount, rows, *st, n, W, -1, first});
      }
      ParamArg qa = ParamArg::decode(W->arg);
      qa.slot = static_cast<size_t>(slot);
      const UOp *q = c.make(Op::PARAM, W->dtype, {c.constInt(W->src(0)->dtype, rows * *st)}, qa.encode(c));
      const UOp *ni = c.make(Op::ADD, dt, {c.make(Op::MUL, dt, {rest, c.constInt(dt, n)}), lane});
      sub[u] = c.make(Op::INDEX, u->dtype, {q, simplified(c.make(Op::ADD, dt, {blocks, ni}))}, u->arg, u->tag);
    }
    p.store = substitute(c, p.store, sub);
    return true;
  }

  /// relayout:AXIS:SLOT in a piece whose loop AXIS is not upcast (a split's rest, fewer channels than the
  /// lanes: SqueezeNet's classifier, 1000 = 992 + 8): the piece reads W as it is, through an argument of its
  /// own (`nargs`, appended: runOptimize passes W there), so that the copy stays a permutation of the rows
  /// the upcast pieces read (which a library with its weights inside applies at compile time).
  template <typename Bad>
  bool relayoutRestPiece(Piece &p, const Opt &o, std::vector<Relayout> &out, size_t &nargs, Bad bad) {
    auto found = std::find_if(out.begin(), out.end(), [&](const Relayout &r) { return r.slot == o.amount; });
    if (found == out.end()) bad("the loop is not upcast in the piece that reads the buffer first");
    if (found->restSlot < 0) found->restSlot = static_cast<int64_t>(nargs++);
    ParamArg pa = ParamArg::decode(found->param->arg);
    pa.slot = static_cast<size_t>(found->restSlot);
    const UOp *w = c.make(Op::PARAM, found->param->dtype, {found->param->src(0)}, pa.encode(c));
    std::unordered_map<const UOp *, const UOp *> sub;
    for (const UOp *u : toposort(p.store))
      if (u->op == Op::PARAM && u->arg == found->param->arg && u->dtype == found->param->dtype) sub[u] = w;
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
  /// Pack opts are only recorded here, in applied_opts: the pack pass applies them (each adds a kernel of
  /// its own). Relayout opts rewrite the reads here and leave their copies to `relayouts` (runOptimize adds them).
  const UOp *apply(const UOp *sink, const Shape &s, const std::vector<Opt> &opts, const std::string &name,
                   std::vector<Relayout> &relayouts, size_t kernelArgs) {
    std::vector<int64_t> packs; // (their slots: each read is packed once)
    int64_t next = 0;
    for (const UOp *u : toposort(sink))
      if (u->op == Op::RANGE) next = std::max(next, rangeNumber(u) + 1);
    std::vector<Piece> before, after;
    Piece main{s.store, s.axes, s.sizes, {}, {}, {}};
    std::vector<bool> done(s.axes.size(), false), unrolled(s.reduceRanges.size(), false), merged(s.axes.size(), false);
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
      if (o.kind == Opt::Merge) {
        if (o.axis + 1 >= main.axes.size()) bad("the kernel has " + std::to_string(s.axes.size()) + " output loops");
        if (!main.lanes.empty() || !before.empty() || !after.empty() || !main.blocks.empty() || done[o.axis] || done[o.axis + 1])
          bad("a merge comes before the other opts of its loops");
        texts.push_back(c.argString(o.text()));
        const UOp *ry = main.axes[o.axis], *rx = main.axes[o.axis + 1];
        int64_t h = main.sizes[o.axis], w = main.sizes[o.axis + 1];
        if (h > INT32_MAX / w) bad("the merged loop would have over 2^31 iterations");
        const UOp *m = nullptr;
        main.store = simplified(mergedLoops(c, main.store, ry, rx, h, w, m));
        main.axes[o.axis] = m;
        main.sizes[o.axis] = h * w;
        main.axes[o.axis + 1] = rangeLike(c, rx, 1, next++, std::nullopt);
        main.sizes[o.axis + 1] = 1;
        done[o.axis + 1] = true;
        merged[o.axis] = true;
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
        int64_t n = p.sizes[o.axis];
        if (n % o.amount) {
          // A border piece shorter than the tile (what `tiled` leaves: 196 pixels cut at 192, 4 left) is
          // upcast whole: the main tile's shape, fewer lanes. Kept a loop, it would walk the whole reduction
          // once per pixel with a scalar accumulator per channel (ShuffleNet's grouped 1x1 convolutions at
          // 14x14: the 4 pixels took 28 of 85 us, one thread). Not a piece with gated reads (a padded
          // convolution's border): the C compiler keeps a gated load a branch and the lanes' accumulators in
          // memory (ShuffleNet's depthwise 3x3 at 14x14, 6 border pixels a row: 51 -> 134 us).
          if (!r || n > o.amount || n < 2 || copyPiece(p) || gatedReads(p)) return;
          const UOp *own = rangeLike(c, r, n, next++, AxisType::UPCAST);
          p.store = substitute(c, p.store, {{r, own}});
          p.axes[o.axis] = nullptr;
          p.lanes.push_back(own);
          p.upcastOf[o.axis] = {nullptr, own}; // (a relayout gives its rows a copy of their own: relayoutPiece)
          return;
        }
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
      // A border piece whose loop the amount does not divide but exceeds (a padded convolution's top row: 56
      // pixels where the interior's 54 are upcast by 6) is cut in two: its whole tiles, upcast, and the rest
      // (DenseNet-121's 3x3 convolution 128->32 at 56x56, one thread: its border pieces, one pixel a tile,
      // took half its time for 7% of its work).
      auto tiled = [&](std::vector<Piece> &pieces) {
        std::vector<Piece> out;
        for (Piece &p : pieces) {
          int64_t n = p.sizes[o.axis];
          if (!p.axes[o.axis] || n % o.amount == 0 || n < o.amount || copyPiece(p)) {
            out.push_back(std::move(p));
            continue;
          }
          const UOp *r = p.axes[o.axis];
          int64_t cut = n / o.amount * o.amount;
          Piece rest = p;
          rest.axes[o.axis] = rangeLike(c, r, n - cut, next++, std::nullopt);
          rest.sizes[o.axis] = n - cut;
          rest.store = simplified(substitute(c, p.store, {{r, shifted(rest.axes[o.axis], cut)}}));
          const UOp *m = rangeLike(c, r, cut, next++, std::nullopt);
          p.store = simplified(substitute(c, p.store, {{r, m}}));
          p.axes[o.axis] = m;
          p.sizes[o.axis] = cut;
          out.push_back(std::move(p));
          out.push_back(std::move(rest));
        }
        pieces = std::move(out);
      };
      tiled(before);
      tiled(after);
      // (a piece with no reduction, a concatenation's copy, keeps its loops: the tile's lanes, channels
      // innermost, would copy one element a plane; its own innermost loop runs along the rows. DenseNet-121's
      // copy of 160 channels at 56x56 beside its 3x3 convolution, one thread: 233 -> 159-163 us)
      upcast(main);
      // (nor a piece of a merged loop whose reads do not move by a constant stride along it: a pool beside a
      // merged convolution, reading row (p / 28) * 2 and column (p % 28) * 2 of merged pixel p, whose lanes
      // would each load alone, a gather; a loop of its pixels instead. ShuffleNet's k8, 2 threads: 117 -> 69 us.
      // Only after a merge: a padded convolution's gated border pieces keep their lanes)
      auto gathers = [&](const Piece &p) {
        const UOp *r = p.axes[o.axis];
        if (!r || !merged[o.axis]) return false;
        for (const UOp *u : toposort(p.store))
          if (u->op == Op::INDEX && u->nsrc >= 2 && u->src(0)->op == Op::PARAM && u != p.store->src(0) && dependsOn(u->src(1), r) && !indexStride(u->src(1), r))
            return true;
        return false;
      };
      for (Piece &p : before)
        if (!copyPiece(p) && !gathers(p)) upcast(p);
      for (Piece &p : after)
        if (!copyPiece(p) && !gathers(p)) upcast(p);
    }
    size_t nargs = kernelArgs; // (the next argument a piece's own read takes: relayoutPiece, relayoutRestPiece)
    for (const Opt &o : relayoutOpts) {
      auto bad = [&](const std::string &why) {
        fail("pass 'optimize': kernel " + name + ": opt " + o.text() + ": " + why);
      };
      if (!done[o.axis]) bad("the loop is not upcast");
      // (each piece that reads the buffer: of a split loop, the piece's rows; they must agree)
      bool read = relayoutPiece(main, o, relayouts, nargs, bad);
      for (Piece &p : before) read |= relayoutPiece(p, o, relayouts, nargs, bad);
      for (Piece &p : after) read |= relayoutPiece(p, o, relayouts, nargs, bad);
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

/// The copy kernel of relayout:AXIS:SLOT (Optimizer::Relayout): Q[(o*stride + k)*lanes + l] =
/// W[(first + o*lanes + l)*stride + k] over loops o < rows/lanes, k < stride, l < lanes, into a new BUFFER Q
/// that the kernel reads in W's place (args[slot], W as it is, becomes Q after the copy).
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
  const UOp *row = add(mul(o, r.lanes), l);
  const UOp *from = add(mul(r.first ? add(row, cst(r.first)) : row, r.stride), k);
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
  int64_t nextBuffer = 1000; ///< the slot of the next intermediate BUFFER (a relayout's copy)
  std::vector<const UOp *> nodes = topLevelNodes(g.root);
  for (const UOp *u : nodes)
    if (u->op == Op::BUFFER) nextBuffer = std::max(nextBuffer, std::min<int64_t>(ParamArg::slotOf(u->arg), INT32_MAX) + 1);
  std::set<std::string, std::less<>> seen;
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
        std::vector<Optimizer::Relayout> relayouts;
        srcs[0] = o.apply(sink, *s, opts, name, relayouts, srcs.size() - 1);
        std::vector<const UOp *> args(srcs.begin() + 1, srcs.end());
        // the arguments the pieces took of their own, each W as it is (a rest piece reading it so, or the
        // source of its rows' copy), in their slots' order
        auto badSlot = [&] { fail("pass 'optimize': kernel " + name + ": opt relayout: an argument out of order"); };
        std::map<int64_t, int64_t> own; // slot -> the argument W is
        for (const Optimizer::Relayout &r : relayouts) {
          int64_t from = r.source < 0 ? r.slot : r.source;
          if (from < 0 || from >= static_cast<int64_t>(args.size()))
            fail("pass 'optimize': kernel " + name + ": opt relayout: the kernel has " + std::to_string(args.size()) + " arguments");
          if (r.restSlot >= 0 && !own.emplace(r.restSlot, r.slot).second) badSlot();
          if (r.source >= 0 && !own.emplace(r.slot, r.source).second) badSlot();
        }
        for (auto [slot, from] : own) {
          if (slot != static_cast<int64_t>(args.size())) badSlot();
          args.push_back(args[static_cast<size_t>(from)]);
        }
        for (const Optimizer::Relayout &r : relayouts) args = relayoutKernel(c, nextBuffer, args, r, name, s->end, s->axes.front()->dtype);
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
}

} // namespace uopc
