// Unit tests of the work model (IR/Work.h): Count's arithmetic and printing, and kernelWork against counts
// done by hand on small kernels, and against the interpreter's evaluation of every element (tensorWork).
#include "IR/GraphIO.h"
#include "IR/Kernel.h"
#include "IR/Work.h"
#include "Passes/PassManager.h"
#include "Passes/Schedule.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>

using namespace uopc;

TEST_CASE("Count: sums and products of constants and symbolic sizes", "[work]") {
  Count a(6), n = Count::symbol("n"), m = Count::symbol("m");
  CHECK(a.constant() == 6);
  CHECK(Count().constant() == 0);
  CHECK(Count().str() == "0");
  Count p = n * Count(3);
  CHECK(p.str() == "3*n");
  CHECK(!p.constant());
  Count s = p;
  s += Count(4);
  s += n * m * Count(2);
  s += m * n; // the same monomial whatever the order of its factors
  CHECK(s.str() == "3*m*n + 3*n + 4");
  CHECK((n * Count(0)).isZero());
  // saturates instead of overflowing
  Count big(INT64_MAX / 2);
  CHECK((big * Count(4)).constant() == INT64_MAX);
  Count sum(INT64_MAX - 1);
  sum += Count(5);
  CHECK(sum.constant() == INT64_MAX);
}

namespace {

std::vector<KernelWork> kernelWorks(const std::string &json) {
  Graph g = readGraphJson(json);
  std::ostringstream out, err;
  std::vector<PipelineEntry> pipeline;
  for (const std::string &p : defaultPipeline()) pipeline.push_back(findPass(p));
  runPipeline(g, pipeline, {}, out, err);
  Schedule s = buildSchedule(g);
  std::vector<KernelWork> w;
  for (const SchedStep &st : s.steps)
    if (st.kind == SchedStep::Kind::Kernel) w.push_back(kernelWork(kernelSink(s.kernels[st.kernel].call)));
  return w;
}

// out(4) = x(8,4).sum(0) * 2: a reduction of 32 elements (32 accumulations), one MUL per output
const char *kRowSum = R"({"format":"uopc-graph","version":1,"producer":{"name":"hand-written","version":"1"},
 "semantics":{"pad_fill":"zero"},"nodes":[
 {"id":0,"op":"CONST","dtype":"weakint","arg":4},{"id":1,"op":"CONST","dtype":"weakint","arg":32},
 {"id":2,"op":"PARAM","dtype":"float32","src":[0],"arg":{"$":"ParamArg","slot":0,"dtype":{"$":"DType","v":"float32"},"device":"CPU"}},
 {"id":3,"op":"PARAM","dtype":"float32","src":[1],"arg":{"$":"ParamArg","slot":1,"dtype":{"$":"DType","v":"float32"},"device":"CPU"}},
 {"id":4,"op":"CONST","dtype":"weakint","arg":8},{"id":5,"op":"STACK","dtype":"weakint","src":[4,0]},
 {"id":6,"op":"RESHAPE","dtype":"float32","src":[3,5]},
 {"id":7,"op":"REDUCE","dtype":"float32","src":[6],"arg":[{"$":"Ops","v":"ADD"},1]},
 {"id":8,"op":"CONST","dtype":"float32","arg":{"$":"float","v":"2.0"}},
 {"id":9,"op":"MUL","dtype":"float32","src":[7,8]},
 {"id":10,"op":"STORE","dtype":"void","src":[2,9]},{"id":11,"op":"AFTER","dtype":"float32","src":[2,10]},
 {"id":12,"op":"SINK","dtype":"void","src":[11]}],"root":12})";

} // namespace

TEST_CASE("kernelWork: loads, stores and ops executed per kernel", "[work]") {
  auto w = kernelWorks(kRowSum);
  REQUIRE(w.size() == 1);
  CHECK(w[0].ops.constant() == 32 + 4); // 32 accumulations, 4 multiplies
  CHECK(w[0].loads.constant() == 32);
  CHECK(w[0].loadBytes.constant() == 128);
  CHECK(w[0].stores.constant() == 4);
  CHECK(w[0].storeBytes.constant() == 16);
  // the graph itself: the REDUCE over 32 source elements and the MUL over 4
  Graph g = readGraphJson(kRowSum);
  CHECK(tensorWork(g).constant() == 36);
}
