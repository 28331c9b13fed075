//===- LLVMPlugin.h - the LLVM backend as a plugin, loaded on first use ===//
// libLLVM is large: merely mapping it costs every process ~13 ms of start-up (page faults and the dynamic
// loader's relocations), which dominated compiling a small graph for the C target. So the LLVM backend,
// the emitter (LLVM/LLVMEmitter.cpp, for the llvm and ptx targets) and the runner's ORC JIT (LLVM/Jit.cpp),
// is built as its own shared object, libuopc-llvm.so, that links libLLVM; uopc_targets dlopens it the
// first time emitLLVMKernel, checkGpuArch or a KernelJit is used (LLVMPlugin.cpp). A C-target compile or
// run never loads LLVM.
//
// The plugin is found at $UOPC_LLVM_PLUGIN, else beside the running executable (the build directory). The
// table below is the whole interface. The tools link the C++ runtime statically and the plugin (through
// libLLVM) uses the shared one, so no exception crosses it: each entry catches what it throws and returns
// the message in `error` (empty: success), which the caller's side throws again as uopc::Error. Values
// (strings, vectors) do cross: both runtimes allocate with the same malloc.
#pragma once

#include "Targets/LLVMJit.h"
#include "Targets/LLVMTarget.h"

namespace uopc {

struct LLVMPluginApi {
  static constexpr int kVersion = 4;
  int version = kVersion;
  EmittedLLVMKernel (*emit)(Context &, const UOp *, int64_t, std::string_view, const LLVMEmitOptions &,
                            std::string &error) = nullptr;
  std::vector<EmittedLLVMKernel> (*emitMany)(Context &, const std::vector<LLVMKernelRequest> &, std::string &error) = nullptr;
  void (*checkGpuArch)(const std::string &, std::string &error) = nullptr;
  void (*checkHostCpu)(const std::string &, std::string &error) = nullptr;
  void *(*jitCreate)(const std::string &cpu, std::string &error) = nullptr;
  void (*jitDestroy)(void *) = nullptr;
  void (*jitAddModule)(void *, const std::string &, const std::string &, std::string &error) = nullptr;
  std::vector<KernelJit::Entry> (*jitEntries)(void *, const std::vector<KernelJit::EntrySpec> &, std::string &error) = nullptr;
};

/// The loaded plugin's table (loads it once). Throws uopc::Error naming the path when it cannot.
const LLVMPluginApi &llvmPlugin();

} // namespace uopc

/// The plugin's one exported symbol.
extern "C" const uopc::LLVMPluginApi *uopc_llvm_plugin();
