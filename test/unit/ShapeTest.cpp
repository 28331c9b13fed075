// Unit tests of ShapeInfo: tinygrad's shape and device inference on hand-built graphs.
#include "IR/Shape.h"
#include "IR/Error.h"
#include "IR/Records.h"

#include <catch2/catch.hpp>

using namespace uopc;

namespace {

/// Builds tensor-level graphs the way tinygrad's exporter writes them.
struct Builder {
  Graph g;
  Context &c = *g.ctx;

  const UOp *i(int64_t v) { return c.constInt(DType::WeakInt, v); }
  const UOp *f(double v) { return c.constFloat(DType::Float32, v); }
  const UOp *stack(std::initializer_list<const UOp *> dims) {
    return c.make(Op::STACK, dims.size() ? DType::WeakInt : DType::Void, dims);
  }
  const UOp *dims(std::initializer_list<int64_t> ds) {
    std::vector<const UOp *> v;
    for (int64_t d : ds) v.push_back(i(d));
    return c.make(Op::STACK, v.empty() ? DType::Void : DType::WeakInt, v);
  }
  const UOp *param(int64_t slot, DType dt, int64_t n, std::vector<std::string> dev = {"CPU"}) {
    ParamArg p;
    p.slot = slot;
    p.dtype = dt;
    p.deviceIsTuple = dev.size() > 1;
    p.devices = std::move(dev);
    return c.make(Op::PARAM, dt, {i(n)}, p.encode(c));
  }
  const UOp *var(const char *name, int64_t lo, int64_t hi, int64_t slot = 2) {
    ParamArg p;
    p.slot = slot;
    p.dtype = DType::WeakInt;
    p.name = name;
    p.vminVmax = {lo, hi};
    return c.make(Op::PARAM, DType::WeakInt, {stack({})}, p.encode(c));
  }
  const UOp *reshape(const UOp *x, const UOp *shape) { return c.make(Op::RESHAPE, x->dtype, {x, shape}); }
  const UOp *un(Op op, const UOp *x, const Arg *arg = nullptr) { return c.make(op, x->dtype, {x}, arg); }
  const UOp *bin(Op op, const UOp *x, const UOp *y) { return c.make(op, x->dtype, {x, y}); }
  const Arg *ints(std::initializer_list<int64_t> v) {
    std::vector<const Arg *> e;
    for (int64_t x : v) e.push_back(c.argInt(x));
    return c.argTuple(e);
  }
  /// Gives every node its creation index as input id, so messages read "node N (OP)".
  void number() {
    for (size_t k = 0; k < c.numNodes(); ++k) g.inputIds[c.node(k)] = uint32_t(k);
  }
};

std::string shapeOf(ShapeInfo &si, const UOp *u) {
  const auto &s = si.shape(u);
  return s ? ShapeInfo::str(*s) : "none";
}

} // namespace

TEST_CASE("PARAM and BUFFER shapes come from their size source", "[shape]") {
  Builder b;
  ShapeInfo si(b.g);
  CHECK(shapeOf(si, b.param(0, DType::Float32, 20)) == "(20,)");
  CHECK(shapeOf(si, b.var("i", 1, 10)) == "()");
  CHECK(shapeOf(si, b.i(4)) == "()");
  CHECK(shapeOf(si, b.c.make(Op::SINK, DType::Void, {b.i(4)})) == "none");
}

