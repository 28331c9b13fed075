//===- Manifest.cpp - out/manifest.json from a Schedule -------------------===//
#include "Driver/Manifest.h"

#include "IR/Kernel.h"

#include "IR/Records.h"
#include "IR/Work.h"
#include "Targets/CNames.h"

#include <algorithm>
#include <set>
#include <map>
#include <cstdio>

namespace uopc {

KernelArtifact defaultArtifact(const Schedule &s, const SchedStep &step, std::string_view ext) {
  const std::string &dir = s.deviceDirs.at(step.device);
  const std::string &name = s.kernels.at(step.kernel).name;
  KernelArtifact a;
  a.file = "kernels/" + dir + "/" + name + "." + std::string(ext);
  a.symbol = name + "_" + dir;
  return a;
}

std::vector<KernelArtifact> defaultArtifacts(const Schedule &s, std::string_view ext) {
  std::vector<KernelArtifact> out(s.steps.size());
  std::map<std::pair<size_t, size_t>, std::string> symbolOf; // (kernel, device) -> symbol
  std::set<std::string> taken;
  auto hash8 = [](const std::string &x) { // FNV-1a, 32 bits: only to make a cut name distinct
    uint32_t h = 2166136261u;
    for (unsigned char c : x) h = (h ^ c) * 16777619u;
    char b[9];
    std::snprintf(b, sizeof b, "%08x", h);
    return std::string(b);
  };
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SchedStep &st = s.steps[i];
    if (st.kind != SchedStep::Kind::Kernel) continue;
    out[i] = defaultArtifact(s, st, ext);
    auto [it, fresh] = symbolOf.try_emplace({st.kernel, st.device});
    if (fresh) {
      std::string full = out[i].symbol, sym = full;
      // (a C keyword or macro, `INT64_C` for kernel INT64 on device C, or a reserved name is renamed too)
      if (sym.size() > kMaxSymbol || taken.count(sym) || isReservedCName(sym))
        sym = (full[0] == '_' ? "k" + full : full).substr(0, kMaxSymbol - 9) + "_" + hash8(full);
      const std::string base = sym;
      for (int k = 2; taken.count(sym); ++k) {
        std::string suffix = "_" + std::to_string(k);
        sym = base.substr(0, std::min(base.size(), kMaxSymbol - suffix.size())) + suffix;
      }
      taken.insert(sym);
      it->second = sym;
    }
    out[i].symbol = it->second;
  }
  return out;
}

namespace {

/// `nparams`: how many of s.buffers are parameters (they come first), counted once by the caller: counting
/// them per reference made the manifest quadratic in the buffers.
manifest::Ref refOf(const Schedule &s, const BufRef &r, size_t nparams) {
  const SchedBuffer &b = s.buffers.at(r.buffer);
  manifest::Ref m;
  m.isParam = b.isParam;
  m.id = b.isParam ? b.slot : static_cast<int64_t>(r.buffer - nparams);
  m.dev = r.device;
  m.index = b.isParam ? r.buffer : r.buffer - nparams; // (parameters first, by slot: Schedule::buffers)
  return m;
}

manifest::Estimate estimateOf(const Count &c) {
  if (auto v = c.constant()) return *v;
  return c.str();
}

std::vector<std::string> deviceNames(const Schedule &s, const std::vector<size_t> &devs) {
  std::vector<std::string> a;
  for (size_t d : devs) a.push_back(s.devices.at(d));
  return a;
}

/// The source of kernel `name`'s opts: its own entry, else (a kernel optimize added: NAME_pack1,
/// NAME_relayout2) its kernel's; "" when neither has one.
std::string optsFromOf(const std::map<std::string, std::string> &from, const std::string &name) {
  if (auto it = from.find(name); it != from.end()) return it->second;
  for (const char *suffix : {"_pack", "_relayout"})
    if (size_t at = name.rfind(suffix); at != std::string::npos && at > 0)
      if (auto it = from.find(name.substr(0, at)); it != from.end()) return it->second;
  return "";
}

manifest::Role roleOf(const std::string &role) {
  return role == "input" ? manifest::Role::Input : role == "output" ? manifest::Role::Output : manifest::Role::Inout;
}

} // namespace

