//===- Renderer.cpp - the C and LLVM renderers behind one interface -------===//
#include "Targets/Renderer.h"
#include "Passes/PassManager.h"

#include "Targets/CTarget.h"

namespace uopc {
namespace {

class CRenderer final : public Renderer {
public:
  explicit CRenderer(const RenderOptions &o) : options_{o.allowCustom} {}
  RenderedKernel render(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name) const override {
    EmittedKernel k = emitCKernel(ctx, call, deviceNum, name, options_);
    RenderedKernel r;
    r.prelude = std::move(k.prelude);
    r.declaration = std::move(k.declaration);
    r.body = std::move(k.body);
    r.summary = std::move(k.summary);
    r.signature = kernelSignature(call);
    r.symbol = std::move(k.symbol);
    return r;
  }
  std::string_view language() const override { return "C"; }
  std::string source(const RenderedKernel &k) const override { return k.prelude + "\n" + cFunction(k.declaration, k.body); }
  std::string fileText(const RenderedKernel &k) const override { return source(k) + "/* " + k.signature + " */\n"; }

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
    return pieces(emitLLVMKernel(ctx, call, deviceNum, name, options_), call);
  }
  std::vector<RenderedKernel> renderMany(Context &ctx, const std::vector<Request> &requests) const override {
    std::vector<LLVMKernelRequest> lr;
    for (const Request &r : requests) lr.push_back({r.call, r.deviceNum, r.name, options_});
    std::vector<EmittedLLVMKernel> emitted = emitLLVMKernels(ctx, lr);
    std::vector<RenderedKernel> out;
    for (size_t i = 0; i < emitted.size(); ++i) out.push_back(pieces(std::move(emitted[i]), requests[i].call));
    return out;
  }
  std::string_view language() const override { return ptx_ ? "PTX" : "LLVM IR"; }
  std::string source(const RenderedKernel &k) const override { return k.body; }
  std::string fileText(const RenderedKernel &k) const override { return k.body + (ptx_ ? "// " : "; ") + k.signature + "\n"; }

private:
  /// A module is one piece (the body): LLVM prints it whole.
  RenderedKernel pieces(EmittedLLVMKernel k, const UOp *call) const {
    RenderedKernel r;
    r.body = ptx_ ? std::move(k.ptx) : k.ir;
    r.llvmIR = std::move(k.ir);
    r.summary = std::move(k.summary);
    r.signature = kernelSignature(call);
    r.symbol = std::move(k.symbol);
    r.launch = k.launch;
    return r;
  }
  bool ptx_;
  LLVMEmitOptions options_;
};

std::unique_ptr<Renderer> makeCRenderer(const TargetInfo &, const RenderOptions &o) { return std::make_unique<CRenderer>(o); }
std::unique_ptr<Renderer> makeLLVMRenderer(const TargetInfo &t, const RenderOptions &o) {
  return std::make_unique<LLVMRenderer>(t, o);
}

} // namespace

std::unique_ptr<Renderer> makeRenderer(const PassTarget &t, const RenderOptions &options) {
  const TargetInfo &target = *t.info;
  switch (target.id) {
#define TARGET(Id, name, ext, gpu, emitter, machine, desc)                                                           \
  case Target::Id:                                                                                                   \
    return make##emitter##Renderer(target, options);
#include "Targets/Targets.def"
  }
  return nullptr;
}

} // namespace uopc
