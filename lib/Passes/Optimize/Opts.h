//===- Opts.h - the optimize pass's opts and the kernel shapes they apply to (internal to the pass) ===//
// Optimize.cpp applies opts to kernels (the pass, its file comment says what each opt does); Choose.cpp
// chooses them at level 2 (the vector tile, the channel tile of convolutions, seams, groups, interiors,
// strips, packs); Opts.cpp reads them from text and finds a kernel's shape.
#pragma once

#include "IR/UOp.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uopc {
struct PassTarget;
} // namespace uopc

namespace uopc::optimize {

/// upcast:AXIS:AMOUNT, split:AXIS:LO:HI (amount = LO, hi = HI), partial:RAXIS:AMOUNT, unroll:RAXIS:AMOUNT
/// (RAXIS: a reduction loop, by its position among the kernel's reduction ranges in range-number order) or
/// block:AXIS:SIZE (amount = SIZE), or pack:SLOT (axis = SLOT: the kernel argument whose read is packed), or
/// relayout:AXIS:SLOT (amount = SLOT: the read re-laid out with AXIS's lanes innermost, see relayoutPiece), or
/// merge:AXIS (output loops AXIS and AXIS + 1 one loop of their product, in AXIS's place; AXIS + 1 left a loop of
/// one iteration, so that the other opts' axes keep their numbers).
struct Opt {
  enum Kind { Upcast, Split, Partial, Block, Unroll, Pack, Relayout, Merge } kind = Upcast;
  /// Each kind's name, by Kind.
  static constexpr std::string_view kNames[] = {"upcast", "split", "partial", "block", "unroll", "pack", "relayout", "merge"};
  size_t axis = 0;
  int64_t amount = 1, hi = 0;
  std::string text() const {
    if (kind == Pack || kind == Merge) return std::string(kNames[kind]) + ":" + std::to_string(axis);
    return std::string(kNames[kind]) + ":" + std::to_string(axis) + ":" + std::to_string(amount) +
           (kind == Split ? ":" + std::to_string(hi) : "");
  }
};

/// "upcast:A:N", "split:A:LO:HI", "partial:R:N", "unroll:R:N", "block:A:N", "pack:S", "relayout:A:S" or
/// "merge:A" -> Opt; throws Error
/// naming the text otherwise.
Opt parseOpt(std::string_view t);
/// opts=NAME/OPT/OPT;NAME -> {NAME: [opts]}.
std::map<std::string, std::vector<Opt>, std::less<>> parseHandOpts(std::string_view text);
/// Whether x's value depends on node r (r is in its cone).
bool dependsOn(const UOp *x, const UOp *r);
/// merge:A's rewrite of x: output loops ry (h iterations) and rx (w) one loop `merged` of h * w (ry's number),
/// ry's counter merged // w and rx's merged % w (the simplifier folds `(m // w)*w + m % w` back to m).
const UOp *mergedLoops(Context &c, const UOp *x, const UOp *ry, const UOp *rx, int64_t h, int64_t w, const UOp *&merged);

/// A kernel the opts apply to: SINK(END(STORE(INDEX(buffer, i), value), output ranges...)).
struct Shape {
  const UOp *end = nullptr, *store = nullptr;
  std::vector<const UOp *> axes; ///< the END's ranges
  std::vector<int64_t> sizes;
  std::vector<const UOp *> reduces, reads; ///< the REDUCEs of the value; the buffer reads of their bodies
  std::vector<const UOp *> reduceRanges;    ///< the ranges they reduce, by range number
};

/// The kernel SINK's shape, nullopt when it is not one store over constant output loops whose REDUCEs
/// (none nested in another's body, unless it does not move with the outer one's loops) read buffers.
std::optional<Shape> shapeOf(const UOp *sink);

/// A kernel's reads' conditions: their gates and WHERE(c, i, Invalid) indexes' c, split at their ANDs (Choose.cpp).
std::vector<const UOp *> conditionsOf(const std::vector<const UOp *> &reads);
/// The lanes a register tile of shape s may take: PassTarget::ungatedTileLanes where no read's condition moves
/// along an output loop (no border gate in the tile), else PassTarget::tileLanes (ChannelTile.cpp).
int64_t tileLanesOf(const Shape &s, const PassTarget &target);

/// Choose.cpp's helpers the channel tile shares: a read's relayout stride along r, a shape's reduction work
/// (output size times its reductions' trip counts; 0 for nullopt) and its output size.
std::optional<int64_t> relayoutStride(Context &c, const Shape &s, const UOp *rd, const UOp *r);
double reductionWork(const std::optional<Shape> &s);
double outputSize(const Shape &s);

/// The channel tile of a convolution with short or strided rows or padding (ChannelTile.cpp), nullopt where no
/// output loop qualifies.
std::optional<std::vector<Opt>> chooseChannelTile(Context &c, const Shape &s,
                                                  const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                                  const std::vector<std::optional<std::pair<int64_t, int64_t>>> &interior,
                                                  int64_t vec, const PassTarget &target);

/// What the vector tile adds (Tiles.cpp, each described there): partial accumulators, packed panels, an L2
/// panel block, a strip of lanes for column walks; and a reduction with neither, its independent rows.
/// A tile's reduction loop unrolled by `amount` (unroll:R:amount), where every REDUCE ends in that loop, the last
/// of s's reduction loops, and `amount` divides it and is less; nullopt elsewhere.
std::optional<Opt> innermostUnroll(const Shape &s, int64_t amount);
/// The constant trip count of s's last reduction loop (the innermost), nullopt where it has none.
std::optional<int64_t> innermostReductionSize(const Shape &s);
std::vector<Opt> choosePartial(const Shape &s, int64_t vec);
std::optional<Opt> chooseRowChains(const Shape &s);
std::vector<Opt> choosePacks(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides, size_t va,
                             size_t ra, int64_t vAmount, int64_t rowTiles, const PassTarget &target);
std::optional<Opt> choosePanelBlock(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                    const std::vector<int64_t> &sizes, size_t va, size_t ra, int64_t vAmount,
                                    int64_t reuse, const std::vector<Opt> &packs, const PassTarget &target);
int64_t stripLanes(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides, size_t va,
                   int64_t vAmount, int64_t size, int64_t elem, const PassTarget &target);

/// The opts of level 2 for kernel shape s (Choose.cpp; Optimize.cpp's file comment says what it chooses).
/// `seams`, `groups`, `merges`: whether a concatenation's seams, a grouped convolution's blocks and a merge of
/// two output loops may be chosen (off for the pieces those already cut).
std::vector<Opt> chooseOpts(Context &c, const Shape &s, const PassTarget &target, bool seams = true, bool groups = true,
                            bool merges = true);

} // namespace uopc::optimize
