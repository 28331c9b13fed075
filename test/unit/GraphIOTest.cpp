//===- GraphIOTest.cpp - JSON / .uopb reading, writing and sameGraph ------===//
#include <catch2/catch.hpp>

#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/GraphIOInternal.h"
#include "IR/Records.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include <unistd.h>

using namespace uopc;
namespace fs = std::filesystem;

namespace {

std::string corpusDir() {
  if (const char *env = std::getenv("UOPC_CORPUS"); env && *env) return env;
#ifdef UOPC_SOURCE_DIR
  return std::string(UOPC_SOURCE_DIR) + "/../shared/corpus";
#else
  return "../shared/corpus";
#endif
}

/// Every <set>/<case>/graph.json and <set>/<case>/stages/*.json of the corpus, sorted.
std::vector<fs::path> corpusGraphs() {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::path root = corpusDir();
  if (!fs::is_directory(root, ec)) return out;
  for (auto &set : fs::directory_iterator(root, ec)) {
    if (!set.is_directory()) continue;
    for (auto &cs : fs::directory_iterator(set.path(), ec)) {
      if (!cs.is_directory()) continue;
      if (fs::exists(cs.path() / "graph.json")) out.push_back(cs.path() / "graph.json");
      fs::path stages = cs.path() / "stages";
      if (fs::is_directory(stages))
        for (auto &f : fs::directory_iterator(stages, ec))
          if (f.path().extension() == ".json") out.push_back(f.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The message of the Error that `f` throws ("" when it does not throw).
template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  } catch (const std::exception &e) {
    return std::string("NON-UOPC EXCEPTION: ") + e.what();
  }
  return "";
}

std::string doc(const std::string &nodes, const std::string &root = "0", const std::string &extra = "") {
  return R"({"format":"uopc-graph","version":1,"producer":{"name":"test"},"semantics":{"pad_fill":"zero"},)" + extra +
         R"("nodes":[)" + nodes + R"(],"root":)" + root + "}";
}

/// A graph that uses every kind of arg, a tag, a UOp reference and a record of every known class.
Graph everyArgGraph() {
  Graph g;
  Context &c = *g.ctx;
  g.producerJson = R"({"name":"unit","nested":{"a":[1,2.5,"x\n"]}})";
  g.padFill = PadFill::Invalid;
  g.stage = "after-multi";
  std::string allBytes;
  for (int i = 0; i < 256; ++i) allBytes.push_back(static_cast<char>(i));
  const UOp *sz = c.constInt(DType::WeakInt, 16);
  const Arg *pa = makeRecord(c, "ParamArg",
                             {{"slot", c.argInt(0)},
                              {"dtype", c.argDType(DType::Float32)},
                              {"vmin_vmax", c.argTuple({c.argInt(-3), c.argInt(7)})},
                              {"name", c.argString("n")},
                              {"addrspace", c.argAddrSpace(AddrSpace::LOCAL)},
                              {"device", c.argTuple({c.argString("CPU:0"), c.argString("CPU:1")})},
                              {"volatile", c.argBool(true)}});
  const UOp *param = c.make(Op::PARAM, DType::Float32, {sz}, pa);
  std::vector<const UOp *> consts;
  std::vector<double> floats = {0.1,      1e-05, 0.0001, 1e16, 1e15, 2.0, -0.0, 0.0, 5e-324, 1.7976931348623157e308,
                                -2.5e-10, 1e22,  1e100,  std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  for (double f : floats) consts.push_back(c.constFloat(DType::Float32, f));
  consts.push_back(c.constInt(DType::Int64, INT64_MIN));
  consts.push_back(c.constInt(DType::Int64, INT64_MAX));
  consts.push_back(c.make(Op::CONST, DType::UInt64, {}, c.argUInt(UINT64_MAX)));
  consts.push_back(c.make(Op::CONST, DType::UInt256, {}, c.argBigInt("123456789012345678901234567890")));
  consts.push_back(c.make(Op::CONST, DType::WeakInt, {}, c.argBigInt("-99999999999999999999999")));
  consts.push_back(c.make(Op::CONST, DType::Float32, {}, c.argInvalid()));
  consts.push_back(c.constBool(true));
  consts.push_back(c.constBool(false));
  std::vector<const UOp *> misc;
  misc.push_back(c.make(Op::CUSTOM, DType::Void, {},
                        c.argString(std::string("quote\" back\\ nl\n tab\t ctl\x01 del\x7f utf8 \xc3\xa9 \xe2\x82\xac "
                                                "\xf0\x9f\x98\x80 nul") +
                                    std::string(1, '\0') + " end")));
  misc.push_back(c.make(Op::CUSTOM, DType::Void, {}, c.argString("")));
  misc.push_back(c.make(Op::BINARY, DType::Void, {}, c.argBytes(allBytes)));
  misc.push_back(c.make(Op::BINARY, DType::Void, {}, c.argBytes("")));
  misc.push_back(c.make(Op::BINARY, DType::Void, {}, c.argBytes("a")));
  misc.push_back(c.make(Op::BINARY, DType::Void, {}, c.argBytes("ab")));
  misc.push_back(c.make(Op::REDUCE, DType::Float32, {param}, c.argTuple({c.argOp(Op::ADD), c.argInt(2)})));
  misc.push_back(c.make(Op::RANGE, DType::WeakInt, {sz}, c.argTuple({c.argInt(0), c.argAxisType(AxisType::GROUP_REDUCE)})));
  misc.push_back(c.make(Op::CAST, DType::Float16, {param}, c.argDType(DType::Float16)));
  misc.push_back(c.make(Op::NOOP, DType::Void, {}, c.argTuple({})));
  misc.push_back(c.make(Op::NOOP, DType::Void, {},
                        c.argTuple({nullptr, c.argTuple({c.argTuple({}), nullptr, c.argTuple({c.argFloat(0.5)})})})));
  misc.push_back(c.make(Op::NOOP, DType::Void, {}, c.argRef(param)));
  misc.push_back(c.make(Op::NOOP, DType::Int32, {}, c.argTuple({c.argRef(consts[0]), c.argString("r")})));
  misc.push_back(c.make(Op::CALL, DType::Void, {param},
                        makeRecord(c, "CallInfo", {{"name", c.argString("f")}, {"precompile", c.argBool(true)}})));
  misc.push_back(c.make(Op::SINK, DType::Void, {},
                        makeRecord(c, "KernelInfo",
                                   {{"name", nullptr},
                                    {"axis_types", c.argTuple({c.argAxisType(AxisType::LOOP)})},
                                    {"beam", c.argInt(3)}})));
  misc.push_back(c.make(Op::NOOP, DType::Void, {},
                        makeRecord(c, "BufferizeOpts", {{"device", c.argString("CPU")}, {"removable", c.argBool(false)}})));
  misc.push_back(c.make(Op::NOOP, DType::Void, {},
                        makeRecord(c, "SomeFutureClass", {{"zeta", c.argInt(1)}, {"alpha", c.argString("a")}})));
  misc.push_back(c.make(Op::NOOP, DType::Void, {}, makeRecord(c, "EmptyClass", {})));
  // tags
  misc.push_back(c.make(Op::NEG, DType::Float32, {param}, nullptr, c.argInt(7)));
  misc.push_back(c.make(Op::NEG, DType::Float32, {param}, nullptr, c.argTuple({c.argString("t"), c.argRef(sz)})));
  // a node reachable only through a tag (toposort itself does not follow tags)
  misc.push_back(c.make(Op::NEG, DType::Float32, {param}, nullptr,
                        c.argTuple({c.argString("only-in-tag"), c.argRef(c.constInt(DType::Int8, 42))})));
  misc.push_back(c.make(Op::MULTI, DType::Float32, {param}, c.argInt(0)));
  std::vector<const UOp *> all = consts;
  all.insert(all.end(), misc.begin(), misc.end());
  const UOp *st = c.make(Op::STORE, DType::Void, {param, misc.back()});
  all.push_back(st);
  g.root = c.make(Op::SINK, DType::Void, all);
  return g;
}

} // namespace

TEST_CASE("corpus graphs read and round-trip through JSON and .uopb", "[io][corpus]") {
  std::vector<fs::path> files = corpusGraphs();
  if (files.empty()) {
    WARN("corpus not found at '" << corpusDir() << "': the corpus round-trip test was SKIPPED (set UOPC_CORPUS)");
    return;
  }
  size_t exactText = 0;
  // The documents as written: without the rewrite of 0.14.0 forms, which also commits the few weak
  // constants of d1c3ae0f91 graphs (ProducerFormsTest covers that form).
  ReadLimits raw;
  raw.producerForms = false;
  for (const fs::path &p : files) {
    INFO("corpus file " << p.string());
    std::string text = slurp(p);
    Graph g = readGraphFile(p.string(), raw);
    REQUIRE(g.root != nullptr);
    CHECK(g.producerJson.find("\"tinygrad\"") != std::string::npos);

    // JSON -> write -> read
    std::string j1 = writeGraphJson(g);
    Graph g2 = readGraphJson(j1, "rewritten", raw);
    std::string why;
    CHECK(sameGraph(g, g2, &why));
    INFO(why);
    // deterministic, also across contexts
    CHECK(writeGraphJson(g) == j1);
    CHECK(writeGraphJson(g2) == j1);
    // The corpus is tinygrad's toposort order, which is ours too: the writer reproduces the file
    // byte for byte apart from the newlines between nodes.
    std::string flat = j1;
    flat.erase(std::remove(flat.begin(), flat.end(), '\n'), flat.end());
    std::string orig = text;
    while (!orig.empty() && (orig.back() == '\n' || orig.back() == ' ')) orig.pop_back();
    if (flat == orig) ++exactText;

    // JSON -> uopb -> read
    std::string b1 = writeGraphBinary(g);
    REQUIRE(looksBinary(b1));
    Graph gb = readGraph(b1, "bin", raw);
    CHECK(sameGraph(g, gb, &why));
    INFO(why);
    CHECK(writeGraphBinary(gb) == b1);
    // uopb -> JSON -> uopb is byte identical
    Graph gj = readGraph(writeGraphJson(gb), "bin-json", raw);
    CHECK(writeGraphBinary(gj) == b1);
    CHECK(writeGraphJson(gb) == j1);
    CHECK(b1.size() < text.size());
  }
  INFO(exactText << " of " << files.size() << " corpus files are reproduced byte for byte");
  CHECK(exactText == files.size());
  SUCCEED("read and round-tripped " << files.size() << " corpus graphs");
}

TEST_CASE("every arg kind round-trips through JSON and .uopb", "[io]") {
  Graph g = everyArgGraph();
  std::string j = writeGraphJson(g);
  Graph gj = readGraphJson(j, "j");
  std::string why;
  CHECK(sameGraph(g, gj, &why));
  INFO(why);
  CHECK(gj.producerJson == g.producerJson);
  CHECK(gj.padFill == PadFill::Invalid);
  CHECK(gj.stage == "after-multi");
  CHECK(writeGraphJson(gj) == j);
  CHECK(writeGraphJson(g) == j);

  std::string b = writeGraphBinary(g);
  Graph gb = readGraphBinary(b, "b");
  CHECK(sameGraph(g, gb, &why));
  INFO(why);
  CHECK(writeGraphBinary(gb) == b);
  CHECK(writeGraphBinary(gj) == b);
  CHECK(writeGraphBinary(readGraph(writeGraphJson(gb))) == b);
  CHECK(writeGraphJson(gb) == j);

  // the written text, spot checks of the encodings
  CHECK(j.rfind(R"({"format":"uopc-graph","version":1,"producer":{"name":"unit",)", 0) == 0);
  CHECK(j.find(R"("semantics":{"pad_fill":"invalid"},"stage":"after-multi","nodes":[)") != std::string::npos);
  CHECK(j.find(R"("arg":0.1})") != std::string::npos);
  CHECK(j.find(R"("arg":1e-05})") != std::string::npos);
  CHECK(j.find(R"("arg":0.0001})") != std::string::npos);
  CHECK(j.find(R"("arg":-2.5e-10})") != std::string::npos);
  CHECK(j.find(R"("arg":5e-324})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"1e+16"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"1000000000000000.0"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"2.0"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"-0.0"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"0.0"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"1.7976931348623157e+308"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"inf"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"-inf"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"float","v":"nan"})") != std::string::npos);
  CHECK(j.find(R"("arg":-9223372036854775808})") != std::string::npos);
  CHECK(j.find(R"("arg":18446744073709551615})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"bigint","v":"123456789012345678901234567890"})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"Invalid"})") != std::string::npos);
  CHECK(j.find(R"("arg":[{"$":"Ops","v":"ADD"},2])") != std::string::npos);
  CHECK(j.find(R"("arg":[0,{"$":"AxisType","v":"GROUP_REDUCE"}])") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"DType","v":"float16"})") != std::string::npos);
  CHECK(j.find(R"("arg":[null,[[],null,[0.5]]])") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"bytes","v":"YQ=="})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"bytes","v":"YWI="})") != std::string::npos);
  CHECK(j.find(R"("arg":{"$":"bytes","v":""})") != std::string::npos);
  CHECK(j.find(R"(\"quote\\\" back\\\\ nl\\n tab\\t ctl\\u0001)") == std::string::npos); // sanity of the raw literal
  CHECK(j.find(R"("arg":"quote\" back\\ nl\n tab\t ctl\u0001 del)") != std::string::npos);
  CHECK(j.find("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 nul\\u0000 end\"") != std::string::npos);
  CHECK(j.find(R"({"$":"ParamArg","slot":0,"dtype":{"$":"DType","v":"float32"},"vmin_vmax":[-3,7],"name":"n","addrspace":{"$":"AddrSpace","v":"LOCAL"},"device":["CPU:0","CPU:1"],"volatile":true})") !=
        std::string::npos);
  CHECK(j.find(R"({"$":"CallInfo","name":"f","precompile":true})") != std::string::npos);
  CHECK(j.find(R"({"$":"KernelInfo","name":null,"axis_types":[{"$":"AxisType","v":"LOOP"}],"beam":3})") !=
        std::string::npos);
  CHECK(j.find(R"({"$":"BufferizeOpts","device":"CPU","removable":false})") != std::string::npos);
  CHECK(j.find(R"({"$":"SomeFutureClass","alpha":"a","zeta":1})") != std::string::npos);
  CHECK(j.find(R"({"$":"EmptyClass"})") != std::string::npos);
  CHECK(j.find(R"("tag":7})") != std::string::npos);
  CHECK(j.find(R"("tag":["t",{"$":"UOp","id":)") != std::string::npos);
  CHECK(j.find(R"("op":"MULTI")") != std::string::npos);
  CHECK(j.find(R"("dtype":"int8","arg":42})") < j.find(R"("tag":["only-in-tag",)"));
  // one node a line, newline at the end
  CHECK(j.back() == '\n');
  CHECK(std::count(j.begin(), j.end(), '\n') == static_cast<long>(toposort(g.root).size()) + 3); // + the tag-only node
}

