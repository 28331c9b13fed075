// The reader's rewrite of tinygrad 0.14.0's forms (IR/ProducerForms.h) over both corpora and small graphs.
#include "IR/ProducerForms.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Records.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

using namespace uopc;
namespace fs = std::filesystem;

namespace {

std::string corpusRoot() {
  if (const char *env = std::getenv("UOPC_CORPUS"); env && *env) return env;
#ifdef UOPC_CORPUS_DIR
  return UOPC_CORPUS_DIR;
#else
  return "../shared/corpus";
#endif
}

std::vector<fs::path> graphsUnder(const fs::path &root) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto &set : fs::directory_iterator(root, ec))
    if (set.is_directory())
      for (auto &cs : fs::directory_iterator(set.path(), ec))
        if (fs::exists(cs.path() / "graph.json")) out.push_back(cs.path() / "graph.json");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const UOp *> reachable(const UOp *root) {
  std::vector<const UOp *> out, stack{root};
  std::vector<bool> seen;
  while (!stack.empty()) {
    const UOp *u = stack.back();
    stack.pop_back();
    if (u->index >= seen.size()) seen.resize(u->index + 1, false);
    if (seen[u->index]) continue;
    seen[u->index] = true;
    out.push_back(u);
    for (const UOp *s : u->src()) stack.push_back(s);
  }
  return out;
}

bool isDeviceRange(const UOp *u) {
  return u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count &&
         u->arg->elems().back()->kind == ArgKind::AxisType && u->arg->elems().back()->axisType() == AxisType::DEVICE;
}

} // namespace

TEST_CASE("0.14.0 graphs read as format v1: no UNSHARD form, device range or weakfloat is left", "[io][corpus]") {
  std::vector<fs::path> files = graphsUnder(corpusRoot() + "-0.14");
  if (files.empty()) {
    WARN("no corpus at '" << corpusRoot() << "-0.14': the 0.14.0 test was SKIPPED");
    return;
  }
  size_t multi = 0, deviceNums = 0;
  for (const fs::path &p : files) {
    INFO("corpus file " << p.string());
    Graph g = readGraphFile(p.string());
    for (const UOp *u : reachable(g.root)) {
      CHECK(u->dtype != DType::WeakFloat);
      CHECK_FALSE(isDeviceRange(u));
      if (u->op == Op::MULTI) {
        ++multi;
        CHECK(u->nsrc == 1);
        CHECK(u->arg->kind == ArgKind::Int);
      }
      if (u->op == Op::PARAM && u->arg && ParamArg::decode(u->arg).name == std::optional<std::string>("_device_num"))
        ++deviceNums;
      // a weak operand of a typed ALU op is no constant: constants took the operand's dtype
      if (isALU(u->op) && u->dtype != DType::WeakInt)
        for (const UOp *s : u->src()) CHECK_FALSE((s->op == Op::CONST && s->dtype == DType::WeakInt && u->dtype != DType::Bool));
    }
  }
  CHECK(multi > 0);
  CHECK(deviceNums > 0);
}

TEST_CASE("the rewrite is idempotent on both corpora", "[io][corpus]") {
  std::vector<fs::path> files = graphsUnder(corpusRoot());
  std::vector<fs::path> more = graphsUnder(corpusRoot() + "-0.14");
  files.insert(files.end(), more.begin(), more.end());
  if (files.empty()) {
    WARN("no corpus at '" << corpusRoot() << "': the idempotence test was SKIPPED");
    return;
  }
  for (const fs::path &p : files) {
    INFO("corpus file " << p.string());
    Graph g = readGraphFile(p.string());
    std::string j = writeGraphJson(g);
    Graph g2 = readGraphJson(j, "again");
    CHECK(writeGraphJson(g2) == j);
    Graph gb = readGraph(writeGraphBinary(g), "bin");
    CHECK(writeGraphJson(gb) == j);
  }
}

TEST_CASE("weak constants commit to the strong operand's dtype", "[io]") {
  Graph g;
  Context &c = *g.ctx;
  ParamArg pa;
  pa.slot = 0;
  pa.dtype = DType::Float32;
  pa.devices = {"CPU"};
  const UOp *x = c.make(Op::PARAM, DType::Float32, {c.constInt(DType::WeakInt, 4)}, pa.encode(c));
  const UOp *one = c.constFloat(DType::WeakFloat, 1.0);
  const UOp *add = c.make(Op::ADD, DType::Float32, {x, one});
  const UOp *third = c.make(Op::RECIPROCAL, DType::WeakFloat, {c.constFloat(DType::WeakFloat, 3.0)});
  const UOp *mul = c.make(Op::MUL, DType::Float64, {c.make(Op::CAST, DType::Float64, {add}, c.argDType(DType::Float64)), third});
  const UOp *i = c.make(Op::ADD, DType::Int32, {c.make(Op::CAST, DType::Int32, {x}, c.argDType(DType::Int32)), c.constInt(DType::WeakInt, 7)});
  g.root = c.make(Op::SINK, DType::Void, {mul, i});
  normalizeProducerForms(g);
  const UOp *m = g.root->src(0), *a = g.root->src(1);
  REQUIRE(m->op == Op::MUL);
  // float64 use: the weakfloat RECIPROCAL is computed at float64, its constant too
  CHECK(m->src(1)->op == Op::RECIPROCAL);
  CHECK(m->src(1)->dtype == DType::Float64);
  CHECK(m->src(1)->src(0)->dtype == DType::Float64);
  // the float32 ADD's 1.0 is a float32 constant
  const UOp *add2 = m->src(0)->src(0);
  REQUIRE(add2->op == Op::ADD);
  CHECK(add2->src(1)->op == Op::CONST);
  CHECK(add2->src(1)->dtype == DType::Float32);
  CHECK(add2->src(1)->arg->f() == 1.0);
  // int32 + weakint 7: an int32 constant
  CHECK(a->src(1)->dtype == DType::Int32);
  CHECK(a->src(1)->arg->i() == 7);
  // a second rewrite changes nothing
  const UOp *root = g.root;
  normalizeProducerForms(g);
  CHECK(g.root == root);
}

TEST_CASE("an UNSHARD over two axes is refused with a message naming the node", "[io]") {
  Graph g;
  Context &c = *g.ctx;
  ParamArg pa;
  pa.slot = 0;
  pa.dtype = DType::Float32;
  pa.devices = {"CPU", "CPU:1"};
  pa.deviceIsTuple = true;
  const UOp *x = c.make(Op::PARAM, DType::Float32, {c.constInt(DType::WeakInt, 4)}, pa.encode(c));
  const UOp *r = c.make(Op::RANGE, DType::WeakInt, {c.constInt(DType::WeakInt, 2)},
                        c.argTuple({c.argInt(-1), c.argAxisType(AxisType::DEVICE)}));
  g.root = c.make(Op::SINK, DType::Void, {c.make(Op::MULTI, DType::Float32, {x, r}, c.argTuple({c.argInt(0), c.argInt(1)}))});
  REQUIRE_THROWS_AS(normalizeProducerForms(g), Error);
  try {
    normalizeProducerForms(g);
  } catch (const Error &e) {
    CHECK(std::string(e.what()).find("UNSHARD must have one sharded axis") != std::string::npos);
  }
}
