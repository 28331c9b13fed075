//===- Plugin.cpp - libuopc-llvm.so's entry point (Targets/LLVMPlugin.h) --===//
#include "Targets/LLVM/Backend.h"
#include "Targets/LLVMPlugin.h"

#include <new>
#include <stdexcept>
#include <type_traits>

using namespace uopc;
using namespace uopc::llvmbackend;

namespace {

/// f(), with what it throws turned into `error` (and a value-initialized result).
template <typename F> auto guarded(std::string &error, F f) -> decltype(f()) {
  error.clear();
  try {
    return f();
  } catch (const std::bad_alloc &) {
    error = "out of memory";
  } catch (const std::exception &e) {
    error = e.what();
    if (error.empty()) error = "the LLVM backend failed";
  } catch (...) {
    error = "the LLVM backend failed";
  }
  if constexpr (!std::is_void_v<decltype(f())>) return {};
}

} // namespace

extern "C" __attribute__((visibility("default"))) const LLVMPluginApi *uopc_llvm_plugin() {
  static const LLVMPluginApi api = [] {
    LLVMPluginApi a;
    a.emit = [](Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name, const LLVMEmitOptions &o,
                std::string &error) { return guarded(error, [&] { return emitKernel(ctx, call, deviceNum, name, o); }); };
    a.emitMany = [](Context &ctx, const std::vector<LLVMKernelRequest> &requests, std::string &error) {
      return guarded(error, [&] { return emitKernels(ctx, requests); });
    };
    a.checkGpuArch = [](const std::string &arch, std::string &error) {
      guarded(error, [&] { llvmbackend::checkGpuArch(arch); });
    };
    a.checkHostCpu = [](const std::string &cpu, std::string &error) {
      guarded(error, [&] { llvmbackend::checkHostCpu(cpu); });
    };
    a.jitCreate = [](const std::string &cpu, std::string &error) {
      return guarded(error, [&]() -> void * { return new JitEngine(cpu); });
    };
    a.jitDestroy = [](void *e) { delete static_cast<JitEngine *>(e); };
    a.jitAddModule = [](void *e, const std::string &ir, const std::string &what, std::string &error) {
      guarded(error, [&] { static_cast<JitEngine *>(e)->addModule(ir, what); });
    };
    a.jitEntries = [](void *e, const std::vector<KernelJit::EntrySpec> &specs, std::string &error) {
      return guarded(error, [&] { return static_cast<JitEngine *>(e)->entries(specs); });
    };
    return a;
  }();
  return &api;
}