TEST_CASE("floats are written like Python's repr and read back exactly", "[io]") {
  struct Case {
    double v;
    const char *repr;
  };
  const Case cases[] = {
      {0x1.999999999999ap-4, "0.1"},
      {0x1.4f8b588e368f1p-17, "1e-05"},
      {0x1.a36e2eb1c432dp-14, "0.0001"},
      {0x1.02e4b6ce5dc68p-13, "0.00012345"},
      {0x1.1c37937e08000p+53, "1e+16"},
      {0x1.c6bf526340000p+49, "1000000000000000.0"},
      {0x1.b69b4ba630f35p+56, "1.2345678901234568e+17"},
      {0x1.0000000000000p+1, "2.0"},
      {-0x0.0p+0, "-0.0"},
      {0x0.0p+0, "0.0"},
      {0x0.0000000000001p-1022, "5e-324"},
      {0x1.fffffffffffffp+1023, "1.7976931348623157e+308"},
      {0x1.0000000000000p-1022, "2.2250738585072014e-308"},
      {0x1.0000000000000p-1, "0.5"},
      {-0x1.71547652b82fep+0, "-1.4426950408889634"},
      {0x1.00068db8bac71p+0, "1.0001"},
      {0x1.9000000000000p+6, "100.0"},
      {0x1.0f0cf064dd592p+73, "1e+22"},
      {0x1.ad7f29abcaf48p-24, "1e-07"},
      {0x1.921f9f01b866ep+1, "3.14159"},
      {-0x1.12e0be826d695p-32, "-2.5e-10"},
      {0x1.0000000000000p+53, "9007199254740992.0"},
      {0x1.3333333333333p-2, "0.3"},
      {0x1.5555555555555p-2, "0.3333333333333333"},
      {0x1.5555555555555p-1, "0.6666666666666666"},
      {0x1.249ad2594c37dp+332, "1e+100"},
      {0x1.edd2f1a9fbe77p+6, "123.456"},
      {0x1.1c37937e07fffp+53, "9999999999999998.0"},
      {0x1.6345785d8a000p+56, "1e+17"},
      {0x1.0624dd2f1a9fcp-10, "0.001"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::numeric_limits<double>::quiet_NaN(), "nan"},
  };
  for (const Case &c : cases) {
    char buf[40];
    std::string got(buf, io::pyFloatRepr(c.v, buf));
    CHECK(got == c.repr);
    auto back = io::parsePyFloat(c.repr);
    REQUIRE(back);
    if (std::isnan(c.v)) CHECK(std::isnan(*back));
    else CHECK(std::bit_cast<uint64_t>(*back) == std::bit_cast<uint64_t>(c.v));
  }
  // random bit patterns round-trip exactly through the repr
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    double v = std::bit_cast<double>(rng());
    if (std::isnan(v)) continue;
    char buf[40];
    size_t n = io::pyFloatRepr(v, buf);
    auto back = io::parsePyFloat(std::string_view(buf, n));
    REQUIRE(back);
    REQUIRE(std::bit_cast<uint64_t>(*back) == std::bit_cast<uint64_t>(v));
  }
  for (const char *bad : {"", "-", "1.", ".5", "1e", "0x10", "infinity", "Infinity", "NaN", "-nan", "1,5", " 1", "1e400"})
    CHECK_FALSE(io::parsePyFloat(bad));
  CHECK(io::parsePyFloat("1e-400") == 0.0);
}

