//===- Linearize/Prefetch.cpp - what a register tile's loop prefetches (Prefetch.h says what each takes) ===//
#include "Passes/Linearize/Prefetch.h"

#include "IR/Kernel.h"
#include "IR/Range.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace uopc::linearize {
namespace {

constexpr int64_t kMaxPrefetchUses = 256; ///< a weight stream whose values are read more often is not prefetched

std::optional<int64_t> constOf(const UOp *v) {
  if (v->op == Op::CONST && v->arg && v->arg->kind == ArgKind::Int) return v->arg->i();
  return std::nullopt;
}

/// A RANGE's constant size in [1, most]; nullopt for another node or size.
std::optional<int64_t> sizeOf(const UOp *q, int64_t most) {
  auto b = q && q->op == Op::RANGE ? constBound(q->src(0)) : std::nullopt;
  if (!b || *b < 1 || *b > most) return std::nullopt;
  return static_cast<int64_t>(*b);
}

/// u's reduction ranges but the first, then its lanes: what one step of the first runs over.
std::vector<const UOp *> innerOf(const PrefetchSite &s) {
  auto ranges = s.u->src().subspan(1);
  std::vector<const UOp *> inner(ranges.begin() + 1, ranges.end());
  inner.insert(inner.end(), s.lanes.begin(), s.lanes.end());
  return inner;
}

/// The reads of u's body of a buffer parameter with elements (INDEX nodes; gated ones too unless `ungated`).
std::vector<const UOp *> bufferReads(const UOp *u, bool ungated) {
  std::vector<const UOp *> out;
  for (const UOp *x : toposort(u->src(0)))
    if (x->op == Op::INDEX && (ungated ? x->nsrc == 2 : x->nsrc >= 2) && x->src(0)->op == Op::PARAM && !isScalarParam(x->src(0)))
      out.push_back(x);
  return out;
}

/// Where index idx reaches in one step of r: r at `rAt` (0 where null), the ranges neither r nor inner at 0, the
/// inner ones over their values: [lo, hi] by range analysis, and its origin (every range at 0); `start` holds
/// the inner ranges at 0 (the index at a step's first element, r and the outer ranges left).
struct Reach {
  int64_t lo = 0, hi = -1, origin = 0;
  std::unordered_map<const UOp *, const UOp *> start;
};
std::optional<Reach> reachOf(Context &c, const UOp *idx, const UOp *r, const UOp *rAt, const std::vector<const UOp *> &inner,
                             const FreeRanges &free, SymbolicCtx &sc) {
  Reach out;
  std::unordered_map<const UOp *, const UOp *> outer, all;
  for (const UOp *q : free.at(idx)) {
    all[q] = c.constInt(q->dtype, 0);
    (std::find(inner.begin(), inner.end(), q) != inner.end() ? out.start : outer)[q] = all[q];
  }
  if (rAt) outer[r] = rAt;
  const UOp *reach = simplifyWith(c, substitute(c, idx, outer), symRules(), &sc);
  auto origin = constOf(simplifyWith(c, substitute(c, idx, all), symRules(), &sc));
  RangeInfo ri;
  auto lo = ri.vmin(reach), hi = ri.vmax(reach);
  if (!origin || hi < lo) return std::nullopt;
  out.lo = static_cast<int64_t>(lo), out.hi = static_cast<int64_t>(hi), out.origin = *origin;
  return out;
}

} // namespace

