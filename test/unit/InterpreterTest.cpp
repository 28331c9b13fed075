// Unit tests of the reference interpreter on hand-built tensor-level graphs.
#include "IR/Error.h"
#include "IR/Records.h"
#include "Interp/Interpreter.h"
#include "IR/ScalarOps.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <limits>

using namespace uopc;

namespace {

/// Builds tensor-level graphs the way tinygrad's exporter writes them.
struct Net {
  Graph g;
  Context &c = *g.ctx;

  const UOp *i(int64_t v) { return c.constInt(DType::WeakInt, v); }
  const UOp *k(DType dt, double v) { return c.constFloat(dt, v); }
  const UOp *ki(DType dt, int64_t v) { return c.constInt(dt, v); }
  const UOp *dims(std::vector<int64_t> ds) {
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
  const UOp *var(const char *name, int64_t lo, int64_t hi, int64_t slot) {
    ParamArg p;
    p.slot = slot;
    p.dtype = DType::WeakInt;
    p.name = name;
    p.vminVmax = {lo, hi};
    if (slot < 0) p.addrspace = AddrSpace::ALU;
    return c.make(Op::PARAM, DType::WeakInt, {dims({})}, p.encode(c));
  }
  const UOp *mop(Op op, const UOp *x, const UOp *a, const UOp *b = nullptr) {
    return b ? c.make(op, x->dtype, {x, a, b}) : c.make(op, x->dtype, {x, a});
  }
  const UOp *permute(const UOp *x, std::initializer_list<int64_t> perm) {
    std::vector<const Arg *> e;
    for (int64_t p : perm) e.push_back(c.argInt(p));
    return c.make(Op::PERMUTE, x->dtype, {x}, c.argTuple(e));
  }
  const UOp *bin(Op op, const UOp *x, const UOp *y) {
    return c.make(op, isComparison(op) ? DType::Bool : x->dtype, {x, y});
  }
  const UOp *cast(const UOp *x, DType dt) { return c.make(Op::CAST, dt, {x}, c.argDType(dt)); }
  const UOp *reduce(const UOp *x, Op op, int64_t n) {
    return c.make(Op::REDUCE, x->dtype, {x}, c.argTuple({c.argOp(op), c.argInt(n)}));
  }
  /// STORE(dst, v) and the AFTER that reads it back; the graph's root is a SINK of all of them.
  std::vector<const UOp *> outs;
  void store(const UOp *dst, const UOp *v) {
    const UOp *st = c.make(Op::STORE, DType::Void, {dst, v});
    outs.push_back(c.make(Op::AFTER, dst->dtype, {dst, st}));
    g.root = c.make(Op::SINK, DType::Void, std::span<const UOp *const>(outs));
  }
};

template <typename T> std::string bytesOf(std::vector<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}
template <typename T> std::vector<T> valuesOf(const std::string &s) {
  std::vector<T> v(s.size() / sizeof(T));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(T));
  return v;
}

} // namespace

TEST_CASE("pad then +1 reads 1 in the padding when pads fill zero", "[interp]") {
  Net n;
  const UOp *x = n.param(1, DType::Float32, 2);
  const UOp *padded = n.mop(Op::PAD, x, n.i(1), n.i(4)); // (2,) at offset 1 in (4,)
  n.store(n.param(0, DType::Float32, 4), n.bin(Op::ADD, padded, n.k(DType::Float32, 1.0)));
  InterpOutputs out = interpret(n.g, {{{1, {bytesOf<float>({5, 7})}}}, {}});
  CHECK(valuesOf<float>(out.at(0)[0]) == std::vector<float>{1, 6, 8, 1});
}

