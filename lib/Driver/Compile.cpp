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

const UOp *canonicalKernelBody(Context &c, const UOp *body) {
  if (body->op == Op::SINK) body = c.make(Op::SINK, body->dtype, body->src());
  if (body->op == Op::LINEAR && body->nsrc > 0) { // LINEAR(SINK, items): both without the name
    std::vector<const UOp *> srcs(body->src().begin(), body->src().end());
    srcs[0] = c.make(Op::SINK, srcs[0]->dtype, srcs[0]->src());
    body = c.make(Op::LINEAR, body->dtype, srcs);
  }
  std::unordered_map<const UOp *, const UOp *> renumbered;
  int64_t n = 0;
  for (const UOp *u : toposort(body)) {
    if (u->op == Op::PARAM && u->arg && u->arg->kind == ArgKind::Record &&
        (u->arg->field("name") || u->arg->field("shape") || u->arg->field("weight"))) {
      // (a parameter's name, the exporter's shape and weight mark: no part of the function; the weights of a
      // network's repeated layers, a pack of the input beside one of an intermediate)
      ParamArg pa = ParamArg::decode(u->arg);
      pa.name.reset();
      pa.shape.reset();
      pa.weight = false;
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

namespace {

/// The launch linearize put in a GPU kernel's IR (none for a loop nest).
void launchFromIR(KernelArtifact &a, const UOp *call) {
  if (auto launch = kernelLaunch(call)) {
    a.global = {launch->first, 1, 1};
    a.local = {launch->second, 1, 1};
  }
}

/// renderMany of the requests; where that throws, each kernel alone, so that a kernel the target refuses
/// (a CUSTOM op without --allow-custom, say) costs only its own source: `errors` says why, per request.
std::vector<RenderedKernel> renderEach(const Renderer &renderer, Context &ctx, const std::vector<Renderer::Request> &requests,
                                       std::vector<std::string> &errors) {
  errors.assign(requests.size(), "");
  if (requests.empty()) return {};
  try {
    return renderer.renderMany(ctx, requests);
  } catch (const Error &) {
  }
  std::vector<RenderedKernel> out(requests.size());
  for (size_t n = 0; n < requests.size(); ++n) {
    try {
      out[n] = renderer.render(ctx, requests[n].call, requests[n].deviceNum, requests[n].name);
    } catch (const Error &e) {
      errors[n] = e.what();
    }
  }
  return out;
}

/// Renders every kernel step (one source per kernel and device, `_device_num` bound to the step's) into
/// m.kernels and records the symbol each exports and, for the GPU mappings, the launch the renderer built.
///
/// Kernels are rendered once per distinct body: a kernel SINK is hash-consed and refers to its buffers by
/// argument slot, so two CALLs of the same SINK up to range numbering (canonicalKernelBody: the same layer of a
/// 12-layer transformer, say) with the same argument dtypes on the same device compute the same function
/// of their arguments; the later steps name the first one's file and symbol (tinygrad's kernel cache).
/// perf_transformer_12L: 96 kernel steps, 7 sources.
void emitKernels(Module &m, const Schedule &s) {
  std::map<std::tuple<const UOp *, size_t, int64_t, std::vector<DType>>, size_t> rendered; // -> index in m.kernels
  std::vector<size_t> firstStep; // per kernel: the step it is rendered for
  std::vector<Renderer::Request> requests;
  m.stepKernel.assign(s.steps.size(), SIZE_MAX);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SchedStep &st = s.steps[i];
    if (st.kind != SchedStep::Kind::Kernel) continue;
    std::vector<DType> argTypes;
    for (const UOp *arg : st.call->src().subspan(1)) argTypes.push_back(arg->dtype);
    auto [it, isNew] = rendered.try_emplace({canonicalKernelBody(*m.graph.ctx, st.call->src(0)), st.device, st.deviceNum, std::move(argTypes)},
                                            m.kernels.size());
    m.stepKernel[i] = it->second;
    if (!isNew) continue;
    m.kernels.push_back({m.artifacts[i].file, {}, ""});
    firstStep.push_back(i);
    requests.push_back({st.call, st.deviceNum, m.artifacts[i].symbol});
  }
  std::vector<std::string> errors;
  std::vector<RenderedKernel> pieces = renderEach(*m.renderer, *m.graph.ctx, requests, errors);
  for (size_t n = 0; n < m.kernels.size(); ++n) {
    KernelArtifact &a = m.artifacts[firstStep[n]];
    ModuleKernel &k = m.kernels[n];
    if (!errors[n].empty()) { // (the manifest of a kernel not rendered: as --emit manifest writes it)
      k.error = std::move(errors[n]);
      launchFromIR(a, s.steps[firstStep[n]].call);
      continue;
    }
    k.pieces = std::move(pieces[n]);
    a.symbol = k.pieces.symbol;
    if (k.pieces.launch) {
      a.global = k.pieces.launch->global;
      a.local = k.pieces.launch->local;
    }
  }
  // a step whose kernel an earlier step rendered names that step's file and symbol
  for (size_t i = 0; i < s.steps.size(); ++i)
    if (m.stepKernel[i] != SIZE_MAX && firstStep[m.stepKernel[i]] != i) m.artifacts[i] = m.artifacts[firstStep[m.stepKernel[i]]];
}

} // namespace

Module compile(Graph g, const CompileOptions &o, std::ostream &out, std::ostream &err) {
  Module m;
  m.graph = std::move(g);
  m.target = PassTarget::forTarget(o.target->name, o.render.gridOnHost, o.render.cpu);
  m.render = o.render;
  m.renderer = makeRenderer(m.target, o.render);
  try {
    runPipeline(m.graph, o.pipeline, o.instrumentation, out, err, m.target);
    if (o.renderingTail) {
      try {
        runRenderingTail(m.graph, m.target, o.pipeline);
      } catch (const Error &e) {
        if (!o.tailMayFail) throw;
        m.notRendered = e.what();
      }
    }
  } catch (const Error &e) {
    if (o.onFailure) o.onFailure(m, e.what());
    throw;
  }
  return m;
}

void renderKernels(Module &m) {
  const Schedule *s = m.schedule();
  if (!s) fail("the graph has no current schedule to render");
  renderKernels(m, defaultArtifacts(*s, m.target.info->extension));
}

void renderKernels(Module &m, std::vector<KernelArtifact> artifacts) {
  const Schedule *s = m.schedule();
  if (!s) fail("the graph has no current schedule to render");
  if (artifacts.size() != s->steps.size()) fail("renderKernels: " + std::to_string(artifacts.size()) + " artifacts for " +
                                                std::to_string(s->steps.size()) + " schedule steps");
  m.artifacts = std::move(artifacts);
  m.kernels.clear();
  emitKernels(m, *s);
}

void planArtifacts(Module &m) {
  const Schedule *s = m.schedule();
  if (!s) fail("the graph has no current schedule: no manifest");
  m.artifacts = defaultArtifacts(*s, m.target.info->extension);
  if (!m.target.info->gpu && !m.render.gridOnHost) return; // (no launches to read)
  for (size_t i = 0; i < s->steps.size(); ++i)
    if (s->steps[i].kind == SchedStep::Kind::Kernel) launchFromIR(m.artifacts[i], s->steps[i].call);
}

const std::string *Module::renderError() const {
  for (const ModuleKernel &k : kernels)
    if (!k.error.empty()) return &k.error;
  return nullptr;
}

manifest::Manifest Module::manifestModel() const {
  const Schedule *s = schedule();
  if (!s) fail("the graph has no current schedule: no manifest");
  return manifestOf(*s, target.info->id, artifacts, render.cpu, optsFrom.empty() ? nullptr : &optsFrom);
}

std::string Module::manifestJson() const { return manifest::toJson(manifestModel()); }

} // namespace uopc
