//===- Kernel.h - the two forms of a kernel CALL's body ----------------------===//
// A kernel is CALL(body, buffers...). Until `linearize`, the body is the kernel SINK[KernelInfo] (what
// each store computes, as a DAG); after it, LINEAR[KernelInfo](SINK, items...), the same SINK followed by
// the order the targets render it in (see lib/Passes/Linearize.cpp for the items).
#pragma once

#include <algorithm>
#include "IR/UOp.h"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uopc {

/// The kernel SINK of a kernel CALL in either form, or nullptr for a call of anything else (a COPY).
inline const UOp *kernelSink(const UOp *call) {
  if (call->op != Op::CALL || call->nsrc == 0) return nullptr;
  const UOp *b = call->src(0);
  if (b->op == Op::LINEAR && b->nsrc > 0 && b->src(0)->op == Op::SINK) return b->src(0);
  return b->op == Op::SINK ? b : nullptr;
}

/// The buffer (PARAM or BUFFER) a buffer state belongs to: its AFTER chain looked through.
inline const UOp *stateBuffer(const UOp *s) {
  while (s->op == Op::AFTER && s->nsrc > 0) s = s->src(0);
  return s;
}

/// The argument slots a CALL writes, in increasing order: a copy its slot 0; a kernel slot 0 (kernel-split
/// puts the state it writes first) and every slot a store of its SINK writes (several for a kernel
/// computing several outputs together: slots 0..n-1). CALL argument i + 1 is slot i's state.
std::vector<size_t> writtenSlots(const UOp *call);

/// The items of a linearized kernel body (LINEAR's sources after the SINK).
inline std::span<const UOp *const> linearItems(const UOp *linear) { return linear->src().subspan(1); }

/// The GPU launch linearize recorded in a linearized kernel body: {blocks, threads per block} from its
/// SPECIAL gidx0 and lidx0 items, or nullopt for a kernel linearized into loops.
inline std::optional<std::pair<int64_t, int64_t>> linearLaunch(const UOp *linear) {
  std::optional<std::pair<int64_t, int64_t>> l;
  for (const UOp *u : linearItems(linear)) {
    if (u->op != Op::SPECIAL || u->nsrc == 0 || u->src(0)->op != Op::CONST || !u->src(0)->arg ||
        u->src(0)->arg->kind != ArgKind::Int || !u->arg || u->arg->kind != ArgKind::String)
      continue;
    if (!l) l = std::pair<int64_t, int64_t>{1, 1};
    (u->arg->str() == "gidx0" ? l->first : l->second) = u->src(0)->arg->i();
  }
  return l;
}
/// linearLaunch of a kernel CALL's body (nullopt for a body that is not LINEAR).
inline std::optional<std::pair<int64_t, int64_t>> kernelLaunch(const UOp *call) {
  if (call->op != Op::CALL || call->nsrc == 0 || call->src(0)->op != Op::LINEAR) return std::nullopt;
  return linearLaunch(call->src(0));
}

/// A RANGE whose iterations are split across CPU threads (AxisType THREAD; linearize makes them).
inline bool isThreadRange(const UOp *u) {
  return u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 2 &&
         u->arg->elems()[1]->kind == ArgKind::AxisType && u->arg->elems()[1]->axisType() == AxisType::THREAD;
}

/// Where a THREAD range's iterations start in its kernel's split loop: 0, or, when the pieces of a split
/// kernel each have a THREAD loop of their own (linearize), the third field of its arg (the pieces' loops
/// laid end to end: piece k runs the split loop's iterations [offset, offset + size)).
inline int64_t threadOffset(const UOp *u) {
  return isThreadRange(u) && u->arg->count >= 3 && u->arg->elems()[2]->kind == ArgKind::Int ? u->arg->elems()[2]->i() : 0;
}

/// The largest work per iteration a piece's THREAD loop records (its iterations, at most 2^31 - 1 in all, times
/// it stays within int64).
inline constexpr int64_t kMaxThreadWork = int64_t(1) << 30;

/// The work of one iteration of a piece's THREAD loop (linearize: its stores' ops + loads over its trip count),
/// the fourth field of its arg; 0 where there is none (one THREAD loop, or a text written without it).
inline int64_t threadWork(const UOp *u) {
  return isThreadRange(u) && u->arg->count >= 4 && u->arg->elems()[3]->kind == ArgKind::Int ? u->arg->elems()[3]->i() : 0;
}