TEST_CASE("movement ops read their STACK operands", "[shape]") {
  Builder b;
  ShapeInfo si(b.g);
  const UOp *x = b.reshape(b.param(0, DType::Float32, 20), b.dims({4, 5}));
  CHECK(shapeOf(si, x) == "(4, 5)");
  // EXPAND prepends the new axes (tinygrad: marg + ps).
  CHECK(shapeOf(si, b.c.make(Op::EXPAND, DType::Float32, {x, b.dims({3})})) == "(3, 4, 5)");
  CHECK(shapeOf(si, b.c.make(Op::EXPAND, DType::Float32, {b.f(1.0), b.i(7)})) == "(7,)");
  CHECK(shapeOf(si, b.un(Op::PERMUTE, x, b.ints({1, 0}))) == "(5, 4)");
  // PAD(x, offsets, new sizes) and SHRINK(x, offsets, sizes).
  CHECK(shapeOf(si, b.c.make(Op::PAD, DType::Float32, {x, b.dims({1, 0}), b.dims({6, 7})})) == "(6, 7)");
  CHECK(shapeOf(si, b.c.make(Op::SHRINK, DType::Float32, {x, b.dims({1, 2}), b.dims({3, 3})})) == "(3, 3)");
  const Arg *flips = b.c.argTuple({b.c.argBool(true), b.c.argBool(false)});
  CHECK(shapeOf(si, b.un(Op::FLIP, x, flips)) == "(4, 5)");
  CHECK(shapeOf(si, b.reshape(x, b.i(20))) == "(20,)");
  CHECK_THROWS_WITH(si.shape(b.reshape(x, b.stack({}))), Catch::Contains("RESHAPE from 20 to 1 elements"));
}

TEST_CASE("movement op errors name the node and the problem", "[shape]") {
  Builder b;
  const UOp *x = b.reshape(b.param(0, DType::Float32, 20), b.dims({4, 5}));
  const UOp *r = b.reshape(x, b.dims({3, 7}));
  const UOp *p = b.un(Op::PERMUTE, x, b.ints({0, 0}));
  const UOp *p3 = b.un(Op::PERMUTE, x, b.ints({0, 1, 2}));
  const UOp *pad = b.c.make(Op::PAD, DType::Float32, {x, b.dims({2, 0}), b.dims({5, 5})});
  const UOp *padRank = b.c.make(Op::PAD, DType::Float32, {x, b.dims({0}), b.dims({5, 5})});
  const UOp *shr = b.c.make(Op::SHRINK, DType::Float32, {x, b.dims({3, 0}), b.dims({2, 5})});
  const UOp *neg = b.c.make(Op::SHRINK, DType::Float32, {x, b.dims({-1, 0}), b.dims({2, 5})});
  const UOp *flip = b.un(Op::FLIP, x, b.ints({0, 1}));
  const UOp *red = b.un(Op::REDUCE, x, b.c.argTuple({b.c.argOp(Op::ADD), b.c.argInt(3)}));
  b.number();
  ShapeInfo si(b.g);
  CHECK_THROWS_WITH(si.shape(r),
                    "node " + std::to_string(b.g.inputIds.get(r)) + " (RESHAPE): RESHAPE from 20 to 21 elements");
  CHECK_THROWS_WITH(si.shape(p), Catch::EndsWith("(PERMUTE): PERMUTE arg is not a permutation of 2 axes"));
  CHECK_THROWS_WITH(si.shape(p3), Catch::EndsWith("PERMUTE arg is not a permutation of 2 axes"));
  CHECK_THROWS_WITH(si.shape(pad), Catch::EndsWith("PAD of axis 0 (size 4) to offset 2 and size 5 is out of bounds"));
  CHECK_THROWS_WITH(si.shape(padRank), Catch::EndsWith("PAD offsets has 1 entry for a rank-2 source"));
  CHECK_THROWS_WITH(si.shape(shr),
                    Catch::EndsWith("SHRINK of axis 0 (size 4) to offset 3 and size 2 is out of bounds"));
  CHECK_THROWS_WITH(si.shape(neg), Catch::Contains("out of bounds"));
  CHECK_THROWS_WITH(si.shape(flip), Catch::EndsWith("FLIP arg must be a list of 2 bools"));
  CHECK_THROWS_WITH(si.shape(red), Catch::EndsWith("REDUCE arg must be [op, number of axes in 0..2]"));
}

