//===- LoopShapes.cpp - which loops of a linearized kernel the C emitter unrolls or splits (C target) ===//
#include "Targets/C/LoopShapes.h"

#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace uopc::ctarget {
namespace {

/// Per RANGE item of `items`, in order: test(r, k, body, numbers): r the RANGE, k its number among the RANGE
/// items (the index into laneLoops and the like), body the items between it and its own END, numbers[j] the
/// RANGE number of body[j] (SIZE_MAX for other items).
template <class Test> std::vector<bool> perLoop(std::span<const UOp *const> items, Test test) {
  std::vector<size_t> number(items.size(), SIZE_MAX);
  for (size_t i = 0, k = 0; i < items.size(); ++i)
    if (items[i]->op == Op::RANGE) number[i] = k++;
  std::vector<bool> out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i]->op != Op::RANGE) continue;
    size_t end = i + 1;
    for (size_t depth = 0; end < items.size(); ++end) {
      if (items[end]->op == Op::RANGE) ++depth;
      else if (items[end]->op == Op::END && depth-- == 0) break; // its own
    }
    out.push_back(test(items[i], number[i], items.subspan(i + 1, end - i - 1),
                       std::span<const size_t>(number).subspan(i + 1, end - i - 1)));
  }
  return out;
}

/// A RANGE's constant trip count (nullopt: not a constant).
std::optional<Bound> constTrips(const UOp *r) { return r->src(0)->op == Op::CONST ? constBound(r->src(0)) : std::nullopt; }

/// A reduction loop (AxisType REDUCE) of 2 to 5 iterations: a window's.
bool shortReduction(const UOp *r) {
  auto n = constTrips(r);
  return r->arg && r->arg->kind == ArgKind::Tuple && r->arg->count >= 2 && r->arg->elems()[1]->kind == ArgKind::AxisType &&
         r->arg->elems()[1]->axisType() == AxisType::REDUCE && n && *n >= 2 && *n <= 5;
}

} // namespace

/// Per RANGE item of `items` (in order, as laneLoops): whether it is a reduction loop of 2 to 5 iterations
/// (a 3x3 pooling window's rows or columns, a 5-channel LRN window) with no loop inside but others like it
/// and vector lanes. gcc -O2 then unrolls it before it vectorizes, as -O3 does on its own, and vectorizes
/// the loop around it: SqueezeNet's first 3x3 max pool, two threads, 130-139 us at -O3, 365 at -O2 as a
/// loop, about 124 unrolled (with kKernelOptFlags). A register tile's window loops, around its unrolled
/// outer lanes, stay loops.
std::vector<bool> windowLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops) {
  return perLoop(items, [&](const UOp *r, size_t, std::span<const UOp *const> body, std::span<const size_t> numbers) {
    if (!shortReduction(r)) return false;
    for (size_t j = 0; j < body.size(); ++j)
      if (body[j]->op == Op::RANGE && !shortReduction(body[j]) && !laneLoops[numbers[j]]) return false;
    return true;
  });
}

/// Per RANGE item of `items` (in order, as laneLoops): whether it is a reduction loop of 2 to 5 iterations
/// whose only loops inside are a register tile's outer lanes (tileOuter) and their vector lanes, of at most 288
/// accumulator lanes in all (18 vectors of 16 floats): a tile's innermost window loop, unrolled. Its 3-5 steps
/// then run without a loop's branch and index updates between steps of a few multiply-adds a vector:
/// - ShuffleNet's first convolution (3 -> 24 at 112x112, 8 x 8 lanes), one thread, alternating 3 rounds:
///   755-757 -> 496-516 us (gcc 0.09 -> 0.23 s). Unrolling the window loops around it as well took gcc 4.1 s
///   for that kernel, and ran slower (668 us);
/// - (2026-12-06) 65 to 288 lanes, one thread in a harness, fastest of 5 alternating rounds: Inception v1's 3x3
///   convolutions at 27x27 (9 pixels x 32 channels) 2374 -> 1944 us, at 13x13 (13 x 16) 457 -> 419, Inception
///   v2's at 7x7 (7 x 32) 368 -> 343; gcc 0.14 -> 0.15 s for such a kernel. With the row loop around it
///   unrolled too they ran 1922, 377 and 336 us, ResNet-50's stride-2 one at 7x7 1695 -> 1507 (unchanged with the
///   innermost alone), but gcc took 0.26-0.57 s a kernel: DenseNet-121's first run, its build in an empty cache,
///   4.48 -> 5.20-5.47 s for kernels no faster in the network, Inception v1's 2.39-2.43 -> 2.96-3.00 s.
/// A larger tile's (14 x 32 lanes: Inception v2's 3x3 64 -> 192, DenseNet's 128 -> 32) ran slower with its
/// window loop unrolled (Inception v2's 96 -> 96 at 28x28 811 -> 1166 us).
std::vector<bool> tileWindowLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops,
                                  const std::vector<bool> &tileOuter) {
  return perLoop(items, [&](const UOp *r, size_t, std::span<const UOp *const> body, std::span<const size_t> numbers) {
    if (!shortReduction(r)) return false;
    bool tile = false;
    int64_t lanes = 1;
    for (size_t j = 0; j < body.size(); ++j) {
      if (body[j]->op != Op::RANGE) continue;
      size_t k = numbers[j];
      auto m = constTrips(body[j]);
      if (!(tileOuter[k] || laneLoops[k]) || !m || lanes * static_cast<int64_t>(*m) > 288) return false;
      lanes *= static_cast<int64_t>(*m);
      tile = tile || tileOuter[k];
    }
    return tile;
  });
}

