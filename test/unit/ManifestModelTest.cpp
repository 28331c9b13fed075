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
   "opts": ["upcast:0:4"], "opts_from": "search", "blocked": ["1:4:9"],
   "estimates": {"ops": 12, "loads": "3*n", "load_bytes": "12*n", "stores": 20, "store_bytes": 80}},
  {"kind": "copy", "device": "CPU:1", "from": "CPU", "src": {"param": 0, "dev": 0}, "dst": {"param": 0, "dev": 1}, "bytes": 80}],
 "vars": [{"name": "n", "slot": 2, "min": 1, "max": 4, "names": ["n", "p2"]}]
})");
}

/// What fromJson says of `base` (fullManifest() by default) after `edit`: its error, or "accepted".
std::string refusal(const std::function<void(Json &)> &edit, Json base = fullManifest()) {
  Json m = std::move(base);
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
  // (SLOT:L, without the planes' size: a manifest written before it was recorded)
  CHECK(refusal([](Json &m) { m["steps"][0]["blocked"] = {"1:4"}; }) == "accepted");
  for (const char *bad : {"2:4:9", "1:1:9", "1:4:1", "1:4:9:2", "1:4:", "1"})
    CHECK(refusal([&](Json &m) { m["steps"][0]["blocked"] = {bad}; }) ==
          std::string("manifest: step 0.blocked entry '") + bad + "' is not SLOT:L:P of an argument of the step");
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

TEST_CASE("manifest: parallel_work is read, written back and checked", "[manifest]") {
  auto split = [](Json &m, Json work) {
    m["steps"][0].erase("global");
    m["steps"][0].erase("local");
    m["steps"][0]["parallel"] = 10;
    m["steps"][0]["parallel_work"] = work;
  };
  Json m = fullManifest();
  split(m, Json::parse("[[4, 1000], [6, 3]]"));
  manifest::Manifest read = manifest::fromJson(m.dump(), "m.json");
  REQUIRE(read.steps[0].parallelWork == std::vector<std::pair<int64_t, int64_t>>{{4, 1000}, {6, 3}});
  CHECK(Json::parse(manifest::toJson(read))["steps"][0]["parallel_work"] == Json::parse("[[4, 1000], [6, 3]]"));
  CHECK(refusal([&](Json &j) { split(j, Json::parse("[[4, 1000], [5, 3]]")); }) ==
        "manifest: step 0.parallel_work's iterations do not add up to 'parallel'");
  CHECK(refusal([&](Json &j) { split(j, Json::parse("[[4, 1000], [7, 3]]")); }) ==
        "manifest: step 0.parallel_work[1]'s iterations are not within 'parallel'");
  CHECK(refusal([&](Json &j) { split(j, Json::parse("[[4, 0], [6, 3]]")); }) ==
        "manifest: step 0.parallel_work[0]'s work is not 1 to 2^30");
  CHECK(refusal([&](Json &j) { split(j, Json::parse("[[4, 1000], [6, 3, 1]]")); }) ==
        "manifest: step 0.parallel_work[1] is not [iterations, work]");
  CHECK(refusal([&](Json &j) { split(j, Json::parse("[[10, 1]]")); }) ==
        "manifest: step 0.parallel_work is not a list of 2 to 4096 pieces");
  CHECK(refusal([&](Json &j) { split(j, Json::parse("[[4, 1000], [6, 3]]")); j["steps"][0].erase("parallel"); }) ==
        "manifest: step 0.parallel_work without 'parallel'");
}

TEST_CASE("manifest: splitPoint shares out iterations, or work where the pieces say it", "[manifest]") {
  using manifest::splitPoint;
  // by iterations: n * t / parts, at multiples of 256 where every part has 256 or more
  CHECK(splitPoint(135, 2, 0) == 0);
  CHECK(splitPoint(135, 2, 1) == 67);
  CHECK(splitPoint(135, 2, 2) == 135);
  CHECK(splitPoint(300007, 2, 1) == 149760);
  // by work: a channel cut's 31 tiles of 1000 and 104 rest rows of 3 (the split by iterations gave the second
  // thread 36 of the 31,312)
  std::vector<std::pair<int64_t, int64_t>> cut{{31, 1000}, {104, 3}};
  CHECK(splitPoint(135, 2, 1, cut) == 16);
  CHECK(splitPoint(135, 2, 2, cut) == 135);
  CHECK(splitPoint(135, 3, 1, cut) == 10);
  CHECK(splitPoint(135, 3, 2, cut) == 21);
  // the cut falls inside the second piece where the first is light
  CHECK(splitPoint(20, 2, 1, {{10, 1}, {10, 3}}) == 13); // (10 + 3 * 3 of the 40 before it)
  // parts never go backwards, and the largest pieces do not overflow
  std::vector<std::pair<int64_t, int64_t>> huge{{INT32_MAX - 1, int64_t(1) << 30}, {1, 1}};
  int64_t prev = 0;
  for (int64_t t = 0; t <= 1024; ++t) {
    int64_t p = splitPoint(INT32_MAX, 1024, t, huge);
    CHECK(p >= prev);
    CHECK(p <= INT32_MAX);
    prev = p;
  }
  CHECK(prev == INT32_MAX);
}

TEST_CASE("manifest: splitChunks cuts a split loop into chunks of like work", "[manifest]") {
  using manifest::splitChunks;
  using Cuts = std::vector<int64_t>;
  CHECK(splitChunks(10, 2, 4) == Cuts{0, 1, 2, 3, 5, 6, 7, 8, 10});
  CHECK(splitChunks(3, 2, 4) == Cuts{0, 1, 2, 3});
  // 256 or more per thread: chunks at multiples of 256, the last one to the end
  CHECK(splitChunks(300007, 2, 4) == Cuts{0, 37376, 74752, 112384, 149760, 187392, 224768, 262400, 300007});
  // by work (31,312 in 8 chunks of 3,914): the 31 heavy tiles share out, the 104 light rows go with the last
  CHECK(splitChunks(135, 2, 4, {{31, 1000}, {104, 3}}) == Cuts{0, 4, 8, 12, 16, 20, 23, 27, 135});
  // a piece of 512 iterations or more is cut at a multiple of 256 of its own iterations (2 + 268 -> 2 + 256)
  CHECK(splitChunks(1026, 2, 2, {{2, 1000}, {1024, 1}}) == Cuts{0, 1, 2, 258, 1026});
}

namespace {

/// Two devices, each with its shard (buffer 0, 4 float32) and the output (param 0): one allreduce step.
Json allreduceManifest() {
  return Json::parse(R"({
 "format": "uopc-manifest", "version": 1, "target": "c", "cpu": "native",
 "devices": [{"name": "CPU", "dir": "CPU", "arena_bytes": 128}, {"name": "CPU:1", "dir": "CPU_1", "arena_bytes": 128}],
 "params": [{"slot": 0, "dtype": "float32", "numel": 4, "bytes": 16, "devices": ["CPU", "CPU:1"], "role": "output"}],
 "buffers": [{"id": 0, "slot": 1000, "dtype": "float32", "numel": 4, "bytes": 16, "devices": ["CPU", "CPU:1"],
              "offsets": [0, 0], "lifetimes": [[0, 0], [0, 0]]},
             {"id": 1, "slot": 1001, "dtype": "float32", "numel": 4, "bytes": 16, "devices": ["CPU", "CPU:1"],
              "offsets": [64, 8], "lifetimes": [[0, 0], [0, 0]]}],
 "steps": [
  {"kind": "allreduce", "op": "add", "dtype": "float32", "numel": 4, "bytes": 16, "order": "devices",
   "devices": ["CPU", "CPU:1"], "src": [{"buffer": 0, "dev": 0}, {"buffer": 0, "dev": 1}],
   "dst": [{"param": 0, "dev": 0}, {"param": 0, "dev": 1}]}],
 "vars": []
})");
}

std::string allreduceRefusal(const std::function<void(Json &)> &edit) { return refusal(edit, allreduceManifest()); }

} // namespace

