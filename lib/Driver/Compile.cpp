//===- Compile.cpp - the one entry point: a graph to a Module ---------------===//
#include "Driver/Compile.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Records.h"
#include "Passes/Rewrite.h"

#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace uopc {
namespace {

/// A kernel body without its KernelInfo (the kernel's name) and its parameters' names, with its RANGEs
/// renumbered 0, 1, ... in topological order: the same node for kernels that differ only in their names, the
/// names of the weights they read and the numbers rangeify gave their ranges (numbered across the whole graph).
const UOp *canonicalBody(Context &c, const UOp *body) {
  if (body->op == Op::SINK) body = c.make(Op::SINK, body->dtype, body->src());
  if (body->op == Op::LINEAR && body->nsrc > 0) { // LINEAR(SINK, items): both without the name
    std::vector<const UOp *> srcs(body->src().begin(), body->src().end());
    srcs[0] = c.make(Op::SINK, srcs[0]->dtype, srcs[0]->src());
    body = c.make(Op::LINEAR, body->dtype, srcs);
  }
  std::unordered_map<const UOp *, const UOp *> renumbered;
  int64_t n = 0;
  for (const UOp *u : toposort(body)) {
    if (u->op == Op::PARAM && u->arg && u->arg->kind == ArgKind::Record && u->arg->field("name")) {
      // (a parameter's name: no part of the function; the weights of a network's repeated layers)
      ParamArg pa = ParamArg::decode(u->arg);
      pa.name.reset();
      renumbered[u] = c.make(Op::PARAM, u->dtype, u->src(), pa.encode(c), u->tag);
      continue;
    }
    if (u->op != Op::RANGE || !u->arg || u->arg->kind != ArgKind::Tuple || u->arg->count == 0) continue;
    std::vector<const Arg *> elems(u->arg->elems().begin(), u->arg->elems().end());
    elems[0] = c.argInt(n++);
    renumbered[u] = c.make(Op::RANGE, u->dtype, u->src(), c.argTuple(elems), u->tag);
  }
  return renumbered.empty() ? body : substitute(c, body, renumbered);
}

/// Renders every kernel step (one source per kernel and device, `_device_num` bound to the step's) and
/// records the symbol each exports and, for the GPU mappings, the launch linearize put in its IR; each
/// kernel file's text goes to `write` (file, text). With no `write`, only the launches, read from the IR:
/// `--emit manifest` renders nothing.
///
/// Kernels are rendered once per distinct body: a kernel SINK is hash-consed and refers to its buffers by
/// argument slot, so two CALLs of the same SINK up to range numbering (canonicalBody: the same layer of a
/// 12-layer transformer, say) with the same argument dtypes on the same device compute the same function
/// of their arguments; the later steps name the first one's file and symbol (tinygrad's kernel cache).
/// perf_transformer_12L: 96 kernel steps, 7 sources.
void emitKernels(Graph &g, const Schedule &s, const Renderer &renderer, std::vector<KernelArtifact> &artifacts,
                 const std::function<void(const std::string &, const std::string &)> &write) {
  std::map<std::tuple<const UOp *, size_t, int64_t, std::vector<DType>>, size_t> rendered;
  std::vector<std::pair<size_t, size_t>> repeats; // (step, the step whose kernel it calls)
  std::vector<size_t> steps;                      // the kernels to render, rendered together (renderMany)
  std::vector<Renderer::Request> requests;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SchedStep &st = s.steps[i];
    if (st.kind != SchedStep::Kind::Kernel) continue;
    KernelArtifact &a = artifacts[i];
    if (auto launch = kernelLaunch(st.call)) {
      a.global = {launch->first, 1, 1};
      a.local = {launch->second, 1, 1};
    }
    if (!write) continue;
    std::vector<DType> argTypes;
    for (const UOp *arg : st.call->src().subspan(1)) argTypes.push_back(arg->dtype);
    auto [it, isNew] = rendered.try_emplace({canonicalBody(*g.ctx, st.call->src(0)), st.device, st.deviceNum, std::move(argTypes)}, i);
    if (!isNew) {
      repeats.emplace_back(i, it->second);
      continue;
    }
    steps.push_back(i);
    requests.push_back({st.call, st.deviceNum, a.symbol});
  }
  std::vector<RenderedKernel> kernels = requests.empty() ? std::vector<RenderedKernel>{} : renderer.renderMany(*g.ctx, requests);
  for (size_t n = 0; n < steps.size(); ++n) {
    const SchedStep &st = s.steps[steps[n]];
    KernelArtifact &a = artifacts[steps[n]];
    const RenderedKernel &k = kernels[n];
    a.symbol = k.symbol;
    if (k.launch && (k.launch->global != a.global || k.launch->local != a.local))
      fail("kernel " + a.symbol + ": the rendered launch differs from the one in its IR");
    write(a.file, renderer.fileText(k, st.call));
  }
  // a step whose kernel an earlier step rendered names that step's file and symbol
  for (auto [i, first] : repeats) artifacts[i] = artifacts[first];
}

} // namespace

Module compile(Graph g, const CompileOptions &o, std::ostream &out, std::ostream &err) {
  Module m;
  m.graph = std::move(g);
  m.target = o.target;
  m.render = o.render;
  m.passTarget = PassTarget::forTarget(o.target->name, o.render.gridOnHost, o.render.cpu);
  try {
    runPipeline(m.graph, o.pipeline, o.instrumentation, out, err, m.passTarget);
    if (o.renderingTail) {
      try {
        runRenderingTail(m.graph, m.passTarget, o.pipeline);
      } catch (const Error &e) {
        if (!o.tailMayFail) throw;
        m.notRendered = e.what();
      }
    }
  } catch (const Error &e) {
    if (o.onFailure) o.onFailure(m.graph, e.what());
    throw;
  }
  return m;
}

void renderKernels(Module &m, bool files) {
  const Schedule *s = m.schedule();
  if (!s) fail("the graph has no current schedule to render");
  m.artifacts = defaultArtifacts(*s, m.target->extension);
  m.kernelFiles.clear();
  if (!files && !m.target->gpu && !m.render.gridOnHost) return; // (no launches to read)
  std::unique_ptr<Renderer> renderer = makeRenderer(*m.target, m.render);
  std::function<void(const std::string &, const std::string &)> write;
  if (files) write = [&](const std::string &f, const std::string &t) { m.kernelFiles.emplace_back(f, t); };
  emitKernels(m.graph, *s, *renderer, m.artifacts, write);
}

std::string Module::manifestJson() const {
  const Schedule *s = schedule();
  if (!s) fail("the graph has no current schedule: no manifest");
  return uopc::manifestJson(*s, target->id, artifacts, render.cpu);
}

} // namespace uopc