std::vector<Prefetch> weightStreams(const PrefetchSite &s, int64_t prefetchAhead) {
  Context &c = s.c;
  const UOp *r = s.u->src(1);
  std::vector<const UOp *> inner = innerOf(s);
  auto isOpen = [&](const UOp *q) { return std::find(s.open.begin(), s.open.end(), q) != s.open.end(); };
  std::vector<Prefetch> out;
  for (const UOp *x : bufferReads(s.u, true)) {
    const UOp *idx = x->src(1);
    auto step = indexStride(idx, r);
    int64_t elem = static_cast<int64_t>(dtypeSize(x->dtype));
    if (!step || *step <= 0 || *step > (int64_t(1) << 20)) continue;
    bool reused = std::any_of(s.lanes.begin(), s.lanes.end(), [&](const UOp *l) { return indexStride(idx, l) == std::optional<int64_t>(0); });
    if (!reused) continue;
    // the run one iteration of r reads: from idx with every inner range at 0, as long as r's step
    int64_t span = 1;
    bool run = true;
    std::unordered_map<const UOp *, const UOp *> zero;
    for (const UOp *q : s.free.at(idx)) {
      if (q == r || isOpen(q)) continue;
      auto st = indexStride(idx, q);
      int64_t n = sizeOf(q, int64_t(1) << 30).value_or(0);
      if (std::find(inner.begin(), inner.end(), q) == inner.end() || !st || *st < 0 || *st > (int64_t(1) << 20) || n < 1) {
        run = false;
        break;
      }
      span += *st * (n - 1);
      zero[q] = c.constInt(q->dtype, 0);
    }
    int64_t bytes = *step * elem;
    if (!run || span != *step || bytes < 64 || bytes > 8192) continue;
    // how often each value is read: the iterations of every open loop, of u's ranges and of its lanes, over
    // the elements the read can reach (a weight: once for every pixel). Read often, the stream is a small share
    // of the time and stays in the caches: ResNet-50's 3x3 convolutions at 56x56 (3136 pixels) ran 5-9% slower
    // with the prefetches (and DenseNet-121's), those at 7x7 (49) and 14x14 (196) 6-20% faster, in the
    // network, 2 threads
    __int128 iterations = 1;
    bool counted = true;
    auto count = [&](const UOp *q) {
      if (auto b = sizeOf(q, int64_t(1) << 40)) iterations = std::min<__int128>(iterations * *b, __int128(1) << 100);
      else counted = false;
    };
    for (const UOp *q : s.open)
      if (q->op == Op::RANGE) count(q);
    for (const UOp *q : inner) count(q);
    RangeInfo ri;
    auto lo = ri.vmin(idx), hi = ri.vmax(idx);
    if (!counted || hi < lo || iterations > __int128(kMaxPrefetchUses) * (hi - lo + 1)) continue;
    // (and a stream much longer than the distance: a few KB of weights come from memory once, soon enough)
    if ((hi - lo + 1) * elem < 4 * __int128(prefetchAhead)) continue;
    int64_t ahead = (prefetchAhead + bytes - 1) / bytes * *step; // elements
    SymbolicCtx sc;
    const UOp *from = simplifyWith(c, substitute(c, idx, zero), symRules(), &sc);
    for (int64_t off = 0; off < bytes; off += 64)
      out.push_back({x, simplifyWith(c, c.make(Op::ADD, idx->dtype, {from, c.constInt(idx->dtype, ahead + off / elem)}), symRules(), &sc)});
  }
  return out;
}