TEST_CASE("manifest: an allreduce step is read, written back and derived", "[manifest]") {
  std::string text = allreduceManifest().dump(1) + "\n";
  manifest::Manifest m = manifest::fromJson(text, "m.json");
  CHECK(manifest::toJson(m) == text);
  const manifest::Step &s = m.steps.at(0);
  CHECK(s.isAllreduce());
  CHECK(s.op == manifest::ReduceOp::Add);
  CHECK(s.dtype == DType::Float32);
  CHECK(s.devicesIndex == std::vector<size_t>{0, 1});
  CHECK(s.srcs.at(1).dev == 1);
  CHECK(s.dsts.at(0).isParam);
  CHECK(s.label() == "allreduce add @ CPU,CPU:1");
  CHECK(m.kernelFiles().empty());
  // "order" is optional (device order); in place (a destination that is its own shard) is allowed
  Json j = allreduceManifest();
  j["steps"][0].erase("order");
  j["steps"][0]["dst"] = j["steps"][0]["src"];
  j["steps"][0]["op"] = "max";
  manifest::Manifest p = manifest::fromJson(j.dump(), "m.json");
  CHECK_FALSE(p.steps[0].ring);
  CHECK(p.steps[0].op == manifest::ReduceOp::Max);
  j["steps"][0]["order"] = "ring";
  CHECK(manifest::fromJson(j.dump(), "m.json").steps[0].ring);
}