TEST_CASE("elementwise ops broadcast like tinygrad's _broadcast_shape", "[shape]") {
  Builder b;
  const UOp *x = b.reshape(b.param(0, DType::Float32, 20), b.dims({4, 5}));
  const UOp *y = b.reshape(b.param(1, DType::Float32, 20), b.dims({5, 4}));
  const UOp *row = b.param(2, DType::Float32, 5);
  const UOp *bad = b.bin(Op::ADD, x, y);
  b.number();
  ShapeInfo si(b.g);
  CHECK(shapeOf(si, b.bin(Op::ADD, x, b.f(1.0))) == "(4, 5)"); // a CONST is a scalar: shape ()
  CHECK(shapeOf(si, b.bin(Op::MUL, b.f(2.0), b.f(1.0))) == "()");
  CHECK(shapeOf(si, b.bin(Op::ADD, x, row)) == "(4, 5)");
  CHECK(shapeOf(si, b.c.make(Op::CMPLT, DType::Bool, {x, b.f(0.0)})) == "(4, 5)");
  CHECK(shapeOf(si, b.un(Op::CAST, x, b.c.argDType(DType::Int32))) == "(4, 5)");
  CHECK_THROWS_WITH(si.shape(bad), Catch::EndsWith("(ADD): shapes (4, 5) and (5, 4) do not match"));
}

TEST_CASE("REDUCE removes the leading axes it reduces", "[shape]") {
  Builder b;
  ShapeInfo si(b.g);
  const UOp *x = b.reshape(b.param(0, DType::Float32, 96), b.dims({12, 8}));
  CHECK(shapeOf(si, b.un(Op::REDUCE, x, b.c.argTuple({b.c.argOp(Op::ADD), b.c.argInt(1)}))) == "(8,)");
  CHECK(shapeOf(si, b.un(Op::REDUCE, x, b.c.argTuple({b.c.argOp(Op::MAX), b.c.argInt(2)}))) == "()");
  CHECK(shapeOf(si, b.un(Op::REDUCE, x, b.c.argTuple({b.c.argOp(Op::MUL), b.c.argInt(0)}))) == "(12, 8)");
}

TEST_CASE("STACK and BITCAST shapes", "[shape]") {
  Builder b;
  ShapeInfo si(b.g);
  const UOp *x = b.param(0, DType::Float32, 16), *y = b.param(1, DType::Float32, 16);
  CHECK(shapeOf(si, b.c.make(Op::STACK, DType::Float32, {x, y})) == "(2, 16)");
  CHECK(shapeOf(si, b.un(Op::BITCAST, x, b.c.argDType(DType::UInt32))) == "(16,)");
  CHECK(shapeOf(si, b.c.make(Op::BITCAST, DType::UInt8, {x}, b.c.argDType(DType::UInt8))) == "(64,)");
  CHECK(shapeOf(si, b.c.make(Op::BITCAST, DType::Float64, {x}, b.c.argDType(DType::Float64))) == "(8,)");
  const UOp *odd = b.param(2, DType::Float16, 3);
  CHECK_THROWS_WITH(si.shape(b.c.make(Op::BITCAST, DType::Float32, {odd}, b.c.argDType(DType::Float32))),
                    Catch::Contains("unsupported size in bitcast"));
}

TEST_CASE("symbolic sizes stay symbolic", "[shape]") {
  Builder b;
  ShapeInfo si(b.g);
  const UOp *n = b.var("i", 1, 10);
  const UOp *x = b.reshape(b.param(1, DType::Float32, 30), b.dims({3, 10}));
  const UOp *s = b.c.make(Op::SHRINK, DType::Float32, {x, b.dims({0, 0}), b.stack({b.i(3), n})});
  CHECK(shapeOf(si, s) == "(3, i)");
  REQUIRE(si.shape(s));
  CHECK((*si.shape(s))[1] == n); // the dimension is the PARAM itself
  CHECK(!ShapeInfo::constDim(n));
  CHECK(ShapeInfo::constDim(b.i(3)) == 3);
  const UOp *e = b.c.make(Op::EXPAND, DType::Float32, {b.f(1.0), b.stack({n, b.i(2)})});
  CHECK(shapeOf(si, e) == "(i, 2)");
  CHECK((*si.shape(e))[0] == n);
  const UOp *p = b.un(Op::PERMUTE, b.bin(Op::MUL, s, b.f(2.0)), b.ints({1, 0}));
  CHECK(shapeOf(si, p) == "(i, 3)");
  CHECK(shapeOf(si, b.un(Op::REDUCE, p, b.c.argTuple({b.c.argOp(Op::ADD), b.c.argInt(1)}))) == "(3,)");
  // Reshapes that keep the symbolic element count are fine; others are not.
  CHECK(shapeOf(si, b.reshape(s, b.stack({n, b.i(3), b.i(1)}))) == "(i, 3, 1)");
  CHECK_THROWS_WITH(si.shape(b.reshape(s, b.stack({n, b.i(2)}))), Catch::Contains("RESHAPE from 3*i to 2*i elements"));
  // Out of bounds only when provably so: i <= 10 fits, i+1 might not but tinygrad resolves to True.
  const UOp *big = b.c.make(Op::SHRINK, DType::Float32, {x, b.dims({0, 0}), b.stack({b.i(3), b.i(11)})});
  CHECK_THROWS_WITH(si.shape(big), Catch::Contains("out of bounds"));
}

