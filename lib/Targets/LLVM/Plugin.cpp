//===- Plugin.cpp - libuopc-llvm.so's entry point (Targets/LLVMPlugin.h) --===//
#include "Targets/LLVM/Backend.h"
#include "Targets/LLVMPlugin.h"

using namespace uopc;
using namespace uopc::llvmbackend;

extern "C" __attribute__((visibility("default"))) const LLVMPluginApi *uopc_llvm_plugin() {
  static const LLVMPluginApi api = [] {
    LLVMPluginApi a;
    a.emit = &emitKernel;
    a.checkGpuArch = &llvmbackend::checkGpuArch;
    a.checkHostCpu = &llvmbackend::checkHostCpu;
    a.jitCreate = [](const std::string &cpu) -> void * { return new JitEngine(cpu); };
    a.jitDestroy = [](void *e) { delete static_cast<JitEngine *>(e); };
    a.jitAddModule = [](void *e, const std::string &ir, const std::string &what) {
      static_cast<JitEngine *>(e)->addModule(ir, what);
    };
    a.jitEntry = [](void *e, const std::string &symbol, size_t nbufs, size_t nvars) {
      return static_cast<JitEngine *>(e)->entry(symbol, nbufs, nvars);
    };
    return a;
  }();
  return &api;
}
