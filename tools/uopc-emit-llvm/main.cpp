//===- uopc-emit-llvm - prints the LLVM IR of every kernel of a graph (for tests and reading) ===//
// uopc-emit-llvm GRAPH [--pass-pipeline P] [--no-opt] [--grid-on-host | --ptx [--gpu-arch sm_XX] [--nvptx-ir]]:
// runs P (default: through kernel-split and codegen) and prints, for each kernel CALL and each device of
// the buffer it writes, the module emitLLVMKernel builds: optimized at -O2 for this machine (what `uopc
// --target llvm` writes), or with --no-opt as built (verified, not optimized: the emitter's own structure,
// the same on every machine). --grid-on-host: the GPU thread mapping on the host; --ptx: the PTX that
// `uopc --target ptx` writes (--nvptx-ir: the optimized NVPTX module instead). Copies are listed as
// comments. Exit 1 with `uopc-emit-llvm: error: ...` on bad input.
#include "IR/Version.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Records.h"
#include "IR/Kernel.h"
#include "Passes/PassManager.h"
#include "Targets/Renderer.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <sstream>

using namespace uopc;

int main(int argc, char **argv) {
  std::string graph, pipeline = "verify,invalid-pad,multi-lower,reduce-identity,rangeify,kernel-split,codegen";
  RenderOptions options;
  bool ptx = false, nvptxIR = false;
  const char *usage = "usage: uopc-emit-llvm GRAPH [--pass-pipeline P] [--no-opt] [--grid-on-host | --ptx "
                      "[--gpu-arch sm_XX] [--nvptx-ir]]\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--version")) {
      std::cout << versionText("uopc-emit-llvm") << "\n";
      return 0;
    }
    if (!std::strcmp(argv[i], "--pass-pipeline") && i + 1 < argc) pipeline = argv[++i];
    else if (!std::strcmp(argv[i], "--no-opt")) options.optimize = false;
    else if (!std::strcmp(argv[i], "--grid-on-host")) options.gridOnHost = true;
    else if (!std::strcmp(argv[i], "--ptx")) ptx = true;
    else if (!std::strcmp(argv[i], "--nvptx-ir")) nvptxIR = true;
    else if (!std::strcmp(argv[i], "--gpu-arch") && i + 1 < argc) options.gpuArch = argv[++i];
    else if (argv[i][0] == '-') {
      std::cerr << usage;
      return 2;
    } else graph = argv[i];
  }
  if (graph.empty()) {
    std::cerr << usage;
    return 2;
  }
  try {
    Graph g = readGraphFile(graph);
    std::ostringstream out, err;
    std::vector<PipelineEntry> ran = parsePipeline(pipeline);
    if (ptx) options.gridOnHost = false; // (--ptx wins over --grid-on-host)
    const TargetInfo &target = targetInfo(ptx ? Target::PTX : Target::LLVM);
    // the pipeline's passes see the target too (a custom pipeline's gpu-map maps to the PTX grid)
    PassTarget passTarget = PassTarget::forTarget(target.name, options.gridOnHost);
    runPipeline(g, ran, {}, out, err, passTarget);
    runRenderingTail(g, passTarget, ran, /*withSchedule=*/false);
    std::unique_ptr<Renderer> renderer = makeRenderer(target, options);
    int n = 0;
    for (const UOp *u : toposort(g.root)) {
      if (u->op != Op::CALL) continue;
      if (u->src(0)->op == Op::COPY) {
        std::cout << "; copy " << n++ << " (run by the runner)\n";
        continue;
      }
      if (!kernelSink(u)) continue;
      const UOp *raw = u->src(1);
      while (raw->op == Op::AFTER) raw = raw->src(0);
      size_t nd = std::max<size_t>(1, ParamArg::decode(raw->arg).devices.size());
      for (size_t d = 0; d < nd; ++d) {
        RenderedKernel k = renderer->render(*g.ctx, u, static_cast<int64_t>(d),
                                            "k" + std::to_string(n) + (nd > 1 ? "_dev" + std::to_string(d) : ""));
        std::cout << (nvptxIR ? k.llvmIR : renderer->source(k)) << "\n";
      }
      ++n;
    }
  } catch (const Error &e) {
    std::cerr << "uopc-emit-llvm: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