TEST_CASE("with pad_fill invalid, Invalid poisons ALU and is not stored; the explicit mask keeps 1", "[interp]") {
  Net n;
  n.g.padFill = PadFill::Invalid;
  const UOp *x = n.param(1, DType::Float32, 2);
  const UOp *one = n.k(DType::Float32, 1.0);
  // pad(x)+1: the padding is Invalid, so those elements of slot 0 keep what they held.
  n.store(n.param(0, DType::Float32, 4), n.bin(Op::ADD, n.mop(Op::PAD, x, n.i(1), n.i(4)), one));
  // where(pad(ones_bool), pad(x), 0) + 1: the invalid-pad pass's mask form reads 1 in the padding.
  const UOp *mask = n.mop(Op::PAD, n.mop(Op::EXPAND, n.c.constBool(true), n.i(2)), n.i(1), n.i(4));
  const UOp *masked = n.c.make(Op::WHERE, DType::Float32, {mask, n.mop(Op::PAD, x, n.i(1), n.i(4)), n.k(DType::Float32, 0)});
  n.store(n.param(2, DType::Float32, 4), n.bin(Op::ADD, masked, one));
  InterpInputs in;
  in.buffers[0] = {bytesOf<float>({-1, -1, -1, -1})};
  in.buffers[1] = {bytesOf<float>({5, 7})};
  InterpOutputs out = interpret(n.g, in);
  CHECK(valuesOf<float>(out.at(0)[0]) == std::vector<float>{-1, 6, 8, -1});
  CHECK(valuesOf<float>(out.at(2)[0]) == std::vector<float>{1, 6, 8, 1});
}

TEST_CASE("Invalid poisons a REDUCE lane (reduce-identity is what makes it the identity)", "[interp]") {
  Net n;
  n.g.padFill = PadFill::Invalid;
  const UOp *x = n.param(1, DType::Float32, 3);
  const UOp *padded = n.mop(Op::PAD, x, n.i(0), n.i(5));
  n.store(n.param(0, DType::Float32, 1), n.mop(Op::RESHAPE, n.reduce(padded, Op::MUL, 1), n.dims({1})));
  InterpInputs in;
  in.buffers[0] = {bytesOf<float>({-7})};
  in.buffers[1] = {bytesOf<float>({2, 3, 4})};
  InterpOutputs out = interpret(n.g, in);
  CHECK(valuesOf<float>(out.at(0)[0]) == std::vector<float>{-7}); // Invalid lane: not stored
}

TEST_CASE("permute and reduce of the leading axes", "[interp]") {
  Net n;
  const UOp *x = n.mop(Op::RESHAPE, n.param(1, DType::Int32, 6), n.dims({2, 3}));
  const UOp *t = n.permute(x, {1, 0});                       // (3, 2)
  n.store(n.mop(Op::RESHAPE, n.param(0, DType::Int32, 6), n.dims({3, 2})), t);
  n.store(n.param(2, DType::Int32, 3), n.reduce(x, Op::ADD, 1));
  n.store(n.param(3, DType::Int32, 2), n.reduce(t, Op::MAX, 1));
  InterpOutputs out = interpret(n.g, {{{1, {bytesOf<int32_t>({1, 2, 3, 4, 5, 6})}}}, {}});
  CHECK(valuesOf<int32_t>(out.at(0)[0]) == std::vector<int32_t>{1, 4, 2, 5, 3, 6});
  CHECK(valuesOf<int32_t>(out.at(2)[0]) == std::vector<int32_t>{5, 7, 9});
  CHECK(valuesOf<int32_t>(out.at(3)[0]) == std::vector<int32_t>{3, 6});
}

TEST_CASE("expand prepends axes and ALU operands broadcast right-aligned", "[interp]") {
  Net n;
  const UOp *row = n.param(1, DType::Float32, 3);                               // (3,)
  const UOp *col = n.mop(Op::RESHAPE, n.param(2, DType::Float32, 2), n.dims({2, 1})); // (2, 1)
  const UOp *e = n.mop(Op::EXPAND, row, n.dims({2}));                          // (2, 3)
  n.store(n.mop(Op::RESHAPE, n.param(0, DType::Float32, 6), n.dims({2, 3})), n.bin(Op::MUL, n.bin(Op::ADD, e, col), col));
  InterpOutputs out = interpret(n.g, {{{1, {bytesOf<float>({1, 2, 3})}}, {2, {bytesOf<float>({10, 100})}}}, {}});
  CHECK(valuesOf<float>(out.at(0)[0]) == std::vector<float>{110, 120, 130, 10100, 10200, 10300});
}