/// The trip count of a linearized kernel's loop split across CPU threads (its RANGE items of AxisType
/// THREAD with a constant size, laid end to end by their offsets), 0 when it has none: the runner gives
/// each thread a part of it.
inline int64_t kernelParallel(const UOp *call) {
  if (call->op != Op::CALL || call->nsrc == 0 || call->src(0)->op != Op::LINEAR) return 0;
  int64_t n = 0;
  for (const UOp *u : linearItems(call->src(0)))
    if (isThreadRange(u) && u->nsrc == 1 && u->src(0)->op == Op::CONST && u->src(0)->arg &&
        u->src(0)->arg->kind == ArgKind::Int)
      n = std::max(n, threadOffset(u) + u->src(0)->arg->i());
  return n;
}

/// The pieces of a linearized kernel's split loop in order, {iterations, work of one}, where every piece's THREAD
/// loop records its work and the pieces' works differ (the runner then splits by work, not by iterations);
/// empty otherwise.
inline std::vector<std::pair<int64_t, int64_t>> kernelParallelWork(const UOp *call) {
  std::vector<std::pair<int64_t, int64_t>> pieces;
  if (call->op != Op::CALL || call->nsrc == 0 || call->src(0)->op != Op::LINEAR) return pieces;
  std::map<int64_t, std::pair<int64_t, int64_t>> byOffset; // offset -> {iterations, work}
  for (const UOp *u : linearItems(call->src(0)))
    if (isThreadRange(u) && u->nsrc == 1 && u->src(0)->op == Op::CONST && u->src(0)->arg &&
        u->src(0)->arg->kind == ArgKind::Int) {
      if (threadWork(u) < 1) return pieces;
      byOffset[threadOffset(u)] = {u->src(0)->arg->i(), threadWork(u)};
    }
  int64_t next = 0;
  bool differ = false;
  for (const auto &[offset, piece] : byOffset) {
    if (offset != next) return {}; // (not laid end to end: split by iterations)
    next += piece.first;
    differ = differ || piece.second != byOffset.begin()->second.second;
    pieces.push_back(piece);
  }
  if (!differ) pieces.clear();
  return pieces;
}

/// A RANGE whose values come from the GPU thread id (AxisType GLOBAL, tinygrad's meaning: a range of the
/// launch's grid; the gpu-map pass chooses them, linearize replaces them by the thread id).
inline bool isGlobalRange(const UOp *u) {
  return u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 2 &&
         u->arg->elems()[1]->kind == ArgKind::AxisType && u->arg->elems()[1]->axisType() == AxisType::GLOBAL;
}

/// A RANGE of the threads of one GPU block (AxisType LOCAL or GROUP_REDUCE, tinygrad's meaning: LOCAL a
/// store's loop spread over the block's threads, GROUP_REDUCE a reduction's; the gpu-map pass chooses
/// them). A kernel's block is one dimension: all its block ranges have one size, and linearize replaces
/// each by the thread's index in its block.
inline bool isBlockRange(const UOp *u) {
  if (u->op != Op::RANGE || !u->arg || u->arg->kind != ArgKind::Tuple || u->arg->count < 2 ||
      u->arg->elems()[1]->kind != ArgKind::AxisType)
    return false;
  AxisType t = u->arg->elems()[1]->axisType();
  return t == AxisType::LOCAL || t == AxisType::GROUP_REDUCE;
}
/// The memory one GPU block shares (a BUFFER of AddrSpace LOCAL, the group-reduce pass makes them) under
/// u's AFTER chain, or nullptr when u is not one.
const UOp *blockBufferOf(const UOp *u);

/// RANGE r with AxisType `type` (its other fields kept); r itself for a RANGE whose arg is no such tuple.
const UOp *withAxisType(Context &c, const UOp *r, AxisType type);
/// A RANGE like r (its arg a tuple) of `size` iterations, range number `number`, AxisType `type` (r's when none).
const UOp *rangeLike(Context &c, const UOp *r, int64_t size, int64_t number, std::optional<AxisType> type);
/// outer * amount + inner: a loop's counter from the two loops it was cut into.
const UOp *combinedIndex(Context &c, const UOp *outer, int64_t amount, const UOp *inner);

