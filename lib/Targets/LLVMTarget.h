//===- LLVMTarget.h - the LLVM backend: one kernel CALL as one LLVM IR module ===//
// The same kernels and the same semantics as the C target (CTarget.h): loops from RANGEs, one accumulator
// per REDUCE, validity flags beside every value, gated loads (the index is clamped to 0 and the value
// replaced where the gate does not hold), gated stores (a branch), the per-dtype scalar semantics of
// lib/IR/ScalarOps.h mirrored op by op from the C emitter. Built through LLVM's C++ API (IRBuilder),
// verified with LLVM's verifier, optimized at -O2 by the pass builder (loop and SLP vectorization on) for the
// host, and printed as textual IR (`.ll`).
//
//   define void @<symbol>(ptr noalias %out0, ptr noalias readonly %in1, ..., i64 %var_<name>, ...)
//
// One pointer per CALL argument in argument order, then one i64 per symbolic variable sorted by name
// (kernelVariables()): the C target's ABI, so the runner calls both the same way. float16/bfloat16
// buffers hold their bits (i16), bool buffers one byte. EXP2/LOG2/SIN/POW become LLVM's intrinsics on
// double (the libm functions at run time, as the C target calls them).
//
// GPU mapping (Mapping::PTX, and Mapping::GridOnHost which runs the same mapping on the CPU): each store's
// END ranges of constant size become one global thread id, gid = ctaid.x * ntid.x + tid.x, decomposed
// with the innermost range fastest (consecutive threads touch consecutive elements); a store whose ranges
// cover fewer threads than the launch is guarded by `gid < its count`. Ranges of symbolic size, REDUCE
// ranges and ranges a store does not END stay loops inside the thread: a reduction runs per thread. A
// kernel whose stores could see each other's writes (one store reads a buffer another writes, or reads
// its own output at another index) keeps every loop and runs as one thread: the CPU order is the meaning.
// The launch is 1-D: local = min(threads, 256), global = ceil(threads / local) blocks.
//
// PTX (NVPTX backend, `--gpu-arch sm_XX`): the kernel is an `.entry` with the same arguments as above
// (device pointers, then i64 variables). EXP2/LOG2/SIN/POW call CUDA's libdevice (__nv_exp2 & co, linked
// from $UOPC_LIBDEVICE or the CUDA toolkit's nvvm/libdevice/libdevice.10.bc): a kernel that needs one
// where libdevice is absent is refused with a message saying so.
//
// This header has no LLVM types: LLVM headers stay inside lib/Targets.
#pragma once

#include "IR/UOp.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uopc {

struct LLVMEmitOptions {
  enum class Mapping {
    Loops,      ///< host code: every range a loop (`--target llvm`)
    GridOnHost, ///< host code running the GPU mapping: the function loops over the launch's threads, last first
    PTX,        ///< NVPTX: the GPU mapping, assembled to PTX (`--target ptx`)
  };
  Mapping mapping = Mapping::Loops;
  bool optimize = true;       ///< false: the module as built (verified, not optimized), for reading
  std::string gpuArch = "sm_80"; ///< the NVPTX processor (PTX only)
  std::string cpu = "native";    ///< the host CPU the module is optimized for (host code only: `--cpu`)
};

/// A GPU launch: blocks per grid and threads per block (CUDA gridDim / blockDim).
struct GpuLaunch {
  std::array<int64_t, 3> global{1, 1, 1}, local{1, 1, 1};
};

struct EmittedLLVMKernel {
  std::string ir;      ///< the module's textual IR, its first line a comment with the summary
  std::string ptx;     ///< Mapping::PTX: the PTX assembly, its first line a comment with the summary
  std::string symbol;  ///< the exported function's name (sanitizeCName(name))
  std::string summary; ///< one line saying what the kernel computes
  std::optional<GpuLaunch> launch; ///< the GPU mappings: how to launch it
};

/// Renders one kernel CALL as one verified, -O2 optimized LLVM module (see the file comment), and for
/// Mapping::PTX its PTX. Throws uopc::Error naming the node for what it cannot render, as emitCKernel does.
EmittedLLVMKernel emitLLVMKernel(Context &ctx, const UOp *kernelCall, int64_t deviceNum, std::string_view name,
                                 const LLVMEmitOptions &options = {});

/// One kernel of emitLLVMKernels: emitLLVMKernel's arguments.
struct LLVMKernelRequest {
  const UOp *call = nullptr;
  int64_t deviceNum = 0;
  std::string name;
  LLVMEmitOptions options;
};
/// emitLLVMKernel of each request, the same bytes: the modules are built from the graph one after the
/// other, then optimized and printed on one thread per core (LLVM's -O2 pipeline is nearly all of the
/// LLVM target's compile time). Throws uopc::Error for the first kernel, in order, that fails.
std::vector<EmittedLLVMKernel> emitLLVMKernels(Context &ctx, const std::vector<LLVMKernelRequest> &requests);

/// Throws uopc::Error unless `arch` names a processor LLVM's NVPTX backend knows (sm_50 ... sm_90a).
void checkGpuArch(const std::string &arch);
/// Throws uopc::Error unless LLVM knows `cpu` as a CPU of this machine's architecture (`--cpu`).
void checkHostCpu(const std::string &cpu);

} // namespace uopc
