//===- Viz.h - uopc --viz: one self-contained HTML page of the whole pipeline ===//
// The recorder keeps the root of the graph as the input had it and as every pass left it: UOps are
// immutable and live as long as the graph's Context, so a pass's result is one pointer and recording costs
// nothing. vizHtml() then writes one HTML file with a pane per pass. Each pane's graph is laid out here, at
// compile time, by our own layered (Sugiyama-style) layout: no Graphviz, nothing to install, the same
// bytes for the same input. The page's script only draws what it is given (SVG, one pane at a time), and
// loads nothing: no external scripts, fonts, links or requests. docs/viz.md describes the page.
#pragma once

#include "Driver/Compile.h"
#include "IR/Graph.h"

#include <string>
#include <string_view>
#include <vector>

namespace uopc {

/// The graphs of a pipeline run, in order: the input first, then one per pass.
class VizRecorder {
public:
  struct Step {
    std::string name;  ///< "input" or the pass's flag
    const UOp *root;   ///< the graph after the step (a node of the recorded graph's Context)
    bool changed;      ///< the pass changed the graph (the input: true)
  };
  /// Records the graph as it is now. Every call must be on the same Graph (the same Context).
  void record(std::string_view name, const Graph &g, bool changed) { steps_.push_back({std::string(name), g.root, changed}); }
  const std::vector<Step> &steps() const { return steps_; }

private:
  std::vector<Step> steps_;
};

/// One kernel's source as the target renders it.
struct VizKernelSource {
  const UOp *body = nullptr; ///< the kernel SINK (the CALL's src 0) in the final graph
  std::string device;        ///< the device of the first step that runs it
  std::string text;
};

/// What the page says about how it was made.
struct VizInfo {
  std::string input;    ///< the graph's file name
  std::string target;   ///< c, llvm or ptx
  std::string language; ///< of the kernel sources: "C", "LLVM IR", "PTX"
  std::string note;     ///< why there are no kernel sources, when there are none
  std::string failure;  ///< the error of the pass that stopped the pipeline (the page shows those before it)
};

/// Throws Error when `file` cannot be written as a page (its directory is missing, or it is a directory):
/// the driver asks before doing any work.
void checkVizPath(const std::string &file);

/// Writes the page of `rec` to `file` (atomically), with each kernel's source as the Module rendered it
/// (renderKernels: a kernel's box shows the source of the file its first step runs) where the final graph is
/// a kernel graph the target renders. `failure`: the message of the pass that threw, if one did (the page then
/// shows the passes before it and says which failed); m.notRendered: why the kernels cannot be rendered (the
/// rendering tail failed on a graph that is not a kernel graph).
void writeVizPage(const std::string &file, const std::string &input, const Module &m, const VizRecorder &rec,
                  const std::string &failure = "");

/// Most nodes of one region (the top level or one kernel) the page lays out and draws; a larger region is
/// listed with its op counts only (a pane of a million nodes is not something to look at).
inline constexpr size_t kVizMaxRegionNodes = 50000;

/// The page: every recorded step of `g` (g.ctx holds their nodes), kernels as boxes that open into their own
/// graph beside their source.
std::string vizHtml(const Graph &g, const VizRecorder &rec, const std::vector<VizKernelSource> &sources,
                    const VizInfo &info);

} // namespace uopc