std::vector<Prefetch> nextSlabs(const PrefetchSite &s, const std::vector<Prefetch> &streams) {
  Context &c = s.c;
  const UOp *r = s.u->src(1);
  auto rn = sizeOf(r, int64_t(1) << 30);
  if (!rn || *rn < 1) return {};
  int64_t n = *rn;
  std::vector<Prefetch> out;
  std::unordered_set<const UOp *> seen;
  for (const Prefetch &stream : streams) {
    const UOp *x = stream.first, *idx = x->src(1);
    if (!seen.insert(x).second) continue;
    auto step = indexStride(idx, r);
    int64_t elem = static_cast<int64_t>(dtypeSize(x->dtype)), lineElems = 64 / std::max<int64_t>(1, elem);
    if (!step || *step <= 0 || lineElems < 1) continue;
    int64_t slab = *step * n; // elements
    if (slab * elem < 16384 || slab * elem > (int64_t(1) << 20)) continue;
    const std::vector<const UOp *> &free = s.free.at(idx);
    auto depends = [&](const UOp *q) { return std::find(free.begin(), free.end(), q) != free.end(); };
    // p: the one open loop (r aside) the read depends on
    const UOp *p = nullptr;
    size_t pAt = 0;
    bool one = true;
    for (size_t k = 0; k < s.open.size(); ++k)
      if (s.open[k] != r && s.open[k]->op == Op::RANGE && depends(s.open[k])) {
        one = one && !p;
        p = s.open[k], pAt = k;
      }
    auto pn = p ? sizeOf(p, int64_t(1) << 30) : std::nullopt;
    if (!one || !p || !pn || *pn < 2) continue;
    // the index with p at v, every other range at 0
    SymbolicCtx sc;
    auto at = [&](const UOp *pv) {
      std::unordered_map<const UOp *, const UOp *> m;
      for (const UOp *q : free) m[q] = c.constInt(q->dtype, 0);
      m[p] = pv;
      return simplifyWith(c, substitute(c, idx, m), symRules(), &sc);
    };
    auto atConst = [&](int64_t v) { return constOf(at(c.constInt(p->dtype, v))); };
    const UOp *rows = nullptr, *next = nullptr;
    int64_t nrows = 0;
    if (indexStride(idx, p) == std::optional<int64_t>(slab)) {
      // rows inside p: the open loop between p and r the read does not depend on
      for (size_t k = pAt + 1; k < s.open.size(); ++k)
        if (s.open[k] != r && s.open[k]->op == Op::RANGE && !depends(s.open[k])) {
          auto b = sizeOf(s.open[k], 4096);
          if (rows || !b) {
            rows = nullptr;
            break;
          }
          rows = s.open[k], nrows = *b;
        }
      next = at(c.make(Op::ADD, p->dtype, {p, c.constInt(p->dtype, 1)}));
    } else {
      // rows folded into p: a step of slab every R iterations of p (by evaluation)
      for (const UOp *y : toposort(idx))
        if (y->op == Op::CDIV && y->src(0) == p)
          if (auto b = constOf(y->src(1)); b && *b >= 2) nrows = *b;
      if (nrows < 2 || *pn % nrows || *pn / nrows < 2) continue;
      bool steady = true;
      auto base = atConst(0);
      for (int64_t v = 0; v < std::min<int64_t>(*pn, 3 * nrows) && steady; ++v)
        steady = base && atConst(v) == std::optional<int64_t>(*base + v / nrows * slab);
      if (!steady) continue;
      rows = c.make(Op::CMOD, p->dtype, {p, c.constInt(p->dtype, nrows)});
      next = at(c.make(Op::ADD, p->dtype, {p, c.constInt(p->dtype, nrows)}));
    }
    // (rows of 7x7 maps: with 14 rows, the first a fourteenth of the work, ResNet-50's and Inception v2's 14x14
    // kernels ran 1-3% slower with these prefetches, those at 7x7 4-12% faster)
    if (!rows || nrows < 2 || nrows > 8) continue;
    int64_t lines = (slab * elem + 63) / 64, slots = (nrows - 1) * n;
    int64_t k = (lines + slots - 1) / slots, total = slots * k;
    // slot ((rows - 1) x n + r) x k + j, line slot x lines / total
    const UOp *slot = c.make(Op::MUL, idx->dtype,
                             {c.make(Op::ADD, idx->dtype,
                                     {c.make(Op::MUL, idx->dtype, {c.make(Op::ADD, idx->dtype, {rows, c.constInt(idx->dtype, -1)}), c.constInt(idx->dtype, n)}), r}),
                              c.constInt(idx->dtype, k)});
    for (int64_t j = 0; j < k; ++j) {
      const UOp *line = total == lines ? c.make(Op::ADD, idx->dtype, {slot, c.constInt(idx->dtype, j)}) : c.make(Op::CDIV, idx->dtype,
                               {c.make(Op::MUL, idx->dtype, {c.make(Op::ADD, idx->dtype, {slot, c.constInt(idx->dtype, j)}), c.constInt(idx->dtype, lines)}),
                                c.constInt(idx->dtype, total)});
      out.push_back({x, simplifyWith(c, c.make(Op::ADD, idx->dtype, {next, c.make(Op::MUL, idx->dtype, {line, c.constInt(idx->dtype, lineElems)})}),
                                     symRules(), &sc)});
    }
  }
  return out;
}

