//===- LLVMPlugin.cpp - loads libuopc-llvm.so; LLVMTarget.h and LLVMJit.h call through it ===//
#include "Targets/LLVMPlugin.h"

#include "IR/Error.h"
#include "IR/Files.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace uopc {

const LLVMPluginApi &llvmPlugin() {
  static std::once_flag once;
  static const LLVMPluginApi *api = nullptr;
  static std::string error;
  std::call_once(once, [] {
    std::string path = pluginPath("UOPC_LLVM_PLUGIN", "libuopc-llvm.so");
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *why = dlerror();
      error = "the LLVM backend cannot be loaded from '" + path + "': " + (why ? why : "unknown error") +
              " (set UOPC_LLVM_PLUGIN to libuopc-llvm.so)";
      return;
    }
    auto get = reinterpret_cast<const LLVMPluginApi *(*)()>(dlsym(h, "uopc_llvm_plugin"));
    if (!get) {
      error = "'" + path + "' is not uopc's LLVM backend (no uopc_llvm_plugin)";
      return;
    }
    const LLVMPluginApi *a = get();
    if (!a || a->version != LLVMPluginApi::kVersion) {
      error = "'" + path + "' is an LLVM backend of another uopc version";
      return;
    }
    api = a; // never dlclosed: its code may run until exit
  });
  if (!api) fail(error);
  return *api;
}

namespace {
/// Throws the plugin's error message, if any, as uopc::Error on this side of the interface.
void rethrow(const std::string &error) {
  if (!error.empty()) fail(error);
}
} // namespace

EmittedLLVMKernel emitLLVMKernel(Context &ctx, const UOp *kernelCall, int64_t deviceNum, std::string_view name,
                                 const LLVMEmitOptions &options) {
  std::string error;
  EmittedLLVMKernel k = llvmPlugin().emit(ctx, kernelCall, deviceNum, name, options, error);
  rethrow(error);
  return k;
}

std::vector<EmittedLLVMKernel> emitLLVMKernels(Context &ctx, const std::vector<LLVMKernelRequest> &requests) {
  std::string error;
  std::vector<EmittedLLVMKernel> k = llvmPlugin().emitMany(ctx, requests, error);
  rethrow(error);
  return k;
}

void checkGpuArch(const std::string &arch) {
  std::string error;
  llvmPlugin().checkGpuArch(arch, error);
  rethrow(error);
}

void checkHostCpu(const std::string &cpu) {
  std::string error;
  llvmPlugin().checkHostCpu(cpu, error);
  rethrow(error);
}

struct KernelJit::Impl {
  void *engine = nullptr;
};

KernelJit::KernelJit(const std::string &cpu) : impl(std::make_unique<Impl>()) {
  std::string error;
  impl->engine = llvmPlugin().jitCreate(cpu, error);
  rethrow(error);
}

KernelJit::~KernelJit() {
  if (impl->engine) llvmPlugin().jitDestroy(impl->engine);
}

void KernelJit::addModule(const std::string &irText, const std::string &what) {
  std::string error;
  llvmPlugin().jitAddModule(impl->engine, irText, what, error);
  rethrow(error);
}

std::vector<KernelJit::Entry> KernelJit::entries(const std::vector<EntrySpec> &specs) {
  std::string error;
  std::vector<KernelJit::Entry> e = llvmPlugin().jitEntries(impl->engine, specs, error);
  rethrow(error);
  return e;
}

} // namespace uopc