TEST_CASE("JSON reader accepts the format's variations", "[io]") {
  // fields in any order, root before nodes, node keys in any order, optional fields missing
  std::string d = R"({"root":2,"nodes":[{"dtype":"weakint","arg":4,"op":"CONST","id":0},
    {"src":[0,0],"id":1,"op":"ADD","dtype":"weakint"},{"op":"SINK","id":2,"dtype":"void","src":[1]}],
    "version":1,"format":"uopc-graph"})";
  Graph g = readGraphJson(d, "t.json");
  CHECK(g.root->op == Op::SINK);
  CHECK(g.producerJson == "{}");
  CHECK(g.padFill == PadFill::Zero);
  CHECK(g.stage.empty());
  CHECK(g.describe(g.root->src(0)) == "node 1 (ADD)");

  // duplicates fold (hash-consing); inputIds keeps the first id
  Graph h = readGraphJson(doc(R"({"id":0,"op":"CONST","dtype":"int32","arg":1},{"id":1,"op":"CONST","dtype":"int32","arg":1},
    {"id":2,"op":"ADD","dtype":"int32","src":[0,1]},{"id":3,"op":"SINK","dtype":"void","src":[2]})",
                              "3"),
                          "dup");
  CHECK(h.root->src(0)->src(0) == h.root->src(0)->src(1));
  CHECK(h.describe(h.root->src(0)->src(0)) == "node 0 (CONST)");
  CHECK(h.ctx->numNodes() == 3);

  // arg forms: integral JSON float, "$" not first, bigint that fits, UNSHARD alias, tag, producer verbatim
  Graph k = readGraphJson(
      R"({"format":"uopc-graph","version":1,"producer":{"b":[1,2.50,{"c":null}],"a":"\u00e9\n","t":true},"semantics":{},"stage":"x","nodes":[
    {"id":0,"op":"CONST","dtype":"float32","arg":2.0},
    {"id":1,"op":"CONST","dtype":"float32","arg":{"v":"2.0","$":"float"}},
    {"id":2,"op":"CONST","dtype":"int64","arg":{"$":"bigint","v":"-5"}},
    {"id":3,"op":"UNSHARD","dtype":"float32","src":[0],"arg":1,"tag":{"$":"UOp","id":2}},
    {"id":4,"op":"SINK","dtype":"void","src":[0,1,2,3]}],"root":4})",
      "k");
  CHECK(k.producerJson == "{\"b\":[1,2.50,{\"c\":null}],\"a\":\"\xc3\xa9\\n\",\"t\":true}");
  CHECK(k.stage == "x");
  CHECK(k.root->src(0) == k.root->src(1));
  CHECK(k.root->src(0)->arg->kind == ArgKind::Float);
  CHECK(k.root->src(0)->arg->f() == 2.0);
  CHECK(k.root->src(2)->arg->kind == ArgKind::Int);
  CHECK(k.root->src(2)->arg->i() == -5);
  CHECK(k.root->src(3)->op == Op::MULTI);
  CHECK(k.root->src(3)->tag->kind == ArgKind::UOpRef);
  CHECK(k.root->src(3)->tag->ref() == k.root->src(2));

  // ParamArg defaults are dropped, so an explicit default and a missing one are the same arg
  Graph p = readGraphJson(
      doc(R"({"id":0,"op":"CONST","dtype":"weakint","arg":4},
    {"id":1,"op":"PARAM","dtype":"float32","src":[0],"arg":{"$":"ParamArg","slot":0,"dtype":{"$":"DType","v":"float32"},"addrspace":{"$":"AddrSpace","v":"GLOBAL"},"volatile":false}},
    {"id":2,"op":"PARAM","dtype":"float32","src":[0],"arg":{"$":"ParamArg","dtype":{"$":"DType","v":"float32"},"slot":0}},
    {"id":3,"op":"SINK","dtype":"void","src":[1,2]})",
          "3"),
      "p");
  CHECK(p.root->src(0) == p.root->src(1));
  CHECK(p.root->src(0)->arg->count == 2);
}

