//===- Tiles.cpp - the optimize pass's choices for a matmul-like register tile ===//
// Partial accumulators, packed panels, L2 panel blocks and strips of column walks (Opts.h): what Choose.cpp's
// vector tile adds to a kernel shape's upcasts. docs/lowering.md has what each was measured to do.
#include "Passes/Optimize/Opts.h"

#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/PassManager.h"

#include <algorithm>
#include <numeric>

namespace uopc::optimize {
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
        // 4 output rows at a time (8 where a read is shared by them), for a vector out (every other output loop
        // of size 1). A matrix-vector
        // product (a fully connected layer at batch 1): the 4 rows share each loaded slice of the vector (a
        // read that does not move along the rows), where one row at a time loads it again per row; uopc --tune
        // kept upcast:0:4 (or 8) on AlexNet's and ZFNet-512's, both targets, 1.14-1.24x each. A row reduction
        // with no shared read (argmax, a row sum): 4 rows are 4 chains of dependent adds or maxes where one
        // row's partial lanes are one; --tune kept it on sp_argmax_4096, alternating 1.33x (C), 1.18x (LLVM);
        // sp_sum_ax1_4096, which streams from memory, 1.05x / 0.98x (docs/lowering.md, "optimize by search")
        // (not for other outs: sp_transformer_d512_s256's k2, 512x256x4 with a read shared along its 256,
        // ran 2.35 -> 4.16 ms with it on C)
        auto vectorOut = [&](size_t a) {
          for (size_t b = 0; b < s.sizes.size(); ++b)
            if (b != a && s.sizes[b] != 1) return false;
          return true;
        };
        if (opts.empty())
          for (size_t a = 0; a < s.axes.size(); ++a) {
            if (!vectorOut(a)) continue;
            bool moving = false, shared = false;
            for (const UOp *rd : s.reads) {
              auto along = indexStride(rd->src(1), s.axes[a]);
              moving = moving || (along && *along != 0);
              shared = shared || along == std::optional<int64_t>(0);
            }
            // (8 rows where a read is shared by them, a matrix-vector product: uopc --tune took upcast:0:8 on
            // AlexNet's and ShuffleNet's classifiers; alternating, 2 threads, C, AlexNet's 9216 -> 4096 3695 ->
            // 3548 us, 4096 -> 4096 1675 -> 1587, ZFNet-512's 8170 -> 7779, the small ones within noise)
            int64_t rows = shared && s.sizes[a] % 8 == 0 ? 8 : 4;
            if (moving && s.sizes[a] % rows == 0 && s.sizes[a] >= 64) {
              opts.push_back({Opt::Upcast, a, rows});
              break;
            }
          }
        opts.push_back({Opt::Partial, k, amt});
        break;
      }
  }
  return opts;
}

/// upcast:AXIS:8 for a reduction left with no tile and no partial accumulators (no read moves by one along an
/// output loop, nor along its reduction loop): each output is one chain of dependent adds (or maxes), a step
/// per instruction latency; 8 outputs are 8 independent chains. AXIS: an output loop of at least 64 along
/// which every read moves by a known stride; every other output loop is of size 1 or outside the reduction
/// (no read moves or is gated along it). sp_cumsum_1m's second kernel (each block's offset: the sums of the
/// blocks before it, read 256 apart and gated): uopc --tune dropped its seam split (the first block's, whose
/// piece of 4,095 rows 8 does not divide) and kept upcast:0:8, alternating 16-17 -> 6.7-7.1 ms on C
/// (upcast:0:4 8.7-9.7).
std::optional<Opt> chooseRowChains(const Shape &s) {
  if (s.reduceRanges.empty()) return std::nullopt;
  const UOp *r = s.reduceRanges.back();
  auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
  if (!n || *n < 256) return std::nullopt;
  auto movesAlong = [&](const UOp *rd, const UOp *axis) {
    if (indexStride(rd->src(1), axis, /*throughSelect=*/true) != std::optional<int64_t>(0)) return true;
    for (const UOp *g : rd->src().subspan(2))
      if (indexStride(g, axis, /*throughSelect=*/true) != std::optional<int64_t>(0)) return true;
    return false;
  };
  for (size_t a = s.axes.size(); a-- > 0;) {
    if (s.sizes[a] < 64 || s.sizes[a] % 8) continue;
    bool ok = true;
    for (const UOp *rd : s.reads) {
      ok = ok && indexStride(rd->src(1), s.axes[a], /*throughSelect=*/true).has_value();
      for (size_t b = 0; b < s.axes.size(); ++b)
        if (b != a && s.sizes[b] != 1 && movesAlong(rd, s.axes[b])) ok = false;
    }
    if (ok) return Opt{Opt::Upcast, a, 8};
  }
  return std::nullopt;
}

namespace {
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
} // namespace

/// pack:SLOT for the reads of a register tile (vector axis va, reuse axis ra, vAmount lanes of va) that
/// pay for their copy: consecutive along va, not moving along ra (so each element is read once per tile
/// row of the whole ra loop), ungated, the only read of their buffer, moving along one reduction loop only,
/// by a stride whose lines do not stay in the L2 (panelStaysInL2), where two or more tiles pass over the panel
/// (`rowTiles`, the tiles along the output loops other than va: one reads the panel once, so the copy only
/// adds to it; rangeify-work.py mm1k8, 8 rows in one tile: uopc --tune dropped its pack:2, 157-183 -> 76-87
/// us). The packed panel need not fit in the L2: its consecutive lines stream. Measured on sp_mm_1024 (B's
/// 4 KiB stride: 16 of the L2's 1024 sets) and a 256x8192 @ 8192x1024 matmul (a 512 KiB panel): see
/// docs/lowering.md.
std::vector<Opt> choosePacks(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides, size_t va,
                             size_t ra, int64_t vAmount, int64_t rowTiles, const PassTarget &target) {
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
        readsOf[slot] != 1 || !conditionsOf({rd}).empty() || rowTiles < 2)
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