/// True when some store of kernel SINK `body` could read what another iteration of the stores' loops (or
/// another GPU thread) writes: an INDEX of a buffer the kernel stores to, other than the store's own
/// element. Such a kernel keeps its order: one GPU thread, one CPU thread, one loop nest per store.
bool storesMayRace(const UOp *body);

/// A RANGE the optimizer unrolled into lanes (AxisType UPCAST): a loop of constant size whose
/// iterations are independent, which the targets run as one loop of lanes each (the compilers unroll and
/// vectorize it). A REDUCE whose value depends on UPCAST ranges has one accumulator per lane
/// (accumulatorLanes): its reduction loops run outside those lanes, the lanes inside them (a register tile).
inline bool isUpcastRange(const UOp *u) {
  return u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 2 &&
         u->arg->elems()[1]->kind == ArgKind::AxisType && u->arg->elems()[1]->axisType() == AxisType::UPCAST;
}

/// A reduction loop the optimizer unrolled (AxisType UNROLL, tinygrad's meaning: unroll:R:N): a loop of N
/// iterations of its REDUCE, in order, that the targets run as N copies of the body.
inline bool isUnrollRange(const UOp *u) {
  return u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 2 &&
         u->arg->elems()[1]->kind == ArgKind::AxisType && u->arg->elems()[1]->axisType() == AxisType::UNROLL;
}

/// The lanes of REDUCE `reduce`'s accumulator: the UPCAST ranges its value depends on (not those it
/// reduces), by range number; empty for a scalar accumulator. Lane k of the accumulator is
/// sum_i r_i * (product of the sizes after i), each UPCAST range of constant size (see laneCount).
std::vector<const UOp *> accumulatorLanes(const UOp *reduce);
/// The number of accumulator slots of `lanes` (the product of their constant sizes), 1 for none; throws
/// Error for a lane of non-constant size or a product above 4096.
int64_t laneCount(std::span<const UOp *const> lanes);

/// How much index expression `index` grows when RANGE `range` grows by one, when that is a constant
/// (sums, differences and constant multiples of the range); 0 for what does not depend on it; nullopt
/// otherwise (a product of two ranges, a division). throughSelect: WHERE(valid, i, constant) (a padded
/// read's index, Invalid or a fixed element where not valid) moves as i does. Iterative.
std::optional<int64_t> indexStride(const UOp *index, const UOp *range, bool throughSelect = false);

/// Whether kernel SINK `sink` is marked to run once per load of the inputs (its KernelInfo's once: a weight
/// re-layout; Schedule.cpp decides whether it may).
inline bool markedOnce(const UOp *sink) {
  const Arg *o = sink && sink->arg && sink->arg->kind == ArgKind::Record ? sink->arg->field("once") : nullptr;
  return o && o->kind == ArgKind::Bool && o->b();
}

/// The opts the optimize pass applied to kernel SINK `sink` (its KernelInfo's applied_opts), in order.
std::vector<std::string> appliedOpts(const UOp *sink);
/// Whether the threads of a split kernel (kernelParallel) should each take their own share of its loop's
/// chunks first ("split": "shares" in the manifest) rather than the next chunk in turns: a kernel whose
/// tile re-lays out no weights for a channel tile (no relayout opt: merged 1x1 tiles, grouped and depthwise
/// convolutions, pools, elementwise kernels), each of whose chunks reads the part of its input the kernel
/// before wrote on the same thread. A dense convolution's channel tile (relayout) keeps the turns, in which
/// both threads work on one channel tile's rows at once.
bool kernelSplitByShares(const UOp *call);
/// The arguments the blocked-layout pass laid out in blocks of channels for kernel SINK `sink` (its
/// KernelInfo's blocked: "SLOT:L:P", argument SLOT in blocks of L channels of planes of P elements), in order.
std::vector<std::string> blockedArgs(const UOp *sink);
/// Kernel SINK `sink` with its KernelInfo's string-list field `field` set to `entries` (none: the field left out).
const UOp *withInfoStrings(Context &c, const UOp *sink, std::string_view field, const std::vector<std::string> &entries);
/// Kernel SINK `sink` with its KernelInfo's `blocked` field set to `entries` (none: the field left out).
const UOp *withBlockedArgs(Context &c, const UOp *sink, const std::vector<std::string> &entries);

/// The range number of a RANGE (its arg's first field; the node's index where it has none).
int64_t rangeNumber(const UOp *r);

} // namespace uopc
