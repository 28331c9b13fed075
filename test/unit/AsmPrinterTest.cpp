//===- AsmPrinterTest.cpp - the text form: determinism, regions, args -------===//
#include <catch2/catch.hpp>

#include "IR/AsmPrinter.h"
#include "IR/Records.h"

#include <string>

using namespace uopc;

namespace {

const Arg *kernelInfo(Context &c, std::string_view name) {
  return makeRecord(c, "KernelInfo", {{"name", c.argString(name)}});
}

/// SINK(STORE(INDEX(PARAM 0, RANGE), v)) as a kernel body named `name`, with `v` = the value read from PARAM 1.
const UOp *kernel(Context &c, std::string_view name, bool add) {
  const UOp *n = c.constInt(DType::WeakInt, 8);
  auto param = [&](int64_t slot) {
    ParamArg p;
    p.slot = slot;
    p.dtype = DType::Float32;
    p.devices = {"CPU"};
    return c.make(Op::PARAM, DType::Float32, {n}, p.encode(c));
  };
  const UOp *r = c.make(Op::RANGE, DType::WeakInt, {n}, c.argTuple({c.argInt(0), c.argAxisType(AxisType::LOOP)}));
  const UOp *out = c.make(Op::INDEX, DType::Float32, {param(0), r});
  const UOp *in = c.make(Op::INDEX, DType::Float32, {param(1), r});
  const UOp *v = add ? c.make(Op::ADD, DType::Float32, {in, c.constFloat(DType::Float32, 1.0)}) : in;
  const UOp *st = c.make(Op::STORE, DType::Void, {out, v});
  return c.make(Op::SINK, DType::Void, {c.make(Op::END, DType::Void, {st, r})}, kernelInfo(c, name));
}

} // namespace

TEST_CASE("the text form depends on the graph's structure, not on the order its nodes were made", "[asm]") {
  auto build = [](Graph &g, bool noiseFirst) {
    Context &c = *g.ctx;
    if (noiseFirst) // other nodes first: every creation index below differs
      for (int i = 0; i < 50; ++i) c.constInt(DType::Int32, 1000 + i);
    const UOp *b = c.constFloat(DType::Float32, 2.5);
    const UOp *a = c.constFloat(DType::Float32, -0.0);
    const UOp *x = noiseFirst ? c.make(Op::MUL, DType::Float32, {a, b}) : nullptr;
    const UOp *y = c.make(Op::ADD, DType::Float32, {b, a});
    if (!x) x = c.make(Op::MUL, DType::Float32, {a, b});
    g.root = c.make(Op::SINK, DType::Void, {x, y});
  };
  Graph g1, g2;
  build(g1, false);
  build(g2, true);
  std::string t = printGraphText(g1);
  CHECK(t == printGraphText(g2));
  CHECK(t == "// 5 nodes; pad_fill=zero\n"
             "%0 = CONST -0.0 : float32\n"
             "%1 = CONST 2.5 : float32\n"
             "%2 = MUL %0, %1 : float32\n"
             "%3 = ADD %1, %0 : float32\n"
             "%4 = SINK %2, %3 : void\n");
}

