//===- Linearize/Prefetch.h - what a register tile's loop prefetches on CPUs (internal to the pass) ===//
// At the top of a REDUCE's outermost reduction loop r, linearize adds a PREFETCH for each index these choose:
// weightStreams (a weight stream some bytes ahead), blockChunks (an input read by blocks of channels, a few blocks
// ahead) and planeSteps (an input read in planes, a few steps ahead). Each says what it takes and what was
// measured; Linearize.cpp places the indexes and the PREFETCH items. A prefetch may reach past a buffer's end
// (the last tile's): it never faults.
#pragma once

#include "Passes/Linearize/Lanes.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace uopc::linearize {

/// A buffer parameter that is a scalar (no elements to index).
inline bool isScalarParam(const UOp *u) { return u->nsrc == 0 || (u->src(0)->op == Op::STACK && u->src(0)->nsrc == 0); }

/// Where the prefetches go: REDUCE u (its reduction ranges; r the first), its lanes, the ranges each node depends
/// on, and the keys of the loops open there (outermost first, r's loop last).
struct PrefetchSite {
  Context &c;
  const UOp *u;
  const std::vector<const UOp *> &lanes;
  const FreeRanges &free;
  std::vector<const UOp *> open;
};

/// A prefetch: the read it is for (an INDEX of a buffer parameter) and the index it prefetches, one 64-byte line.
using Prefetch = std::pair<const UOp *, const UOp *>;

/// A register tile's weight stream `ahead` bytes (a whole number of r's iterations) further on, one PREFETCH a
/// line: an ungated read that reuses its values across one of u's lanes (a weight, loaded once for every
/// pixel of the tile) and reads one run of consecutive elements each iteration of r (a channel tile's
/// re-laid-out weights, [tile][input channel][tap][lane], or a packed panel). Those come from memory in a
/// network, where a layer's weights are read once: ResNet-50's 3x3 convolution at 7x7 (9.4 MB of weights), one
/// thread, weights not in any cache, 2.1 -> 1.8 ms with the default tile. The input, read by position, and
/// reads that move with every lane are left to the others or the hardware.
std::vector<Prefetch> weightStreams(const PrefetchSite &s, int64_t ahead);

/// A register tile's input `chunks` blocks ahead: a read whose index depends on r through r / B (or (r + K) / B,
/// K a multiple of B: a concatenation's second part read in a piece of its own), B a constant that divides r's
/// size, and moves by a constant S elements, at least 1 KB, from one block of B iterations to the next. A
/// channel tile reading a blocked input ([block][pixel][32 lanes]: B = 32, S a plane of blocks) reads a short
/// run of lines per block (14 pixels: 28 lines) and then jumps a plane ahead, a stream the hardware prefetcher
/// does not follow: the first touch of every block waits on the caches below (in a network the input is the
/// layer before's output, half of it in the other core's L2). The block's lines (the read's reach over u's
/// inner ranges, lanes and r % B, at most 16 KB) are spread over its B iterations, ceil(lines / B) an
/// iteration; with fewer blocks, the blocks less one ahead. ResNet-50's 1x1 convolution 1024 -> 256 at 14x14,
/// 2 threads: 270 us warm, 360 with its input out of the caches, 280 with these prefetches (2 blocks ahead); in
/// the network 360-388 -> 321-327 us. A read affine in r is weightStreams' or planeSteps'.
std::vector<Prefetch> blockChunks(const PrefetchSite &s, int64_t chunks);

/// A register tile's input in planes a few steps ahead: a read that moves with one of u's lanes (an input, read
/// by position: not a weight), by a constant stride of at least 512 bytes along r (a plane of channels of 14x14
/// or more: 7x7 planes, 196 bytes, gained nothing), reaching every line between its first and last, at most 512
/// bytes, a step over u's inner ranges and lanes (a row of the tile's pixels, even 2 apart; not the three rows of
/// a 3x3 window). D steps ahead: about 4096 of the tile's multiply-adds (4096 over the iterations of u's inner
/// ranges and lanes a step), at least 2, at most half of r. ResNet-50's 1x1 convolution 256 -> 512 with stride 2
/// from 56x56 (14 pixels 2 apart a step, planes 12.5 KB apart), fused with its block's other 1x1 convolution, 2
/// threads in a harness: 1093-1169 -> 1025-1057 us warm, 1427-1491 -> 1244-1277 with its input flushed.
std::vector<Prefetch> planeSteps(const PrefetchSite &s);

/// The next slab of a weight stream (one of `streams`, weightStreams' prefetches), spread over the rows that
/// reuse the current one: a read whose stream along r is all of a slab of S = step x r's iterations elements
/// (a channel tile's weights, [tile][input channel][tap][lane]) that moves to the next slab with an outer loop
/// p (by S a step of p, the rows a loop between p and r on which the read does not depend; or by S every R steps
/// of p, the rows p % R). The first row's pass over a slab reads it from memory (a network's weights are out of
/// the caches), a tile's worth of multiply-adds a line: ResNet-50's 3x3 convolution 512 -> 512 at 7x7 (a slab of
/// 590 KB, 7 rows), 2 threads, the weights flushed: 1077-1108 us against 841-851 in the caches. During rows 1 to
/// R - 1 of slab p, this prefetches slab p + 1's lines, T = (R - 1) x r's iterations x k slots for its L lines (k
/// a step, T at least L), slot t line t x L / T; row 0's slots, negative, reach the current slab's last lines.
/// Slabs of 16 KB to 1 MB.
std::vector<Prefetch> nextSlabs(const PrefetchSite &s, const std::vector<Prefetch> &streams);

} // namespace uopc::linearize
