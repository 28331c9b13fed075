//===- TextReaderTest.cpp - the text form reads back: every arg kind, regions, errors -===//
#include <catch2/catch.hpp>

#include "IR/AsmPrinter.h"
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Records.h"

#include <cmath>
#include <limits>
#include <string>

using namespace uopc;

namespace {

/// Prints g in full, reads it back and checks that the graph and its text are the same.
void roundTrip(const Graph &g) {
  std::string t = printGraphText(g, AsmOptions::full());
  INFO(t);
  Graph back = readGraphText(t, "t");
  std::string why;
  CHECK(sameGraph(g, back, &why));
  INFO(why);
  CHECK(printGraphText(back, AsmOptions::full()) == t);
  CHECK(writeGraphJson(back) == writeGraphJson(g));
}

std::string readError(std::string_view text) {
  try {
    readGraphText(text, "t");
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

const UOp *kernel(Context &c, std::string_view name, const UOp *inner = nullptr) {
  const UOp *n = c.constInt(DType::WeakInt, 4);
  ParamArg p;
  p.slot = 0;
  p.dtype = DType::Float32;
  p.devices = {"CPU"};
  const UOp *buf = c.make(Op::PARAM, DType::Float32, {n}, p.encode(c));
  std::vector<const UOp *> srcs{buf};
  if (inner) srcs.push_back(c.make(Op::CALL, DType::Void, {inner, buf}));
  return c.make(Op::SINK, DType::Void, srcs, makeRecord(c, "KernelInfo", {{"name", c.argString(name)}}));
}

} // namespace

TEST_CASE("every arg kind the printer writes reads back as the same arg", "[asm][text]") {
  Graph g;
  Context &c = *g.ctx;
  g.padFill = PadFill::Invalid;
  g.stage = "a stage; with spaces";
  g.producerJson = R"({"name":"test","v":[1,2.5]})";
  std::vector<const Arg *> many;
  for (int i = 0; i < 40; ++i) many.push_back(c.argInt(i));
  const UOp *k = c.constInt(DType::WeakInt, 3);
  auto node = [&](const Arg *a, const Arg *tag = nullptr) { return c.make(Op::CONST, DType::Void, {}, a, tag); };
  ParamArg pa;
  pa.slot = 1;
  pa.dtype = DType::Float16;
  pa.devices = {"CPU:1", "DISK:/tmp/x"};
  pa.deviceIsTuple = true;
  pa.name = "n";
  pa.addrspace = AddrSpace::LOCAL;
  std::vector<const UOp *> nodes = {
      node(c.argTuple(many)), // longer than the default elision
      node(c.argTuple({c.argTuple(many), c.argTuple({c.argInt(1)}), nullptr, c.argTuple({})})),
      node(c.argTuple({c.argInt(5)})), // a one-element tuple is not the int 5
      node(c.argInt(5)),
      node(c.argTuple({})),
      node(c.argString(std::string(300, 'x'))),
      node(c.argString("tab\there \xff \xc3\xa9 \"q\" \\ \x01")), // invalid UTF-8 and escapes
      node(c.argBytes(std::string("\x00\x01\xfe", 3) + std::string(40, '\x7f'))),
      node(c.argBytes("")),
      node(c.argBigInt("123456789012345678901234567890")),
      node(c.argBigInt("-123456789012345678901234567890")),
      node(c.argUInt(18446744073709551615ull)),
      node(c.argInt(std::numeric_limits<int64_t>::min())),
      node(c.argTuple({c.argFloat(-0.0), c.argFloat(0.0), c.argFloat(1e-05), c.argFloat(1e16), c.argFloat(2.0),
                       c.argFloat(std::numeric_limits<double>::infinity()),
                       c.argFloat(-std::numeric_limits<double>::infinity()),
                       c.argFloat(std::numeric_limits<double>::quiet_NaN()), c.argFloat(5e-324)})),
      node(c.argTuple({c.argBool(true), c.argBool(false), c.argInvalid(), c.argOp(Op::MAX), c.argOp(Op::REDUCE),
                       c.argDType(DType::Int8), c.argAxisType(AxisType::REDUCE), c.argAxisType(AxisType::GLOBAL),
                       c.argAddrSpace(AddrSpace::LOCAL), c.argAddrSpace(AddrSpace::GLOBAL)})),
      // strings that look like names or keywords are quoted
      node(c.argTuple({c.argString("ADD"), c.argString("None"), c.argString("float32"), c.argString("LOCAL"),
                       c.argString("inf"), c.argString("Ops.ADD"), c.argString("k0"), c.argString("CPU:1"),
                       c.argString(""), c.argString("bytes"), c.argString("tag")})),
      node(c.argRef(k)),
      node(c.argTuple({c.argInt(1), c.argRef(k)})), // a reference among the node's own arg items
      node(c.argTuple({c.argRef(k)})),
      node(pa.encode(c)),
      node(makeRecord(c, "KernelInfo", {{"name", c.argString("r_4")},
                                        {"axis_types", c.argTuple({c.argAxisType(AxisType::LOOP)})}})),
      node(makeRecord(c, "CallInfo", {})),
      node(makeRecord(c, "SomethingNew", {{"a b", c.argInt(1)}, {"x", c.argTuple({c.argString("y")})}})),
      node(c.argInt(7), c.argTuple({c.argInt(1), c.argString("two")})), // a tag
      node(nullptr, c.argRef(k)),
  };
  // a dtype where ParamArg's device goes needs its key
  std::vector<std::pair<std::string_view, const Arg *>> odd{
      {"slot", c.argInt(0)}, {"dtype", c.argDType(DType::Bool)}, {"device", c.argDType(DType::Int8)}};
  nodes.push_back(node(makeRecord(c, "ParamArg", odd)));
  std::vector<const UOp *> srcs(40, k); // more sources than the default elision keeps
  nodes.push_back(c.make(Op::SINK, DType::Void, srcs));
  g.root = c.make(Op::SINK, DType::Void, nodes);
  roundTrip(g);

  // the forms, spelled as documented
  std::string t = printGraphText(g, AsmOptions::full());
  INFO(t);
  CHECK(t.find("; stage=\"a stage; with spaces\"\n// producer {\"name\":\"test\",\"v\":[1,2.5]}\n") != std::string::npos);
  CHECK(t.find(" = CONST (5,) : void\n") != std::string::npos);
  CHECK(t.find(" = CONST 5 : void\n") != std::string::npos);
  CHECK(t.find(" = CONST \"ADD\" \"None\" \"float32\" \"LOCAL\" \"inf\" \"Ops.ADD\" k0 CPU:1 \"\" bytes tag : void") !=
        std::string::npos);
  CHECK(t.find(" = CONST True False Invalid MAX Ops.REDUCE int8 REDUCE GLOBAL AddrSpace.LOCAL AddrSpace.GLOBAL : void") !=
        std::string::npos);
  CHECK(t.find("ParamArg(slot=1, float16, name=n, addrspace=LOCAL, (CPU:1, \"DISK:/tmp/x\"))") != std::string::npos);
  CHECK(t.find("SomethingNew(\"a b\"=1, x=(y,))") != std::string::npos);
  CHECK(t.find("ParamArg(slot=0, bool, device=int8)") != std::string::npos);
  CHECK(t.find(" = CONST (1, %16) : void") != std::string::npos);
  CHECK(t.find(" = CONST (%16) : void") != std::string::npos);
}

TEST_CASE("an arg as deep as the readers allow reads back from its text", "[asm][text]") {
  Graph g;
  Context &c = *g.ctx;
  const Arg *a = c.argInt(1);
  for (int i = 0; i < 64; ++i) a = c.argTuple({a, c.argInt(i)}); // the int at the printer's depth 64
  const Arg *b = c.argInt(1);
  for (int i = 0; i < 64; ++i) b = c.argTuple({b});
  g.root = c.make(Op::SINK, DType::Void, {c.make(Op::CONST, DType::Void, {}, a), c.make(Op::CONST, DType::Void, {}, b)});
  roundTrip(g);
}

TEST_CASE("kernels read back: a kernel may call one printed after it, shared bodies stay one", "[asm][text]") {
  Graph g;
  Context &c = *g.ctx;
  const UOp *leaf = kernel(c, "leaf");
  const UOp *mid = kernel(c, "mid", leaf);
  const UOp *odd = kernel(c, "a \"b\"");
  const UOp *x = c.constFloat(DType::Float32, 1.0);
  g.root = c.make(Op::SINK, DType::Void,
                  {c.make(Op::CALL, DType::Void, {mid, x}), c.make(Op::CALL, DType::Void, {leaf, x}),
                   c.make(Op::CALL, DType::Void, {leaf, c.constFloat(DType::Float32, 2.0)}),
                   c.make(Op::CALL, DType::Void, {odd, x})});
  roundTrip(g);
  std::string t = printGraphText(g, AsmOptions::full());
  INFO(t);
  CHECK(t.find("kernel @mid {\n") < t.find("kernel @leaf {  // 3 calls\n"));
  CHECK(t.find("kernel @\"a \\\"b\\\"\" {") != std::string::npos);
}

TEST_CASE("hand-written text: ids numbered freely, comments, no header", "[asm][text]") {
  Graph g = readGraphText("// a hand-written graph\n"
                          "%10 = CONST 2.0 : float32   // two\n"
                          "\n"
                          "%3 = CONST (5) : weakint\n"
                          "%7 = ADD %10, %10 : float32 [shape 4] [device CPU]\n"
                          "%8 = SINK %7 : void\n",
                          "hand");
  REQUIRE(g.root);
  CHECK(g.root->op == Op::SINK);
  CHECK(g.root->src(0)->op == Op::ADD);
  CHECK(g.padFill == PadFill::Zero);
  CHECK(g.describe(g.root->src(0)) == "node 7 (ADD)");
}

TEST_CASE("bad text is one error naming line and column", "[asm][text]") {
  CHECK(readError("%0 = CONST 1 : int32\n%1 = FANCY %0 : int32\n") == "t:2:6: unknown op 'FANCY'");
  CHECK(readError("%0 = CONST 1 : int33\n") == "t:1:16: unknown dtype 'int33'");
  CHECK(readError("%1 = NEG %0 : int32\n").find("t:1:10: %0 is not defined before this line") == 0);
  CHECK(readError("%0 = CALL @k0 : void\n") == "t:1:11: kernel @k0 is not defined (no kernel @k0 { ... })");
  CHECK(readError("kernel @k {\n%0 = CONST 1 : int32\n").find("t:1:1: kernel @k is not closed") == 0);
  CHECK(readError("%0 = CONST 0 1 2 ...(5 more) : void\n").find("t:1:18: the text elides a value here") == 0);
  CHECK(readError("%0 = CONST \"abc\"... (200 bytes) : void\n").find("t:1:17: the text elides") == 0);
  CHECK(readError("%0 = CONST bytes(20: 0001...) : void\n").find("t:1:26: the text elides") == 0);
  CHECK(readError("%0 = CONST 1 : int32\n%1 = SINK %0, ...(40 more) : void\n").find("t:2:15: the text elides") == 0);
  CHECK(readError("%0 = CONST 1 int32\n") == "t:1:19: expected ': DTYPE' (every line ends with its dtype), found the end of the line");
  CHECK(readError("%0 = CONST 1 : int32 $\n") == "t:1:22: unexpected character '$'");
  CHECK(readError("%0 = CONST \"abc : int32\n") == "t:1:12: unterminated string");
  CHECK(readError("%0 = CONST 1 : int32\n%0 = CONST 2 : int32\n") == "t:2:1: %0 is defined twice in this region");
  CHECK(readError("%0 = CONST ParamArg(slot=0, bogus=1) : void\n").find("t:1:12: ") == 0);
  CHECK(readError("%0 = CONST 007 : int32\n") == "t:1:12: bad number '007'");
  CHECK(readError("kernel @k {\n  %0 = CALL @k : void\n}\n%0 = CALL @k : void\n") ==
        "t:1:1: kernel @k calls itself (directly or through other kernels)");
  CHECK(readError("// 1 nodes; pad_fill=maybe\n%0 = CONST 1 : int32\n").find("t:1:22: pad_fill must be") == 0);
  CHECK(readError("// just a comment\n") == "t: the text holds no graph (no node lines)");
  std::string deep = "%0 = CONST " + std::string(100, '(') + "1" + std::string(100, ')') + " : void\n";
  CHECK(readError(deep).find("arg nested too deep") != std::string::npos);
}
