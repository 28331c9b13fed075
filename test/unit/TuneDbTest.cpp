// The tuning database (Driver/TuneDb.h): what the writer writes the reader reads back byte for byte, entries
// are found by their whole key, and a malformed file is one message naming it.
#include "Driver/TuneDb.h"
#include "IR/Error.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <functional>

using namespace uopc;
using Json = nlohmann::ordered_json;

namespace {

const std::string kHash(64, 'a');

TuneEntry entry(const std::string &cpu, int64_t threads, std::vector<std::string> opts, bool searched) {
  TuneEntry e;
  e.key = {kHash, "llvm", cpu, "flags-0123456789abcdef", threads};
  e.opts = std::move(opts);
  if (searched) e.searched = TuneSearched{14, 1.5, 950000, 1020000};
  return e;
}

std::string refusal(const std::function<void(Json &)> &edit) {
  TuneDb db;
  db.put(entry("CPU A", 2, {"upcast:0:8", "unroll:0:2"}, true));
  Json j = Json::parse(tuneDbJson(db));
  edit(j);
  try {
    parseTuneDb(j.dump(), "t.json");
  } catch (const Error &e) {
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("tune db: written, read back, written again: the same bytes", "[tune]") {
  TuneDb db;
  db.put(entry("CPU B", 2, {"upcast:0:8", "upcast:1:32", "pack:2"}, true));
  db.put(entry("CPU A", 2, {}, false));
  db.put(entry("CPU A", 4, {"partial:0:16"}, true));
  std::string text = tuneDbJson(db);
  TuneDb back = parseTuneDb(text, "t.json");
  CHECK(tuneDbJson(back) == text);
  REQUIRE(back.entries.size() == 3);
  // sorted by key, whatever the order they were put in
  CHECK(back.entries[0].key.cpu == "CPU A");
  CHECK(back.entries[0].key.threads == 2);
  CHECK(back.entries[2].key.cpu == "CPU B");
  CHECK(!back.entries[0].searched);
  REQUIRE(back.entries[2].searched);
  CHECK(back.entries[2].searched->candidates == 14);
  CHECK(back.entries[2].searched->bestNs == 950000);
}

TEST_CASE("tune db: an entry is found by its whole key and replaced by put", "[tune]") {
  TuneDb db;
  db.put(entry("CPU A", 2, {"upcast:0:8"}, true));
  TuneKey k = entry("CPU A", 2, {}, false).key;
  REQUIRE(db.find(k));
  CHECK(db.find(k)->opts == std::vector<std::string>{"upcast:0:8"});
  for (auto edit : std::vector<std::function<void(TuneKey &)>>{[](TuneKey &x) { x.cpu = "CPU B"; },
                                                                [](TuneKey &x) { x.features = "flags-x"; },
                                                                [](TuneKey &x) { x.threads = 4; },
                                                                [](TuneKey &x) { x.target = "c"; },
                                                                [](TuneKey &x) { x.kernel = std::string(64, 'b'); }}) {
    TuneKey other = k;
    edit(other);
    CHECK(!db.find(other));
  }
  db.put(entry("CPU A", 2, {"upcast:0:4"}, false));
  CHECK(db.entries.size() == 1);
  CHECK(db.find(k)->opts == std::vector<std::string>{"upcast:0:4"});
}

TEST_CASE("tune db: a malformed database is one message naming the file", "[tune]") {
  CHECK(refusal([](Json &) {}) == "accepted");
  CHECK(refusal([](Json &j) { j["version"] = 2; }) == "tuning database 't.json': version 2: this uopc reads version 1");
  CHECK(refusal([](Json &j) { j["format"] = "uopc-manifest"; }) == "tuning database 't.json': 'format' is not \"uopc-tune-db\"");
  CHECK(refusal([](Json &j) { j.erase("entries"); }) == "tuning database 't.json': missing field 'entries'");
  CHECK(refusal([](Json &j) { j["entries"][0]["threads"] = -1; }) ==
        "tuning database 't.json': entries[0]: 'threads' is not an integer from 1 to 4096");
  CHECK(refusal([](Json &j) { j["entries"][0]["kernel"] = "zz"; }) ==
        "tuning database 't.json': entries[0]: 'kernel' is not a kernel hash (64 lowercase hex digits)");
  CHECK(refusal([](Json &j) { j["entries"][0]["target"] = "ptx"; }) == "tuning database 't.json': entries[0]: 'target' is not c or llvm");
  CHECK(refusal([](Json &j) { j["entries"][0]["opts"] = {"upcast:0"}; }).find("entries[0]: opt 'upcast:0' is not upcast:AXIS:AMOUNT") !=
        std::string::npos);
  CHECK(refusal([](Json &j) { j["entries"][0]["opts"] = {3}; }) == "tuning database 't.json': entries[0]: 'opts' is not a list of strings");
  CHECK(refusal([](Json &j) { j["entries"][0]["searched"]["seconds"] = -3; }) ==
        "tuning database 't.json': entries[0].searched: 'seconds' is not a number from 0 to 1e15");
  CHECK(refusal([](Json &j) { j["entries"][0]["why"] = "fast"; }) == "tuning database 't.json': entries[0]: unknown field 'why'");
  CHECK(refusal([](Json &j) { j["entries"].push_back(j["entries"][0]); }) ==
        "tuning database 't.json': entries[1]: a second entry of kernel " + kHash + " for the same target and machine");
  // not JSON at all
  CHECK_THROWS_WITH(parseTuneDb("{\"format\": ", "t.json"), Catch::Contains("tuning database 't.json': not JSON"));
  CHECK_THROWS_WITH(parseTuneDb("[]", "t.json"), "tuning database 't.json': not a JSON object");
}

TEST_CASE("tune db: this machine's key names a CPU and its features", "[tune]") {
  MachineId m = thisMachine("native"), v3 = thisMachine("x86-64-v3");
  CHECK(!m.cpu.empty());
  CHECK(m.features.rfind("flags-", 0) == 0);
  CHECK(v3.cpu == "x86-64-v3 on " + m.cpu); // (kernels built for another CPU, timed on this one)
  CHECK(v3.features == m.features);
}