TEST_CASE("CALL bodies are regions: printed once, named uniquely, numbered from %0", "[asm]") {
  Graph g;
  Context &c = *g.ctx;
  const UOp *body = kernel(c, "k", true), *other = kernel(c, "k", false), *odd = kernel(c, "a b", false);
  const UOp *buf = c.make(Op::CONST, DType::Float32, {}, c.argFloat(0.0));
  // two CALLs of one body (other arguments), one of another body with the same name, one odd name
  const UOp *c1 = c.make(Op::CALL, DType::Void, {body, buf, buf});
  const UOp *c2 = c.make(Op::CALL, DType::Void, {body, buf, c.constFloat(DType::Float32, 1.0)});
  const UOp *c3 = c.make(Op::CALL, DType::Void, {other, buf, buf});
  const UOp *c4 = c.make(Op::CALL, DType::Void, {odd, buf, buf});
  g.root = c.make(Op::SINK, DType::Void, {c1, c2, c3, c4});
  AsmPrinter p(g);
  REQUIRE(p.regions().size() == 4);
  CHECK(p.regions()[0].name == "k");
  CHECK(p.regions()[1].name == "k.1");
  CHECK(p.regions()[2].name == "a b");
  CHECK_FALSE(p.regions()[3].isKernel);
  CHECK(p.regionOf(body) == 0);
  CHECK(p.regionOf(buf) == -1);
  std::string t = p.print();
  INFO(t);
  CHECK(t.find("kernel @k {  // 2 calls\n  %0 = CONST 8 : weakint\n") != std::string::npos);
  CHECK(t.find("kernel @k.1 {\n") != std::string::npos);
  CHECK(t.find("kernel @\"a b\" {\n") != std::string::npos);
  CHECK(t.find("%1 = CALL @k, %0, %0 : void") != std::string::npos);
  CHECK(t.find(" = CALL @\"a b\", %0, %0 : void") != std::string::npos);
  // a body's nodes are not the top level's: the top level has the CALLs, their arguments and the SINK
  CHECK(p.regions()[3].nodes.size() == 7);
}

TEST_CASE("args print readably, and long ones are elided with a count", "[asm]") {
  Graph g;
  Context &c = *g.ctx;
  std::vector<const Arg *> many;
  for (int i = 0; i < 20; ++i) many.push_back(c.argInt(i));
  const UOp *k = c.constInt(DType::WeakInt, 3);
  std::vector<const UOp *> nodes = {
      c.make(Op::CONST, DType::Void, {}, c.argTuple(many)),
      c.make(Op::CONST, DType::Void, {}, c.argTuple({c.argTuple(many), c.argTuple({c.argInt(1)}), nullptr})),
      c.make(Op::CONST, DType::Void, {}, c.argString(std::string(200, 'x'))),
      c.make(Op::CONST, DType::Void, {}, c.argString("tab\there \xff")),
      c.make(Op::CONST, DType::Void, {}, c.argBytes(std::string("\x00\x01\xfe", 3))),
      c.make(Op::CONST, DType::Void, {}, c.argBigInt("123456789012345678901234567890")),
      c.make(Op::CONST, DType::Void, {}, c.argTuple({c.argBool(true), c.argInvalid(), c.argOp(Op::MAX),
                                                     c.argDType(DType::Int8), c.argAddrSpace(AddrSpace::LOCAL)})),
      c.make(Op::CONST, DType::Void, {}, c.argRef(k)),
  };
  g.root = c.make(Op::SINK, DType::Void, nodes);
  std::string t = printGraphText(g);
  INFO(t);
  CHECK(t.find("= CONST 0 1 2 3 4 5 6 7 ...(12 more) : void\n") != std::string::npos);
  CHECK(t.find("= CONST (0, 1, 2, 3, 4, 5, 6, 7, ...(12 more)) (1,) None : void\n") != std::string::npos);
  CHECK(t.find("= CONST \"" + std::string(64, 'x') + "\"... (200 bytes) : void\n") != std::string::npos);
  CHECK(t.find("= CONST \"tab\\there \\u00ff\" : void\n") != std::string::npos); // never invalid UTF-8
  CHECK(t.find("= CONST bytes(3: 0001fe) : void\n") != std::string::npos);
  CHECK(t.find("= CONST 123456789012345678901234567890 : void\n") != std::string::npos);
  // a name that reads back as another kind says its kind (LOCAL alone is an AxisType)
  CHECK(t.find("= CONST True Invalid MAX int8 AddrSpace.LOCAL : void\n") != std::string::npos);
  // an arg that refers to a node names it by its id (the node comes first), in parentheses: a bare %7 there
  // would read back as a source
  CHECK(t.find("%7 = CONST 3 : weakint\n%8 = CONST (%7) : void\n") != std::string::npos);
}
