//===- Renderer.cpp - the C and LLVM renderers behind one interface -------===//
#include "Targets/Renderer.h"

#include "Targets/CTarget.h"

namespace uopc {
namespace {

class CRenderer final : public Renderer {
public:
  explicit CRenderer(const RenderOptions &o) : options_{o.allowCustom} {}
  RenderedKernel render(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name) const override {
    EmittedKernel k = emitCKernel(ctx, call, deviceNum, name, options_);
    RenderedKernel r;
    r.source = std::move(k.source);
    r.symbol = std::move(k.symbol);
    return r;
  }
  std::string_view language() const override { return "C"; }
  std::string fileText(const RenderedKernel &k, const UOp *call) const override {
    return k.source + "/* " + kernelSignature(call) + " */\n";
  }

private:
  CEmitOptions options_;
};

class LLVMRenderer final : public Renderer {
public:
  LLVMRenderer(const TargetInfo &target, const RenderOptions &o) : ptx_(target.gpu) {
    options_.gpuArch = o.gpuArch;
    options_.cpu = o.cpu;
    options_.optimize = o.optimize;
    options_.mapping = target.gpu      ? LLVMEmitOptions::Mapping::PTX
                       : o.gridOnHost ? LLVMEmitOptions::Mapping::GridOnHost
                                      : LLVMEmitOptions::Mapping::Loops;
  }
  RenderedKernel render(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name) const override {
    EmittedLLVMKernel k = emitLLVMKernel(ctx, call, deviceNum, name, options_);
    RenderedKernel r;
    r.source = ptx_ ? std::move(k.ptx) : k.ir;
    r.llvmIR = std::move(k.ir);
    r.symbol = std::move(k.symbol);
    r.launch = k.launch;
    return r;
  }
  std::vector<RenderedKernel> renderMany(Context &ctx, const std::vector<Request> &requests) const override {
    std::vector<LLVMKernelRequest> lr;
    for (const Request &r : requests) lr.push_back({r.call, r.deviceNum, r.name, options_});
    std::vector<RenderedKernel> out;
    for (EmittedLLVMKernel &k : emitLLVMKernels(ctx, lr)) {
      RenderedKernel r;
      r.source = ptx_ ? std::move(k.ptx) : k.ir;
      r.llvmIR = std::move(k.ir);
      r.symbol = std::move(k.symbol);
      r.launch = k.launch;
      out.push_back(std::move(r));
    }
    return out;
  }
  std::string_view language() const override { return ptx_ ? "PTX" : "LLVM IR"; }
  std::string fileText(const RenderedKernel &k, const UOp *call) const override {
    return k.source + (ptx_ ? "// " : "; ") + kernelSignature(call) + "\n";
  }

private:
  bool ptx_;
  LLVMEmitOptions options_;
};

std::unique_ptr<Renderer> makeCRenderer(const TargetInfo &, const RenderOptions &o) { return std::make_unique<CRenderer>(o); }
std::unique_ptr<Renderer> makeLLVMRenderer(const TargetInfo &t, const RenderOptions &o) {
  return std::make_unique<LLVMRenderer>(t, o);
}

} // namespace

std::unique_ptr<Renderer> makeRenderer(const TargetInfo &target, const RenderOptions &options) {
  switch (target.id) {
#define TARGET(Id, name, ext, gpu, emitter, machine, desc)                                                           \
  case Target::Id:                                                                                                   \
    return make##emitter##Renderer(target, options);
#include "Targets/Targets.def"
  }
  return nullptr;
}

} // namespace uopc
