// Unit tests of buildSchedule: execution order, per-device steps, and memory plan invariants over the
// in-tree kernel-split inputs and (when present) every public corpus graph.
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "Passes/PassManager.h"
#include "Passes/Schedule.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

using namespace uopc;
namespace fs = std::filesystem;

namespace {

Graph compiled(const std::string &path) {
  Graph g = readGraphFile(path);
  std::ostringstream out, err;
  runPipeline(g, parsePipeline("verify,invalid-pad,multi-lower,reduce-identity,rangeify,kernel-split"), {}, out, err);
  return g;
}

/// The plan's invariants: every step's buffers exist; a kernel runs once per device of what it writes;
/// intermediates live inside their arena, aligned, and two intermediates alive at the same step never
/// overlap in memory.
void checkInvariants(const Schedule &s, const std::string &name) {
  INFO(name);
  for (const SchedStep &st : s.steps) {
    if (st.kind == SchedStep::Kind::Copy) {
      REQUIRE(st.src.buffer < s.buffers.size());
      REQUIRE(st.dst.buffer < s.buffers.size());
      CHECK(st.bytes == s.buffers[st.dst.buffer].bytes());
    } else if (st.kind == SchedStep::Kind::Allreduce) {
      REQUIRE(st.srcs.size() == st.dsts.size());
      REQUIRE(st.srcs.size() >= 2);
      for (size_t d = 0; d < st.srcs.size(); ++d) {
        CHECK(s.buffers[st.srcs[d].buffer].devices[st.srcs[d].device] == s.buffers[st.dsts[d].buffer].devices[st.dsts[d].device]);
        CHECK(st.bytes == s.buffers[st.dsts[d].buffer].bytes());
      }
    } else {
      REQUIRE(!st.args.empty());
      const SchedBuffer &out = s.buffers[st.args[0].buffer];
      CHECK(st.deviceNum < static_cast<int64_t>(out.devices.size()));
      CHECK(out.devices[st.args[0].device] == st.device);
    }
  }
  struct Inst {
    size_t dev;
    int64_t off, bytes, lo, hi;
  };
  std::vector<Inst> inst;
  for (const SchedBuffer &b : s.buffers) {
    if (b.isParam) continue;
    for (size_t d = 0; d < b.devices.size(); ++d) {
      CHECK(b.offsets[d] % kArenaAlign == 0);
      CHECK(b.offsets[d] + b.bytes() <= s.arenaBytes[b.devices[d]]);
      if (b.lifetimes[d].first >= 0 && b.bytes() > 0)
        inst.push_back({b.devices[d], b.offsets[d], b.bytes(), b.lifetimes[d].first, b.lifetimes[d].second});
    }
  }
  for (size_t i = 0; i < inst.size(); ++i)
    for (size_t j = i + 1; j < inst.size(); ++j) {
      const Inst &a = inst[i], &b = inst[j];
      bool alive = a.dev == b.dev && a.lo <= b.hi && b.lo <= a.hi;
      bool overlap = a.off < b.off + b.bytes && b.off < a.off + a.bytes;
      CHECK_FALSE((alive && overlap));
    }
}

} // namespace

TEST_CASE("schedule: write-after-read orders the reader of a state before its overwrite", "[schedule]") {
  Graph g = compiled(std::string(UOPC_SOURCE_DIR) + "/test/lit/passes/Inputs/kernel-split-assign.json");
  Schedule s = buildSchedule(g);
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].name == "k1"); // copies the old value
  CHECK(s.kernels[1].name == "k0"); // updates in place
  REQUIRE(s.steps.size() == 2);
  checkInvariants(s, "assign");
  // deterministic
  Schedule t = buildSchedule(g);
  CHECK(t.kernels[0].name == s.kernels[0].name);
}

TEST_CASE("schedule: a stale read is a cycle and an error", "[schedule]") {
  Graph g = readGraphFile(std::string(UOPC_SOURCE_DIR) + "/test/lit/passes/Inputs/schedule-stale-read.json");
  CHECK_THROWS_WITH(buildSchedule(g), Catch::Contains("cycle detected while combining buffer states"));
}

TEST_CASE("schedule: names are sanitized", "[schedule]") {
  CHECK(sanitizeName("CPU:1") == "CPU_1");
  CHECK(sanitizeName("../etc") == "___etc");
  CHECK(sanitizeName("") == "k");
  CHECK(sanitizeName("0abc") == "k0abc");
  CHECK(sanitizeName(std::string(100, 'a')).size() == 64);
}

TEST_CASE("schedule: memory plan invariants on every corpus graph", "[schedule][corpus]") {
  fs::path corpus = fs::path(UOPC_SOURCE_DIR) / ".." / "shared" / "corpus" / "public";
  if (!fs::is_directory(corpus)) {
    WARN("no corpus at " << corpus.string() << ": skipped");
    return;
  }
  size_t shared = 0, n = 0;
  for (const auto &e : fs::directory_iterator(corpus)) {
    fs::path graph = e.path() / "graph.json";
    if (!fs::is_regular_file(graph)) continue;
    Graph g = compiled(graph.string());
    Schedule s = buildSchedule(g);
    checkInvariants(s, e.path().filename().string());
    for (size_t a = 0; a < s.buffers.size(); ++a) // storage shared: overlapping bytes on one device
      for (size_t b = a + 1; b < s.buffers.size(); ++b) {
        const SchedBuffer &x = s.buffers[a], &y = s.buffers[b];
        if (x.isParam || y.isParam) continue;
        for (size_t i = 0; i < x.devices.size(); ++i)
          for (size_t j = 0; j < y.devices.size(); ++j)
            if (x.devices[i] == y.devices[j] && x.lifetimes[i].first >= 0 && y.lifetimes[j].first >= 0 &&
                x.offsets[i] < y.offsets[j] + y.bytes() && y.offsets[j] < x.offsets[i] + x.bytes())
              ++shared;
      }
    ++n;
  }
  CHECK(n > 0);
  CHECK(shared > 0); // some intermediates do share storage
}