namespace {
/// a * b of non-negative sizes, INT64_MAX where it overflows.
int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
} // namespace

/// block:va:B for a register tile (vector axis va, reuse axis ra, vAmount lanes of va) whose operand
/// consecutive along va and still along ra (a matmul's right operand, B[k, j]) is too large for the L2:
/// va then runs in blocks of B columns, outermost, so that a panel of B x K of that operand stays in the L2
/// while every row tile of ra passes over it, where unblocked each row tile streamed the whole operand from
/// the L3 (a 768 x 3072 operand: 9.4 MB per 8 rows). B: the largest multiple of vAmount dividing va's size
/// whose panel takes at most a quarter of the L2 (and at most 256 KiB where the operand is read in place, not
/// packed: `packs`, the tile's pack opts), else at most half (the rest for the rows' stream and the output),
/// when the whole operand takes more than half and two row tiles or more (the output loops the operand does
/// not move along: a batch's rows too) pass over it. The encoder's feed-forward matmuls on Sapphire Rapids
/// (2 MB L2), one thread, with the half rule: 1024 x 3072 @ 3072 x 768 47 -> 24 ms with B = 64
/// (a 768 KiB panel; 128: 28 ms, 256: 41), 1024 x 768 @ 768 x 3072 48 -> 25 ms; the 768 x 768 projections
/// 15 -> 7 ms (B = 32 to 256 within 10%). On an AMD EPYC (Zen 4: 1 MB 8-way L2), two threads, in the network:
/// the projections' 384 KiB panels (B = 128, the half rule) took 7.7-8.6 ms a kernel, 196 KiB (B = 64, a
/// quarter) 5.8-6.4 (the search's choice, C and LLVM); 1024 x 768 @ 768 x 3072 64 against 128 within 1-4%;
/// the 3072-deep one, whose narrowest panel (32: 384 KiB) is over a quarter, keeps the half rule's 32.
/// The 256 KiB in place: on a 2 MiB-L2 Xeon (2026-12-07, two threads, in the network, alternating) the
/// quarter rule's 128 columns (384 KiB) made the projections, whose weight is read in place (rows 3 KiB
/// apart), the slowest of 32 to 128: the encoder 134.7 ms with 128, 126.7 with 32, 123.2 with 64, 122.0 with
/// 96 (the search kept 64 there too, on C and LLVM, 1.21x and 1.36x a kernel alone). Packed panels keep the
/// quarter: there sp_mm_1024's 128 (512 KiB) ran 5% faster than 64, the feed-forward ones within 0.5%.
std::optional<Opt> choosePanelBlock(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                    const std::vector<int64_t> &sizes, size_t va, size_t ra, int64_t vAmount,
                                    int64_t reuse, const std::vector<Opt> &packs, const PassTarget &target) {
  if (reuse < 1) return std::nullopt;
  int64_t panelPerColumn = 0; // bytes of the operand per column of va, over the reduction
  bool inPlace = false;       // that operand is read where it lies (no pack:SLOT of its slot)
  for (size_t k = 0; k < s.reads.size(); ++k) {
    const UOp *rd = s.reads[k];
    if (strides[k][va] != std::optional<int64_t>(1) || strides[k][ra] != std::optional<int64_t>(0)) continue;
    // the row tiles that pass over a panel: the output loops the operand does not move along
    int64_t rows = 1;
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (a != va && strides[k][a] == std::optional<int64_t>(0)) rows = satMul(rows, sizes[a]);
    if (rows / reuse < 2) continue;
    int64_t steps = 1;
    for (const UOp *r : s.reduceRanges) {
      auto st = indexStride(rd->src(1), r);
      auto n = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
      if (!st || !n) return std::nullopt;
      if (*st != 0) steps = satMul(steps, static_cast<int64_t>(*n));
    }
    int64_t bytes = satMul(steps, static_cast<int64_t>(dtypeSize(rd->dtype)));
    if (bytes > panelPerColumn) {
      panelPerColumn = bytes;
      inPlace = rd->src(0)->op != Op::PARAM || std::none_of(packs.begin(), packs.end(), [&](const Opt &p) {
                  return p.kind == Opt::Pack && static_cast<int64_t>(p.axis) == ParamArg::slotOf(rd->src(0)->arg);
                });
    }
  }
  if (panelPerColumn == 0 || satMul(panelPerColumn, sizes[va]) <= target.l2Bytes / 2) return std::nullopt;
  // (an operand read in place, its rows a whole row of the matrix apart: at most 256 KiB, above)
  constexpr int64_t kInPlacePanel = 256 * 1024;
  int64_t quarter = inPlace ? std::min(target.l2Bytes / 4, kInPlacePanel) : target.l2Bytes / 4;
  for (int64_t room : {quarter, target.l2Bytes / 2})
    for (int64_t b = sizes[va] / vAmount * vAmount; b >= vAmount; b -= vAmount)
      if (b < sizes[va] && sizes[va] % b == 0 && satMul(b, panelPerColumn) <= room) return Opt{Opt::Block, va, b, 0};
  return std::nullopt;
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

} // namespace uopc::optimize
