//===- ChannelTile.cpp - optimize's channel tile of convolutions (chooseChannelTile) ===//
// The channel tile (weights re-laid out once, lanes along the output channels, a reuse axis of pixels) and the
// cache blocks of its rows; Choose.cpp's chooseOpts takes it for short or strided rows and padded
// convolutions. docs/lowering.md ("optimize: convolutions") has what each choice was measured to do.
#include "Passes/Optimize/Opts.h"

#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/PassManager.h"

#include <algorithm>
#include <map>
#include <set>

namespace uopc::optimize {
namespace {

/// The bytes of weights a channel tile of `lanes` output channels reads over its reductions: per weight read,
/// the lanes times the iterations of every reduction loop its index moves along, times its element size.
int64_t weightPanelBytes(const Shape &s, const std::vector<size_t> &weights, int64_t lanes) {
  int64_t total = 0;
  for (size_t k : weights) {
    const UOp *rd = s.reads[k];
    int64_t bytes = lanes * static_cast<int64_t>(dtypeSize(rd->dtype));
    for (const UOp *r : s.reduceRanges)
      if (auto st = indexStride(rd->src(1), r); !st || *st != 0)
        if (auto n = constBound(r->src(0))) bytes = std::min<int64_t>(bytes * static_cast<int64_t>(std::max<int64_t>(*n, 1)), INT64_C(1) << 40);
    total = std::min<int64_t>(total + bytes, INT64_C(1) << 40);
  }
  return total;
}

/// Whether output loop b moves some read other than the weights and no weight (every read at a constant
/// stride along it): the tile's reuse axis and the pixel rows outside it are such loops.
bool movesInputsOnly(const std::vector<std::vector<std::optional<int64_t>>> &strides, const std::vector<size_t> &weights,
                     size_t b) {
  bool moves = false;
  for (size_t k = 0; k < strides.size(); ++k) {
    bool w = std::find(weights.begin(), weights.end(), k) != weights.end();
    if (!strides[k][b] || (w && *strides[k][b] != 0)) return false;
    moves = moves || (!w && *strides[k][b] != 0);
  }
  return moves;
}

/// Cache blocks for a channel tile (output loop oa, its first `channels` iterations in blocks of `lanes`, the
/// reads `weights` moving along it, reuse axis ra): the pixel rows rb outside the channel blocks. Without them
/// the channel blocks are the outermost loop and each streams the whole input again: where the inputs outgrow
/// half the L2, that is a read of the inputs from the L3 per block of lanes. block:rb:1 puts the rows
/// outermost, so that each row's slab of the inputs stays in the L2 while every channel block reads it; where
/// the weights outgrow a quarter of the L2, block:oa:B first (B channels, the most whose weights fit there, a
/// multiple of the lanes), the rows inside each block of B. rb: the outermost output loop after oa, other than
/// ra, that moves a non-weight read and no weight, of at least 8 rows. Only where the tile's work per byte of
/// the inputs is low (under 4 multiply-adds a byte: a 1x1 convolution of stride 2). Measured on Emerald
/// Rapids (2 MB L2), C, ResNet-50's downsampling pairs, 2 threads in the network: into 512 channels at 28x28
/// (inputs 256 x 56 x 56 and 128 x 28 x 28, 3.6 MB, weights 768 KB, 16 blocks of 32 channels) 3.3 -> 1.8-1.9
/// ms (B = 256 or none alike); into 1024 at 14x14 (inputs 1.8 MB, weights 3.1 MB) 2.10 -> 1.72 ms with B =
/// 128 (1.84 with 256); into 2048 at 7x7, inputs 0.9 MB, no gain (1.88 -> 1.98-2.4).
std::vector<Opt> chooseRowBlocks(const Shape &s, const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                 const std::vector<size_t> &weights, size_t oa, size_t ra, int64_t channels,
                                 int64_t lanes, const PassTarget &target) {
  if (channels / lanes < 2) return {};
  int64_t inputs = 0, weightBytes = 0;
  std::set<int64_t> seen;
  for (size_t k = 0; k < s.reads.size(); ++k) {
    const UOp *buf = s.reads[k]->src(0);
    if (buf->op != Op::PARAM || !seen.insert(ParamArg::slotOf(buf->arg)).second) continue;
    auto n = buf->nsrc ? constBound(buf->src(0)) : std::nullopt;
    if (!n) return {};
    int64_t bytes = std::min<int64_t>(static_cast<int64_t>(*n), INT64_C(1) << 40) * static_cast<int64_t>(dtypeSize(s.reads[k]->dtype));
    (std::find(weights.begin(), weights.end(), k) != weights.end() ? weightBytes : inputs) += bytes;
  }
  // (and where a block's multiply-adds per byte of the inputs are too few to hide a stream from the L3: the
  // downsampling pairs above have 2.7; ResNet-50's 3x3 stride-2 convolution 128 -> 128 at 28x28 has 18, 1.09 ->
  // 0.99 ms blocked, within noise; VGG-19's 3x3 ones 72, 128 -> 128 at 112x112 12.4 -> 14.5 ms with B = 64)
  double perByte = reductionWork(s) * static_cast<double>(lanes) / static_cast<double>(s.sizes[oa]) / static_cast<double>(std::max<int64_t>(inputs, 1));
  if (inputs <= target.l2Bytes / 2 || perByte >= 4) return {};
  int64_t perChannel = std::max<int64_t>(1, weightBytes / s.sizes[oa]), block = 0;
  for (int64_t b = channels / lanes * lanes; b >= lanes && !block; b -= lanes)
    if (channels % b == 0 && b * perChannel <= target.l2Bytes / 4) block = b;
  if (block < 2 * lanes) return {};
  for (size_t rb = oa + 1; rb < s.axes.size(); ++rb) {
    if (rb == ra || s.sizes[rb] < 8 || !movesInputsOnly(strides, weights, rb)) continue;
    if (block == channels) return {Opt{Opt::Block, rb, 1, 0}};
    return {Opt{Opt::Block, oa, block, 0}, Opt{Opt::Block, rb, 1, 0}};
  }
  return {};
}

} // namespace

/// (Opts.h) A tile's accumulator lanes: ungatedTileLanes where no read's condition moves along an output loop.
int64_t tileLanesOf(const Shape &s, const PassTarget &target) {
  bool gated = false;
  for (const UOp *g : conditionsOf(s.reads))
    for (const UOp *a : s.axes) gated = gated || indexStride(g, a) != std::optional<int64_t>(0);
  return gated ? target.tileLanes : target.ungatedTileLanes;
}

/// The channel tile: a kernel whose reductions read one or more buffers (weights) that move along an output
/// loop `oa` (a convolution's output channels, a dense layer's outputs) while every other read stays put along
/// it, and whose consecutive output loop is too short for the vector tile (a convolution's 56, 28, 14 or 7
/// pixels a row) or is read with a stride (stride 2). The lanes go along oa instead (64 where they divide
/// it, else 32, 16, 8): each weight read is re-laid out by a kernel of its own that runs once per load of the
/// inputs (relayout:oa:SLOT, oa's lanes innermost, so that the tile loads them as whole vectors), the other
/// reads load one element per reuse lane and broadcast it. The reuse axis is the innermost other output loop
/// that moves a non-weight read and no weight; its upcast (up to 8, within the machine's accumulator lanes,
/// PassTarget::tileLanes: 448 with AVX-512, 96 with AVX2) covers most of its interior, the borders and the
/// rest pieces of their own (a row of under 14 keeps its borders, gated). Measured on ResNet-50's 3x3
/// convolutions, one thread, on Sapphire Rapids (AVX-512): 64 lanes x 4-6 pixels 3.2-3.9 ms where 32 x 8 took
/// 5.1-6.9. nullopt when no loop qualifies.
std::optional<std::vector<Opt>> chooseChannelTile(Context &c, const Shape &s,
                                                  const std::vector<std::vector<std::optional<int64_t>>> &strides,
                                                  const std::vector<std::optional<std::pair<int64_t, int64_t>>> &interior,
                                                  int64_t vec, const PassTarget &target) {
  size_t elem = 4;
  for (const UOp *red : s.reduces) elem = std::max<size_t>(elem, dtypeSize(red->dtype));
  // (the accumulators of reductions over different loops are not live at once: linearize runs each
  // reduction's loop to its end before the next begins, a finished one waiting in memory for the store;
  // only reductions over the same loops share the registers: a residual's main and downsample branches
  // get a whole tile each)
  std::map<std::vector<const UOp *>, int64_t> together;
  int64_t live = 1;
  for (const UOp *red : s.reduces) {
    std::vector<const UOp *> loops(red->src().begin() + 1, red->src().end());
    std::sort(loops.begin(), loops.end());
    live = std::max(live, ++together[loops]);
  }
  const int64_t tileLanes = tileLanesOf(s, target);
  for (size_t oa = 0; oa < s.axes.size(); ++oa) {
    if (interior[oa]) continue;
    int64_t n = s.sizes[oa];
    int64_t lanes = 0;
    // the most lanes, up to 128 bytes, that divide the channels and leave the registers room for a reuse
    // upcast of 3 (2 on LLVM with AVX2, whose tiles take 64 lanes: PassTarget::tileLeastPixels, 32 x 2; on C,
    // with AVX2's 96 accumulator lanes, 32 x 3: ResNet-50, one thread on Zen 3, 164 ms, where 16 x 6
    // took 195 and AVX-512's 64 x 7, spilled, 251). With AVX-512's 448, 32 lanes x up to 14 pixels, where 64 x 7
    // spilled (28 accumulators, 4 weight vectors and a broadcast: 33 registers) and 64 x 5 streamed the weights
    // from the L2 three times as often (ResNet-50 on Sapphire Rapids, one thread: the 1x1 convolution 64 -> 256
    // at 56x56 2.98 -> 1.68 ms, the 3x3 one 128 -> 128 at 28x28 3.28 -> 1.38)
    for (int64_t l : {8 * vec, 4 * vec, 2 * vec, vec})
      if (!lanes && n % l == 0 && l * static_cast<int64_t>(elem) <= 128 && (tileLanes / (l * live) >= target.tileLeastPixels || l == vec)) lanes = l;
    // (a reduction of under 64 terms into channels whose planes lie 128 or more elements apart, a first
    // convolution's 27 terms or an expand layer's 16-48: two vectors of lanes at most, the tile's stores
    // spread over half as many planes. SqueezeNet, C, 2 threads on Zen 5: its 3x3 stride-2 convolution
    // 3 -> 64 at 111x111 32 x 11 lanes 764-990 us, 16 lanes 403-485 (x 5, 11 or 22 pixels); its 1x1 ones at
    // 55x55 139-148 -> 111-117, at 13x13 74-86 -> 71-73; the network 5.9-6.3 -> 5.3-5.5 ms. ResNet-50's and
    // AlexNet's first convolutions, 147 and 363 terms, keep 32: 16 lanes took 10-30% longer)
    auto plane = indexStride(s.store->src(0)->src(1), s.axes[oa]);
    bool shortReduction = plane && *plane >= 128 && reductionWork(s) < 64.0 * outputSize(s);
    if (lanes > 2 * vec && n % (2 * vec) == 0 && shortReduction) lanes = 2 * vec;
    // (channels that only one vector of lanes or less divides, many of them: the lanes of four or two vectors
    // over all but the last few, those a piece of their own (split:oa:0:CUT) that reads the weights as they
    // are. SqueezeNet's classifier, 512 -> 1000 channels at 13x13, C, 2 threads on Zen 5: 8 lanes 1.64-1.79
    // ms, 32 over 992 of them 0.85-0.93)
    int64_t chanCut = n;
    if (lanes < 2 * vec && !interior[oa])
      for (int64_t l : {4 * vec, 2 * vec})
        if (n % l && n >= 16 * l && n - n / l * l <= n / 16 && l * static_cast<int64_t>(elem) <= 128 && tileLanes / (l * live) > 8) {
          lanes = l, chanCut = n / l * l;
          break;
        }
    // half a vector only for many channels none of those divide (ShuffleNet's groups of 68)
    if (!lanes && vec >= 2 && n >= 4 * vec && n % (vec / 2) == 0) lanes = vec / 2;
    if (!lanes) continue;
    std::vector<size_t> weights;
    bool ok = true;
    for (size_t k = 0; k < s.reads.size() && ok; ++k) {
      if (!strides[k][oa]) ok = false;
      else if (*strides[k][oa] == 0) continue;
      else if (auto st = relayoutStride(c, s, s.reads[k], s.axes[oa]); st && *st > 1) weights.push_back(k);
      else ok = false;
    }
    if (!ok || weights.empty() || weights.size() == s.reads.size()) continue;
    // the reuse axis: the innermost loop moving some other read and no weight
    std::optional<size_t> ra;
    for (size_t b = s.axes.size(); b-- > 0 && !ra;)
      if (b != oa && movesInputsOnly(strides, weights, b)) ra = b;
    if (!ra) continue;
    int64_t row = s.sizes[*ra];
    // the weight panel one tile streams per pixel row (the lanes times every reduction iteration its weights
    // move along): where it outgrows the L2 and the row is short, every row of the tile reloads it from L3.
    // One vector of lanes instead, upcast over the whole row, reads a quarter of the panel per row and reuses
    // each weight vector across the row (ResNet-50's last 3x3 convolutions, 512 channels at 7x7, a 590 KB
    // panel of 32 lanes against Zen 3's 512 KB L2, one thread: 32 x 3 5.8 ms, 8 x 7 3.6 ms)
    if (lanes > vec && n % vec == 0 && row <= 16 && weightPanelBytes(s, weights, lanes) > target.l2Bytes) lanes = vec, chanCut = n;
    // (one vector of lanes leaves two more registers to the accumulators: a weight vector and a broadcast
    // are all it loads)
    // (a strided window, a read moving along the reuse axis 2-4 times as far as along a reduction loop: a
    // first convolution's, stride 2 or 4, keeps PassTarget::tileLanes. LLVM, 2 threads, alternating: 8 -> 14
    // pixels took Inception v2's 615 -> 702 us, DenseNet-121's 642 -> 714, 6 -> 9 AlexNet's 583 -> 634)
    int64_t accLanes = tileLanes;
    for (size_t k = 0; k < s.reads.size(); ++k)
      if (auto st = strides[k][*ra]; st && *st != 0 && std::find(weights.begin(), weights.end(), k) == weights.end())
        for (const UOp *r : s.reduceRanges)
          if (auto rs = indexStride(s.reads[k]->src(1), r); rs && *rs != 0 && *st % *rs == 0 && *st / *rs >= 2 && *st / *rs <= 4)
            accLanes = target.tileLanes;
    if (target.longRowTileLanes && row > 28 && row % 8 == 0) accLanes = std::min(accLanes, target.longRowTileLanes); // (PassTarget)
    int64_t budget = std::max<int64_t>(1, (accLanes + (lanes <= vec ? 2 * vec : 0)) / (lanes * live));
    // the amount covering most of `span` pixels in whole tiles, the larger on a tie (at least 4, fewer only for
    // a shorter span), and the pixels it covers. A tile of one vector of channels takes a span of up to 16
    // whole (SqueezeNet's classifier, 1000 channels in 8 lanes over rows of 13: 13 pixels, one thread, 3.4 ms
    // where 6 + a border piece took 4.5-4.8; ShuffleNet's grouped 1x1 convolutions, 4 lanes over rows of 14,
    // 0.37 -> 0.27 ms), else up to 8 (16 of ShuffleNet's stem's 112 pixels took 2.5x the 8's time); a tile of
    // several vectors up to what the registers hold (AVX-512's 32 lanes: 14)
    // (LLVM, a tile of one vector of lanes or fewer where the accumulators hold 16 such vectors (AVX-512): up
    // to 16 pixels over a long row, where gcc's build wants 8. ShuffleNet's stem, 24 channels in 8 lanes over
    // rows of 112, 2 threads, in the network, alternating: LLVM 8 -> 16 pixels 183 -> 122 us, C 146 -> 171; the
    // search (--tune) found it on LLVM and kept 8 on C. Not measured with AVX2's 16 registers)
    const bool narrowLlvm = target.name == "llvm" && lanes <= vec && 16 * lanes * live <= target.accumulatorLanes;
    auto fit = [&](int64_t span) {
      int64_t amt = 1, cut = 0;
      int64_t most = lanes <= vec ? (span <= 16 ? span : narrowLlvm ? 16 : 8) : budget;
      // (a short reduction's tile at most 16 pixels, fewer for gcc to build: SqueezeNet, C, 2 threads on Zen
      // 5, alternating, its first convolution (27 terms) 16 x 11 lanes 275-339 us against 306-367 for 16 x 22,
      // gcc 0.12 s against 0.20 for its kernel; the first run's build 0.64-0.66 -> 0.57 s, the network within
      // noise, 3.59-3.68 against 3.63-3.74 ms)
      if (shortReduction) most = std::min<int64_t>(most, 16);
      for (int64_t a = std::min<int64_t>(most, budget); a >= 2; --a)
        if (span >= a && span / a * a > cut && (a >= 4 || cut == 0)) amt = a, cut = span / a * a;
      return std::pair{amt, cut};
    };
    // a row of under 14 keeps its borders in the tile, gated: its border pieces of one pixel would be 2/7 of
    // the work, each streaming the whole weight panel once per pixel (ResNet-50's 7x7 3x3 convolution, 512
    // channels, one thread on Zen 3: 4.5 ms whole, 5.5 split). A longer one has its borders cut off where the
    // interior has as many pixels in whole tiles as the whole row (14x14, 256 channels, 32 x 3 on Zen 3: 6.0 ms
    // gated, 3.7 split), else it too is tiled whole, gated (AVX-512's 14 pixels: 14 of a row of 14 against 12
    // of its interior, 28 of 28 against 26; Sapphire Rapids, one thread, the 3x3 convolutions 256 -> 256 at
    // 14x14 3.05 -> 1.74 ms, 128 -> 128 at 28x28 1.87 -> 1.38)
    auto [amt, cut] = fit(row);
    int64_t lo = 0;
    if (interior[*ra] && row >= 14)
      if (auto [ia, ic] = fit(interior[*ra]->second - interior[*ra]->first); ic >= cut)
        amt = ia, cut = ic, lo = interior[*ra]->first;
    // the other padded loops (a convolution's rows) split into border and interior only where that leaves the
    // interior's tile ungated: where the row keeps its gates in the tile, the rows' conditions join them (one
    // AND per gated load, on a condition constant through the row) and the tile is compiled once, not once per
    // border piece (AlexNet's 3x3 convolutions over rows of 13: three copies of a 12 x 32 tile, 0.14 s of gcc
    // -O2 each). Faster too, 2 threads: AlexNet's 13x13 ones 0.82 -> 0.67 ms (C), 0.76 -> 0.65 (LLVM),
    // ResNet-50's at 7x7 1.24 -> 1.05-1.10 (C), 1.23-1.33 -> 1.05-1.21 (LLVM), at 14x14 0.79 -> 0.73 (C), VGG-19's
    // 3.2 -> 2.8 (C). Not on LLVM for rows of 14 or more: there it unswitches the loop on the rows' condition
    // and keeps the window's columns a loop, seven gated reads a column (ResNet-50 at 14x14 0.84 -> 0.97 ms, at
    // 56x56 0.82 -> 0.98).
    bool rowGated = interior[*ra] && lo == 0 && (row < 14 || target.name != "llvm");
    std::vector<Opt> opts;
    if (chanCut < n) opts.push_back({Opt::Split, oa, 0, chanCut});
    for (size_t a = 0; a < s.axes.size(); ++a)
      if (interior[a] && a != *ra && !rowGated) opts.push_back({Opt::Split, a, interior[a]->first, interior[a]->second});
    if (amt > 1 && (lo > 0 || lo + cut < s.sizes[*ra])) opts.push_back({Opt::Split, *ra, lo, lo + cut});
    // (LLVM, a row tiled whole with its borders gated: cut at whole tiles around its interior, the tiles that
    // hold a border pieces of their own, so that the interior's tile has no gate. LLVM's branch per gated
    // pixel split the tile's body into blocks and spilled its accumulators where gcc's selects did not:
    // VGG-19's 3x3 convolution 256 -> 256 at 56x56, 2 threads, in the network, 8 x 32 lanes 11.9-12.3 -> 9.3-9.5
    // ms, gcc's 14 x 32 9.6-9.8, which the cut does not change; ResNet-50's at 56x56 and 28x28 12% faster, at
    // 14x14 one tile of 7 inside, Inception v2's, 10% slower: two tiles or more)
    else if (target.name == "llvm" && amt > 1 && interior[*ra] && lo == 0 && cut == row && !rowGated) {
      int64_t from = (interior[*ra]->first + amt - 1) / amt * amt, to = interior[*ra]->second / amt * amt;
      if (to - from >= 2 * amt && (from > 0 || to < row)) opts.push_back({Opt::Split, *ra, from, to});
    }
    std::vector<Opt> rowBlocks = chooseRowBlocks(s, strides, weights, oa, *ra, chanCut, lanes, target);
    for (const Opt &b : rowBlocks) opts.push_back(b);
    // a row tiled whole that fills under half the registers (a 7x7 plane's rows of 7 pixels, 32 lanes, where
    // AVX-512 holds 14): k rows at a time (upcast of the rows' loop rb, the loop outside the reuse axis that moves
    // the same reads), the rows no multiple of k a piece of their own. Each weight vector then feeds k times
    // the multiply-adds per load. ResNet-50's 7x7 stage, C, 2 threads, in the network, alternating: its 1x1
    // convolutions 2048 -> 512 447 -> 371-397 us, 512 -> 2048 with the residual 413-420 -> 353-371, its 3x3
    // stride-2 one 1067 -> 926-1015, Inception v2's 7x7 1x1 convolutions 5-17% faster. Not for a window of
    // stride 1 along the row (a read moving along the reuse axis as along a reduction loop: a 3x3's columns):
    // mixed, ResNet-50's 3x3 ones 512 -> 512 +1 to +5%, Inception v2's 9-17% faster, DenseNet-121's 128 -> 32
    // 15-30% slower
    bool window = false;
    for (size_t k = 0; k < s.reads.size(); ++k)
      if (auto st = strides[k][*ra]; st && *st != 0 && std::find(weights.begin(), weights.end(), k) == weights.end())
        for (const UOp *r : s.reduceRanges) window = window || indexStride(s.reads[k]->src(1), r, /*throughSelect=*/true) == st;
    // (on LLVM only for tiles of four vectors of lanes or more: SqueezeNet's and Inception v1's 13x13 ones, 16
    // lanes x 2 rows of 13, ran 13-55% slower there, 13% faster on C)
    bool wide = lanes > (target.name == "llvm" ? 2 * vec : vec);
    if (amt > 1 && lo == 0 && cut == row && row < 14 && wide && rowBlocks.empty() && !window)
      if (int64_t k = (shortReduction ? std::min<int64_t>(budget, 16) : budget) / row; k >= 2) { // (fit's cap)
        std::optional<size_t> rb;
        for (size_t b = *ra; b-- > 0 && !rb;)
          if (b != oa && movesInputsOnly(strides, weights, b)) rb = b;
        bool rowSplit = rb && std::any_of(opts.begin(), opts.end(), [&](const Opt &o) { return o.kind == Opt::Split && o.axis == *rb; });
        if (rb && !rowSplit && s.sizes[*rb] >= k) {
          if (int64_t whole = s.sizes[*rb] / k * k; whole < s.sizes[*rb]) opts.push_back({Opt::Split, *rb, 0, whole});
          opts.push_back({Opt::Upcast, *rb, k});
        }
      }
    if (amt > 1) opts.push_back({Opt::Upcast, *ra, amt});
    opts.push_back({Opt::Upcast, oa, lanes}); // last: the innermost lanes
    // (LLVM, a tile of one vector of lanes or fewer that holds under 8 vectors of accumulators: its reduction loop
    // unrolled by 2, when every reduction ends in it. ShuffleNet's grouped 1x1 convolutions at 7x7, 8 lanes x
    // 7 pixels, 2 threads, in the network: 4-16% faster, each, as the search (--tune) found on LLVM)
    if (narrowLlvm && amt * lanes < 8 * vec)
      if (auto u = innermostUnroll(s, 2)) opts.push_back(*u);
    for (size_t k : weights)
      opts.push_back({Opt::Relayout, oa, ParamArg::slotOf(s.reads[k]->src(0)->arg)});
    return opts;
  }
  return std::nullopt;
}

} // namespace uopc::optimize
