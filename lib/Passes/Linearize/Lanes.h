//===- Linearize/Lanes.h - loop shapes linearize chooses on CPUs (internal to the pass) ===//
// Linearize.cpp places values and opens loops; these two rewrite what it places, before it does:
// hoistLaneInvariants (a store's costly lane invariants, one accumulator with those lanes) and seamsOf (the cuts
// of a reduction range at a concatenation's seams). Each says what it does and what was measured.
#pragma once

#include "IR/UOp.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace uopc::linearize {

/// The ranges (and GPU thread coordinates) each node depends on, sorted by pointer (Linearize.cpp's analyze).
using FreeRanges = std::unordered_map<const UOp *, std::vector<const UOp *>>;

/// CPU: per store, each maximal part of its value (outside reductions) that computes a square root, a
/// reciprocal, an exponential, a logarithm, a sine, a division or a power from values that move, among the
/// store's loops from its first lane on, only with lanes (UPCAST ranges) it depends on, while a lane loop
/// it does not depend on runs outside one it does: that part becomes REDUCE(MUL) over no range, an
/// accumulator with those lanes, 1 * x = x exactly (NaN, infinities and -0 alike). linearize computes it
/// once, at the level of its other ranges, in a loop over its lanes, and the store reads it per lane. A
/// batch norm's 1 / sqrt(var + eps) in a channel tile's epilogue (pixels x channels, the channels the inner
/// lanes) was computed once per pixel, 14 times a channel: Inception v2's 3x3 convolution 64 -> 192 at
/// 56x56, one thread, 2-4% faster in 8 paired rounds (removing its epilogue's arithmetic altogether: 9%).
const UOp *hoistLaneInvariants(Context &c, const UOp *body, const FreeRanges &free);

/// The seams of reduction range r in REDUCE body `body` (CPU): the values 0 < K < n of r at which the
/// condition of a WHERE of the body that selects between reads of different buffers and depends on r alone
/// (no other range, no loaded data) changes its truth, at most three, for a range of 2 to 4096 iterations; none otherwise. A concatenation read along a
/// reduction (SqueezeNet's squeeze layers and last convolution read their fire module's two halves) selects
/// between its parts' buffers by the channel: every step loaded an element of each and kept one. Cut there,
/// each piece is a loop of its own in which the select folds to one read; the accumulator's updates keep their
/// order (bitwise the same sums).
std::vector<int64_t> seamsOf(Context &c, const UOp *body, const UOp *r, const FreeRanges &free);

} // namespace uopc::linearize
