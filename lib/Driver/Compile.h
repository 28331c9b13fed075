//===- Compile.h - compile(Graph, CompileOptions) -> Module: the one entry point ===//
// compile() runs the pipeline and the rendering tail (Passes.def's Render column: the schedule, then what
// rendering needs that the pipeline left out) and returns the Module: the final graph, its schedule (built once,
// by the schedule pass), the target, and, after renderKernels(), each distinct kernel rendered once with the
// manifest's artifacts. The outputs (the kernel directory and its manifest, --emit library, --emit graph, --stats)
// are writers over a Module (Driver.cpp); --viz records the passes through the instrumentation hooks.
#pragma once

#include "Driver/Manifest.h"
#include "IR/Graph.h"
#include "Passes/PassManager.h"
#include "Passes/Schedule.h"
#include "Targets/Renderer.h"
#include "Targets/Targets.h"

#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace uopc {

struct CompileOptions {
  const TargetInfo *target = &kTargets[0];
  RenderOptions render;
  std::vector<PipelineEntry> pipeline;  ///< the passes to run (the driver's default: defaultPipeline())
  PassManagerOptions instrumentation;   ///< printing, dumps, timing, verification, hooks
  bool renderingTail = true;            ///< false: the graph the pipeline left, as it is (--emit graph)
  bool tailMayFail = false;             ///< a tail that throws is noted in Module::notRendered (--viz alone)
  /// Called with the graph as it was when a pass threw, before compile rethrows (--viz's page of a failure).
  std::function<void(const Graph &, const std::string &)> onFailure;
};

/// A compiled graph.
struct Module {
  Graph graph;
  const TargetInfo *target = &kTargets[0];
  RenderOptions render;
  PassTarget passTarget;
  std::string notRendered; ///< why the rendering tail could not run (only with tailMayFail)
  /// Per schedule step (copies: empty): its kernel file and symbol, GPU launches (renderKernels fills them in).
  std::vector<KernelArtifact> artifacts;
  /// Each distinct kernel rendered once (renderKernels): its file, relative to the output directory, and text.
  std::vector<std::pair<std::string, std::string>> kernelFiles;

  /// The schedule pass's plan of the final graph (null for a graph the tail did not run on).
  const Schedule *schedule() const { return currentSchedule(graph); }
  /// manifest.json's text.
  std::string manifestJson() const;
};

/// Runs o.pipeline and the rendering tail on g for o.target. Printing goes to `out`, timings to `err`. Throws
/// Error from a pass (after o.onFailure).
Module compile(Graph g, const CompileOptions &o, std::ostream &out, std::ostream &err);

/// Fills m.artifacts from the schedule and, with `files`, renders every kernel step (one source per distinct
/// kernel and device: see Compile.cpp) into m.kernelFiles; without, only reads the GPU launches from the IR.
void renderKernels(Module &m, bool files = true);

} // namespace uopc