TEST_CASE("malformed JSON documents are rejected with clear messages", "[io]") {
  const std::string c0 = R"({"id":0,"op":"CONST","dtype":"int32","arg":1})";
  struct Bad {
    std::string text;
    std::string expect;
  };
  auto deep = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  std::vector<Bad> cases = {
      {"", "t.json: empty input"},
      {"  \n ", "t.json: empty input"},
      {"[1,2]", "t.json: the document must be a JSON object"},
      {"5", "t.json: the document must be a JSON object"},
      {"\"x\"", "t.json: the document must be a JSON object"},
      {R"({"format":"uopc-graph")", "t.json: invalid JSON at byte 23: "},
      {R"({"format":"uopc-graph",)", "unexpected end of input"},
      {doc(c0).substr(0, 100), "t.json: invalid JSON at byte"},
      {doc(c0) + " x", "t.json: invalid JSON at byte"},
      {doc(c0) + "{}", "t.json: invalid JSON at byte"},
      {R"({"format":"uopc-graph","version":1,"nodes":[{"id":0,"op":"CONST","dtype":"int32","arg":1e400}],"root":0})",
       "t.json: invalid JSON at byte"},
      {"{\"format\":\"uopc-graph\",\"version\":1,\"stage\":\"\xff\",\"nodes\":[],\"root\":0}", "t.json: invalid JSON"},
      {R"({"format":"x","version":1,"nodes":[],"root":0})", "t.json: unsupported format 'x' (expected \"uopc-graph\")"},
      {R"({"format":7,"version":1,"nodes":[],"root":0})", "unsupported format 7 (expected \"uopc-graph\")"},
      {R"({"format":"uopc-graph","version":2,"nodes":[],"root":0})",
       "t.json: unsupported version 2 (this uopc reads version 1)"},
      {R"({"format":"uopc-graph","version":"1","nodes":[],"root":0})", "'version' must be an integer"},
      {R"({"format":"uopc-graph","version":1.0,"nodes":[],"root":0})", "'version' must be an integer"},
      {R"({"version":1,"nodes":[{"id":0,"op":"SINK","dtype":"void"}],"root":0})", "t.json: missing \"format\""},
      {R"({"format":"uopc-graph","nodes":[{"id":0,"op":"SINK","dtype":"void"}],"root":0})", "missing \"version\""},
      {R"({"format":"uopc-graph","version":1,"root":0})", "t.json: missing \"nodes\""},
      {R"({"format":"uopc-graph","version":1,"nodes":[{"id":0,"op":"SINK","dtype":"void"}]})", "t.json: missing \"root\""},
      {doc(c0, "99"), "t.json: root 99 is not a node id (the document has 1 nodes)"},
      {doc(c0, "-1"), "'root' must be a node id"},
      {doc(c0, "\"0\""), "'root' must be a node id"},
      {doc("", "0"), "root 0 is not a node id (the document has 0 nodes)"},
      {doc(c0, "0", R"("extra":1,)"), "t.json: unknown top-level field 'extra'"},
      {doc(c0, "0", R"("root":0,)"), "top-level field 'root' appears twice"},
      {doc(c0, "0", R"("stage":5,)"), "'stage' must be a string"},
      {R"({"format":"uopc-graph","version":1,"producer":"tg","nodes":[],"root":0})", "'producer' must be an object"},
      {R"({"format":"uopc-graph","version":1,"producer":)" + std::string(70, '[') + std::string(70, ']') +
           R"(,"nodes":[],"root":0})",
       "'producer' must be an object"},
      {R"({"format":"uopc-graph","version":1,"producer":{"a":)" + deep(70) + R"(},"nodes":[],"root":0})",
       "'producer' nested too deep"},
      {R"({"format":"uopc-graph","version":1,"semantics":{"pad_fill":"maybe"},"nodes":[],"root":0})",
       "semantics.pad_fill must be \"zero\" or \"invalid\", not 'maybe'"},
      {R"({"format":"uopc-graph","version":1,"semantics":{"pad_fill":["zero"]},"nodes":[],"root":0})",
       "semantics.pad_fill must be"},
      {R"({"format":"uopc-graph","version":1,"semantics":{"fast_math":true},"nodes":[],"root":0})",
       "unknown semantics field 'fast_math'"},
      {R"({"format":"uopc-graph","version":1,"semantics":[],"nodes":[],"root":0})", "'semantics' must be an object"},
      {R"({"format":"uopc-graph","version":1,"nodes":{},"root":0})", "'nodes' must be a list"},
      {doc("1"), "t.json: node 0 must be an object"},
      {doc("[]"), "t.json: node 0 must be an object, not a list"},
      {doc(R"({"id":0,"op":"FOO","dtype":"int32"})"), "t.json: node 0: unknown op 'FOO'"},
      {doc(R"({"id":0,"op":5,"dtype":"int32"})"), "t.json: node 0: op must be a string"},
      {doc(R"({"id":0,"op":"CONST","dtype":"float33","arg":1})"), "t.json: node 0 (CONST): unknown dtype 'float33'"},
      {doc(R"({"id":0,"dtype":"int32","arg":1})"), "t.json: node 0: missing 'op'"},
      {doc(R"({"op":"CONST","dtype":"int32","arg":1})"), "t.json: node 0 (CONST): missing 'id'"},
      {doc(R"({"id":0,"op":"CONST","arg":1})"), "t.json: node 0 (CONST): missing 'dtype'"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int32","arg":1,"extra":2})"), "t.json: node 0 (CONST): unknown node field 'extra'"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int32","arg":1,"arg":2})"), "node 0 (CONST): field 'arg' appears twice"},
      {doc(c0 + R"(,{"id":5,"op":"NEG","dtype":"int32","src":[0]})", "1"),
       "t.json: node at index 1 has id 5 (ids must be 0, 1, 2, ... in the order of the nodes list)"},
      {doc(R"({"id":"0","op":"CONST","dtype":"int32","arg":1})"), "node 0: id must be an integer"},
      {doc(c0 + R"(,{"id":1,"op":"ADD","dtype":"int32","src":[0,2]},{"id":2,"op":"SINK","dtype":"void"})", "1"),
       "t.json: node 1 (ADD): source 2 is not defined before the node (nodes must be in topological order)"},
      {doc(c0 + R"(,{"id":1,"src":[1],"op":"NEG","dtype":"int32"})", "1"),
       "t.json: node 1 (NEG): source 1 is not defined before the node"},
      {doc(c0 + R"(,{"id":1,"op":"NEG","dtype":"int32","src":[-1]})", "1"), "node 1 (NEG): source -1 is not a node id"},
      {doc(c0 + R"(,{"id":1,"op":"NEG","dtype":"int32","src":["0"]})", "1"), "node 1 (NEG): src must be a list of node ids"},
      {doc(c0 + R"(,{"id":1,"op":"NEG","dtype":"int32","src":[0.0]})", "1"), "node 1 (NEG): src must be a list of node ids"},
      {doc(c0 + R"(,{"id":1,"op":"NEG","dtype":"int32","src":[[0]]})", "1"), "node 1 (NEG): src must be a list of node ids"},
      {doc(c0 + R"(,{"id":1,"op":"NEG","dtype":"int32","src":0})", "1"), "node 1 (NEG): src must be a list of node ids"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int32","arg":{"v":1}})"),
       "t.json: node 0 (CONST): bad arg: an object without a \"$\" key"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int32","arg":{"$":5}})"), "node 0 (CONST): bad arg: the \"$\" key"},
      {doc(R"({"id":0,"op":"CONST","dtype":"float32","arg":{"$":"float","v":"abc"}})"),
       "t.json: node 0 (CONST): bad arg: bad float 'abc'"},
      {doc(R"({"id":0,"op":"CONST","dtype":"float32","arg":{"$":"float","v":2.0}})"),
       "bad arg: the \"v\" of {\"$\":\"float\"} must be a string"},
      {doc(R"({"id":0,"op":"CONST","dtype":"float32","arg":{"$":"float"}})"), "bad arg: {\"$\":\"float\"} needs a \"v\""},
      {doc(R"({"id":0,"op":"CONST","dtype":"float32","arg":{"$":"float","v":"1.0","w":1}})"),
       "bad arg: unexpected key 'w' in {\"$\":\"float\"}"},
      {doc(R"({"id":0,"op":"CONST","dtype":"float32","arg":{"$":"float","v":"1e999"}})"), "bad arg: bad float '1e999'"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int64","arg":{"$":"bigint","v":"12a"}})"), "bad arg: bad bigint '12a'"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int64","arg":{"$":"bigint","v":"007"}})"), "bad arg: bad bigint '007'"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int64","arg":123456789012345678901234567890})"),
       "node 0 (CONST): bad arg: integer 123456789012345678901234567890 is out of the int64/uint64 range"},
      {doc(R"({"id":0,"op":"CONST","dtype":"int32","arg":{"$":"Invalid","v":1}})"), "bad arg: unexpected key 'v'"},
      {doc(R"({"id":0,"op":"REDUCE","dtype":"int32","arg":[{"$":"Ops","v":"FOO"},1]})"),
       "node 0 (REDUCE): bad arg: unknown op 'FOO' in {\"$\":\"Ops\"}"},
      {doc(R"({"id":0,"op":"CAST","dtype":"int32","arg":{"$":"DType","v":"int33"}})"), "bad arg: unknown dtype 'int33'"},
      {doc(R"({"id":0,"op":"RANGE","dtype":"int32","arg":{"$":"AxisType","v":"NOPE"}})"), "bad arg: unknown AxisType 'NOPE'"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"AddrSpace","v":"NOPE"}})"), "bad arg: unknown AddrSpace 'NOPE'"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"UOp","id":0}})"),
       "node 0 (NOOP): bad arg: {\"$\":\"UOp\"} refers to node 0, which is not defined before this node"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"UOp","id":"0"}})"), "the \"id\" of {\"$\":\"UOp\"} must be"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"bytes","v":"abc"}})"), "bad arg: bad base64"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"bytes","v":"ab=c"}})"), "bad arg: bad base64"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"floot","v":"1"}})"), "bad arg: unknown arg type 'floot'"},
      {doc(R"({"id":0,"op":"PARAM","dtype":"int32","arg":{"$":"ParamArg","dtype":{"$":"DType","v":"int32"}}})"),
       "node 0 (PARAM): bad arg: ParamArg.slot is required"},
      {doc(R"({"id":0,"op":"PARAM","dtype":"int32","arg":{"$":"ParamArg","slot":0,"dtype":{"$":"DType","v":"int32"},"bogus":1}})"),
       "node 0 (PARAM): bad arg: ParamArg has no field 'bogus'"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"X","a":1,"a":2}})"), "bad arg: key 'a' appears twice"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":)" + deep(65) + "}"),
       "node 0 (NOOP): bad arg: nested too deep (over 64 levels"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":)" + deep(1000000) + "}"), "bad arg: nested too deep"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","tag":{"x":1}})"), "node 0 (NOOP): bad tag: an object without"},
      {doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":{"$":"Big")" + [] {
         std::string k;
         for (int i = 0; i < 5000; ++i) k += ",\"f" + std::to_string(i) + "\":1";
         return k;
       }() + "}}"),
       "node 0 (NOOP): bad arg: an object has more than 4096 keys"},
  };
  for (const Bad &b : cases) {
    INFO("document: " << b.text.substr(0, 300));
    std::string msg = errorOf([&] { readGraph(b.text, "t.json"); });
    INFO("message: " << msg);
    CHECK(msg.find(b.expect) != std::string::npos);
    CHECK(msg.rfind("t.json: ", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }

  // limits
  ReadLimits lim;
  lim.maxNodes = 2;
  std::string three = doc(c0 + R"(,{"id":1,"op":"NEG","dtype":"int32","src":[0]},{"id":2,"op":"SINK","dtype":"void","src":[1]})", "2");
  CHECK(errorOf([&] { readGraphJson(three, "t.json"); }).empty());
  CHECK(errorOf([&] { readGraphJson(three, "t.json", lim); }).find("t.json: too many nodes") != std::string::npos);
  CHECK(errorOf([&] { readGraphBinary(writeGraphBinary(readGraphJson(three)), "t.uopb", lim); })
            .find("t.uopb: too many nodes") != std::string::npos);
  lim = {};
  lim.maxSrcs = 1;
  std::string two = doc(c0 + R"(,{"id":1,"op":"ADD","dtype":"int32","src":[0,0]})", "1");
  CHECK(errorOf([&] { readGraphJson(two, "t.json", lim); }).find("node 1 (ADD): more than 1 sources") != std::string::npos);
  CHECK(errorOf([&] { readGraphBinary(writeGraphBinary(readGraphJson(two)), "t.uopb", lim); })
            .find("node 1 (ADD): more than 1 sources") != std::string::npos);
  lim = {};
  lim.maxArgItems = 2;
  std::string items = doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":[1,2,3]})");
  CHECK(errorOf([&] { readGraphJson(items, "t.json", lim); }).find("list has more than 2 items") != std::string::npos);
  CHECK(errorOf([&] { readGraphBinary(writeGraphBinary(readGraphJson(items)), "t.uopb", lim); })
            .find("more than 2 items") != std::string::npos);
  lim = {};
  lim.maxArgDepth = 3;
  std::string nest = doc(R"({"id":0,"op":"NOOP","dtype":"int32","arg":[[[[1]]]]})");
  CHECK(errorOf([&] { readGraphJson(nest, "t.json", lim); }).find("nested too deep (over 3 levels") != std::string::npos);
  CHECK(errorOf([&] { readGraphBinary(writeGraphBinary(readGraphJson(nest)), "t.uopb", lim); })
            .find("nested too deep (over 3 levels)") != std::string::npos);
}

