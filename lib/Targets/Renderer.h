//===- Renderer.h - one interface over the targets' kernel renderers ------===//
// The one place that picks a target's emitter (Targets.def's emitter column names it) and builds its options:
// compile() makes the Module's renderer with it once (the kernel files, the --viz page and the library all come
// from that one rendering), and the uopc-emit-* tools render through it too. A Renderer turns one linearized
// kernel CALL into pieces (RenderedKernel): its text, its exported symbol and, for the GPU mappings, its
// launch; source() and fileText() join them, the latter with the uopc-signature line in the language's comment
// syntax.
#pragma once

#include "IR/UOp.h"
#include "Targets/LLVMTarget.h" // (GpuLaunch)
#include "Targets/Targets.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

namespace uopc {

struct PassTarget; // (Passes/PassManager.h: the target description a renderer is built from)

/// What the user asked of a target's renderer beyond the target itself (uopc's flags).
struct RenderOptions {
  bool allowCustom = false;      ///< C: render CUSTOM ops, whose C comes from the graph (--allow-custom)
  bool gridOnHost = false;       ///< LLVM: the GPU thread mapping compiled for the host (--grid-on-host)
  bool optimize = true;          ///< LLVM: false: the module as built, verified, not optimized (uopc-emit-llvm --no-opt)
  std::string gpuArch = "sm_80"; ///< PTX: the NVPTX processor (--gpu-arch)
  std::string cpu = "native";    ///< C and LLVM: the CPU the kernels are built for (--cpu)
};

/// One kernel as its target renders it, in the pieces the outputs join, so that none parses a kernel's text
/// back: a kernel file is source() and then the signature line (fileText); --viz shows source(); the library
/// (Driver/Library.h) takes the C function alone, made static, after the helpers of every kernel once.
struct RenderedKernel {
  std::string prelude;     ///< C: the summary comment, the includes and the helpers it calls; LLVM, PTX: empty
  std::string declaration; ///< C: the function's head "void SYMBOL(...)", without linkage; LLVM, PTX: empty
  std::string body;        ///< C: the function's body; LLVM, PTX: the whole module (one piece: LLVM prints it)
  std::string summary;     ///< one line saying what the kernel computes (the source's first comment)
  std::string signature;   ///< kernelSignature of its CALL: the file's last line says it, in a comment
  std::string symbol;      ///< the function it exports
  std::string llvmIR;      ///< the LLVM targets: the module's IR (for PTX, the NVPTX module the PTX came from)
  std::optional<GpuLaunch> launch; ///< the GPU mappings: how to launch it, as the renderer built it
};

class Renderer {
public:
  virtual ~Renderer() = default;
  /// Renders one kernel CALL for the device `deviceNum` names (`_device_num` bound to it), exporting `name`
  /// (sanitized). Throws Error naming the node for what the target cannot render.
  virtual RenderedKernel render(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name) const = 0;
  /// One kernel of renderMany: render's arguments.
  struct Request {
    const UOp *call = nullptr;
    int64_t deviceNum = 0;
    std::string name;
  };
  /// render of each request, in order, the same bytes. The LLVM renderer builds the modules one after the
  /// other and optimizes and prints them on one thread per core (emitLLVMKernels); the C one renders in turn.
  virtual std::vector<RenderedKernel> renderMany(Context &ctx, const std::vector<Request> &requests) const {
    std::vector<RenderedKernel> out;
    for (const Request &r : requests) out.push_back(render(ctx, r.call, r.deviceNum, r.name));
    return out;
  }
  /// The language of its sources, as the viewer names it: "C", "LLVM IR" or "PTX".
  virtual std::string_view language() const = 0;
  /// The kernel's source: its pieces joined (the kernel file without its signature line).
  virtual std::string source(const RenderedKernel &k) const = 0;
  /// What a kernel file holds: the source, then the kernel's uopc-signature line as a comment of the language.
  virtual std::string fileText(const RenderedKernel &k) const = 0;
};

/// The renderer of `target` (the one target description, whose Targets.def row's emitter column picks the
/// factory) with `options`.
std::unique_ptr<Renderer> makeRenderer(const PassTarget &target, const RenderOptions &options);

} // namespace uopc
