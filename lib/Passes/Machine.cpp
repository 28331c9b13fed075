//===- Machine.cpp - the machine descriptions the passes read (PassTarget) ===//
// A target's row in Targets.def names its machine description (Host or Gpu) and its emitter; forTarget builds the
// PassTarget from them: the one model of the target the passes see. The host's facts are probed here (and
// nowhere else): cores, data caches and ways (sysconf, where plausible; fallbacks otherwise), AVX-512's registers.
#include "Passes/PassManager.h"

#include "Targets/Targets.h"

#include <climits>
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
  t.name = std::string(name);
  const TargetInfo *info = findTarget(name); // (the driver checked the name; an unknown one gets C's defaults)
  describeHost(t);
  if ((info && info->machine == Machine::Gpu) || gridOnHost) describeGpu(t); // (--grid-on-host: a GPU's mapping)
  const bool llvmEmitter = info && info->emitter == Emitter::LLVM;
  if (llvmEmitter && !t.gpuGrid) t.tileUnroll = 2;
  if (llvmEmitter) t.lacks = {Op::THREEFRY}; // (the LLVM emitter spells no THREEFRY: decompose writes it)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // AVX-512's 32 registers, where the kernels are built for this machine (another CPU's: the default)
  if (!t.gpuGrid && cpu == "native" && __builtin_cpu_supports("avx512f")) t.accumulatorLanes = 256;
#endif
  return t;
}

} // namespace uopc