TEST_CASE("size overflow is an error, not a wrapped number", "[shape]") {
  Builder b;
  const UOp *huge = b.param(0, DType::Float32, int64_t(1) << 62);
  const UOp *x = b.param(1, DType::Float32, 1);
  const UOp *e = b.c.make(Op::EXPAND, DType::Float32, {x, b.dims({int64_t(1) << 30, int64_t(1) << 30})});
  const UOp *r = b.reshape(x, b.dims({int64_t(1) << 62, 4}));
  b.number();
  ShapeInfo si(b.g);
  CHECK_THROWS_WITH(si.shape(huge), Catch::Contains("size overflow"));
  CHECK_THROWS_WITH(si.shape(e), Catch::Contains("size overflow: shape (1073741824, 1073741824, 1)"));
  CHECK_THROWS_WITH(si.shape(r),
                    Catch::Contains("size overflow: shape (4611686018427387904, 4) has more than 2^48 elements"));
  CHECK_THROWS_WITH(si.shape(b.reshape(x, b.dims({-1, -1}))), Catch::Contains("negative dimension"));
}

TEST_CASE("MULTI has the full shape; devices follow tinygrad's UOp.device", "[shape]") {
  Builder b;
  std::vector<std::string> four{"CPU", "CPU:1", "CPU:2", "CPU:3"};
  const UOp *shard = b.reshape(b.param(1, DType::Float32, 24, four), b.dims({3, 8}));
  const UOp *m = b.un(Op::MULTI, shard, b.c.argInt(0));
  ShapeInfo si(b.g);
  CHECK(shapeOf(si, m) == "(12, 8)");
  CHECK(si.device(m) == four);
  CHECK(si.device(b.f(2.0)).empty()); // CONST has no device
  const UOp *mul = b.bin(Op::MUL, m, b.f(2.0));
  CHECK(si.device(mul) == four);
  const UOp *sel = b.un(Op::MSELECT, shard, b.c.argInt(2));
  CHECK(si.device(sel) == std::vector<std::string>{"CPU:2"});
  const UOp *cp = b.un(Op::COPY, sel, b.c.argString("CPU:1"));
  CHECK(si.device(cp) == std::vector<std::string>{"CPU:1"});
  const UOp *cp0 = b.un(Op::COPY, sel, b.c.argString("CPU"));
  CHECK(si.device(b.c.make(Op::MSTACK, DType::Float32, {cp0, cp})) == std::vector<std::string>{"CPU", "CPU:1"});
  const Arg *two = b.c.argTuple({b.c.argString("CPU"), b.c.argString("CPU:1")});
  CHECK(si.device(b.un(Op::ALLREDUCE, shard, b.c.argTuple({b.c.argOp(Op::ADD), two}))) ==
        std::vector<std::string>{"CPU", "CPU:1"});
  CHECK(si.device(b.c.make(Op::AFTER, DType::Float32, {cp, m})) == std::vector<std::string>{"CPU:1"});
  CHECK_THROWS_WITH(si.device(b.un(Op::MSELECT, shard, b.c.argInt(4))),
                    Catch::EndsWith("MSELECT index 4 out of range for 4 devices"));
  // Symbolic shard size: the full dimension is shard * devices.
  const UOp *n = b.var("n", 1, 3); // (a range past the axis of 3 is refused: a SHRINK must fit for every n)
  const UOp *sym = b.c.make(Op::SHRINK, DType::Float32, {shard, b.dims({0, 0}), b.stack({n, b.i(8)})});
  CHECK(shapeOf(si, b.un(Op::MULTI, sym, b.c.argInt(0))) == "((n*4), 8)");
  CHECK_THROWS_WITH(si.shape(b.un(Op::MULTI, shard, b.c.argInt(2))), Catch::Contains("MULTI axis must be"));
}

