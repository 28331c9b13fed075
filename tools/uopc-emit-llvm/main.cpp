//===- uopc-emit-llvm - prints the LLVM IR of every kernel of a graph (for tests and reading) ===//
// uopc-emit-llvm GRAPH [--pass-pipeline P] [--no-opt] [--grid-on-host | --ptx [--gpu-arch sm_XX] [--nvptx-ir]]:
// compiles GRAPH for the LLVM target (compile(): P, default through kernel-split and codegen, then the
// rendering tail) and prints the Module's kernels, for each kernel CALL and each device of the buffer it
// writes (tools/common/EmitKernels.h): each module emitLLVMKernel builds, optimized at -O2 for this machine
// (what `uopc --target llvm` writes), or with --no-opt as built (verified, not optimized: the emitter's own
// structure, the same on every machine). --grid-on-host: the GPU thread mapping on the host; --ptx: the PTX
// that `uopc --target ptx` writes (--nvptx-ir: the optimized NVPTX module instead). Copies are listed as
// comments. Exit 1 with `uopc-emit-llvm: error: ...` on bad input.
#include "../common/EmitKernels.h"
#include "IR/GraphIO.h"
#include "IR/Version.h"

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
    if (ptx) options.gridOnHost = false; // (--ptx wins over --grid-on-host)
    CompileOptions co;
    co.target = &targetInfo(ptx ? Target::PTX : Target::LLVM); // (its passes see it: gpu-map maps to the PTX grid)
    co.render = options;
    co.pipeline = parsePipeline(pipeline);
    std::ostringstream out, err;
    Module m = compile(readGraphFile(graph), co, out, err);
    printKernels(m, std::cout, "; ", "",
                 [&](const RenderedKernel &k) { return nvptxIR ? k.llvmIR : m.renderer->source(k); });
  } catch (const Error &e) {
    std::cerr << "uopc-emit-llvm: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