manifest::Manifest manifestOf(const Schedule &s, Target target, const std::vector<KernelArtifact> &artifacts,
                              std::string_view cpu, const std::map<std::string, std::string> *optsFrom) {
  manifest::Manifest m;
  m.target = target;
  if (!targetInfo(target).gpu) m.cpu = std::string(cpu);
  for (size_t d = 0; d < s.devices.size(); ++d) m.devices.push_back({s.devices[d], s.deviceDirs[d], s.arenaBytes[d]});
  size_t nparams = 0;
  for (const SchedBuffer &b : s.buffers) nparams += b.isParam;
  for (const SchedBuffer &b : s.buffers) {
    if (b.isParam) {
      manifest::Param p;
      p.slot = b.slot;
      p.dtype = b.dtype;
      p.numel = b.numel;
      p.bytes = b.bytes();
      p.devices = deviceNames(s, b.devices);
      p.deviceIndex = b.devices;
      p.role = roleOf(b.role);
      // the PARAM's name (uopc_tinygrad.export fills it in): uopc-run --inputs/--outputs bind tensors by it
      // and its shape, where its elements are the shape's (the verifier checked a constant size; a symbolic one)
      if (b.node && b.node->arg && b.node->arg->kind == ArgKind::Record) {
        ParamArg pa = ParamArg::decode(b.node->arg);
        p.name = pa.name;
        p.weight = pa.weight && p.role == manifest::Role::Input;
        if (pa.shape && shapeElements(*pa.shape) == p.numel) p.shape = pa.shape;
      }
      for (const KeptElements &k : b.kept) {
        manifest::Kept &m = p.kept.emplace_back();
        m.known = k.known;
        m.elements = k.elements;
        for (const KeptElements::Run &r : k.runs) m.runs.push_back({r.start, r.length, r.stride, r.count});
      }
      m.paramIndex[p.slot] = m.params.size();
      m.params.push_back(std::move(p));
      continue;
    }
    manifest::Buffer q;
    q.slot = b.slot;
    q.dtype = b.dtype;
    q.numel = b.numel;
    q.bytes = b.bytes();
    q.symbolicSize = b.symbolicSize;
    q.devices = deviceNames(s, b.devices);
    q.deviceIndex = b.devices;
    q.offsets = b.offsets;
    q.lifetimes = b.lifetimes;
    m.buffers.push_back(std::move(q));
  }
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SchedStep &st = s.steps[i];
    manifest::Step j;
    j.device = s.devices[st.device];
    j.deviceIndex = st.device;
    if (st.kind == SchedStep::Kind::Allreduce) {
      j.kind = manifest::Step::Kind::Allreduce;
      j.op = st.reduceOp == Op::MAX ? manifest::ReduceOp::Max : st.reduceOp == Op::MUL ? manifest::ReduceOp::Mul
                                                                                          : manifest::ReduceOp::Add;
      const SchedBuffer &b = s.buffers.at(st.dsts.at(0).buffer);
      j.dtype = b.dtype;
      j.numel = b.numel;
      j.bytes = st.bytes;
      j.ring = st.ring;
      for (size_t d = 0; d < st.dsts.size(); ++d) {
        j.srcs.push_back(refOf(s, st.srcs[d], nparams));
        j.dsts.push_back(refOf(s, st.dsts[d], nparams));
        j.devicesIndex.push_back(b.devices[d]);
        j.devices.push_back(s.devices[b.devices[d]]);
      }
    } else if (st.kind == SchedStep::Kind::Copy) {
      j.kind = manifest::Step::Kind::Copy;
      j.src = refOf(s, st.src, nparams);
      j.dst = refOf(s, st.dst, nparams);
      j.bytes = st.bytes;
      j.fromIndex = m.deviceOf(j.src);
      j.from = m.devices[j.fromIndex].name;
    } else {
      j.kernel = s.kernels[st.kernel].name;
      j.deviceNum = st.deviceNum;
      j.file = artifacts.at(i).file;
      j.symbol = artifacts.at(i).symbol;
      for (const BufRef &r : st.args) j.args.push_back(refOf(s, r, nparams));
      for (size_t a = 0; a < j.args.size(); ++a)
        if (m.deviceOf(j.args[a]) != j.deviceIndex) j.remoteArgs.push_back(a);
      j.vars = st.vars;
      for (const std::string &v : st.vars) {
        auto it = std::find_if(s.vars.begin(), s.vars.end(), [&](const SchedVar &x) { return x.name == v; });
        j.varIndex.push_back(static_cast<size_t>(it - s.vars.begin()));
      }
      j.global = artifacts.at(i).global;
      j.local = artifacts.at(i).local;
      j.parallel = kernelParallel(st.call);
      j.parallelWork = kernelParallelWork(st.call);
      j.splitShares = kernelSplitByShares(st.call);
      j.opts = appliedOpts(kernelSink(st.call));
      j.blocked = blockedArgs(kernelSink(st.call));
      if (optsFrom) j.optsFrom = optsFromOf(*optsFrom, j.kernel);
      j.once = st.once;
      KernelWork w = kernelWork(kernelSink(s.kernels[st.kernel].call));
      j.estimates = manifest::Estimates{estimateOf(w.ops), estimateOf(w.loads), estimateOf(w.loadBytes),
                                        estimateOf(w.stores), estimateOf(w.storeBytes)};
    }
    m.steps.push_back(std::move(j));
  }
  for (const SchedVar &v : s.vars) {
    manifest::Var e{v.name, v.slot, v.vmin, v.vmax, {v.name}};
    // tinygrad 0.14.0 names a function's variable p<slot>: a variable keeps that name beside the user's,
    // unless another variable already has it (uopc-run --var accepts any name in `names`)
    std::string positional = "p" + std::to_string(v.slot);
    if (v.slot >= 0 && positional != v.name &&
        std::none_of(s.vars.begin(), s.vars.end(), [&](const SchedVar &o) { return o.name == positional; }))
      e.names.push_back(positional);
    m.vars.push_back(std::move(e));
  }
  return m;
}

std::string manifestJson(const Schedule &s, Target target, const std::vector<KernelArtifact> &artifacts,
                         std::string_view cpu) {
  return manifest::toJson(manifestOf(s, target, artifacts, cpu));
}

} // namespace uopc
