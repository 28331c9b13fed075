//===- Machines.h - LLVM's target machines, the -O2 pipeline, libdevice and PTX output (plugin-internal) ===//
// What the IR emitter (LLVMEmitter.cpp) hands a finished module to: the host's or NVPTX's target machine
// (created once per process / per GPU architecture), the -O2 pass pipeline, CUDA's libdevice for the
// transcendental functions on the GPU, and the NVPTX backend's assembly printer.
#pragma once

#include <string>
#include <vector>

namespace llvm {
class Function;
class Module;
class TargetMachine;
} // namespace llvm

namespace uopc::llvmbackend {

/// The host's target machine (for the data layout, the triple and the cost model of the vectorizers):
/// `cpu` "native" is this machine (its CPU and features), any other name a CPU LLVM knows for the host's
/// architecture ("x86-64-v3", "skylake", ...), with that CPU's features. Cached per name and thread. Throws
/// uopc::Error for a CPU LLVM does not know.
llvm::TargetMachine *hostMachine(const std::string &cpu = "native");
/// LLVM's NVPTX target machine for one processor (cached: one per arch and thread). Throws
/// uopc::Error for an architecture NVPTX does not know.
llvm::TargetMachine *nvptxMachine(const std::string &arch);
/// Links the libdevice functions the module calls (only those) and makes them internal. `users` names
/// the ops that need it, for the message when libdevice is absent.
void linkLibdevice(llvm::Module &m, const llvm::Function *kernel, const std::vector<std::string> &users);
/// The module's PTX assembly.
std::string emitPTX(llvm::Module &m, llvm::TargetMachine *tm);
/// LLVM's -O2 module pipeline with loop and SLP vectorization; `targetPasses` adds the target's own
/// pass-builder callbacks (NVPTX: NVVMReflect for libdevice, address-space inference).
void optimizeO2(llvm::Module &m, llvm::TargetMachine *tm, bool targetPasses, bool o3 = false);

} // namespace uopc::llvmbackend