TEST_CASE("mutated JSON documents give an Error or a graph, never a crash", "[io]") {
  const std::string text = writeGraphJson(everyArgGraph());
  std::mt19937 rng(99);
  const char pool[] = "{}[]\",:0123456789-.eE$ \\nulltruefalse";
  size_t errors = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string t = text;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % t.size();
      switch (rng() % 3) {
      case 0: t[pos] = pool[rng() % (sizeof pool - 1)]; break;
      case 1: t.erase(pos, 1 + rng() % 8); break;
      default: t.insert(pos, 1, pool[rng() % (sizeof pool - 1)]); break;
      }
      if (t.empty()) t = "{";
    }
    std::string msg = errorOf([&] { readGraph(t, "m.json"); });
    INFO("mutated document: " << t);
    REQUIRE(msg.find("NON-UOPC") == std::string::npos);
    if (!msg.empty()) {
      ++errors;
      REQUIRE(msg.rfind("m.json: ", 0) == 0);
      REQUIRE(msg.find('\n') == std::string::npos);
    }
  }
  CHECK(errors > 3000);
}

TEST_CASE("malformed .uopb documents are rejected, never crash", "[io]") {
  Graph g = everyArgGraph();
  const std::string b = writeGraphBinary(g);
  REQUIRE(looksBinary(b));
  CHECK_FALSE(looksBinary("{\"format\":1}"));
  CHECK_FALSE(looksBinary("UOP"));

  CHECK(errorOf([&] { readGraphBinary("UOPX\1\0\0\0", "t.uopb"); }) == "t.uopb: bad magic (not a .uopb document)");
  CHECK(errorOf([&] { readGraphBinary("", "t.uopb"); }) == "t.uopb: bad magic (not a .uopb document)");
  std::string v2 = b;
  v2[4] = 2;
  CHECK(errorOf([&] { readGraph(v2, "t.uopb"); }) == "t.uopb: unsupported .uopb version 2 (this uopc reads version 1)");
  CHECK(errorOf([&] { readGraph(b.substr(0, 6), "t.uopb"); }) == "t.uopb: truncated .uopb at byte 6 (reading the item at byte 4)");

  // every truncation is an error naming the truncation (or another corruption)
  for (size_t n = 0; n < b.size(); ++n) {
    std::string msg = errorOf([&] { readGraph(b.substr(0, n), "t.uopb"); });
    INFO("truncated to " << n << " bytes: " << msg);
    REQUIRE(!msg.empty());
    REQUIRE(msg.rfind("t.uopb: ", 0) == 0);
    REQUIRE(msg.find("NON-UOPC") == std::string::npos);
  }
  // trailing bytes
  CHECK(errorOf([&] { readGraph(b + "x", "t.uopb"); }).find("trailing data") != std::string::npos);

  // corrupt bytes: an Error or a (different) valid graph, never a crash or another exception
  std::mt19937 rng(7);
  size_t errors = 0, oks = 0;
  for (size_t i = 8; i < b.size(); ++i) {
    for (uint8_t x : {uint8_t(0xFF), uint8_t(0x01), uint8_t(0x80), static_cast<uint8_t>(rng())}) {
      std::string c = b;
      c[i] = static_cast<char>(c[i] ^ x);
      std::string msg = errorOf([&] { readGraph(c, "t.uopb"); });
      REQUIRE(msg.find("NON-UOPC") == std::string::npos);
      (msg.empty() ? oks : errors)++;
    }
  }
  CHECK(errors > 0);
  // huge counts must not allocate: a node count of 2^60 in a small file
  {
    std::string h = b.substr(0, 8);
    auto varint = [&](uint64_t v) {
      while (v >= 0x80) {
        h.push_back(static_cast<char>(v | 0x80));
        v >>= 7;
      }
      h.push_back(static_cast<char>(v));
    };
    varint(2);
    h += "{}";
    h.push_back(0);
    varint(0);
    varint(0);
    varint(0);
    varint(uint64_t(1) << 60);
    varint(1);
    varint(1);
    CHECK(errorOf([&] { readGraph(h, "t.uopb"); }).find("exceed the file size") != std::string::npos);
  }
}