TEST_CASE("integers wrap around at their width", "[interp]") {
  Net n;
  const UOp *a = n.param(1, DType::Int8, 2);
  n.store(n.param(0, DType::Int8, 2), n.bin(Op::ADD, a, a));
  const UOp *u = n.param(3, DType::UInt32, 2);
  n.store(n.param(2, DType::UInt32, 2), n.bin(Op::ADD, u, n.ki(DType::UInt32, -1))); // CONST -1 is 0xffffffff
  n.store(n.param(4, DType::Int8, 2), n.cast(n.param(5, DType::Float32, 2), DType::Int8));
  InterpInputs in;
  in.buffers[1] = {bytesOf<int8_t>({100, -100})};
  in.buffers[3] = {bytesOf<uint32_t>({0, 5})};
  in.buffers[5] = {bytesOf<float>({297.49f, -218.1f})};
  InterpOutputs out = interpret(n.g, in);
  CHECK(valuesOf<int8_t>(out.at(0)[0]) == std::vector<int8_t>{-56, 56});
  CHECK(valuesOf<uint32_t>(out.at(2)[0]) == std::vector<uint32_t>{0xffffffffu, 4});
  CHECK(valuesOf<int8_t>(out.at(4)[0]) == std::vector<int8_t>{41, 38}); // C's (signed char)(int) of the float
}

TEST_CASE("integer division and modulo follow python's floor semantics, by zero gives 0", "[interp]") {
  Net n;
  const UOp *a = n.param(1, DType::Int32, 4), *b = n.param(2, DType::Int32, 4);
  n.store(n.param(0, DType::Int32, 4), n.bin(Op::FLOORDIV, a, b));
  n.store(n.param(3, DType::Int32, 4), n.bin(Op::FLOORMOD, a, b));
  InterpInputs in;
  in.buffers[1] = {bytesOf<int32_t>({7, -7, 7, 5})};
  in.buffers[2] = {bytesOf<int32_t>({2, 2, -2, 0})};
  InterpOutputs out = interpret(n.g, in);
  CHECK(valuesOf<int32_t>(out.at(0)[0]) == std::vector<int32_t>{3, -4, -4, 0});
  CHECK(valuesOf<int32_t>(out.at(3)[0]) == std::vector<int32_t>{1, 1, -1, 5});
}

TEST_CASE("scalar semantics: half rounding, threefry, float to int casts", "[interp]") {
  using namespace uopc::interp;
  CHECK(roundFloat(DType::Float16, 1.0009765625 + 0.00048828125) == 1.001953125); // ties to even
  CHECK(roundFloat(DType::Float16, 65519.0) == 65504.0);
  CHECK(std::isinf(roundFloat(DType::Float16, 65520.0)));
  unsigned char b[2];
  storeWord(DType::Float16, fromDouble(-2.5), b);
  CHECK(asDouble(loadWord(DType::Float16, b)) == -2.5);
  CHECK(threefry2x32(0x0000000100000002ull, 0x123456789abcdef0ull) == 0xce122a955ac343aaull);
  CHECK(threefry2x32(0, 0) == 0x99ba4efe6b200159ull);
  CHECK(asInt(castWord(DType::Float32, DType::Int32, fromDouble(-3.9))) == -3);
  CHECK(asInt(castWord(DType::Float32, DType::Int32, fromDouble(std::nan("")))) == std::numeric_limits<int32_t>::min());
  CHECK(castWord(DType::Float32, DType::Bool, fromDouble(std::nan(""))) == 1);
}

TEST_CASE("store through a shrink view, and AFTER reads the buffer after the store", "[interp]") {
  Net n;
  const UOp *buf = n.mop(Op::RESHAPE, n.param(0, DType::Float32, 6), n.dims({3, 2}));
  const UOp *rows = n.mop(Op::SHRINK, buf, n.dims({1, 0}), n.dims({2, 2}));
  n.store(rows, n.mop(Op::RESHAPE, n.param(1, DType::Float32, 4), n.dims({2, 2})));
  const UOp *after = n.outs.back();
  // Reading the PARAM directly sees the old contents; reading the AFTER sees the new ones.
  n.store(n.param(2, DType::Float32, 6), n.bin(Op::ADD, n.param(0, DType::Float32, 6),
                                               n.mop(Op::RESHAPE, n.c.make(Op::AFTER, DType::Float32,
                                                                           {buf, after->src(1)}), n.dims({6}))));
  InterpInputs in;
  in.buffers[0] = {bytesOf<float>({1, 1, 1, 1, 1, 1})};
  in.buffers[1] = {bytesOf<float>({5, 6, 7, 8})};
  InterpOutputs out = interpret(n.g, in);
  CHECK(valuesOf<float>(out.at(0)[0]) == std::vector<float>{1, 1, 5, 6, 7, 8});
  CHECK(valuesOf<float>(out.at(2)[0]) == std::vector<float>{2, 2, 6, 7, 8, 9});
}

