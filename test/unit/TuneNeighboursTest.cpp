// The --tune search's moves (Driver/Tune.h tuneNeighbours): which opt lists it tries from a kernel's list.
#include "Driver/Tune.h"
#include "IR/Error.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace uopc;

namespace {

bool has(const std::vector<std::vector<std::string>> &ns, const std::vector<std::string> &l) {
  return std::find(ns.begin(), ns.end(), l) != ns.end();
}

} // namespace

TEST_CASE("tune: an upcast's amount moves to the divisors of its loop near it, not only powers of two") {
  // a 3x3 convolution's tile: 32 output channels by 14 pixels of a 56-pixel row
  TuneKernelShape k{{64, 56, 56}, {64, 3, 3}, {1, 2}};
  auto ns = tuneNeighbours({"upcast:2:14", "upcast:0:32", "relayout:0:2"}, k);
  CHECK(has(ns, {"upcast:2:7", "upcast:0:32", "relayout:0:2"}));
  CHECK(has(ns, {"upcast:2:28", "upcast:0:32", "relayout:0:2"}));
  CHECK(has(ns, {"upcast:2:8", "upcast:0:32", "relayout:0:2"}));
  CHECK_FALSE(has(ns, {"upcast:2:16", "upcast:0:32", "relayout:0:2"})); // (16 does not divide 56)
  CHECK_FALSE(has(ns, {"upcast:2:14", "upcast:0:32", "relayout:0:2"})); // (not itself)
}

TEST_CASE("tune: a block of the upcast's loop and amount moves with it") {
  // a 1x1 convolution's pixels in blocks of 32 lanes (ShuffleNet's grouped ones: channel blocks of 28)
  TuneKernelShape k{{112, 3136}, {24}, {1}};
  auto ns = tuneNeighbours({"merge:1", "block:0:28", "block:1:16", "upcast:0:28", "upcast:1:16"}, k);
  CHECK(has(ns, {"merge:1", "block:0:14", "block:1:16", "upcast:0:14", "upcast:1:16"}));
  CHECK(has(ns, {"merge:1", "block:0:56", "block:1:16", "upcast:0:56", "upcast:1:16"}));
  CHECK(has(ns, {"merge:1", "block:0:28", "block:1:32", "upcast:0:28", "upcast:1:32"}));
  // (never an upcast left larger than its block)
  CHECK_FALSE(has(ns, {"merge:1", "block:0:28", "block:1:16", "upcast:0:56", "upcast:1:16"}));
  // a block may not take the whole loop
  TuneKernelShape small{{32, 64}, {8}, {1}};
  auto ss = tuneNeighbours({"block:0:16", "upcast:0:16"}, small);
  CHECK(has(ss, {"block:0:8", "upcast:0:8"}));
  CHECK_FALSE(has(ss, {"block:0:32", "upcast:0:32"}));
}

TEST_CASE("tune: an opt that does not parse is an error") {
  CHECK_THROWS_AS(tuneNeighbours({"upcast:x"}, TuneKernelShape{{8}, {}, {}}), Error);
}