TEST_CASE("sameGraph compares structure, not node order", "[io]") {
  auto build = [](bool reversed, double f, Op op, const Arg *(*tag)(Context &)) {
    Graph g;
    Context &c = *g.ctx;
    const UOp *a, *b;
    if (reversed) {
      b = c.constFloat(DType::Float32, 2.5);
      a = c.constFloat(DType::Float32, f);
    } else {
      a = c.constFloat(DType::Float32, f);
      b = c.constFloat(DType::Float32, 2.5);
    }
    const UOp *x = c.make(op, DType::Float32, {a, b}, nullptr, tag(c));
    const UOp *y = c.make(Op::NOOP, DType::Void, {}, c.argTuple({c.argRef(x), c.argInt(1)}));
    g.root = c.make(Op::SINK, DType::Void, {x, y});
    return g;
  };
  auto none = [](Context &) -> const Arg * { return nullptr; };
  auto t1 = [](Context &c) -> const Arg * { return c.argInt(1); };
  Graph a = build(false, 0.0, Op::ADD, none);
  Graph b = build(true, 0.0, Op::ADD, none);
  std::string why;
  CHECK(sameGraph(a, b, &why));
  CHECK(sameGraph(a, a));
  Graph c = build(false, -0.0, Op::ADD, none);
  CHECK_FALSE(sameGraph(a, c, &why));
  CHECK(why.find("args differ") != std::string::npos);
  Graph d = build(false, 0.0, Op::MUL, none);
  CHECK_FALSE(sameGraph(a, d, &why));
  CHECK(why.find("ops differ") != std::string::npos);
  Graph e = build(false, 0.0, Op::ADD, t1);
  CHECK_FALSE(sameGraph(a, e, &why));
  CHECK(why.find("tags differ") != std::string::npos);
  Graph f = build(false, 0.0, Op::ADD, none);
  f.stage = "x";
  CHECK_FALSE(sameGraph(a, f, &why));
  CHECK(why.find("stage") != std::string::npos);
  f.stage.clear();
  f.padFill = PadFill::Invalid;
  CHECK_FALSE(sameGraph(a, f, &why));
  f.padFill = PadFill::Zero;
  f.producerJson = "{ }";
  CHECK(sameGraph(a, f)); // parsed-equal
  f.producerJson = R"({"a":1})";
  CHECK_FALSE(sameGraph(a, f, &why));
  CHECK(why.find("producer") != std::string::npos);
  // source order matters
  Graph s1, s2;
  {
    const UOp *p = s1.ctx->constInt(DType::Int32, 1), *q = s1.ctx->constInt(DType::Int32, 2);
    s1.root = s1.ctx->make(Op::SUB, DType::Int32, {p, q});
    const UOp *q2 = s2.ctx->constInt(DType::Int32, 2), *p2 = s2.ctx->constInt(DType::Int32, 1);
    s2.root = s2.ctx->make(Op::SUB, DType::Int32, {q2, p2});
  }
  CHECK_FALSE(sameGraph(s1, s2, &why));
}

