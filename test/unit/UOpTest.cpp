// Hash-consing, arg interning, records and toposort of the IR core.
#include "IR/Error.h"
#include "IR/Records.h"
#include "IR/UOp.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace uopc;

TEST_CASE("structurally equal nodes are one node", "[ir]") {
  Context c;
  const UOp *a = c.constInt(DType::Int32, 3);
  const UOp *b = c.constInt(DType::Int32, 3);
  CHECK(a == b);
  CHECK(c.constInt(DType::Int64, 3) != a); // dtype is part of identity
  CHECK(c.constInt(DType::Int32, 4) != a); // arg too
  const UOp *x = c.make(Op::ADD, DType::Int32, {a, c.constInt(DType::Int32, 4)});
  const UOp *y = c.make(Op::ADD, DType::Int32, {b, c.constInt(DType::Int32, 4)});
  CHECK(x == y);
  CHECK(c.make(Op::ADD, DType::Int32, {c.constInt(DType::Int32, 4), a}) != x); // source order matters
  CHECK(c.make(Op::ADD, DType::Int32, {a, c.constInt(DType::Int32, 4)}, nullptr, c.argString("t")) != x); // tag
  CHECK(c.numNodes() == 6);
}

TEST_CASE("args intern by value; floats by bits", "[ir]") {
  Context c;
  CHECK(c.argInt(5) == c.argInt(5));
  CHECK(c.argUInt(5) == c.argInt(5)); // small unsigned values are plain ints
  CHECK(c.argUInt(UINT64_MAX)->kind == ArgKind::UInt);
  CHECK(c.argFloat(0.0) != c.argFloat(-0.0));
  CHECK(c.argFloat(NAN) == c.argFloat(NAN));
  CHECK(c.argString("CPU") == c.argString(std::string("CP") + "U"));
  CHECK(c.argString("CPU") != c.argBytes("CPU"));
  const Arg *t1 = c.argTuple({c.argInt(1), nullptr, c.argString("a")});
  const Arg *t2 = c.argTuple({c.argInt(1), nullptr, c.argString("a")});
  CHECK(t1 == t2);
  CHECK(t1 != c.argTuple({c.argInt(1), c.argString("a")}));
  CHECK(c.argTuple({}) == c.argTuple({}));
  CHECK(c.argOp(Op::ADD) != c.argOp(Op::MUL));
  CHECK(c.argDType(DType::Float32)->dtype() == DType::Float32);
}

TEST_CASE("records drop defaults and order fields canonically", "[ir]") {
  Context c;
  std::vector<std::pair<std::string_view, const Arg *>> f1 = {
      {"device", c.argString("CPU")}, {"dtype", c.argDType(DType::Float32)}, {"slot", c.argInt(2)},
      {"volatile", c.argBool(false)}, {"addrspace", c.argAddrSpace(AddrSpace::GLOBAL)}};
  std::vector<std::pair<std::string_view, const Arg *>> f2 = {
      {"slot", c.argInt(2)}, {"dtype", c.argDType(DType::Float32)}, {"device", c.argString("CPU")}};
  const Arg *a = makeRecord(c, "ParamArg", f1);
  const Arg *b = makeRecord(c, "ParamArg", f2);
  CHECK(a == b);
  REQUIRE(a->count == 3);
  CHECK(a->keys()[0] == "slot");
  CHECK(a->keys()[2] == "device");
  ParamArg p = ParamArg::decode(a);
  CHECK(p.slot == 2);
  CHECK(p.dtype == DType::Float32);
  REQUIRE(p.devices.size() == 1);
  CHECK(p.devices[0] == "CPU");
  CHECK(p.encode(c) == a);

  CHECK_THROWS_WITH(makeRecord(c, "ParamArg", {{"dtype", c.argDType(DType::Float32)}}),
                    Catch::Contains("ParamArg.slot is required"));
  CHECK_THROWS_WITH(makeRecord(c, "ParamArg", {{"slot", c.argInt(0)}, {"dtype", c.argDType(DType::Int8)}, {"bogus", nullptr}}),
                    Catch::Contains("has no field 'bogus'"));
  // Unknown classes keep every field, sorted by name.
  const Arg *u = makeRecord(c, "Opt", {{"op", c.argString("UPCAST")}, {"axis", c.argInt(0)}});
  CHECK(u->keys()[0] == "axis");
}