std::vector<Prefetch> blockChunks(const PrefetchSite &s, int64_t chunksAhead) {
  Context &c = s.c;
  const UOp *r = s.u->src(1);
  auto rn = sizeOf(r, int64_t(1) << 30);
  if (!rn || *rn < 2) return {};
  int64_t n = *rn;
  std::vector<const UOp *> inner = innerOf(s);
  std::vector<Prefetch> out;
  std::unordered_set<const UOp *> seen;
  for (const UOp *x : bufferReads(s.u, false)) {
    const UOp *idx = x->src(1);
    if (!isInt(idx->dtype) || indexStride(idx, r) || !seen.insert(idx).second) continue;
    int64_t chunk = 0;
    // (r / B, or (r + K) / B with K a multiple of B: the second part of a concatenation read along r)
    auto onR = [&](const UOp *y, int64_t b) {
      if (y == r) return true;
      if (y->op != Op::ADD) return false;
      for (int k = 0; k < 2; ++k)
        if (y->src(k) == r)
          if (auto off = constOf(y->src(1 - k)); off && *off % b == 0) return true;
      return false;
    };
    for (const UOp *y : toposort(idx))
      if (y->op == Op::CDIV)
        if (auto b = constOf(y->src(1)); b && *b >= 2 && onR(y->src(0), *b)) {
          chunk = *b;
          break;
        }
    if (chunk < 2 || n % chunk || n / chunk < 2) continue;
    int64_t chunksOn = std::min(chunksAhead, n / chunk - 1);
    int64_t elem = static_cast<int64_t>(dtypeSize(x->dtype));
    SymbolicCtx sc;
    const UOp *bc = c.constInt(r->dtype, chunk);
    // the chunk's stride, by evaluation: the index at r + B less the index at r, the same at a few points
    // (every other range at 0, at its last value, alternating; r at a chunk's first and last iteration)
    const std::vector<const UOp *> &free = s.free.at(idx);
    auto at = [&](int64_t rv, int pattern) -> std::optional<int64_t> {
      std::unordered_map<const UOp *, const UOp *> m;
      for (size_t j = 0; j < free.size(); ++j) {
        const UOp *q = free[j];
        if (q == r) continue;
        auto b = q->op == Op::RANGE ? constBound(q->src(0)) : std::nullopt;
        if (!b || *b < 1) return std::nullopt;
        bool last = pattern == 1 || (pattern == 2 && j % 2 == 0);
        m[q] = c.constInt(q->dtype, last ? static_cast<int64_t>(*b) - 1 : 0);
      }
      m[r] = c.constInt(r->dtype, rv);
      return constOf(simplifyWith(c, substitute(c, idx, m), symRules(), &sc));
    };
    std::optional<int64_t> stride;
    bool steady = true;
    for (int pattern = 0; pattern < 3 && steady; ++pattern)
      for (int64_t q : {int64_t(0), n / chunk - 2})
        for (int64_t m : {int64_t(0), chunk - 1}) {
          auto a = at(q * chunk + m, pattern), b = at((q + 1) * chunk + m, pattern);
          if (!a || !b || (stride && *stride != *b - *a)) steady = false;
          else stride = *b - *a;
        }
    if (!steady || !stride || *stride < 1024 / elem || *stride > (int64_t(1) << 40)) continue;
    // the chunk's reach: r at r % B
    auto reach = reachOf(c, idx, r, c.make(Op::CMOD, r->dtype, {r, bc}), inner, s.free, sc);
    if (!reach || (reach->hi - reach->lo + 1) * elem > 16384) continue;
    int64_t bytes = (reach->hi - reach->lo + 1) * elem, lineElems = 64 / elem;
    if (bytes < 128 || lineElems < 1) continue;
    int64_t lines = (bytes + 63) / 64, each = (lines + chunk - 1) / chunk;
    // at r: the chunk's start (r rounded down to a chunk, the inner ranges at 0), chunksOn chunks on
    std::unordered_map<const UOp *, const UOp *> start = reach->start;
    start[r] = c.constInt(r->dtype, 0);
    const UOp *from = simplifyWith(
        c, c.make(Op::ADD, idx->dtype, {substitute(c, idx, start), c.make(Op::MUL, idx->dtype, {c.make(Op::CDIV, r->dtype, {r, bc}), c.constInt(idx->dtype, *stride)})}),
        symRules(), &sc);
    const UOp *line = c.make(Op::MUL, idx->dtype, {c.make(Op::CMOD, r->dtype, {r, bc}), c.constInt(idx->dtype, each * lineElems)});
    int64_t ahead = chunksOn * *stride + reach->lo - reach->origin;
    for (int64_t t = 0; t < each; ++t)
      out.push_back({x, simplifyWith(c, c.make(Op::ADD, idx->dtype, {c.make(Op::ADD, idx->dtype, {from, line}), c.constInt(idx->dtype, ahead + t * lineElems)}),
                                     symRules(), &sc)});
  }
  return out;
}