TEST_CASE("what JSON cannot carry: .uopb keeps it exactly, JSON writes it safely", "[io]") {
  Graph g;
  Context &c = *g.ctx;
  const std::string raw = std::string("ok \xff\xfe bad \xc3") + std::string(1, '\0');
  const double payloadNan = std::bit_cast<double>(uint64_t(0xfff8000000000123ULL));
  const UOp *s = c.make(Op::CUSTOM, DType::Void, {}, c.argString(raw));
  const UOp *n = c.constFloat(DType::Float32, payloadNan);
  g.root = c.make(Op::SINK, DType::Void, {s, n});
  Graph b = readGraph(writeGraphBinary(g));
  CHECK(sameGraph(g, b));
  CHECK(b.root->src(0)->arg->str() == raw);
  CHECK(b.root->src(1)->arg->u() == 0xfff8000000000123ULL);
  std::string j = writeGraphJson(g);
  CHECK(j.find(R"("arg":"ok \u00ff\u00fe bad \u00c3\u0000")") != std::string::npos);
  CHECK(j.find(R"({"$":"float","v":"nan"})") != std::string::npos);
  Graph r = readGraphJson(j); // valid JSON, but not the same bytes
  CHECK(r.root->src(0)->arg->str() == "ok \xc3\xbf\xc3\xbe bad \xc3\x83" + std::string(1, '\0'));
  CHECK(std::isnan(r.root->src(1)->arg->f()));

  // a record whose class would not read back as a record is refused
  Graph bad;
  bad.root = bad.ctx->make(Op::NOOP, DType::Void, {}, bad.ctx->argRecord("float", {}));
  CHECK(errorOf([&] { writeGraphJson(bad); }).find("cannot write a record arg of class 'float'") != std::string::npos);
  Graph noRoot;
  CHECK(errorOf([&] { writeGraphJson(noRoot); }).find("without a root") != std::string::npos);
  CHECK(errorOf([&] { writeGraphBinary(noRoot); }).find("without a root") != std::string::npos);
}

