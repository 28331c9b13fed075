// The LLVM target: hand-built kernels emitted as LLVM modules, run in-process through the ORC JIT
// (Targets/LLVMJit.h) and compared element by element with the reference interpreter, op by op and dtype by
// dtype: integer wraparound, division by zero, shifts, float16/bfloat16 rounding, casts (out of range, NaN),
// bitcasts, threefry and gated loads. (The corpus runs end to end through the ctest corpus-llvm.)
#include "IR/Error.h"
#include "IR/Records.h"
#include "IR/ScalarOps.h"
#include "Interp/Interpreter.h"
#include "Passes/Passes.h"
#include "Passes/Symbolic/Symbolic.h"
#include "Targets/LLVMJit.h"
#include "Targets/LLVMTarget.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

using namespace uopc;
using interp::Word;

namespace {

KernelJit &jit() {
  static KernelJit j;
  return j;
}

struct LlvmKernelBuilder {
  Graph g;
  Context &c = *g.ctx;
  const UOp *buf(int64_t slot, DType dt, int64_t n) {
    ParamArg p;
    p.slot = slot;
    p.dtype = dt;
    p.devices = {"CPU"};
    return c.make(Op::PARAM, dt, {c.constInt(DType::WeakInt, n)}, p.encode(c));
  }
  const UOp *range(int64_t n, int64_t num) {
    return c.make(Op::RANGE, DType::WeakInt, {c.constInt(DType::WeakInt, n)},
                  c.argTuple({c.argInt(num), c.argAxisType(AxisType::LOOP)}));
  }
  const UOp *call(const UOp *value, const UOp *idx, const std::vector<const UOp *> &ranges,
                  const std::vector<const UOp *> &args) {
    const UOp *st = c.make(Op::STORE, DType::Void, {c.make(Op::INDEX, args[0]->dtype, {args[0], idx}), value});
    std::vector<const UOp *> es{st};
    es.insert(es.end(), ranges.begin(), ranges.end());
    const UOp *end = c.make(Op::END, DType::Void, es);
    const UOp *sink = c.make(Op::SINK, DType::Void, {end}, makeRecord(c, "KernelInfo", {{"name", c.argString("k0")}}));
    std::vector<const UOp *> srcs{sink};
    srcs.insert(srcs.end(), args.begin(), args.end());
    return c.make(Op::CALL, DType::Void, srcs);
  }
};

/// Runs a one-kernel graph with the interpreter and through the JIT; returns both outputs of slot 0.
std::pair<std::string, std::string> bothWays(LlvmKernelBuilder &kb, const UOp *call, const std::vector<std::string> &inputs) {
  kb.g.root = kb.c.make(Op::SINK, DType::Void, {kb.c.make(Op::AFTER, call->src(1)->dtype, {call->src(1), call})});
  InterpInputs in;
  for (size_t s = 0; s < inputs.size(); ++s) in.buffers[static_cast<int64_t>(s + 1)] = {inputs[s]};
  InterpOutputs ref = interpret(kb.g, in);
  std::vector<std::string> bufs{std::string(ref.at(0)[0].size(), '\0')};
  bufs.insert(bufs.end(), inputs.begin(), inputs.end());
  static int n = 0;
  EmittedLLVMKernel k = emitLLVMKernel(kb.c, lowerKernelForRendering(kb.c, call, PassTarget::forTarget("llvm")), 0, "t" + std::to_string(n++));
  jit().addModule(k.ir, k.symbol);
  std::vector<void *> ptrs;
  for (auto &b : bufs) ptrs.push_back(b.data());
  jit().entry(k.symbol, ptrs.size(), 0)(ptrs.data(), nullptr);
  return {ref.at(0)[0], bufs[0]};
}

/// "" when equal (floats: NaN equals NaN, else within rtol), else the first difference.
std::string differ(const std::string &got, const std::string &want, DType dt, double rtol) {
  if (got.size() != want.size()) return "sizes differ";
  size_t sz = dtypeSize(dt);
  for (size_t i = 0; i * sz < got.size(); ++i) {
    auto g = reinterpret_cast<const unsigned char *>(got.data() + i * sz);
    auto w = reinterpret_cast<const unsigned char *>(want.data() + i * sz);
    Word a = interp::loadWord(dt, g), b = interp::loadWord(dt, w);
    bool ok;
    if (isFloat(dt)) {
      double x = interp::asDouble(a), y = interp::asDouble(b);
      ok = (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= rtol * std::fabs(y);
    } else {
      ok = std::memcmp(g, w, sz) == 0;
    }
    if (!ok) {
      auto show = [&](Word v) { return isFloat(dt) ? std::to_string(interp::asDouble(v)) : std::to_string(interp::asInt(v)); };
      return "element " + std::to_string(i) + ": got " + show(a) + ", expected " + show(b);
    }
  }
  return "";
}

/// n elements of dt from a list of doubles (converted as the interpreter converts constants).
std::string valuesOf(DType dt, const std::vector<double> &v) {
  std::string s(v.size() * dtypeSize(dt), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    Word w = isFloat(dt) ? interp::floatToWord(dt, v[i])
                         : interp::intToWord(dt, static_cast<int64_t>(static_cast<long double>(v[i])));
    interp::storeWord(dt, w, reinterpret_cast<unsigned char *>(s.data() + i * dtypeSize(dt)));
  }
  return s;
}

const DType kInts[] = {DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};
const DType kFloats[] = {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

} // namespace

TEST_CASE("LLVM kernels: integer ops match the interpreter in every width", "[llvmtarget]") {
  std::vector<double> x{127, -7, 7, -128, 5, -1, 100, 3, 2147483647.0, -2147483648.0, 65535, 0};
  std::vector<double> y{1, 2, -2, -1, 0, 40, 3, -5, 1, -1, 70, 0};
  for (DType dt : kInts)
    for (Op op : {Op::ADD, Op::SUB, Op::MUL, Op::FLOORDIV, Op::FLOORMOD, Op::CDIV, Op::CMOD, Op::SHL, Op::SHR, Op::MAX,
                  Op::AND, Op::OR, Op::XOR, Op::POW, Op::CMPLT, Op::CMPNE, Op::CMPEQ}) {
      if (!interp::aluSupported(op, dt)) continue;
      LlvmKernelBuilder kb;
      DType out = isComparison(op) ? DType::Bool : dt;
      size_t n = x.size();
      const UOp *o = kb.buf(0, out, static_cast<int64_t>(n)), *a = kb.buf(1, dt, static_cast<int64_t>(n)),
                *b = kb.buf(2, dt, static_cast<int64_t>(n));
      const UOp *r = kb.range(static_cast<int64_t>(n), 0);
      const UOp *v = kb.c.make(op, out, {kb.c.make(Op::INDEX, dt, {a, r}), kb.c.make(Op::INDEX, dt, {b, r})});
      auto [want, got] = bothWays(kb, kb.call(v, r, {r}, {o, a, b}), {valuesOf(dt, x), valuesOf(dt, y)});
      INFO(std::string(opName(op)) + " on " + std::string(dtypeName(dt)));
      CHECK(differ(got, want, out, 0) == "");
    }
}

TEST_CASE("LLVM kernels: float ops match the interpreter (float16, bfloat16, float32, float64)", "[llvmtarget]") {
  std::vector<double> x{1.5, -2.25, 3.0e4, 1e-6, -0.0, 7.0, 65519.0, 0.1, 100.0, -3.7};
  std::vector<double> y{0.5, 4.0, -3.0, 2.0, 1.0, 0.0, 1.0, 3.0, -0.3, 2.5};
  for (DType dt : kFloats) {
    for (Op op : {Op::ADD, Op::SUB, Op::MUL, Op::FDIV, Op::MAX, Op::POW, Op::FLOORDIV, Op::FLOORMOD, Op::CDIV, Op::CMOD,
                  Op::CMPLT, Op::CMPNE, Op::CMPEQ}) {
      if (!interp::aluSupported(op, dt)) continue;
      LlvmKernelBuilder kb;
      DType out = isComparison(op) ? DType::Bool : dt;
      const UOp *o = kb.buf(0, out, 10), *a = kb.buf(1, dt, 10), *b = kb.buf(2, dt, 10);
      const UOp *r = kb.range(10, 0);
      const UOp *v = kb.c.make(op, out, {kb.c.make(Op::INDEX, dt, {a, r}), kb.c.make(Op::INDEX, dt, {b, r})});
      auto [want, got] = bothWays(kb, kb.call(v, r, {r}, {o, a, b}), {valuesOf(dt, x), valuesOf(dt, y)});
      INFO(std::string(opName(op)) + " on " + std::string(dtypeName(dt)));
      CHECK(differ(got, want, out, op == Op::POW ? 1e-6 : 0) == "");
    }
    for (Op op : {Op::NEG, Op::RECIPROCAL, Op::SQRT, Op::TRUNC, Op::EXP2, Op::LOG2, Op::SIN}) {
      if (!interp::aluSupported(op, dt)) continue;
      LlvmKernelBuilder kb;
      const UOp *o = kb.buf(0, dt, 10), *a = kb.buf(1, dt, 10);
      const UOp *r = kb.range(10, 0);
      const UOp *v = kb.c.make(op, dt, {kb.c.make(Op::INDEX, dt, {a, r})});
      auto [want, got] = bothWays(kb, kb.call(v, r, {r}, {o, a}), {valuesOf(dt, x)});
      INFO(std::string(opName(op)) + " on " + std::string(dtypeName(dt)));
      CHECK(differ(got, want, dt, 1e-6) == "");
    }
  }
}

TEST_CASE("LLVM kernels: casts and bitcasts between every dtype match the interpreter", "[llvmtarget]") {
  std::vector<double> x{1e10, -3.7, NAN, 300.5, -1e30, 65519.0, 1.0, 0.0, -0.0, INFINITY, 255.0, -129.0, 3e-8, 1.00390625};
  std::vector<DType> all{DType::Bool};
  all.insert(all.end(), std::begin(kInts), std::end(kInts));
  all.insert(all.end(), std::begin(kFloats), std::end(kFloats));
  size_t n = x.size();
  for (DType from : all)
    for (DType to : all) {
      if (from == to) continue;
      for (Op op : {Op::CAST, Op::BITCAST}) {
        if (op == Op::BITCAST && (dtypeSize(from) != dtypeSize(to) || from == DType::Bool || to == DType::Bool)) continue;
        LlvmKernelBuilder kb;
        const UOp *o = kb.buf(0, to, static_cast<int64_t>(n)), *a = kb.buf(1, from, static_cast<int64_t>(n));
        const UOp *r = kb.range(static_cast<int64_t>(n), 0);
        const UOp *v = kb.c.make(op, to, {kb.c.make(Op::INDEX, from, {a, r})}, kb.c.argDType(to));
        std::vector<double> in = x;
        if (!isFloat(from))
          for (double &d : in) d = std::isfinite(d) && std::fabs(d) < 1e18 ? std::trunc(d) : 7.0;
        auto [want, got] = bothWays(kb, kb.call(v, r, {r}, {o, a}), {valuesOf(from, in)});
        INFO(std::string(opName(op)) + " " + std::string(dtypeName(from)) + " -> " + std::string(dtypeName(to)));
        CHECK(differ(got, want, to, 0) == "");
      }
    }
}

TEST_CASE("LLVM kernels: threefry, gated loads and reductions match the interpreter", "[llvmtarget]") {
  SECTION("threefry2x32") {
    LlvmKernelBuilder kb;
    const UOp *o = kb.buf(0, DType::UInt64, 4), *a = kb.buf(1, DType::UInt64, 4), *b = kb.buf(2, DType::UInt64, 4);
    const UOp *r = kb.range(4, 0);
    const UOp *v = kb.c.make(Op::THREEFRY, DType::UInt64,
                             {kb.c.make(Op::INDEX, DType::UInt64, {a, r}), kb.c.make(Op::INDEX, DType::UInt64, {b, r})});
    std::vector<uint64_t> x{0, 1, 0xdeadbeefcafebabeull, ~0ull}, k{0, 42, 7, 0x123456789abcdefull};
    auto [want, got] = bothWays(kb, kb.call(v, r, {r}, {o, a, b}),
                                {std::string(reinterpret_cast<char *>(x.data()), 32), std::string(reinterpret_cast<char *>(k.data()), 32)});
    CHECK(differ(got, want, DType::UInt64, 0) == "");
  }
  SECTION("a padded read is a gated load; the sum skips nothing") {
    LlvmKernelBuilder kb;
    Context &c = kb.c;
    const UOp *out = kb.buf(0, DType::Float32, 4), *a = kb.buf(1, DType::Float32, 4);
    const UOp *i = kb.range(4, 0), *j = kb.range(3, 1);
    const UOp *ij = c.make(Op::ADD, DType::WeakInt, {i, j});
    const UOp *inb = c.make(Op::CMPLT, DType::Bool, {ij, c.constInt(DType::WeakInt, 4)});
    const UOp *ld = c.make(Op::INDEX, DType::Float32, {a, c.make(Op::WHERE, DType::WeakInt, {inb, ij, makeInvalid(c, DType::WeakInt)})});
    const UOp *val = c.make(Op::WHERE, DType::Float32, {inb, ld, c.constFloat(DType::Float32, 0.0)});
    const UOp *red = c.make(Op::REDUCE, DType::Float32, {val, j}, c.argTuple({c.argOp(Op::ADD)}));
    auto [want, got] = bothWays(kb, kb.call(red, i, {i}, {out, a}), {valuesOf(DType::Float32, {1.5, 2.25, -4.0, 8.0})});
    CHECK(differ(got, want, DType::Float32, 1e-6) == "");
  }
  SECTION("products and maxima of every integer width wrap as the interpreter's") {
    for (DType dt : kInts)
      for (Op rop : {Op::ADD, Op::MUL, Op::MAX}) {
        LlvmKernelBuilder kb;
        const UOp *out = kb.buf(0, dt, 2), *a = kb.buf(1, dt, 10);
        const UOp *i = kb.range(2, 0), *j = kb.range(5, 1);
        const UOp *ix = kb.c.make(Op::ADD, DType::WeakInt,
                                  {kb.c.make(Op::MUL, DType::WeakInt, {i, kb.c.constInt(DType::WeakInt, 5)}), j});
        const UOp *red = kb.c.make(Op::REDUCE, dt, {kb.c.make(Op::INDEX, dt, {a, ix}), j}, kb.c.argTuple({kb.c.argOp(rop)}));
        auto [want, got] = bothWays(kb, kb.call(red, i, {i}, {out, a}),
                                    {valuesOf(dt, {100, -3, 77, 120, -128, 5, 9, -1, 2, 127})});
        INFO(std::string(opName(rop)) + " on " + std::string(dtypeName(dt)));
        CHECK(differ(got, want, dt, 0) == "");
      }
  }
}