TEST_CASE("multi-device: shard with _device_num, elementwise on shards, reduce over the sharded axis", "[interp]") {
  Net n;
  std::vector<std::string> two{"CPU", "CPU:1"};
  const UOp *src = n.param(1, DType::Float32, 4);                                     // on CPU
  const UOp *copied = n.c.make(Op::COPY, DType::Float32, {src}, encodeDevices(n.c, two, true));
  const UOp *dnum = n.var("_device_num", 0, 1, -1);
  const UOp *begin = n.bin(Op::MUL, dnum, n.i(2));
  const UOp *shard = n.mop(Op::SHRINK, copied, begin, n.i(2));                         // (2,) per device
  const UOp *multi = n.c.make(Op::MULTI, DType::Float32, {shard}, n.c.argInt(0));     // (4,) sharded
  const UOp *out = n.param(0, DType::Float32, 2, two);
  n.store(n.c.make(Op::MULTI, DType::Float32, {out}, n.c.argInt(0)), n.bin(Op::MUL, multi, multi));
  n.store(n.param(2, DType::Float32, 1, two), n.mop(Op::RESHAPE, n.reduce(multi, Op::ADD, 1), n.dims({1})));
  InterpOutputs res = interpret(n.g, {{{1, {bytesOf<float>({1, 2, 3, 4})}}}, {}});
  REQUIRE(res.at(0).size() == 2);
  CHECK(valuesOf<float>(res.at(0)[0]) == std::vector<float>{1, 4});
  CHECK(valuesOf<float>(res.at(0)[1]) == std::vector<float>{9, 16});
  CHECK(valuesOf<float>(res.at(2)[0]) == std::vector<float>{10});
  CHECK(valuesOf<float>(res.at(2)[1]) == std::vector<float>{10});
}

TEST_CASE("ALLREDUCE, MSELECT and MSTACK", "[interp]") {
  Net n;
  std::vector<std::string> two{"CPU", "CPU:1"};
  const UOp *x = n.param(1, DType::Int32, 2, two);
  const UOp *red = n.c.make(Op::ALLREDUCE, DType::Int32, {x},
                            n.c.argTuple({n.c.argOp(Op::ADD), encodeDevices(n.c, two, true)}));
  n.store(n.param(0, DType::Int32, 2, two), red);
  const UOp *s0 = n.c.make(Op::MSELECT, DType::Int32, {x}, n.c.argInt(0));
  const UOp *s1 = n.c.make(Op::MSELECT, DType::Int32, {x}, n.c.argInt(1));
  n.store(n.param(2, DType::Int32, 2, two), n.c.make(Op::MSTACK, DType::Int32, {s1, s0})); // swapped
  InterpOutputs res = interpret(n.g, {{{1, {bytesOf<int32_t>({1, 2}), bytesOf<int32_t>({30, 40})}}}, {}});
  CHECK(valuesOf<int32_t>(res.at(0)[0]) == std::vector<int32_t>{31, 42});
  CHECK(valuesOf<int32_t>(res.at(0)[1]) == std::vector<int32_t>{31, 42});
  CHECK(valuesOf<int32_t>(res.at(2)[0]) == std::vector<int32_t>{30, 40});
  CHECK(valuesOf<int32_t>(res.at(2)[1]) == std::vector<int32_t>{1, 2});
}

TEST_CASE("symbolic shapes take their variables' values", "[interp]") {
  Net n;
  const UOp *v = n.var("i", 1, 4, 2);
  const UOp *x = n.param(1, DType::Float32, 4);
  const UOp *part = n.mop(Op::SHRINK, x, n.i(0), v);
  n.store(n.param(0, DType::Float32, 1), n.mop(Op::RESHAPE, n.reduce(part, Op::ADD, 1), n.dims({1})));
  InterpInputs in{{{1, {bytesOf<float>({1, 2, 4, 8})}}}, {{"i", 3}}};
  CHECK(valuesOf<float>(interpret(n.g, in).at(0)[0]) == std::vector<float>{7});
  in.vars.clear();
  CHECK_THROWS_WITH(interpret(n.g, in), Catch::Contains("variable 'i' has no value"));
  in.vars["i"] = 9;
  CHECK_THROWS_WITH(interpret(n.g, in), Catch::Contains("outside its range [1, 4]"));
}

