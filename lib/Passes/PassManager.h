//===- PassManager.h - named passes, pipelines and instrumentation --------===//
// Passes are functions (Graph&, const PassContext&) -> void registered in one table (Passes.def). A pass
// sees the target the kernels are for (PassTarget) and the options its pipeline entry gave it
// ("linearize{grid=1}"). The manager runs a pipeline and owns every dump and check around the passes:
// printing after a pass, dumping each pass's result to a numbered file, timing, and verifying after
// each pass. Passes never print.
#pragma once

#include "IR/Graph.h"
#include "Targets/Targets.h"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace uopc {

/// The one description of a compile's target: its Targets.def row (name, kernel file extension, GPU or not,
/// emitter, machine) and the machine description that row's machine column names (vector width, caches, GPU
/// limits, probed here or planned: Passes/Machine.cpp). Passes read it; makeRenderer builds the renderer from
/// it; the Module holds it. The defaults describe a CPU.
struct PassTarget {
  const TargetInfo *info = &kTargets[0]; ///< the Targets.def row
  std::string name = "c";     ///< info->name: c, llvm or ptx
  bool gpuGrid = false;       ///< kernels run as a grid of threads (ptx, llvm --grid-on-host)
  int vectorBytes = 32;       ///< the widest vector register the kernels may use
  int64_t maxThreadsPerBlock = 1; ///< GPU: threads in one block (1 on a CPU)
  int64_t maxGridThreads = 1;     ///< GPU: threads in one launch's x dimension times the block (1 on a CPU)
  int hostThreads = 1;        ///< CPU: cores the runner may use
  int64_t l1Bytes = 32 << 10; ///< data cache sizes, as the machine reports them (fallbacks otherwise)
  int64_t l2Bytes = 1 << 20;
  int64_t l2Ways = 8;     ///< the L2's associativity
  int64_t lineBytes = 64; ///< its line size (a power of two)
  /// How many iterations of a register tile's reduction loop the optimizer unrolls (unroll:R:N; 1: none):
  /// 2 for llvm, whose register allocation of an 8x16 tile spills less with two iterations to schedule
  /// (sp_mm_512 5.9 -> 3.0 ms here), 1 for C, where gcc's code was as often slower (sp_bmm_16x256).
  int tileUnroll = 1;
  /// The lanes a vector tile's accumulators may take (a 2D tile: the reuse axis's upcast times the vector
  /// axis's): 128, eight 512-bit or sixteen 256-bit registers; 256 where the kernels are built for this
  /// machine and it has AVX-512's 32 registers (an 8x32 matmul tile, sixteen of them: the encoder's
  /// feed-forward matmul 31 -> 25 ms here).
  int64_t accumulatorLanes = 128;
  /// The lanes (of 4 bytes) the channel tile's accumulators may take: all the vector registers but four
  /// (for the weights' vectors and the broadcast input): 448 with AVX-512 (28 of 32 64-byte registers), 96
  /// with AVX2 (12 of 16 32-byte registers), the default where the kernels are built for another CPU.
  int64_t tileLanes = 96;
  /// The lanes a channel tile may take whose reads have no condition that moves along its output loops (no
  /// border gate in the tile; a concatenation's seam, a condition on the reduction alone, is cut by linearize):
  /// tileLanes, but all of AVX-512's 448 on llvm too, whose cap of 256 (Machine.cpp) is for gated tiles.
  int64_t ungatedTileLanes = 96;
  /// The fewest pixels a channel tile of several vectors of lanes must leave room for (ChannelTile.cpp): 3, but 2
  /// on llvm with AVX2, whose tiles take 64 lanes (Machine.cpp).
  int64_t tileLeastPixels = 3;
  /// The lanes a channel tile may take over a row of more than 28 pixels that 8 divides (ChannelTile.cpp), where
  /// that is fewer than tileLanes: 256 on C with AVX-512 (8 pixels x 32 lanes, not 14), 0 (no cap) elsewhere
  /// (Machine.cpp).
  int64_t longRowTileLanes = 0;
  /// The ops the target's renderer does not spell: the decompose pass writes them with ops it has
  /// (THREEFRY on llvm and ptx; the C target has a helper for it).
  std::vector<Op> lacks;
  /// The target for `--target NAME` (with --grid-on-host for llvm, --cpu CPU), from the target registry
  /// (Targets/Targets.def: its machine description, its emitter) and this machine's probe (Passes/Machine.cpp).
  static PassTarget forTarget(std::string_view name, bool gridOnHost = false, std::string_view cpu = "native");
};

