//===- EmitKernels.h - the emit tools' one writer: a Module's kernels, per CALL ===//
// uopc-emit-c and uopc-emit-llvm compile a graph with compile() (Driver/Compile.h) and print the Module's
// kernels through printKernels: in schedule order, for each kernel CALL and each device of the buffer it
// writes, the source of the kernel that step runs, named after the CALL (k<CALL>, k<CALL>_dev<device> for a
// buffer on several devices; CALLs numbered in execution order, copies included). A kernel the Module renders
// once for several steps (the same body: Compile.cpp's canonicalBody) is printed at the first; a later step
// says which kernel it runs. Copies are listed as comments.
#pragma once

#include "Driver/Compile.h"
#include "IR/Error.h"

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace uopc {

/// Renders m's kernels under the emit tools' names and prints them to `os`, comments opened and closed with
/// `open` and `close`, each kernel as `text` spells it. Throws Error (after the kernels before it are printed)
/// for the first kernel the target cannot render.
inline void printKernels(Module &m, std::ostream &os, const std::string &open, const std::string &close,
                         const std::function<std::string(const RenderedKernel &)> &text) {
  const Schedule *s = m.schedule();
  if (!s) fail("the graph has no current schedule to render");
  std::vector<KernelArtifact> named = defaultArtifacts(*s, m.target.info->extension);
  for (size_t i = 0; i < s->steps.size(); ++i) {
    const SchedStep &st = s->steps[i];
    if (st.kind != SchedStep::Kind::Kernel) continue;
    size_t devices = st.args.empty() ? 1 : s->buffers.at(st.args[0].buffer).devices.size();
    named[i].symbol = "k" + std::to_string(st.callIndex) + (devices > 1 ? "_dev" + std::to_string(st.deviceNum) : "");
  }
  renderKernels(m, named);
  std::vector<bool> printed(m.kernels.size(), false);
  size_t lastCopy = SIZE_MAX;
  for (size_t i = 0; i < s->steps.size(); ++i) {
    const SchedStep &st = s->steps[i];
    if (st.kind == SchedStep::Kind::Copy) {
      if (st.callIndex != lastCopy) os << open << "copy " << st.callIndex << " (run by the runner)" << close << "\n";
      lastCopy = st.callIndex;
      continue;
    }
    if (st.kind == SchedStep::Kind::Allreduce) {
      os << open << "allreduce " << st.callIndex << " (run by the runner)" << close << "\n";
      continue;
    }
    size_t k = m.stepKernel[i];
    const ModuleKernel &mk = m.kernels.at(k);
    if (!mk.error.empty()) fail(mk.error);
    if (printed[k]) {
      os << open << named[i].symbol << ": the kernel " << m.artifacts[i].symbol << " (rendered once)" << close << "\n";
      continue;
    }
    printed[k] = true;
    os << text(mk.pieces) << "\n";
  }
}

} // namespace uopc
