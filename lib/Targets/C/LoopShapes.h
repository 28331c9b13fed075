//===- LoopShapes.h - which loops of a linearized kernel the C emitter unrolls or splits (C target) ===//
// Per RANGE item of a kernel's LINEAR items, in order (as KernelABI.h's independentLaneLoops, `laneLoops`): the
// analyses that decide how CEmitter.cpp spells a loop: a register tile's outer lanes and window loops unrolled,
// a pooling window unrolled, gathering lanes unrolled, a tile's accumulating lanes in vector-register pieces.
// Each comment in LoopShapes.cpp says what it was measured to do.
#pragma once

#include "IR/UOp.h"

#include <span>
#include <vector>

namespace uopc::ctarget {

/// A reduction loop of 2 to 5 iterations (a pooling window's rows or columns, an LRN window) with no loop inside
/// but others like it and vector lanes: unrolled (UOPC_UNROLL).
std::vector<bool> windowLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops);
/// A small register tile's innermost window loop: unrolled.
std::vector<bool> tileWindowLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops,
                                  const std::vector<bool> &tileOuter);
/// A short loop of lanes that is no vector loop and gathers into its accumulators: unrolled.
std::vector<bool> gatherLaneLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops);
/// For a loop of lanes that updates accumulators along its lanes, more than 16 bytes of them, the accumulators'
/// element size (the emitter writes it in vector-register pieces, UOPC_LANE_CHUNK), else 0.
std::vector<size_t> chunkedLaneLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops);
/// A register tile's outer lanes (an UPCAST loop of constant size around vector lanes holding an accumulator):
/// unrolled.
std::vector<bool> tileOuterLoops(std::span<const UOp *const> items, const std::vector<bool> &laneLoops);

} // namespace uopc::ctarget