TEST_CASE("manifest: a malformed allreduce step is one clear message", "[manifest]") {
  using R = std::function<void(Json &)>;
  auto step = [](Json &m) -> Json & { return m["steps"][0]; };
  const std::vector<std::pair<R, std::string>> cases = {
      {[&](Json &m) { step(m)["op"] = "sub"; }, "manifest: step 0.op is 'sub', not add, max or mul"},
      {[&](Json &m) { step(m).erase("op"); }, "manifest: step 0 has no 'op'"},
      {[&](Json &m) { step(m)["dtype"] = "float16", step(m)["bytes"] = 8; },
       "manifest: step 0 is an allreduce of float16: only 8- to 64-bit integers, float32 and float64 are reduced"},
      {[&](Json &m) { step(m)["bytes"] = 12; }, "manifest: step 0 says 12 bytes for 4 float32 elements"},
      {[&](Json &m) { step(m)["order"] = "zigzag"; }, "manifest: step 0.order is not \"devices\" or \"ring\""},
      {[&](Json &m) { step(m)["devices"] = Json::array({"CPU"}); }, "manifest: step 0 is an allreduce over fewer than 2 devices"},
      {[&](Json &m) { step(m)["devices"] = Json::array({"CPU", "CPU"}); }, "manifest: step 0.devices names 'CPU' twice"},
      {[&](Json &m) { step(m)["devices"] = Json::array({"CPU", "CPU:7"}); }, "manifest: step 0 names unknown device 'CPU:7'"},
      {[&](Json &m) { step(m)["src"].erase(1); },
       "manifest: step 0.src must hold one buffer per device of the allreduce (2), it holds 1"},
      {[&](Json &m) { step(m)["dst"] = 3; }, "manifest: step 0.dst is not an array"},
      {[&](Json &m) { step(m)["src"][1] = Json{{"buffer", 0}, {"dev", 0}}; },
       "manifest: step 0.src[1] is buffer 0 on CPU, not a buffer on 'CPU:1'"},
      {[&](Json &m) { step(m)["src"][0] = Json{{"buffer", 9}, {"dev", 0}}; }, "manifest: step 0.src[0] names unknown buffer 9"},
      {[&](Json &m) { step(m)["numel"] = 5, step(m)["bytes"] = 20; },
       "manifest: step 0.src[0] (buffer 0 on CPU) does not hold 5 float32 elements"},
      {[&](Json &m) { m["params"][0]["dtype"] = "int32"; },
       "manifest: step 0.dst[0] (param 0 on CPU) does not hold 4 float32 elements"},
      {[&](Json &m) { step(m)["dst"] = Json::array({Json{{"buffer", 0}, {"dev", 0}}, Json{{"buffer", 1}, {"dev", 1}}}); },
       "manifest: step 0.dst[1] overlaps its shard src[1] in the arena of 'CPU:1' (it may be the same buffer, in place, or apart)"},
      {[&](Json &m) { m["target"] = "ptx"; m.erase("cpu"); },
       "manifest: step 0 is an allreduce: a ptx manifest cannot run one (allreduce steps are for CPU targets)"},
  };
  for (const auto &[edit, want] : cases) CHECK(allreduceRefusal(edit) == want);
}