TEST_CASE("bad inputs and unsupported ops are clear errors", "[interp]") {
  Net n;
  const UOp *x = n.param(1, DType::Float32, 4);
  n.store(n.param(0, DType::Float32, 4), x);
  CHECK_THROWS_WITH(interpret(n.g, {{{1, {bytesOf<float>({1, 2})}}}, {}}), Catch::Contains("has 8 bytes, expected 16"));
  CHECK_THROWS_WITH(interpret(n.g, {{{7, {bytesOf<float>({1})}}}, {}}), Catch::Contains("slot 7 is not a buffer"));

  Net m;
  const UOp *y = m.param(1, DType::Float32, 4);
  m.store(m.param(0, DType::Float32, 4), m.c.make(Op::CUSTOM, DType::Float32, {y}, m.c.argString("f")));
  CHECK_THROWS_WITH(interpret(m.g, {}), Catch::Contains("(CUSTOM): the interpreter does not support CUSTOM"));

  CHECK_THROWS_WITH(parseSlotFiles("x=a.bin"), Catch::Contains("not an integer"));
  CHECK(parseSlotFiles("3=a.bin,b.bin").second == std::vector<std::string>{"a.bin", "b.bin"});
  CHECK(parseVarBinding("i=4") == std::pair<std::string, int64_t>{"i", 4});
}

TEST_CASE("flip, and bool pads fill false even with pad_fill invalid", "[interp]") {
  Net n;
  n.g.padFill = PadFill::Invalid;
  const UOp *x = n.param(1, DType::Float32, 3);
  const UOp *flip = n.c.make(Op::FLIP, DType::Float32, {x}, n.c.argTuple({n.c.argBool(true)}));
  n.store(n.param(0, DType::Float32, 3), flip);
  const UOp *pos = n.bin(Op::CMPLT, n.k(DType::Float32, 0), x);
  n.store(n.param(2, DType::Bool, 5), n.mop(Op::PAD, pos, n.i(1), n.i(5)));
  InterpOutputs out = interpret(n.g, {{{1, {bytesOf<float>({-1, 2, 3})}}}, {}});
  CHECK(valuesOf<float>(out.at(0)[0]) == std::vector<float>{3, 2, -1});
  CHECK(valuesOf<uint8_t>(out.at(2)[0]) == std::vector<uint8_t>{0, 0, 1, 1, 0});
}

TEST_CASE("sharded values: reshape and permute move the axis, COPY to one device gathers", "[interp]") {
  Net n;
  std::vector<std::string> two{"CPU", "CPU:1"};
  const UOp *x = n.mop(Op::RESHAPE, n.param(1, DType::Int32, 4, two), n.dims({2, 2}));  // shard (2, 2)
  const UOp *m = n.c.make(Op::MULTI, DType::Int32, {x}, n.c.argInt(0));                // (4, 2) on axis 0
  const UOp *t = n.permute(n.mop(Op::RESHAPE, m, n.dims({2, 2, 2})), {1, 2, 0});       // axis 0 -> 2
  const UOp *one = n.c.make(Op::COPY, DType::Int32, {t}, n.c.argString("CPU"));       // (2, 2, 2) gathered
  n.store(n.mop(Op::RESHAPE, n.param(0, DType::Int32, 8), n.dims({2, 2, 2})), one);
  InterpOutputs res = interpret(n.g, {{{1, {bytesOf<int32_t>({0, 1, 2, 3}), bytesOf<int32_t>({4, 5, 6, 7})}}}, {}});
  // logical m = [[0,1],[2,3],[4,5],[6,7]] -> (2,2,2) [[[0,1],[2,3]],[[4,5],[6,7]]] -> permute (1,2,0)
  CHECK(valuesOf<int32_t>(res.at(0)[0]) == std::vector<int32_t>{0, 4, 1, 5, 2, 6, 3, 7});
}
