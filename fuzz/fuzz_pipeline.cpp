//===- fuzz_pipeline - libFuzzer target: reader + the default pipeline + C emission ===//
// A graph that reads and passes the whole pipeline must schedule and render as C for every kernel step;
// every failure on the way must be a uopc::Error. The same graph also goes through the pipeline for the PTX
// target (gpu-map's threads and blocks, group-reduce, decompose, linearize for a grid), not rendered.
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "Passes/PassManager.h"
#include "Passes/Schedule.h"
#include "Targets/CTarget.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uopc::ReadLimits limits;
  limits.maxNodes = 1u << 12;
  limits.maxArgItems = 1u << 12;
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  static const std::vector<uopc::PipelineEntry> pipeline = [] {
    std::vector<uopc::PipelineEntry> p;
    for (const std::string &name : uopc::defaultPipeline()) p.push_back(uopc::findPass(name));
    return p;
  }();
  try {
    uopc::Graph g = uopc::readGraph(bytes, "<fuzz>", limits);
    std::ostringstream out, err;
    uopc::runPipeline(g, pipeline, uopc::PassManagerOptions{}, out, err);
    if (const uopc::Schedule *s = uopc::currentSchedule(g)) // (the schedule pass's plan: the default pipeline keeps it)
      for (const uopc::SchedStep &st : s->steps)
        if (st.kind == uopc::SchedStep::Kind::Kernel)
          (void)uopc::emitCKernel(*g.ctx, st.call, st.deviceNum, "k", uopc::CEmitOptions{});
  } catch (const uopc::Error &) {
  }
  static const uopc::PassTarget ptx = uopc::PassTarget::forTarget("ptx");
  try {
    uopc::Graph g = uopc::readGraph(bytes, "<fuzz>", limits);
    std::ostringstream out, err;
    uopc::runPipeline(g, pipeline, uopc::PassManagerOptions{}, out, err, ptx);
  } catch (const uopc::Error &) {
  }
  return 0;
}
