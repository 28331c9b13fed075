//===- Manifest.cpp - out/manifest.json from a Schedule -------------------===//
#include "Driver/Manifest.h"

#include "IR/Kernel.h"

#include "IR/Records.h"
#include "IR/Work.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <map>
#include <cstdio>

namespace uopc {

using Json = nlohmann::ordered_json;

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
      if (sym.size() > kMaxSymbol || taken.count(sym)) sym = full.substr(0, kMaxSymbol - 9) + "_" + hash8(full);
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
Json bufRef(const Schedule &s, const BufRef &r, size_t nparams) {
  const SchedBuffer &b = s.buffers.at(r.buffer);
  Json j;
  if (b.isParam) j["param"] = b.slot;
  else j["buffer"] = r.buffer - nparams;
  j["dev"] = r.device;
  return j;
}

Json countJson(const Count &c) {
  if (auto v = c.constant()) return *v;
  return c.str();
}

Json estimatesJson(const KernelWork &w) {
  return Json{{"ops", countJson(w.ops)},         {"loads", countJson(w.loads)},
              {"load_bytes", countJson(w.loadBytes)}, {"stores", countJson(w.stores)},
              {"store_bytes", countJson(w.storeBytes)}};
}

Json deviceNames(const Schedule &s, const std::vector<size_t> &devs) {
  Json a = Json::array();
  for (size_t d : devs) a.push_back(s.devices.at(d));
  return a;
}

} // namespace

std::string manifestJson(const Schedule &s, std::string_view target, const std::vector<KernelArtifact> &artifacts,
                         std::string_view cpu) {
  Json m;
  m["format"] = "uopc-manifest";
  m["version"] = 1;
  m["target"] = std::string(target);
  if (target != "ptx") m["cpu"] = std::string(cpu);
  Json devices = Json::array();
  for (size_t d = 0; d < s.devices.size(); ++d)
    devices.push_back({{"name", s.devices[d]}, {"dir", s.deviceDirs[d]}, {"arena_bytes", s.arenaBytes[d]}});
  m["devices"] = devices;
  Json params = Json::array(), buffers = Json::array();
  size_t nparams = 0;
  for (const SchedBuffer &b : s.buffers) nparams += b.isParam;
  for (const SchedBuffer &b : s.buffers) {
    Json j;
    if (b.isParam) {
      j["slot"] = b.slot;
      j["dtype"] = std::string(dtypeName(b.dtype));
      j["numel"] = b.numel;
      j["bytes"] = b.bytes();
      j["devices"] = deviceNames(s, b.devices);
      j["role"] = b.role;
      // the PARAM's name (uopc_tinygrad.export fills it in): uopc-run --inputs/--outputs bind tensors by it
      if (b.node && b.node->arg && b.node->arg->kind == ArgKind::Record)
        if (std::optional<std::string> name = ParamArg::decode(b.node->arg).name) j["name"] = *name;
      params.push_back(j);
      continue;
    }
    j["id"] = buffers.size();
    j["slot"] = b.slot;
    j["dtype"] = std::string(dtypeName(b.dtype));
    j["numel"] = b.numel;
    j["bytes"] = b.bytes();
    if (b.symbolicSize) j["symbolic_size"] = true;
    j["devices"] = deviceNames(s, b.devices);
    j["offsets"] = b.offsets;
    Json life = Json::array();
    for (auto [lo, hi] : b.lifetimes) life.push_back(Json::array({lo, hi}));
    j["lifetimes"] = life;
    buffers.push_back(j);
  }
  m["params"] = params;
  m["buffers"] = buffers;
  Json steps = Json::array();
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SchedStep &st = s.steps[i];
    Json j;
    if (st.kind == SchedStep::Kind::Copy) {
      j["kind"] = "copy";
      j["device"] = s.devices[st.device];
      j["src"] = bufRef(s, st.src, nparams);
      j["dst"] = bufRef(s, st.dst, nparams);
      j["bytes"] = st.bytes;
    } else {
      j["kind"] = "kernel";
      j["kernel"] = s.kernels[st.kernel].name;
      j["device"] = s.devices[st.device];
      j["device_num"] = st.deviceNum;
      j["file"] = artifacts.at(i).file;
      j["symbol"] = artifacts.at(i).symbol;
      Json args = Json::array();
      for (const BufRef &r : st.args) args.push_back(bufRef(s, r, nparams));
      j["args"] = args;
      j["vars"] = st.vars;
      if (artifacts.at(i).global) j["global"] = *artifacts.at(i).global;
      if (artifacts.at(i).local) j["local"] = *artifacts.at(i).local;
      j["estimates"] = estimatesJson(kernelWork(kernelSink(s.kernels[st.kernel].call)));
    }
    steps.push_back(j);
  }
  m["steps"] = steps;
  Json vars = Json::array();
  for (const SchedVar &v : s.vars) {
    Json e = {{"name", v.name}, {"slot", v.slot}, {"min", v.vmin}, {"max", v.vmax}};
    // tinygrad 0.14.0 names a function's variable p<slot>: a variable keeps that name beside the user's,
    // unless another variable already has it (uopc-run --var accepts any name in `names`)
    std::string positional = "p" + std::to_string(v.slot);
    if (v.slot >= 0 && positional != v.name &&
        std::none_of(s.vars.begin(), s.vars.end(), [&](const SchedVar &o) { return o.name == positional; }))
      e["names"] = Json::array({v.name, positional});
    vars.push_back(e);
  }
  m["vars"] = vars;
  return m.dump(1) + "\n";
}

} // namespace uopc
