//===- BlockedLayout.cpp - the `blocked-layout` pass: activations in blocks of channels ===//
// Runs after optimize, on the opts it recorded. An intermediate buffer of C channel planes of P elements
// (element c*P + p) is stored instead in blocks of L channels, NCHW[L]c as oneDNN, MLAS and TVM lay out
// activations for CPUs: element (c / L)*P*L + p*L + c % L. The pass chooses it where a convolution writes
// the buffer with a channel tile of L lanes (the optimizer's relayout opts: its lanes are L output channels of
// one pixel) and only channel tiles read it. The writer's stores, which in planes put each of a pixel's L
// channels in another plane (L scalar stores a pixel), become one vector store a pixel; a reader's broadcasts
// of one channel's pixels become reads L elements apart whose lines the next L - 1 channels read again, where
// in planes each channel's row lay a plane further. Measured on Emerald Rapids, C, alternating:
// SqueezeNet's expand layers (16 -> 64 channels at 55x55), one thread, 218-274 -> 109-115 us; in the network
// (2 threads) its fire modules' 1x1 convolutions 20-45% faster, the squeeze layers reading the concatenation
// 20-30%; ResNet-50's kernels at 14x14 (channel tiles from the 1x1 convolutions on) 17-37% faster, C and LLVM.
// (Chain of channel tiles only: at 56x56 and 28x28 ResNet-50's 1x1 convolutions take the pixels' vector tile,
// which a blocked input would make read L elements apart.) `reduction=N` limits it to writers whose reduction
// has fewer than N terms (0, the default: any).
//
// Every kernel that reads the buffer must read it only as a channel tile's other operand (a broadcast per
// reduction step: its own relayout opts, the buffer not among them), ungated, at c*P + p with c in [0, C) and
// p in [0, P) for every value of its loops, both proven by the range analysis; its index becomes the blocked
// one (a division and a remainder by L of the channel, once per reduction step). Where the planes have at most
// `gated` elements (default 1024, -1: any size, 0: none) a padded read qualifies too, p in [0, P) wherever the
// read happens (its gates assumed), the blocked index under the same gates: Inception v1 and v2 1-10% faster,
// C and LLVM; with every plane size VGG-19's LLVM build ran 9-15% slower (its 224x224 to 56x56 layers), with
// planes of at most 1024 (its 28x28 and 14x14 layers) as fast as in planes (docs/lowering.md).
// A reader with no opts of its own but the optimizer's border splits (a max or average pool, one pixel at a
// time; a padding's copy) that reads the buffer at chan*P + rest, chan one of its output loops, is given that
// loop's lanes here (laneReader: upcast:A:L, innermost), so that it reads a pixel's L channels as one vector,
// gated or not whatever the planes' size; it may then write its own output in blocks the same way (a pool into
// SqueezeNet's next squeeze layer, a padding's copy into a 3x3 convolution) where its planes have at most
// `gated` elements. pools=0: none. Measured, C, 2 threads, 3 alternating rounds: SqueezeNet 2.79 -> 2.55 ms
// (its first convolution 313 -> 209 us, its 16 channels of a pixel one store, no longer 16 planes apart; the
// max pool after it 83 -> 50), the first convolutions of ResNet-50, DenseNet-121 and Inception v2 (into a
// padded 3x3 max pool at 112x112) 750 -> 600 us, Inception v1 10.6 -> 10.2 ms, v2 13.4 -> 13.1.
// A buffer that a reader reads otherwise (a pool vectorized along the pixels), that is written by more than one
// kernel or is no intermediate buffer keeps its planes. The writer and the readers record the choice in their
// KernelInfo:
// blocked=("SLOT:L:P", ...), the argument, its block of channels and its planes' elements.
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
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace uopc {
namespace {

/// "KIND:A:N" -> (A, N); nullopt for another kind or form.
std::optional<std::pair<int64_t, int64_t>> optAxisAmount(std::string_view o, std::string_view kind) {
  if (o.substr(0, kind.size()) != kind || o.size() <= kind.size() || o[kind.size()] != ':') return std::nullopt;
  const char *p = o.data() + kind.size() + 1, *e = o.data() + o.size();
  int64_t a = 0, n = 0;
  auto r1 = std::from_chars(p, e, a);
  if (r1.ec != std::errc() || r1.ptr == e || *r1.ptr != ':') return std::nullopt;
  auto r2 = std::from_chars(r1.ptr + 1, e, n);
  if (r2.ec != std::errc() || r2.ptr != e) return std::nullopt;
  return std::pair{a, n};
}

/// A kernel's channel tile, from its applied opts: the lanes L of the loop its relayout opts name (the last
/// upcast of that loop) and the arguments they re-lay out; nullopt for a kernel with no relayout opt.
struct ChannelTile {
  int64_t lanes = 0;
  std::set<int64_t> weights;
};
std::optional<ChannelTile> channelTile(const UOp *sink) {
  std::vector<std::string> opts = appliedOpts(sink);
  ChannelTile t;
  std::optional<int64_t> axis;
  for (const std::string &o : opts)
    if (auto r = optAxisAmount(o, "relayout")) axis = r->first, t.weights.insert(r->second);
  if (!axis) return std::nullopt;
  for (const std::string &o : opts)
    if (auto u = optAxisAmount(o, "upcast"); u && u->first == *axis) t.lanes = u->second;
  if (t.lanes < 2) return std::nullopt;
  return t;
}

/// The INDEX nodes of argument `slot` in kernel SINK `sink`; `stored` tells whether one is a STORE's target.
std::vector<const UOp *> accesses(const UOp *sink, int64_t slot, bool &stored) {
  std::vector<const UOp *> out;
  stored = false;
  std::vector<const UOp *> nodes = toposort(sink);
  for (const UOp *u : nodes)
    if (u->op == Op::INDEX && u->src(0)->op == Op::PARAM && ParamArg::slotOf(u->src(0)->arg) == slot) out.push_back(u);
  for (const UOp *u : nodes)
    if (u->op == Op::STORE && std::find(out.begin(), out.end(), u->src(0)) != out.end()) stored = true;
  return out;
}

struct Blocker {
  Context &c;
  SymbolicCtx sc; ///< (its range analysis: one per Context)

  /// The INDEX `index` of element chan*P + rest, the terms of its sum parted by whether their constant factor
  /// is a multiple of P (a constant term by its quotient and remainder, truncated), with chan in [0, C) for
  /// every value of the kernel's loops and rest in [0, P) wherever the read happens (its gates assumed: a
  /// padded read's WHERE(valid, i, Invalid) index or gate sources), rewritten to the blocked element; nullopt
  /// otherwise.
  const UOp *blockedIndex(const UOp *index, int64_t P, int64_t C, int64_t L, bool gated) {
    const UOp *idx = index->src(1);
    const UOp *valid = nullptr;
    if (idx->op == Op::WHERE && isInvalidConst(idx->src(2))) valid = idx->src(0), idx = idx->src(1);
    if (!gated && (valid || index->nsrc > 2)) return nullptr;
    for (const UOp *u : toposort(idx))
      if (isInvalidConst(u)) return nullptr;
    DType dt = idx->dtype;
    const UOp *chan = c.constInt(dt, 0), *rest = c.constInt(dt, 0);
    std::vector<const UOp *> work{idx};
    while (!work.empty()) {
      const UOp *t = work.back();
      work.pop_back();
      if (t->op == Op::ADD) {
        work.push_back(t->src(0));
        work.push_back(t->src(1));
        continue;
      }
      if (auto k = constBound(t); k && fitsInt64(*k)) {
        int64_t v = static_cast<int64_t>(*k), q = v / P;
        chan = c.make(Op::ADD, dt, {chan, c.constInt(dt, q)});
        rest = c.make(Op::ADD, dt, {rest, c.constInt(dt, v - q * P)});
        continue;
      }
      if (t->op == Op::MUL)
        for (int side = 0; side < 2; ++side)
          if (auto k = constBound(t->src(side)); k && fitsInt64(*k) && static_cast<int64_t>(*k) % P == 0) {
            const UOp *x = t->src(1 - side);
            chan = c.make(Op::ADD, dt, {chan, c.make(Op::MUL, dt, {x, c.constInt(dt, static_cast<int64_t>(*k) / P)})});
            t = nullptr;
            break;
          }
      if (t) rest = c.make(Op::ADD, dt, {rest, t});
    }
    chan = simplified(chan);
    rest = simplified(rest);
    if (sc.ranges.vmin(chan) < 0 || sc.ranges.vmax(chan) >= C) return nullptr;
    std::vector<const UOp *> gates(index->src().begin() + 2, index->src().end());
    const UOp *where = valid ? c.make(Op::WHERE, dt, {valid, rest, makeInvalid(c, dt)}) : rest;
    VRange r = indexRangeGivenGates(sc, c, where, gates);
    if (r.lo < 0 || r.hi >= P) return nullptr;
    const UOp *b = blocked(chan, rest, P, L);
    if (valid) b = c.make(Op::WHERE, dt, {valid, b, makeInvalid(c, dt)});
    std::vector<const UOp *> src(index->src().begin(), index->src().end());
    src[1] = b;
    return c.make(Op::INDEX, index->dtype, src, index->arg, index->tag);
  }

  const UOp *simplified(const UOp *x) { return simplifyWith(c, x, symRules(), &sc); }

  /// The blocked index of element chan*P + rest: (chan / L)*P*L + rest*L + chan % L, simplified.
  const UOp *blocked(const UOp *chan, const UOp *rest, int64_t P, int64_t L) {
    DType dt = chan->dtype;
    const UOp *lc = c.constInt(dt, L);
    const UOp *block = c.make(Op::MUL, dt, {c.make(Op::FLOORDIV, dt, {chan, lc}), c.constInt(dt, P * L)});
    const UOp *pix = c.make(Op::MUL, dt, {rest, lc});
    return simplified(c.make(Op::ADD, dt, {c.make(Op::ADD, dt, {block, pix}), c.make(Op::FLOORMOD, dt, {chan, lc})}));
  }
};

/// The number of terms of a kernel's longest reduction (the product of its REDUCEs' loop sizes, lanes
/// apart), 0 when it has none.
double reductionTerms(const UOp *sink) {
  double most = 0;
  for (const UOp *u : toposort(sink)) {
    if (u->op != Op::REDUCE) continue;
    double n = 1;
    for (const UOp *r : u->src().subspan(1))
      if (auto b = r->op == Op::RANGE && r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt; b && !isUpcastRange(r))
        n *= static_cast<double>(*b);
    most = std::max(most, n);
  }
  return most;
}

/// A reader with no opts of its own but splits (a pooling layer: a max over a window of each channel's plane,
/// one pixel at a time, its padded borders pieces of their own; a padding's copy) that reads argument `slot`
/// at chan*P + rest with chan one of its output loops r of C iterations, a loop of every piece that reads it:
/// the kernel with r cut into C/L blocks and an UPCAST loop of L lanes, innermost (upcast:A:L), so that in
/// blocks the lanes read L consecutive channels of a pixel, one vector (in planes they would be a plane apart);
/// nullptr where the kernel is no such reader. The pieces that do not read the slot are left as they are: a
/// pool over a concatenation cut at its seam (split:0:64:128, SqueezeNet's pools after a fire module) reads
/// each part in a piece of its own, and `again` says the reader was given lanes here for another part (its
/// opts then hold that upcast too). `lanes` gets the pieces' new lane ranges.
const UOp *laneReader(Context &c, const UOp *sink, int64_t slot, int64_t P, int64_t C, int64_t L, bool again,
                      std::vector<const UOp *> &lanes) {
  // (its opts, if any, only splits: a padded pool's interior and borders, pieces over the same channel loop)
  std::vector<std::string> opts = appliedOpts(sink);
  if (std::any_of(opts.begin(), opts.end(), [&](const std::string &o) {
        return o.rfind("split:", 0) != 0 && !(again && o.rfind("upcast:", 0) == 0);
      }))
    return nullptr;
  if (sink->nsrc < 1) return nullptr;
  for (const UOp *e : sink->src())
    if (e->op != Op::END || e->nsrc < 2 || e->src(0)->op != Op::STORE) return nullptr;
  bool stored = false;
  if (accesses(sink, slot, stored).empty() || stored) return nullptr;
  int64_t next = 0;
  for (const UOp *u : toposort(sink))
    if (u->op == Op::RANGE) next = std::max(next, rangeNumber(u) + 1);
  SymbolicCtx sc;
  std::vector<const UOp *> ends;
  std::optional<size_t> axis;
  lanes.clear();
  for (const UOp *e : sink->src()) {
    bool st = false;
    std::vector<const UOp *> reads = accesses(e, slot, st);
    if (reads.empty()) {
      ends.push_back(e);
      continue;
    }
    // the channel loop: the END's loop of C iterations along which every read moves by a plane
    const UOp *r = nullptr;
    for (size_t a = 1; a < e->nsrc && !r; ++a) {
      const UOp *q = e->src(a);
      auto n = q->op == Op::RANGE && q->nsrc == 1 ? constBound(q->src(0)) : std::nullopt;
      if (!n || static_cast<int64_t>(*n) != C || isUpcastRange(q)) continue;
      if (std::all_of(reads.begin(), reads.end(), [&](const UOp *rd) {
            return indexStride(rd->src(1), q, true) == std::optional<int64_t>(P);
          }))
        r = q, axis = axis ? axis : std::optional<size_t>(a - 1);
    }
    if (!r) return nullptr;
    const UOp *outer = rangeLike(c, r, C / L, rangeNumber(r), std::nullopt);
    const UOp *lane = rangeLike(c, r, L, next++, AxisType::UPCAST);
    const UOp *chan = combinedIndex(c, outer, L, lane);
    std::vector<const UOp *> src(e->src().begin(), e->src().end());
    src[0] = simplifyWith(c, substitute(c, e->src(0), {{r, chan}}), symRules(), &sc);
    std::replace(src.begin() + 1, src.end(), r, outer);
    src.push_back(lane);
    ends.push_back(c.make(Op::END, e->dtype, src, e->arg, e->tag));
    lanes.push_back(lane);
  }
  if (lanes.empty()) return nullptr;
  // (one upcast in its applied opts, the first part's: --tune takes a kernel's applied opts as the
  // heuristic's list and gives them to optimize again, which refuses a second upcast of one loop)
  if (!again) opts.push_back("upcast:" + std::to_string(*axis) + ":" + std::to_string(L));
  return withInfoStrings(c, c.make(Op::SINK, sink->dtype, ends, sink->arg, sink->tag), "applied_opts", opts);
}

} // namespace

void runBlockedLayout(Graph &g, const PassContext &pc) {
  int64_t maxTerms = pc.intOption("reduction", 0, 0, INT32_MAX);
  // gated readers: where the buffer's planes are at most this many elements (-1: any)
  int64_t gatedPlane = pc.intOption("gated", 1024, -1, INT32_MAX);
  // readers with no opts of their own (pools) given the channels' lanes to read blocks (laneReader; 0: off)
  bool poolLanes = pc.intOption("pools", 1, 0, 1) == 1;
  if (pc.target.gpuGrid) return;
  Context &c = *g.ctx;
  std::vector<const UOp *> nodes = topLevelNodes(g.root);
  // each intermediate BUFFER's uses: (kernel CALL, argument slot), and whether anything else uses it
  auto baseOf = [](const UOp *a) {
    while (a->op == Op::AFTER && a->nsrc >= 1) a = a->src(0);
    return a->op == Op::BUFFER ? a : nullptr;
  };
  std::map<int64_t, const UOp *> buffers; // (by slot: a deterministic order)
  std::unordered_map<const UOp *, std::vector<std::pair<const UOp *, int64_t>>> uses;
  std::set<const UOp *> other;
  for (const UOp *u : nodes) {
    if (u->op == Op::BUFFER) buffers[ParamArg::slotOf(u->arg)] = u;
    const UOp *sink = kernelSink(u);
    // (a kernel already linearized, its SINK inside a LINEAR, is no use the pass rewrites)
    bool plain = sink && u->src(0) == sink;
    for (size_t i = sink ? 1 : 0; i < u->nsrc; ++i) {
      const UOp *b = baseOf(u->src(i));
      if (!b) continue;
      if (plain) uses[b].push_back({u, static_cast<int64_t>(i) - 1});
      else if (sink || !(u->op == Op::AFTER && i == 0)) other.insert(b); // (an AFTER's own buffer is no use)
    }
  }
  Blocker bl{c, {}};
  std::unordered_map<const UOp *, const UOp *> sinkOf; // a CALL -> its rewritten SINK
  std::unordered_map<const UOp *, std::vector<std::string>> recorded;
  std::unordered_map<const UOp *, int64_t> laneReaders; // a reader given lanes here (laneReader) -> L
  std::set<const UOp *> done;
  // (twice: a pool given lanes as the reader of one buffer may then write the next one in blocks)
  for (int round = 0; round < 2; ++round)
  for (const auto &[slot, buf] : buffers) {
    if (other.count(buf) || !uses.count(buf) || done.count(buf)) continue;
    auto size = buf->nsrc ? constBound(buf->src(0)) : std::nullopt;
    if (!size || !fitsInt64(*size)) continue;
    int64_t n = static_cast<int64_t>(*size);
    // the one writer, a channel tile with a short reduction
    const UOp *writer = nullptr;
    int64_t writerSlot = -1;
    bool ok = true;
    for (const auto &[call, s] : uses[buf]) {
      const UOp *sink = sinkOf.count(call) ? sinkOf[call] : kernelSink(call);
      bool stored = false;
      accesses(sink, s, stored);
      if (!stored) continue;
      if (writer) ok = false;
      writer = call, writerSlot = s;
    }
    if (!ok || !writer) continue;
    const UOp *wsink = sinkOf.count(writer) ? sinkOf[writer] : kernelSink(writer);
    auto tile = channelTile(wsink);
    // (a pool this pass gave lanes, reading a blocked buffer, writes its lanes' channels too)
    if (!tile && laneReaders.count(writer)) tile = ChannelTile{laneReaders[writer], {}};
    // (a copy given lanes, a padding's, has no reduction)
    double terms = laneReaders.count(writer) ? 1 : reductionTerms(wsink);
    if (!tile || terms <= 0 || (maxTerms > 0 && terms >= static_cast<double>(maxTerms))) continue;
    int64_t L = tile->lanes;
    // the plane: the largest stride of an upcast loop in the writer's stores (the channel lanes')
    bool stored = false;
    std::vector<const UOp *> wacc = accesses(wsink, writerSlot, stored);
    int64_t P = 0;
    for (const UOp *a : wacc)
      for (const UOp *r : toposort(a))
        if (isUpcastRange(r))
          if (auto st = indexStride(a->src(1), r); st && *st > P) P = *st;
    if (P < 2 || n % P || (n / P) % L || P > (INT64_C(1) << 40) / L) continue;
    // (a pool's or padding's output only where a padded reader's would be: planes of at most `gated`. Its
    // readers are 3x3 convolutions, which ran slower on larger planes' blocks: Inception v1's 64 -> 192 at
    // 56x56 through its padding's copy, 1.72 -> 2.02 ms, 2 threads)
    int64_t C = n / P;
    // Larger planes are blocked for it where every reader is a 1x1 convolution (a channel tile whose reduction
    // is the buffer's C channels alone, one pixel of it a step): SqueezeNet's first max pool, 55x55, and
    // Inception v2's, 56x56, stored a pixel's L channels L planes apart, one scalar store each)
    if (laneReaders.count(writer) && gatedPlane >= 0 && P > gatedPlane) {
      bool pointwise = true;
      for (const auto &[call, s] : uses[buf]) {
        if (call == writer) continue;
        const UOp *sink = sinkOf.count(call) ? sinkOf[call] : kernelSink(call);
        auto t = channelTile(sink);
        if (!t || t->weights.count(s) || laneReaders.count(call) || reductionTerms(sink) != static_cast<double>(C))
          pointwise = false;
      }
      if (!pointwise) continue;
    }
    // every access (the writer's and every reader's) as chan*P + rest, rewritten
    std::unordered_map<const UOp *, std::unordered_map<const UOp *, const UOp *>> rewrites; // call -> INDEX -> new
    std::unordered_map<const UOp *, const UOp *> laned; // a reader given lanes here -> its new SINK
    for (const auto &[call, s] : uses[buf]) {
      if (!ok) break;
      const UOp *sink = sinkOf.count(call) ? sinkOf[call] : kernelSink(call);
      std::vector<const UOp *> lanes; // (a reader given lanes here: its pieces' lanes)
      if (call != writer) {
        auto t = channelTile(sink);
        if (!t || t->weights.count(s) || laneReaders.count(call)) {
          const UOp *l = poolLanes ? laneReader(c, sink, s, P, C, L, laneReaders.count(call) > 0, lanes) : nullptr;
          if (!l) {
            ok = false;
            break;
          }
          sink = laned[call] = l;
        }
      }
      bool st = false;
      for (const UOp *a : accesses(sink, s, st)) {
        // (the lane of the piece that holds the read)
        const UOp *lane = nullptr;
        for (const UOp *q : lanes)
          if (indexStride(a->src(1), q, true) != std::optional<int64_t>(0)) lane = q;
        const UOp *b = bl.blockedIndex(a, P, C, L, gatedPlane < 0 || P <= gatedPlane || (lane && gatedPlane != 0));
        // (the writer's stores: whole vectors of lanes, no division left, ungated; a reader given lanes here
        // reads whole vectors: its lanes one element apart, no division)
        if (b && call == writer)
          for (const UOp *u : toposort(b->src(1)))
            if (u->op == Op::FLOORDIV || u->op == Op::FLOORMOD || u->op == Op::WHERE) b = nullptr;
        if (b && lane && indexStride(b->src(1), lane, true) != std::optional<int64_t>(1)) b = nullptr;
        if (b && lane)
          for (const UOp *u : toposort(b->src(1)))
            if (u->op == Op::FLOORDIV || u->op == Op::FLOORMOD) b = nullptr;
        if (!b) {
          ok = false;
          break;
        }
        rewrites[call][a] = b;
      }
    }
    if (!ok) continue;
    for (const auto &[call, l] : laned) {
      sinkOf[call] = l;
      laneReaders[call] = L;
    }
    for (const auto &[call, sub] : rewrites) {
      const UOp *sink = sinkOf.count(call) ? sinkOf[call] : kernelSink(call);
      sinkOf[call] = substitute(c, sink, sub);
    }
    for (const auto &[call, s] : uses[buf]) recorded[call].push_back(std::to_string(s) + ":" + std::to_string(L) + ":" + std::to_string(P));
    done.insert(buf);
  }
  if (sinkOf.empty()) return;
  // the kernels with their new SINKs (and everything that refers to them)
  std::unordered_map<const UOp *, const UOp *> now;
  for (const UOp *u : nodes) {
    std::vector<const UOp *> srcs(u->src().begin(), u->src().end());
    for (size_t i = 0; i < srcs.size(); ++i)
      if (auto it = now.find(srcs[i]); it != now.end()) srcs[i] = it->second;
    if (auto it = sinkOf.find(u); it != sinkOf.end()) {
      std::vector<std::string> entries = recorded[u];
      std::sort(entries.begin(), entries.end());
      entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
      std::vector<std::string> all = blockedArgs(it->second);
      all.insert(all.end(), entries.begin(), entries.end());
      srcs[0] = withBlockedArgs(c, it->second, all);
    }
    const UOp *m = c.make(u->op, u->dtype, srcs, u->arg, u->tag);
    if (m != u) now[u] = m;
  }
  if (auto it = now.find(g.root); it != now.end()) g.root = it->second;
}

} // namespace uopc