TEST_CASE("toposort is iterative and puts sources first", "[ir]") {
  Context c;
  const UOp *x = c.constFloat(DType::Float32, 1.0);
  const UOp *cur = x;
  const size_t depth = 1000000;
  for (size_t i = 0; i < depth; ++i) cur = c.make(Op::NEG, DType::Float32, {cur});
  std::vector<const UOp *> order = toposort(cur);
  REQUIRE(order.size() == depth + 1);
  CHECK(order.front() == x);
  CHECK(order.back() == cur);
  // diamond: shared node appears once, before both users
  const UOp *s = c.make(Op::SQRT, DType::Float32, {x});
  const UOp *d = c.make(Op::ADD, DType::Float32, {c.make(Op::EXP2, DType::Float32, {s}), c.make(Op::LOG2, DType::Float32, {s})});
  std::vector<const UOp *> o2 = toposort(d);
  CHECK(o2.size() == 5);
  CHECK(o2[0] == x);
  CHECK(o2[1] == s);
}

TEST_CASE("op and dtype names round-trip", "[ir]") {
  for (unsigned i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    CHECK(opFromName(opName(op)) == op);
  }
  CHECK(opFromName("UNSHARD") == Op::MULTI);
  CHECK(!opFromName("FOO"));
  CHECK(dtypeFromName("bfloat16") == DType::BFloat16);
  CHECK(dtypeSize(DType::Float16) == 2);
  CHECK(!dtypeFromName("float128"));
}

TEST_CASE("StampedTable: clear() empties in O(1); scratch leases are reused and nest", "[ir]") {
  Context c;
  struct Slot {
    int v = -1;
    uint32_t gen = 0;
  };
  struct Tables : Context::ScratchBase {
    StampedTable<Slot> t;
  };
  const UOp *a = c.constInt(DType::Int32, 1), *b = c.constInt(DType::Int32, 2);
  {
    Context::Scratch<Tables> s(c);
    CHECK(s->t.find(a) == nullptr);
    s->t.at(a).v = 5;
    CHECK(s->t.at(a).v == 5);
    CHECK(s->t.find(b) == nullptr);
    s->t.clear();
    CHECK(s->t.find(a) == nullptr);
    CHECK(s->t.at(a).v == -1); // reset on first touch in the new generation
    s->t.at(b).v = 7;
    {
      Context::Scratch<Tables> inner(c); // a nested lease gets its own tables
      CHECK(&inner->t != &s->t);
      CHECK(inner->t.find(b) == nullptr);
    }
  }
  CHECK(c.scratchStats().created == 2);
  {
    Context::Scratch<Tables> again(c); // reused from the pool
    CHECK(c.scratchStats().created == 2);
    again->t.clear();
    CHECK(again->t.find(b) == nullptr);
  }
}

TEST_CASE("toposort: per-thread tables stay valid across Contexts and sizes", "[ir]") {
  Context big, small;
  const UOp *cur = big.constInt(DType::Int32, 0);
  for (int i = 0; i < 100000; ++i) cur = big.make(Op::NEG, DType::Int32, {cur});
  const UOp *x = small.constInt(DType::Int32, 1);
  const UOp *d = small.make(Op::ADD, DType::Int32, {small.make(Op::NEG, DType::Int32, {x}), x});
  for (int rep = 0; rep < 3; ++rep) {
    CHECK(toposort(cur).size() == 100001);
    std::vector<const UOp *> o = toposort(d); // low indices the big call marked: stale, not seen
    REQUIRE(o.size() == 3);
    CHECK(o[0] == x);
    CHECK(o[2] == d);
    CHECK(toposort(cur->src(0)->src(0)).size() == 99999);
  }
}
