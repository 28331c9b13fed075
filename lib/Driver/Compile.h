//===- Compile.h - compile(Graph, CompileOptions) -> Module: the one entry point ===//
// compile() runs the pipeline and the rendering tail (Passes.def's Render column: the schedule, then what
// rendering needs that the pipeline left out) and returns the Module: the final graph, its schedule (built once,
// by the schedule pass), the target and its renderer, and, after renderKernels(), each distinct kernel rendered
// once, as pieces, with the manifest's artifacts. The outputs (the kernel directory and its manifest, --emit
// library, --emit graph, --stats, --viz's sources) are writers over a Module (Driver.cpp, Library.cpp, Viz.cpp):
// none renders again or parses a kernel's text back; --viz records the passes through the instrumentation hooks.
#pragma once

#include "Driver/Manifest.h"
#include "IR/Graph.h"
#include "Passes/PassManager.h"
#include "Passes/Schedule.h"
#include "Targets/Renderer.h"
#include "Targets/Targets.h"

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace uopc {

struct Module;

struct CompileOptions {
  const TargetInfo *target = &kTargets[0];
  RenderOptions render;
  std::vector<PipelineEntry> pipeline;  ///< the passes to run (the driver's default: defaultPipeline())
  PassManagerOptions instrumentation;   ///< printing, dumps, timing, verification, hooks
  bool renderingTail = true;            ///< false: the graph the pipeline left, as it is (--emit graph)
  bool tailMayFail = false;             ///< a tail that throws is noted in Module::notRendered (--viz alone)
  /// Called with the Module as it was when a pass threw (its graph the one the pass received), before compile
  /// rethrows (--viz's page of a failure).
  std::function<void(const Module &, const std::string &)> onFailure;
};

/// One distinct kernel of a Module, rendered once, in pieces (the outputs join them: Renderer::fileText for
/// its file, Renderer::source for --viz, the C function alone for --emit library).
struct ModuleKernel {
  std::string file;      ///< its kernel file, relative to the output directory
  RenderedKernel pieces; ///< (empty when error is set)
  std::string error;     ///< why the target cannot render it: only this kernel is missing (--viz shows the others)
};

/// A compiled graph.
struct Module {
  Graph graph;
  PassTarget target; ///< the target's row and machine description (PassTarget::forTarget), what the passes read
  RenderOptions render;
  std::shared_ptr<const Renderer> renderer; ///< the target's, made once (compile)
  std::string notRendered; ///< why the rendering tail could not run (only with tailMayFail)
  /// Per schedule step (copies: empty): its kernel file and symbol, GPU launches (renderKernels or planArtifacts).
  std::vector<KernelArtifact> artifacts;
  /// Each distinct kernel rendered once (renderKernels), in the order of the steps that first run them.
  std::vector<ModuleKernel> kernels;
  /// Per schedule step: the index in `kernels` of the kernel it runs (copies: SIZE_MAX).
  std::vector<size_t> stepKernel;
  /// Where each kernel's opts came from, by kernel name (--tune, --tune-db: Driver/Tune.h): the manifest's
  /// "opts_from". Empty: not written.
  std::map<std::string, std::string> optsFrom;

  /// The schedule pass's plan of the final graph (null for a graph the tail did not run on).
  const Schedule *schedule() const { return currentSchedule(graph); }
  /// The manifest of the schedule and artifacts, as uopc-run reads it (its derived fields filled in).
  manifest::Manifest manifestModel() const;
  /// manifest.json's text.
  std::string manifestJson() const;
  /// A kernel file's text: its pieces joined, then its uopc-signature line.
  std::string fileText(const ModuleKernel &k) const { return renderer->fileText(k.pieces); }
  /// The error of the first kernel the target cannot render, or null.
  const std::string *renderError() const;
};

/// A kernel body without its KernelInfo (the kernel's name) and its parameters' names, with its RANGEs
/// renumbered 0, 1, ... in topological order: the same node for kernels that differ only in their names, the
/// names of the weights they read and the numbers rangeify gave their ranges (numbered across the whole graph).
/// renderKernels renders one source per such body; --tune's kernel hash is its text (Driver/Tune.h).
const UOp *canonicalKernelBody(Context &c, const UOp *body);

/// Runs o.pipeline and the rendering tail on g for o.target. Printing goes to `out`, timings to `err`. Throws
/// Error from a pass (after o.onFailure).
Module compile(Graph g, const CompileOptions &o, std::ostream &out, std::ostream &err);

/// Renders every kernel step, one source per distinct kernel and device (see Compile.cpp), into m.kernels and
/// m.stepKernel, and points m.artifacts at their files, symbols and launches. A kernel the target cannot
/// render gets its error (Module::renderError) instead: the others are still rendered. Throws Error when the
/// graph has no current schedule.
void renderKernels(Module &m);
/// renderKernels with the files and symbols `artifacts` gives per schedule step instead of defaultArtifacts's
/// (the emit tools name a kernel after its CALL: k0, k1_dev0, ...).
void renderKernels(Module &m, std::vector<KernelArtifact> artifacts);
/// m.artifacts for a manifest written without its kernels (--emit manifest): each step names its own file,
/// its launch the one linearize put in its IR; nothing is rendered.
void planArtifacts(Module &m);

} // namespace uopc