TEST_CASE("results are cached and shared", "[shape]") {
  Builder b;
  ShapeInfo si(b.g);
  const UOp *x = b.param(0, DType::Float32, 5);
  const UOp *y = b.bin(Op::ADD, x, b.f(1.0));
  const auto *first = &si.shape(y);
  CHECK(&si.shape(y) == first);
  CHECK(*si.shape(y) == *si.shape(x));
}

TEST_CASE("a million-deep elementwise chain does not recurse", "[shape]") {
  Builder b;
  const UOp *x = b.param(0, DType::Float32, 5);
  const UOp *one = b.f(1.0);
  for (int k = 0; k < 1000000; ++k) x = (k % 2) ? b.bin(Op::ADD, x, one) : b.un(Op::NEG, x);
  ShapeInfo si(b.g);
  CHECK(shapeOf(si, x) == "(5,)");
  CHECK(si.device(x) == std::vector<std::string>{"CPU"});
}

TEST_CASE("index-level and late ops follow tinygrad's table", "[shape]") {
  Builder b;
  ShapeInfo si(b.g);
  const UOp *buf = b.reshape(b.param(0, DType::Float32, 20), b.dims({4, 5}));
  const UOp *r =
      b.c.make(Op::RANGE, DType::WeakInt, {b.i(4)}, b.c.argTuple({b.c.argInt(0), b.c.argAxisType(AxisType::LOOP)}));
  CHECK(shapeOf(si, r) == "()");
  CHECK(shapeOf(si, b.c.make(Op::INDEX, DType::Float32, {buf, r})) == "(5,)"); // one index consumes one axis
  CHECK(shapeOf(si, b.c.make(Op::INDEX, DType::Float32, {buf, r, r})) == "()");
  const UOp *st = b.c.make(Op::STAGE, DType::Float32, {b.f(1.0), r});
  CHECK(shapeOf(si, st) == "(4,)"); // STAGE adds a range's size in front
  CHECK(shapeOf(si, b.c.make(Op::CALL, DType::Void, {b.c.make(Op::SINK, DType::Void, {})})) == "none");
  CHECK(shapeOf(si, b.reshape(b.c.make(Op::NOOP, DType::Float32, {}), b.dims({2, 3}))) == "(2, 3)");
  const UOp *tup = b.c.make(Op::TUPLE, DType::Void, {buf, b.f(1.0)});
  CHECK(shapeOf(si, b.c.make(Op::GETTUPLE, DType::Float32, {tup}, b.c.argInt(0))) == "(4, 5)");
  CHECK_THROWS_WITH(si.shape(b.c.make(Op::GETTUPLE, DType::Float32, {tup}, b.c.argInt(2))),
                    Catch::Contains("GETTUPLE needs a TUPLE"));
  CHECK_THROWS_WITH(si.shape(b.c.make(Op::ADD, DType::Float32, {buf, b.c.make(Op::SINK, DType::Void, {})})),
                    Catch::Contains("has no shape"));
}

TEST_CASE("shape strings use Python tuple syntax", "[shape]") {
  Builder b;
  CHECK(ShapeInfo::str({}) == "()");
  CHECK(ShapeInfo::str({b.i(7)}) == "(7,)");
  CHECK(ShapeInfo::str({b.i(4), b.var("i", 1, 3)}) == "(4, i)");
}
