//===- uopc-emit-c - prints the C of every kernel of a graph (for tests and reading) ===//
// uopc-emit-c GRAPH [--pass-pipeline P] [--allow-custom]: compiles GRAPH for the C target (compile(): P, default
// through kernel-split and codegen, then the rendering tail) and prints the Module's kernels, for each kernel
// CALL and each device of the buffer it writes (tools/common/EmitKernels.h). Copies are listed as comments.
// CUSTOM/CUSTOMI ops (C code in the graph) are refused unless --allow-custom. Exit 1 with
// `uopc-emit-c: error: ...` on bad input.
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
  const char *usage = "usage: uopc-emit-c GRAPH [--pass-pipeline P] [--allow-custom]\n";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--version")) {
      std::cout << versionText("uopc-emit-c") << "\n";
      return 0;
    }
    if (!std::strcmp(argv[i], "--pass-pipeline") && i + 1 < argc) pipeline = argv[++i];
    else if (!std::strcmp(argv[i], "--allow-custom")) options.allowCustom = true;
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
    CompileOptions co;
    co.target = &targetInfo(Target::C);
    co.render = options;
    co.pipeline = parsePipeline(pipeline);
    std::ostringstream out, err;
    Module m = compile(readGraphFile(graph), co, out, err);
    printKernels(m, std::cout, "/* ", " */", [&](const RenderedKernel &k) { return m.renderer->source(k); });
  } catch (const Error &e) {
    std::cerr << "uopc-emit-c: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