/// A pipeline entry's options: "flag{key=value,key=value}".
using PassOptions = std::map<std::string, std::string, std::less<>>;

struct PassContext {
  const PassTarget &target;
  const PassOptions &options;
  /// The value of an option the pass declared, or `fallback`.
  std::string_view option(std::string_view key, std::string_view fallback = {}) const;
  /// An integer option; throws Error naming the pass when it is not an integer in [lo, hi].
  int64_t intOption(std::string_view key, int64_t fallback, int64_t lo, int64_t hi) const;
  std::string_view pass;
};

using PassFn = void (*)(Graph &, const PassContext &);

struct PassInfo {
  std::string_view flag;
  PassFn run;
  bool inDefault;                 ///< part of the default pipeline
  bool inRenderingTail;           ///< run before rendering when a pipeline left it out (renderingTail())
  std::string_view options;       ///< the option keys it takes, space-separated ("" for none)
  std::string_view description;
};

/// One entry of a pipeline: a pass and its options.
struct PipelineEntry {
  const PassInfo *pass = nullptr;
  PassOptions options;
  PipelineEntry(const PassInfo *p, PassOptions o = {}) : pass(p), options(std::move(o)) {} // NOLINT: implicit
};

/// Every registered pass, in registry order.
const std::vector<PassInfo> &allPasses();
const PassInfo *findPass(std::string_view flag);
/// The default pipeline: the registered passes marked default, in order.
std::vector<std::string> defaultPipeline();
/// Parses "a,b{key=value,key=value},c"; throws Error naming an unknown pass or option. Empty text is
/// the empty pipeline.
std::vector<PipelineEntry> parsePipeline(std::string_view text);

/// How the manager prints or dumps a graph: the readable text form (IR/AsmPrinter.h) or JSON (format v1,
/// which reads back in).
enum class IRFormat { Text, Json };

struct PassManagerOptions {
  bool printAfterAll = false;
  std::vector<std::string> printAfter; ///< pass flags
  bool printChanged = false;           ///< with a print option: skip passes that left the graph as it was
  std::string dumpDir;                 ///< non-empty: write NN-<pass>.json (.txt for text) after every pass
  /// --print-ir-format; unset: text for the print options, JSON for --dump-dir. Both read back in: a text
  /// dump is printed in full (AsmOptions::full()).
  std::optional<IRFormat> format;
  /// --print-ir-full: the print options elide nothing either, so that what they print reads back.
  bool printFull = false;
  bool timePasses = false;
  bool verifyEach = false;
  /// Called with each pass's flag and the graph it is about to run on (analyses such as --stats).
  std::function<void(std::string_view, const Graph &)> beforePass;
  /// Called with each pass's flag, the graph it left and whether it changed the graph (uopc --viz).
  std::function<void(std::string_view, const Graph &, bool)> afterPass;
};

/// Runs `pipeline` on `g`. Printing goes to `out`, timings to `err`. Throws Error from a pass.
void runPipeline(Graph &g, const std::vector<PipelineEntry> &pipeline, const PassManagerOptions &opts,
                 std::ostream &out, std::ostream &err, const PassTarget &target = PassTarget{});

/// The rendering tail: the passes the targets need before they render (Passes.def's Render column, in
/// registry order: pack, schedule, lower-index, commit-weak, decompose, gpu-map, group-reduce, linearize).
std::vector<const PassInfo *> renderingTail();

/// Runs what of the rendering tail g still needs for `target`: the schedule pass when g has no current
/// schedule (Passes/Schedule.h: currentSchedule; only `withSchedule`: the emit tools render without one) and,
/// when some kernel CALL of g is still a SINK (a pipeline that stopped before linearize), the passes `ran` (the
/// pipeline that ran) left out: pack (the packs optimize recorded; before the schedule) and the per-kernel
/// passes; those it has ran with the options it gave them. A no-op on a graph
/// the default pipeline left, and for the kernels on one whose kernels are all LINEAR (what
/// --print-after=linearize printed renders as it is).
void runRenderingTail(Graph &g, const PassTarget &target, const std::vector<PipelineEntry> &ran = {},
                      bool withSchedule = true);

/// One kernel CALL through the rendering tail's per-kernel passes for `target` (not pack, which adds kernels;
/// linearize{threads=0}: no CPU thread split),
/// in the caller's Context; a CALL whose body is not a SINK is returned as it is. For tools and tests that
/// build kernels by hand.
const UOp *lowerKernelForRendering(Context &c, const UOp *call, const PassTarget &target);

} // namespace uopc
