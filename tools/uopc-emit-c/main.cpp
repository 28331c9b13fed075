//===- uopc-emit-c - prints the C of every kernel of a graph (for tests and reading) ===//
// uopc-emit-c GRAPH [--pass-pipeline P] [--allow-custom]: runs P (default: through kernel-split and
// codegen) and prints, for each kernel CALL and each device of the buffer it writes, the C that emitCKernel
// renders. Copies are listed as comments. CUSTOM/CUSTOMI ops (C code in the graph) are refused unless
// --allow-custom. Exit 1 with `uopc-emit-c: error: ...` on bad input.
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
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--version")) {
      std::cout << versionText("uopc-emit-c") << "\n";
      return 0;
    }
    if (!std::strcmp(argv[i], "--pass-pipeline") && i + 1 < argc) pipeline = argv[++i];
    else if (!std::strcmp(argv[i], "--allow-custom")) options.allowCustom = true;
    else if (argv[i][0] == '-') {
      std::cerr << "usage: uopc-emit-c GRAPH [--pass-pipeline P] [--allow-custom]\n";
      return 2;
    } else graph = argv[i];
  }
  if (graph.empty()) {
    std::cerr << "usage: uopc-emit-c GRAPH [--pass-pipeline P] [--allow-custom]\n";
    return 2;
  }
  try {
    Graph g = readGraphFile(graph);
    std::ostringstream out, err;
    std::vector<PipelineEntry> ran = parsePipeline(pipeline);
    PassTarget passTarget = PassTarget::forTarget("c");
    runPipeline(g, ran, {}, out, err, passTarget);
    runRenderingTail(g, passTarget, ran, /*withSchedule=*/false);
    std::unique_ptr<Renderer> renderer = makeRenderer(targetInfo(Target::C), options);
    int n = 0;
    for (const UOp *u : toposort(g.root)) {
      if (u->op != Op::CALL) continue;
      if (u->src(0)->op == Op::COPY) {
        std::cout << "/* copy " << n++ << " (run by the runner) */\n";
        continue;
      }
      if (!kernelSink(u)) continue;
      const UOp *raw = u->src(1);
      while (raw->op == Op::AFTER) raw = raw->src(0);
      size_t nd = std::max<size_t>(1, ParamArg::decode(raw->arg).devices.size());
      for (size_t d = 0; d < nd; ++d) {
        RenderedKernel k = renderer->render(*g.ctx, u, static_cast<int64_t>(d), "k" + std::to_string(n) + (nd > 1 ? "_dev" + std::to_string(d) : ""));
        std::cout << renderer->source(k) << "\n";
      }
      ++n;
    }
  } catch (const Error &e) {
    std::cerr << "uopc-emit-c: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