std::vector<Prefetch> planeSteps(const PrefetchSite &s) {
  Context &c = s.c;
  const UOp *r = s.u->src(1);
  auto rn = sizeOf(r, int64_t(1) << 30);
  if (!rn || *rn < 4) return {};
  int64_t n = *rn;
  std::vector<const UOp *> inner = innerOf(s);
  int64_t work = 1;
  for (const UOp *q : inner) {
    auto b = sizeOf(q, 4096);
    if (!b) return {};
    work = std::min<int64_t>(work * *b, int64_t(1) << 20);
  }
  int64_t ahead = std::clamp<int64_t>((4096 + work - 1) / work, 2, n / 2);
  std::vector<Prefetch> out;
  std::unordered_set<const UOp *> seen;
  for (const UOp *x : bufferReads(s.u, false)) {
    const UOp *idx = x->src(1);
    if (!isInt(idx->dtype) || !seen.insert(idx).second) continue;
    auto step = indexStride(idx, r);
    int64_t elem = static_cast<int64_t>(dtypeSize(x->dtype)), lineElems = 64 / std::max<int64_t>(1, elem);
    if (!step || *step * elem < 512 || *step > (int64_t(1) << 30) || lineElems < 1) continue;
    bool moves = std::any_of(s.lanes.begin(), s.lanes.end(), [&](const UOp *l) { return indexStride(idx, l) != std::optional<int64_t>(0); });
    if (!moves) continue;
    // each inner range's (stride, iterations): affine, never backwards
    std::vector<std::pair<int64_t, int64_t>> walks;
    bool affine = true;
    for (const UOp *q : s.free.at(idx)) {
      if (std::find(inner.begin(), inner.end(), q) == inner.end()) continue;
      auto st = indexStride(idx, q);
      auto b = sizeOf(q, INT64_MAX);
      affine = affine && st && *st >= 0 && b;
      if (affine) walks.push_back({*st, *b});
    }
    if (!affine) continue;
    // every line between its first and last read (a row of pixels, even 2 apart; not 3 rows of a 3x3 window)
    std::set<int64_t> offsets{0};
    for (auto [st, k] : walks) {
      std::set<int64_t> next;
      for (int64_t o : offsets)
        for (int64_t v = 0; v < k && next.size() <= 4096; ++v) next.insert(o + st * v);
      offsets = std::move(next);
    }
    std::set<int64_t> touched;
    for (int64_t o : offsets) touched.insert(o * elem / 64);
    if (offsets.size() > 4096 || *touched.rbegin() - *touched.begin() + 1 != static_cast<int64_t>(touched.size())) continue;
    // the reach of one step: r at 0
    SymbolicCtx sc;
    auto reach = reachOf(c, idx, r, nullptr, inner, s.free, sc);
    if (!reach || (reach->hi - reach->lo + 1) * elem > 512) continue;
    // (one line more where the run may not start on a line: unless every range moves the index by whole lines
    // and the origin and the reach's start are on one)
    int64_t align = std::abs(reach->origin) + std::abs(reach->lo - reach->origin);
    for (const UOp *q : s.free.at(idx)) {
      if (reach->start.count(q)) continue; // (an inner range moves within the reach)
      auto st = indexStride(idx, q);
      align = st ? std::gcd(align, std::abs(*st)) : 1;
    }
    int64_t lines = ((reach->hi - reach->lo + 1) * elem + 63) / 64 + ((align * elem) % 64 == 0 ? 0 : 1);
    // (none where loops around the tile read the same lines 8 times or more and they fit half the L1: only the
    // first pass would miss. Inception v2's 1x1 convolutions of 8 channels x 32 pixels over 192 input channels
    // at 28x28, 24 KB, read once for each of 8 blocks of 8 channels: 10-14% slower with the prefetches;
    // ShuffleNet's grouped ones, read 2 or 4 times, 15-22% faster)
    int64_t reread = 1;
    for (const UOp *q : s.open)
      if (q->op == Op::RANGE && !std::binary_search(s.free.at(idx).begin(), s.free.at(idx).end(), q))
        if (auto k = constBound(q->src(0)); k && *k >= 1) reread = std::min<int64_t>(reread * static_cast<int64_t>(*k), 1 << 20);
    if (reread >= 8 && n * lines * 64 <= 24 * 1024) continue;
    const UOp *from = simplifyWith(c, substitute(c, idx, reach->start), symRules(), &sc);
    int64_t off = ahead * *step + reach->lo - reach->origin;
    for (int64_t t = 0; t < lines; ++t)
      out.push_back({x, simplifyWith(c, c.make(Op::ADD, idx->dtype, {from, c.constInt(idx->dtype, off + t * lineElems)}), symRules(), &sc)});
  }
  return out;
}

} // namespace uopc::linearize
