//===- Machine.cpp - the machine descriptions the passes read (PassTarget) ===//
// A target's row in Targets.def names its machine description (Host or Gpu) and its emitter; forTarget builds the
// PassTarget from them: the one model of the target the passes see. The host's facts are probed here (and
// nowhere else): cores, data caches and ways (sysconf, where plausible; fallbacks otherwise; $UOPC_L2_BYTES), AVX-512's
// registers.
#include "Passes/PassManager.h"

#include "IR/Error.h"
#include "Targets/Targets.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iterator>
#include <string_view>
#include <thread>

#include <unistd.h>

namespace uopc {
namespace {

/// This machine: the runner's cores and the data caches it reports (also what a GPU target keeps: the host's
/// figures are never read there).
void describeHost(PassTarget &t) {
  unsigned hw = std::thread::hardware_concurrency();
  t.hostThreads = hw ? static_cast<int>(hw) : 1;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE); l1 >= (4 << 10) && l1 <= (16 << 20)) t.l1Bytes = l1;
  if (long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 >= (16 << 10) && l2 <= (1 << 30)) t.l2Bytes = l2;
  if (long w = sysconf(_SC_LEVEL2_CACHE_ASSOC); w >= 1 && w <= 64) t.l2Ways = w;
  if (long l = sysconf(_SC_LEVEL2_CACHE_LINESIZE); l >= 16 && l <= 1024 && (l & (l - 1)) == 0) t.lineBytes = l;
#endif
  // $UOPC_L2_BYTES overrides the L2's size (so that a test's cache blocks do not depend on the machine)
  if (const char *l2 = std::getenv("UOPC_L2_BYTES"); l2 && *l2) {
    std::string_view v(l2);
    int64_t n = 0;
    bool ok = v.size() <= 10 && std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    for (char ch : v) n = ok ? n * 10 + (ch - '0') : 0;
    if (!ok || n < (16 << 10) || n > (int64_t(1) << 30))
      fail("UOPC_L2_BYTES must be a number of bytes from 16384 to 1073741824, not " + quote(v));
    t.l2Bytes = n;
  }
}

/// -march names of CPUs with AVX-512 (where the kernels are built for another CPU than this one)
bool namesAvx512(std::string_view cpu) {
  static constexpr std::string_view kNames[] = {"x86-64-v4",  "skylake-avx512", "cascadelake", "cooperlake",
                                                "cannonlake", "icelake-client", "icelake-server", "tigerlake",
                                                "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids",
                                                "graniterapids-d", "znver4", "znver5"};
  return std::find(std::begin(kNames), std::end(kNames), cpu) != std::end(kNames);
}

/// The vector registers the register tiles are sized for: AVX-512's 32 of 64 bytes where the kernels are
/// built for this machine and it has them (or for a CPU --cpu names, one known to have them), else AVX2's 16 of 32
/// bytes. A tile's accumulators take all the registers but four (the weights' vectors and a broadcast input
/// need the rest): 448 lanes of 4 bytes with AVX-512, 96 with AVX2. Sized for AVX-512 on an AVX2 machine (a
/// 6 x 64 convolution tile: 48 of its 16 registers), gcc keeps the accumulators in memory: this project's
/// AMD EPYC (Zen 3), one thread, ResNet-50 251 -> 164 ms and SqueezeNet, Inception, DenseNet, AlexNet 1.4-1.6x
/// faster with the AVX2 sizes. $UOPC_VECTOR_ISA (avx512 or avx2) overrides the probe of this machine, so that a test's tiles do
/// not depend on the machine that runs it.
void describeVectors(PassTarget &t, std::string_view cpu) {
  bool avx512 = false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (cpu == "native") avx512 = __builtin_cpu_supports("avx512f");
#endif
  if (cpu != "native") avx512 = namesAvx512(cpu);
  else if (const char *isa = std::getenv("UOPC_VECTOR_ISA"); isa && *isa) {
    std::string_view v(isa);
    if (v != "avx512" && v != "avx2") fail("UOPC_VECTOR_ISA must be avx512 or avx2, not " + quote(v));
    avx512 = v == "avx512";
  }
  // (the vector tile: 16 of AVX-512's registers, an 8 x 32 matmul tile; with AVX2 a 4 x 16 tile, 8 of its
  // registers, where 8 x 16 took all 16: sp_mm_1024, one thread on Zen 3, 38.4 -> 33.3 ms)
  t.accumulatorLanes = avx512 ? 256 : 96;
  t.tileLanes = avx512 ? 448 : 96;
}

