// The manifest model (Runtime/ManifestModel.h): what the writer writes the reader reads back unchanged,
// and the reader refuses malformed manifests with one message. The target registry (Targets/Targets.h).
#include "IR/Error.h"
#include "Runtime/ManifestModel.h"
#include "Targets/Targets.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <functional>

using namespace uopc;
using Json = nlohmann::ordered_json;

namespace {

/// A manifest with every field the writer knows: cpu, names, keeps (known and unknown), an intermediate
/// of symbolic size, a copy, launches, estimates (a count and a polynomial) and a variable with an alias.
Json fullManifest() {
  return Json::parse(R"({
 "format": "uopc-manifest", "version": 1, "target": "llvm", "cpu": "x86-64-v3",
 "devices": [{"name": "CPU", "dir": "CPU", "arena_bytes": 128}, {"name": "CPU:1", "dir": "CPU_1", "arena_bytes": 64}],
 "params": [
  {"slot": 0, "dtype": "float32", "numel": 20, "bytes": 80, "devices": ["CPU", "CPU:1"], "role": "inout", "name": "x",
   "keeps": [{"elements": 12, "runs": [{"start": 0, "length": 1, "stride": 1, "count": 1},
                                       {"start": 3, "length": 3, "stride": 5, "count": 3},
                                       {"start": 18, "length": 2, "stride": 2, "count": 1}]}, "unknown"]},
  {"slot": 1, "dtype": "int32", "numel": 4, "bytes": 16, "devices": ["CPU"], "role": "input"}],
 "buffers": [{"id": 0, "slot": 1000, "dtype": "float32", "numel": 16, "bytes": 64, "symbolic_size": true,
              "devices": ["CPU", "CPU:1"], "offsets": [64, 0], "lifetimes": [[0, 1], [-1, -1]]}],
 "steps": [
  {"kind": "kernel", "kernel": "k0", "device": "CPU", "device_num": 0, "file": "kernels/CPU/k0.ll", "symbol": "k0_CPU",
   "args": [{"param": 0, "dev": 0}, {"buffer": 0, "dev": 0}], "vars": ["n"], "global": [4, 1, 1], "local": [32, 1, 1],
   "opts": ["upcast:0:4"], "opts_from": "search",
   "estimates": {"ops": 12, "loads": "3*n", "load_bytes": "12*n", "stores": 20, "store_bytes": 80}},
  {"kind": "copy", "device": "CPU:1", "from": "CPU", "src": {"param": 0, "dev": 0}, "dst": {"param": 0, "dev": 1}, "bytes": 80}],
 "vars": [{"name": "n", "slot": 2, "min": 1, "max": 4, "names": ["n", "p2"]}]
})");
}

