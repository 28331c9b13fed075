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
// This header has no LLVM types: LLVM headers stay inside lib/Targets.
#pragma once

#include "IR/UOp.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace uopc {

struct EmittedLLVMKernel {
  std::string ir;      ///< the module's textual IR, its first line a comment with the summary
  std::string symbol;  ///< the exported function's name (sanitizeCName(name))
  std::string summary; ///< one line saying what the kernel computes
};

/// Renders one kernel CALL as one verified, -O2 optimized LLVM module (see the file comment). Throws
/// uopc::Error naming the node for what it cannot render, as emitCKernel does. `optimize` false leaves
/// the module as built (verified, not optimized): for reading and debugging.
EmittedLLVMKernel emitLLVMKernel(Context &ctx, const UOp *kernelCall, int64_t deviceNum, std::string_view name,
                                 bool optimize = true);

} // namespace uopc
