//===- KernelCache.h - C kernels compiled once into a per-user cache of shared objects ===//
// uopc-run builds a C manifest's kernel files, with a generated file of entry points, into one shared
// object with the system C compiler, and keeps it under a SHA-256 content hash of the compiler, flags, entry
// points and every file's name and contents. The cache is refused unless it is this user's own directory,
// writable by no one else, and so is every cached object; a build happens in a private mkdtemp directory
// inside it (files opened O_EXCL|O_NOFOLLOW) and is renamed into place.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace uopc {
namespace fs = std::filesystem;

/// The compiler command: $UOPC_CC, else "cc".
std::string cCompiler();
/// The flags every kernel is compiled with (then its level's, below).
/// C kernels are built for the CPU the manifest names (`uopc --cpu`, default native: -march=native),
/// without errno for math functions (so sqrtf and friends inline) and without trapping math (so
/// `a < b ? b : a` becomes maxps instead of a branch: only floating-point exception flags differ), with
/// floating-point contraction on (-ffp-contract=fast: a multiply feeding an add is one FMA, as the LLVM
/// target's `contract` flags allow; without it a convolution's or matmul's inner loop issues a multiply
/// and an add per term: ResNet-50's 1x1 convolution 256->64 at 56x56, one thread, 25.6 -> 32 GFLOP/s).
/// -fopenmp-simd with UOPC_OMP_SIMD turns a kernel's UOPC_SIMD_LANES marks (loops of independent lanes)
/// into `omp simd` loops and declares libmvec's vector math; no OpenMP runtime is involved.
/// -mprefer-vector-width=512: on a CPU with AVX-512 the vectorizer uses its 64-byte registers (gcc's tuning
/// for Intel's AVX-512 server CPUs prefers 32 bytes); elsewhere it changes nothing. On this project's
/// Sapphire Rapids machine: sp_mm_1024 19.5-20.0 -> 16.2 ms, sp_softmax_2048 2.6-2.9 -> 1.9-2.2 ms, the GPT
/// block 24-26 -> 20.5-21.6 ms, conv2d unchanged (best of 5, the same kernels alternating).
/// --param=avoid-fma-max-bits=0: every multiply feeding an add contracted, whatever the CPU's tuning. gcc 12
/// tunes an AMD Zen (-march=native on Zen 5 is znver3's tuning) to keep a loop's accumulation chains of up to
/// 256-bit vectors a multiply and an add, so that which sums were fused, and their last bits, depended on the
/// CPU and on the vector width gcc picked per loop (a split kernel's pieces against the unsplit one:
/// optimize.test). On this project's Zen 5, 2 threads, 3 alternating rounds: ShuffleNet and ResNet-50 within
/// the rounds' noise (4.2-5.4 against 4.4-4.7 ms, 25-32 against 29-33 ms). clang ignores it (a warning).
inline constexpr const char *kKernelCFlags[] = {"-std=c11",           "-shared",      "-fPIC",
                                                "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd",
                                                "-DUOPC_OMP_SIMD", "-mprefer-vector-width=512",
                                                "-ffp-contract=fast", "--param=avoid-fma-max-bits=0"};
/// The optimization level, per kernel: a register tile (the emitter's kBuildAtO2Line) at -O2, whose lanes
/// `omp simd` vectorizes and whose unrolled outer lanes -O3 only made gcc slower to build; every other kernel
/// at -O2 with the two parts of -O3 its loops need: the vectorizer's dynamic cost model (-O2's very cheap one
/// leaves loops with a reduction or a gather scalar) and loop unswitching (a concatenation's gated reads, each
/// constant along the loop, become plain copies). With the C emitter's unrolled window loops (a pooling
/// window, which -O3 unrolls on its own before it vectorizes) that is -O3's speed at 40% of its build time:
/// SqueezeNet's non-tile kernels in one unit 0.52 s at -O3, 0.21 at these flags.
inline constexpr const char *kTileOptFlags[] = {"-O2"};
inline constexpr const char *kKernelOptFlags[] = {"-O2", "-fvect-cost-model=dynamic", "-funswitch-loops"};
/// The entry points' unit (a trampoline per step: one call, no loops): -O0, which costs a trampoline a few
/// moves against a kernel's run (300 trampolines: 0.23 s of gcc at -O1, 0.11 s at -O0).
inline constexpr const char *kEntryOptFlags[] = {"-O0"};
/// The cache directory of compiled kernels: $XDG_CACHE_HOME/uopc, else $HOME/.cache/uopc, else (no home)
/// the per-user $TMPDIR/uopc-cache-<uid> (TMPDIR defaulting to /tmp). Before use it is created
/// 0700 when missing and refused unless it is this user's directory, writable by no one else; a cached
/// object is loaded only when it is this user's regular file, writable by no one else.
std::string kernelCacheDir();

/// The shared object of `files` (relative to `dir`) and `entry` (C source) built for `cpu`: the cached one,
/// else built into the cache first. Throws Error (a compiler failure shows its log).
fs::path cachedKernelObject(const fs::path &dir, const std::vector<std::string> &files, const std::string &entry,
                            const std::string &cpu);

/// The C of entry point `void uopc_entry_<index>(void **b, const int64_t *v)` calling kernel `symbol` with
/// b[0..nbufs) and v[0..nvars) spread out (declared with void * and int64_t parameters: every pointer has the
/// same representation, so the declaration matches what the emitter wrote): a line declaring the kernel, a
/// line defining the entry.
std::string kernelTrampoline(size_t index, const std::string &symbol, size_t nbufs, size_t nvars);

/// The same shared object built into `into` (a directory of the caller's, private to it) as `into`/kernels.so,
/// outside the cache: uopc --tune's candidates, built once and timed. With `seconds` > 0 the compilers still
/// running after that long are killed and it fails (a candidate whose build alone would spend the search's
/// budget: sp_sum_ax0_4096's 1024 lanes unrolled 16 times, 38 s of gcc). Throws Error.
fs::path buildKernelObject(const fs::path &dir, const std::vector<std::string> &files, const std::string &entry,
                           const std::string &cpu, const fs::path &into, double seconds = 0);

} // namespace uopc