std::string refusal(const std::function<void(Json &)> &edit) {
  Json m = fullManifest();
  edit(m);
  try {
    manifest::fromJson(m.dump(), "m.json");
  } catch (const Error &e) {
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("manifest: toJson writes back what fromJson read, byte for byte", "[manifest]") {
  std::string text = fullManifest().dump(1) + "\n";
  manifest::Manifest m = manifest::fromJson(text, "m.json");
  CHECK(manifest::toJson(m) == text);
  // the derived fields
  CHECK(m.params[0].deviceIndex == std::vector<size_t>{0, 1});
  CHECK(m.steps[1].dst.index == 0);
  CHECK(m.steps[1].dst.dev == 1);
  CHECK(m.steps[0].varIndex == std::vector<size_t>{0});
  CHECK(m.vars[0].names == std::vector<std::string>{"n", "p2"});
  CHECK(m.steps[0].label() == "k0 @ CPU");
  CHECK(m.steps[1].label() == "copy -> CPU:1");
  CHECK(m.steps[1].fromIndex == 0); // (a copy across devices: one process per device sends and receives it)
  CHECK(m.steps[0].remoteArgs.empty());
  CHECK(m.describe(m.steps[1].dst) == "param 0 on CPU:1");
  CHECK(m.kernelFiles() == std::vector<std::string>{"kernels/CPU/k0.ll"});
  CHECK(m.cpuName() == "x86-64-v3");
}

TEST_CASE("manifest: fields only the writer needs are optional when reading", "[manifest]") {
  Json j = fullManifest();
  j.erase("cpu");
  for (Json &d : j["devices"]) d.erase("dir");
  j["buffers"][0].erase("id"), j["buffers"][0].erase("slot"), j["buffers"][0].erase("lifetimes");
  j["steps"][0].erase("estimates"), j["steps"][0].erase("device_num");
  j["vars"][0].erase("slot");
  manifest::Manifest m = manifest::fromJson(j.dump(), "m.json");
  CHECK(m.cpuName() == "native");
  CHECK(!m.steps[0].estimates);
  CHECK(m.buffers[0].lifetimes.empty());
}

TEST_CASE("manifest: a malformed manifest is one clear message", "[manifest]") {
  CHECK(refusal([](Json &) {}) == "accepted");
  CHECK(refusal([](Json &m) { m["target"] = "wasm"; }) ==
        "manifest 'm.json': target 'wasm' cannot run here (only 'c', 'llvm' and 'ptx' are supported)");
  CHECK(refusal([](Json &m) { m["params"][1]["role"] = "scratch"; }) ==
        "manifest: param 1.role is 'scratch', not input, output or inout");
  CHECK(refusal([](Json &m) { m["params"][1]["bytes"] = 15; }) == "manifest: param 1 says 15 bytes for 4 int32 elements");
  CHECK(refusal([](Json &m) { m["buffers"][0]["id"] = 3; }) ==
        "manifest: buffer 0 has id 3: a buffer's id is its position in the list");
  CHECK(refusal([](Json &m) { m["buffers"][0]["offsets"] = {100, 0}; }) == "manifest: buffer 0 does not fit the arena of CPU");
  CHECK(refusal([](Json &m) { m["steps"][1]["bytes"] = 81; }) == "manifest: step 1 copies more bytes than its buffers hold");
  CHECK(refusal([](Json &m) { m["steps"][0]["local"] = {0, 1, 1}; }) ==
        "manifest: step 0.local[0] is 0, not in [1, 2147483647]");
  CHECK(refusal([](Json &m) { m["steps"][0]["file"] = "../k0.ll"; }) ==
        "manifest: step 0.file '../k0.ll' must be a relative path inside the output directory");
  CHECK(refusal([](Json &m) { m["steps"][0]["estimates"]["ops"] = -1; }) == "manifest: step 0.estimates.ops is -1, below 0");
  CHECK(refusal([](Json &m) { m["steps"][0]["opts_from"] = "guess"; }) ==
        "manifest: step 0.opts_from is not heuristic, hand, search or database");
  CHECK(refusal([](Json &m) { m["vars"][0]["min"] = 5; }) == "manifest: variable 'n' has an empty range");
  CHECK(refusal([](Json &m) { m["params"][0]["keeps"] = {"unknown"}; }) ==
        "manifest: param 0.keeps must hold one entry per device of the parameter");
  CHECK(refusal([](Json &m) { m["params"][0]["keeps"][0]["runs"][1]["count"] = 4; }) ==
        "manifest: param 0.keeps has a run outside the parameter's 20 elements or out of order");
  CHECK(refusal([](Json &m) { m["params"][0]["keeps"][0]["runs"][1]["start"] = 0; }) ==
        "manifest: param 0.keeps has a run outside the parameter's 20 elements or out of order");
  CHECK(refusal([](Json &m) { m["params"][0]["keeps"][0]["runs"][1]["stride"] = 2; }) ==
        "manifest: param 0.keeps has a run outside the parameter's 20 elements or out of order");
  CHECK(refusal([](Json &m) { m["params"][0]["keeps"][0]["elements"] = 20; }) ==
        "manifest: param 0.keeps says 20 elements, its runs hold 12");
  CHECK(refusal([](Json &m) { m["params"][1]["keeps"] = {"unknown"}; }) ==
        "manifest: param 1 is an input: it keeps everything, it has no 'keeps'");
  // a run whose end overflows int64 is refused, not wrapped
  CHECK(refusal([](Json &m) {
          m["params"][0]["keeps"][0] = {{"elements", 2}, {"runs", {{{"start", 0}, {"length", 1}, {"stride", INT64_MAX}, {"count", 2}}}}};
        }) == "manifest: param 0.keeps has a run outside the parameter's 20 elements or out of order");
}

TEST_CASE("targets: one registry for names, extensions and kinds", "[manifest]") {
  REQUIRE(findTarget("llvm"));
  CHECK(findTarget("llvm")->extension == "ll");
  CHECK(findTarget("ptx")->gpu);
  CHECK(!findTarget("c")->gpu);
  CHECK(findTarget("c")->emitter == Emitter::C);
  CHECK(!findTarget("wasm"));
  CHECK(kTargets[0].name == "c"); // the default
  CHECK(targetInfo(Target::PTX).name == "ptx");
  CHECK(targetNameList() == "'c', 'llvm' and 'ptx'");
}