TEST_CASE("files: readGraphFile detects the encoding from the content", "[io]") {
  Graph g = everyArgGraph();
  fs::path dir = fs::temp_directory_path() / ("uopc-io-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "a.json", std::ios::binary) << writeGraphBinary(g); // binary content, .json name
    std::ofstream(dir / "b.uopb", std::ios::binary) << writeGraphJson(g);   // JSON content, .uopb name
  }
  CHECK(sameGraph(g, readGraphFile((dir / "a.json").string())));
  CHECK(sameGraph(g, readGraphFile((dir / "b.uopb").string())));
  std::string msg = errorOf([&] { readGraphFile((dir / "missing.json").string()); });
  CHECK(msg.find("missing.json: cannot open") != std::string::npos);
  fs::remove_all(dir);
}

namespace {
/// CONST then n-1 nested NEG float32 nodes, each the source of the next.
Graph deepChain(size_t n) {
  Graph g;
  Context &c = *g.ctx;
  const UOp *u = c.constFloat(DType::Float32, 1.5);
  for (size_t i = 1; i < n; ++i) u = c.make(Op::NEG, DType::Float32, {u});
  g.root = u;
  return g;
}
double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
void deepChainRoundTrip(size_t n, bool report) {
  Graph g = deepChain(n);
  auto t0 = std::chrono::steady_clock::now();
  std::string j = writeGraphJson(g);
  double tWriteJ = secondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  Graph gj = readGraphJson(j, "chain.json");
  double tReadJ = secondsSince(t0);
  CHECK(gj.ctx->numNodes() == n);
  t0 = std::chrono::steady_clock::now();
  std::string b = writeGraphBinary(gj);
  double tWriteB = secondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  Graph gb = readGraphBinary(b, "chain.uopb");
  double tReadB = secondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  std::string why;
  CHECK(sameGraph(g, gj, &why));
  CHECK(sameGraph(gj, gb, &why));
  double tSame = secondsSince(t0);
  CHECK(writeGraphJson(gb) == j);
  if (report)
    WARN("deep chain of " << n << " nodes: JSON " << j.size() << " B written in " << tWriteJ << " s, read in " << tReadJ
                        << " s; .uopb " << b.size() << " B written in " << tWriteB << " s, read in " << tReadB
                        << " s; 2x sameGraph " << tSame << " s");
}
} // namespace

// About 1.3 s in the default -O2 build; unoptimized and sanitizer builds use 100,000 nodes (still far
// deeper than any recursion could go). Set UOPC_IO_TIMINGS=1 to print the timings.
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
constexpr size_t kDeepChain = 100000;
#else
constexpr size_t kDeepChain = 1000000;
#endif
TEST_CASE("a deep chain of 1,000,000 nodes round-trips (no recursion on depth)", "[io]") {
  deepChainRoundTrip(kDeepChain, std::getenv("UOPC_IO_TIMINGS") != nullptr);
}