/// Per RANGE item of `items` (in order, as laneLoops): whether it is an UPCAST loop of at most 16 lanes with
/// no loop inside that is no vector loop (a read moves by other than 0 or 1 element per lane: a gather) and
/// updates an accumulator of its lanes: a pooling piece's lanes over merged pixels, whose index per lane (a
/// division and a remainder by the row) depends on the lane alone. Unrolled, gcc computes those once per lane
/// outside the window's loops; as a loop, once per lane per window position and channel: ShuffleNet's
/// stride-2 unit's 3x3 average pool over 16 merged pixels (its concatenation's piece), one thread, 490-586 ->
/// 186-192 us (alternating, 4 rounds; gcc 0.14 -> 0.32 s for that kernel).
std::vector<bool> gatherLaneLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops) {
  return perLoop(items, [&](const UOp *r, size_t k, std::span<const UOp *const> body, std::span<const size_t>) {
    auto n = constTrips(r);
    if (!isUpcastRange(r) || !n || *n < 2 || *n > 16 || laneLoops[k]) return false;
    bool accumulates = false;
    for (const UOp *u : body) {
      if (u->op == Op::RANGE) return false;
      if (u->op == Op::STORE && u->src(0)->op == Op::REDUCE) {
        std::vector<const UOp *> lanes = accumulatorLanes(u->src(0));
        accumulates = accumulates || std::find(lanes.begin(), lanes.end(), r) != lanes.end();
      }
    }
    return accumulates;
  });
}

/// Per RANGE item of `items` (in order, as laneLoops): for a loop of lanes (laneLoops) of constant size, more
/// than the 16 bytes of the narrowest vector register, that updates an accumulator along its lanes (a STORE to a
/// REDUCE whose accumulatorLanes hold it), the accumulator's element size, else 0. The emitter writes it as
/// unrolled pieces of two vector registers, or one (UOPC_LANE_CHUNK): as one loop of lanes wider than that, gcc
/// -O2 vectorizes it as a loop over the registers, which it does not unroll beyond two, and keeps the tile's
/// accumulators in memory, a load and a store per multiply-add. AVX2 (8 lanes a register) on a Zen 3: the
/// encoder's 4 x 24 matmul tile (3 registers a row) and the CNNs' 3 x 32 channel tiles (4 a pixel); AVX-512's
/// 16-lane registers took the 32-lane tiles in two, which gcc unrolled.
std::vector<size_t> chunkedLaneLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops) {
  std::vector<size_t> bytes(laneLoops.size(), 0);
  perLoop(items, [&](const UOp *r, size_t k, std::span<const UOp *const> body, std::span<const size_t>) {
    auto n = constTrips(r);
    if (!laneLoops[k] || !n || *n < 2) return false;
    for (const UOp *u : body)
      if (u->op == Op::STORE && u->src(0)->op == Op::REDUCE && static_cast<int64_t>(*n) * static_cast<int64_t>(dtypeSize(u->src(0)->dtype)) > 16) {
        std::vector<const UOp *> lanes = accumulatorLanes(u->src(0));
        if (std::find(lanes.begin(), lanes.end(), r) != lanes.end())
          bytes[k] = std::max<size_t>(bytes[k], dtypeSize(u->src(0)->dtype));
      }
    return bytes[k] > 0;
  });
  return bytes;
}

namespace {

/// tileOuterLoops' test of one loop, its loops inside counted as lanes where `inner` says so.
bool outerLanes(const UOp *r, size_t k, std::span<const UOp *const> body, std::span<const size_t> numbers,
                const std::vector<bool> &laneLoops, const std::vector<bool> &inner) {
  if (!isUpcastRange(r) || r->src(0)->op != Op::CONST || laneLoops[k]) return false;
  bool inside = false, accumulates = false;
  size_t depth = 0;
  for (size_t j = 0; j < body.size(); ++j) {
    const UOp *u = body[j];
    if (u->op == Op::RANGE) {
      if (!inner[numbers[j]]) return false;
      inside = true;
      ++depth;
    } else if (u->op == Op::END) {
      --depth;
    } else if (depth > 0 && u->op == Op::STORE && u->src(0)->op == Op::REDUCE) {
      accumulates = true;
    }
  }
  return inside && accumulates;
}

} // namespace

/// Per RANGE item of `items` (in order, as laneLoops): whether it is an UPCAST loop of constant size whose
/// loops inside are all vector lanes (laneLoops) or outer lanes themselves, and one of them updates an
/// accumulator (a STORE to a REDUCE): a register tile's outer lanes. (Nested: two output rows of 7 pixels of
/// 32 channel lanes, `upcast:1:2 upcast:2:7 upcast:0:32`, whose rows gcc left a loop over the accumulators in
/// memory, 1.5x slower than one row: ResNet-50's 1x1 convolution 2048 -> 512 at 7x7, 0.77 against 0.50 ms;
/// unrolled, 0.50-0.53.)
std::vector<bool> tileOuterLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops) {
  std::vector<bool> inner = laneLoops, outer;
  for (int level = 0; level < 3; ++level) { // outer lanes around lanes, then around those
    outer = perLoop(items, [&](const UOp *r, size_t k, std::span<const UOp *const> body, std::span<const size_t> numbers) {
      return outerLanes(r, k, body, numbers, laneLoops, inner);
    });
    for (size_t k = 0; k < inner.size() && k < outer.size(); ++k) inner[k] = laneLoops[k] || outer[k];
  }
  return outer;
}



} // namespace uopc::ctarget
