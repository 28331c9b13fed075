//===- Backend.h - what the LLVM plugin implements (inside libuopc-llvm.so only) ===//
#pragma once

#include "Targets/LLVMJit.h"
#include "Targets/LLVMTarget.h"

#include <memory>

namespace uopc::llvmbackend {

/// LLVMTarget.h's emitLLVMKernel and checkGpuArch, as the plugin implements them.
EmittedLLVMKernel emitKernel(Context &ctx, const UOp *kernelCall, int64_t deviceNum, std::string_view name,
                             const LLVMEmitOptions &options);
std::vector<EmittedLLVMKernel> emitKernels(Context &ctx, const std::vector<LLVMKernelRequest> &requests);
void checkGpuArch(const std::string &arch);
void checkHostCpu(const std::string &cpu);

/// One ORC LLJIT for the host (KernelJit's engine).
class JitEngine {
public:
  explicit JitEngine(const std::string &cpu);
  ~JitEngine();
  void addModule(const std::string &irText, const std::string &what);
  std::vector<KernelJit::Entry> entries(const std::vector<KernelJit::EntrySpec> &specs);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace uopc::llvmbackend