/// A grid of GPU threads: the launches planned today, 256-thread blocks; 4-byte vectors.
void describeGpu(PassTarget &t) {
  t.gpuGrid = true;
  t.maxThreadsPerBlock = 256;
  t.maxGridThreads = INT32_MAX;
  t.vectorBytes = 4;
}

} // namespace

PassTarget PassTarget::forTarget(std::string_view name, bool gridOnHost, std::string_view cpu) {
  PassTarget t;
  const TargetInfo *info = findTarget(name); // (the driver checked the name; an unknown one gets C's defaults)
  if (info) t.info = info;
  t.name = std::string(name);
  describeHost(t);
  if ((info && info->machine == Machine::Gpu) || gridOnHost) describeGpu(t); // (--grid-on-host: a GPU's mapping)
  const bool llvmEmitter = info && info->emitter == Emitter::LLVM;
  if (llvmEmitter && !t.gpuGrid) t.tileUnroll = 2;
  if (llvmEmitter) t.lacks = {Op::THREEFRY}; // (the LLVM emitter spells no THREEFRY: decompose writes it)
  if (!t.gpuGrid) describeVectors(t, cpu);
  // (LLVM's register allocation spills a channel tile of 28 AVX-512 accumulators that gcc keeps in
  // registers: 16 of them, 256 lanes. ResNet-50's 3x3 convolution 128 -> 128 at 28x28, one thread: 32 x 14
  // 4.8 ms, 32 x 7 2.0. Only where the tile has a border's gates, whose branches split its body: an ungated
  // tile keeps its 26-28 accumulators in registers, PassTarget::ungatedTileLanes. 2 threads, alternating, LLVM,
  // every tile at 448 lanes: SqueezeNet 3.24 -> 2.84 ms, Inception v1 13.3 -> 12.0, DenseNet-121's ungated 3x3
  // and 1x1 convolutions 5-12% each; gated ones 1.3-4x slower: ResNet-50 30.7 -> 45.7, VGG-19 139 -> 187)
  t.ungatedTileLanes = t.tileLanes;
  if (llvmEmitter && !t.gpuGrid) t.tileLanes = std::min<int64_t>(t.tileLanes, 256);
  // (LLVM with AVX2's 16 registers: a channel tile of 8 accumulators, 32 lanes x 2 pixels, where 32 x 3 (12
  // accumulators, 4 weight vectors and a broadcast: 17 registers) spilled. What uopc --tune kept on a Zen 3 for
  // most such kernels of AlexNet, DenseNet-121 and Inception v1 (1.2-2.8x each); as the rule, 2 threads,
  // alternating, in the network: VGG-19 537 -> 360 ms, Inception v2 51.5 -> 32.7, AlexNet 25.3 -> 16.7,
  // ResNet-50 116 -> 107; 16 x 4 instead: ResNet-50 93, the rest less)
  if (llvmEmitter && !t.gpuGrid && t.tileLanes < 256) t.tileLanes = t.ungatedTileLanes = 64, t.tileLeastPixels = 2;
  // (C with AVX-512: a channel tile over a row of more than 28 pixels takes 8 pixels x 32 lanes, not 14. 14 x
  // 32 fills 31 of the 32 registers (28 accumulators, two weight vectors, a broadcast), and gcc loads one
  // pixel a step into a register and broadcasts it from there, on the port of the second multiply-add; 8 x 32
  // streams the weight panel 7 times a row of 56 where 14 x 32 streams it 4 times, and runs faster all the
  // same. On the Intel Xeon VM (AVX-512 with AMX, 2 MiB L2 a core), 2 threads, in the network, alternating:
  // VGG-19's 3x3 convolutions over rows of 224 to 56 8-14% faster each (the network 5.6%), ResNet-50's at
  // 56x56 3-5%, ZFNet-512's first convolution 5%; one thread, ResNet-50's 3x3 64 -> 64 at 56x56 alone: 1.58
  // -> 1.40 ms. Rows of 28 ran as fast either way, and rows of 14 or fewer, one tile of 14 a row against two
  // of 7 (the weights streamed twice), 5-12% slower with 7: they keep 14)
  if (!llvmEmitter && !t.gpuGrid && t.tileLanes > 256) t.longRowTileLanes = 256;
  return t;
}

} // namespace uopc
