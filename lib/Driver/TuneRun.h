//===- TuneRun.h - uopc --tune: a kernel's steps built, filled, run and checked outside uopc-run ===//
// What the search (Driver/Tune.cpp) needs to run a candidate: the steps of one kernel of a compiled Module (the
// kernel and the packs and re-layouts it adds) built as uopc-run builds them (LLVM IR: JIT; C: the C compiler
// with uopc-run's flags, loaded with dlopen), buffers filled with seeded values, a run on uopc-run's pool in its
// chunks, blocked buffers re-laid out, outputs compared within the dtype's tolerance, weights flushed.
#pragma once

#include "Driver/Compile.h"
#include "IR/Types.h"
#include "Passes/Schedule.h"
#include "Runtime/KernelCache.h"
#include "Runtime/ThreadPool.h"
#include "Targets/LLVMJit.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace uopc::tunerun {

/// A loaded shared object of C kernels, unloaded with it.
struct SharedObject {
  void *handle = nullptr;
  SharedObject() = default;
  SharedObject(const SharedObject &) = delete;
  SharedObject &operator=(const SharedObject &) = delete;
  ~SharedObject();
};

/// A buffer of a kernel's arguments, the same in the reference and in every candidate: a parameter by slot,
/// an intermediate by the slot kernel-split gave it (a pack's buffer, which only a candidate has, is new).
using BufKey = std::pair<bool, int64_t>;

/// A buffer's bytes, 64-byte aligned, and its dtype.
struct Mem {
  std::vector<unsigned char> raw;
  size_t bytes = 0;
  DType dtype = DType::Void;
  unsigned char *data() { return raw.data() + ((64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) % 64); }
  void resize(size_t n) {
    bytes = n;
    raw.assign(n + 64, 0);
  }
  Mem() = default;
  // (a copy aligns its own block: the contents are copied from data(), not from raw)
  Mem(const Mem &o) : dtype(o.dtype) {
    resize(o.bytes);
    std::memcpy(data(), const_cast<Mem &>(o).data(), bytes);
  }
  Mem &operator=(const Mem &o) {
    if (this != &o) {
      dtype = o.dtype;
      resize(o.bytes);
      std::memcpy(data(), const_cast<Mem &>(o).data(), bytes);
    }
    return *this;
  }
};

/// Seeded random contents: floats in [0.5, 1.5) (positive: a row's sum that a kernel divides by is not near
/// zero, where the rounding of partial sums would be magnified past any tolerance), integers in [0, 8), bools
/// 0 or 1; other dtypes zero.
void fill(Mem &m, const BufKey &key);

/// Whether `got` matches `want` (n bytes of dtype dt): floats within the dtype's tolerance of the reference,
/// relative to the element plus the buffer's largest magnitude (an element near zero after a cancellation,
/// layernorm's x - mean, keeps the absolute error of the large values it came from: a partial sum's rounding,
/// 4e-6 on outputs of 1.8, is 2e-4 of an element of 0.02); the rest bit for bit.
bool matches(const unsigned char *got, const unsigned char *want, size_t bytes, DType dt);

/// Some steps of a compiled Module (a kernel and the packs it adds) JIT-compiled, with where their
/// arguments are.
struct Steps {
  std::unique_ptr<KernelJit> jit;         ///< LLVM IR kernels: in-process
  std::unique_ptr<SharedObject> object;   ///< C kernels: built by the C compiler as uopc-run builds them
  struct One {
    KernelJit::Entry entry = nullptr;
    std::vector<BufKey> args;
    int64_t parallel = 0;
    std::vector<std::pair<int64_t, int64_t>> parallelWork; ///< (manifest::Step's)
    bool splitShares = false;                               ///< (manifest::Step's)
    bool once = false;
  };
  std::vector<One> steps;
  std::map<BufKey, std::pair<size_t, DType>> sizes; ///< every argument's bytes and dtype
  std::set<BufKey> written;                         ///< the arguments a step writes
  std::set<BufKey> onceWritten;                     ///< the arguments a once step writes (re-laid-out weights, packs)
  /// The arguments the blocked-layout pass stores in blocks of channels: (lanes L, plane elements P).
  std::map<BufKey, std::pair<int64_t, int64_t>> blocked;
  /// The buffers only these steps have (a pack's), their own: another candidate's of the same slot may be of
  /// another size.
  std::map<BufKey, Mem> own;
};

/// The steps of kernel `name` in m's schedule: its own and the ones optimize added for it (NAME_packS,
/// NAME_relayoutS), in order.
std::vector<size_t> stepsOf(const Schedule &s, const std::string &name);

/// Renders steps `which` of m and compiles them: LLVM IR through the JIT; C with the C compiler, with the
/// flags uopc-run builds with (Runtime/KernelCache.h), in a directory of its own under `scratch`. Throws Error
/// (the target refuses a kernel, a symbolic size, the compiler fails, or with `buildSeconds` > 0 the C compiler
/// runs longer than that: stopped).
Steps prepare(Module &m, const std::vector<size_t> &which, const std::string &cpu, const fs::path &scratch,
              double buildSeconds = 0);

/// The buffers of `mem` that g's steps take in blocks of channels, from planes to blocks (`toBlocked`) or back:
/// the reference and the candidates agree on the contents in planes.
void relayoutBlocked(const Steps &g, std::map<BufKey, Mem> &mem, bool toBlocked);

/// Runs the steps once (`once` steps only when `withOnce`) on their own buffers and those of `mem`. With
/// `stepNs` (one entry per step), each step's nanoseconds lower it where they are fewer.
void runSteps(Steps &g, std::map<BufKey, Mem> &mem, ThreadPool &pool, bool withOnce, std::vector<double> *stepNs = nullptr);

/// Flushes from every cache (x86: clflush, line by line) what a network reads cold: the graph's parameters the
/// steps read and what their once steps wrote from them (re-laid-out weights, packed panels); the input
/// activations, which the layer before just wrote, stay where they are. Elsewhere: nothing.
void flushWeights(Steps &g, std::map<BufKey, Mem> &work);

} // namespace uopc::tunerun
