// The C target: kernels emitted as C, compiled with cc and clang, dlopened and run, compared with the
// reference interpreter (small kernels) and with tinygrad's results (the corpus, hidden tags run as the
// ctests c-kernels-compile and c-kernels-run).
#include "IR/Error.h"
#include "IR/GraphIO.h"
#include "IR/Records.h"
#include "Interp/Evaluator.h"
#include "Passes/Schedule.h"
#include "Interp/Interpreter.h"
#include "IR/ScalarOps.h"
#include "Passes/PassManager.h"
#include "Passes/Symbolic/Symbolic.h"
#include "Targets/CTarget.h"

#include "Passes/Passes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <unordered_map>

using namespace uopc;
using interp::Word;
namespace fs = std::filesystem;

namespace {

const char *kKernelPipeline = "verify,invalid-pad,multi-lower,reduce-identity,rangeify,kernel-split,codegen";

const fs::path &scratch() {
  static fs::path dir = [] {
    char tmpl[] = "/tmp/uopc-ctarget-XXXXXX";
    const char *d = mkdtemp(tmpl);
    if (!d) fail("mkdtemp failed");
    return fs::path(d);
  }();
  return dir;
}

std::string readFile(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
void writeFile(const fs::path &p, const std::string &s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

/// Runs a shell command; returns its exit status, its stderr in *log.
int shell(const std::string &cmd, std::string *log) {
  fs::path err = scratch() / "stderr.txt";
  int rc = std::system((cmd + " 2>" + err.string()).c_str());
  if (log) *log = readFile(err);
  return rc;
}

/// Compiles C sources to a shared object with `compiler`; "" on success, else the compiler's message.
std::string compileShared(const std::string &compiler, const fs::path &src, const fs::path &so) {
  std::string log;
  int rc = shell(compiler + " -std=c11 -Wall -Werror -O2 -shared -fPIC " + src.string() + " -o " + so.string() + " -lm", &log);
  return rc == 0 ? "" : log.empty() ? "exit " + std::to_string(rc) : log;
}

using KernelFn = void *;

/// Emitted source -> loaded function, so a kernel compiled once is reused.
KernelFn loadKernel(const EmittedKernel &k, const std::string &compiler = "cc") {
  static std::map<std::pair<std::string, std::string>, KernelFn> cache;
  auto key = std::make_pair(compiler, k.source());
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  static int n = 0;
  fs::path src = scratch() / ("k" + std::to_string(n) + ".c"), so = scratch() / ("k" + std::to_string(n++) + ".so");
  writeFile(src, k.source());
  std::string err = compileShared(compiler, src, so);
  if (!err.empty()) fail(compiler + " rejected " + k.symbol + ":\n" + err + "\n" + k.source());
  void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) fail(std::string("dlopen: ") + dlerror());
  void *fn = dlsym(h, k.symbol.c_str());
  if (!fn) fail("no symbol " + k.symbol);
  return cache[key] = fn;
}

/// Calls a kernel whose arguments are pointers and int64_t, all passed in integer registers or stack
/// slots of 8 bytes (SysV x86-64, AAPCS64): a call with more arguments than the kernel declares is
/// harmless there, so one 24-argument signature serves every kernel.
void callKernel(KernelFn fn, const std::vector<uint64_t> &args) {
  if (args.size() > 24) fail("test harness: " + std::to_string(args.size()) + " kernel arguments");
  uint64_t a[24] = {};
  std::copy(args.begin(), args.end(), a);
  using U = uint64_t;
  reinterpret_cast<void (*)(U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U)>(fn)(
      a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16],
      a[17], a[18], a[19], a[20], a[21], a[22], a[23]);
}

const UOp *rawBuffer(const UOp *s) {
  while (s->op == Op::AFTER) s = s->src(0);
  return s;
}

/// The CALLs of a kernel graph in the interpreter's order (read-after-write, write-after-read).
std::vector<const UOp *> callOrder(const Graph &g) {
  std::vector<const UOp *> calls;
  std::unordered_map<const UOp *, size_t> idx;
  for (const UOp *u : topLevelNodes(g.root))
    if (u->op == Op::CALL) idx[u] = calls.size(), calls.push_back(u);
  std::vector<std::vector<size_t>> before(calls.size());
  for (size_t c = 0; c < calls.size(); ++c)
    for (const UOp *a : calls[c]->src().subspan(1))
      if (a->op == Op::AFTER)
        for (const UOp *d : a->src().subspan(1))
          if (auto it = idx.find(d); it != idx.end()) before[c].push_back(it->second);
  for (size_t w = 0; w < calls.size(); ++w)
    for (size_t r = 0; r < calls.size(); ++r)
      if (r != w)
        for (const UOp *a : calls[r]->src().subspan(2))
          if (a == calls[w]->src(1)) before[w].push_back(r);
  std::vector<int> st(calls.size(), 0);
  std::vector<const UOp *> order;
  std::function<void(size_t)> visit = [&](size_t c) {
    if (st[c]) return;
    st[c] = 1;
    for (size_t b : before[c]) visit(b);
    order.push_back(calls[c]);
  };
  for (size_t c = 0; c < calls.size(); ++c) visit(c);
  return order;
}

size_t deviceCount(const UOp *raw) { return std::max<size_t>(1, ParamArg::decode(raw->arg).devices.size()); }

/// Elementwise comparison of two raw buffers: "" when they match (floats within tolerance).
std::string compareBytes(const std::string &got, const std::string &want, DType dt, double rtol, double atol) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  size_t sz = dtypeSize(dt), bad = 0, first = 0;
  for (size_t i = 0; i * sz < got.size(); ++i) {
    auto g = reinterpret_cast<const unsigned char *>(got.data() + i * sz);
    auto w = reinterpret_cast<const unsigned char *>(want.data() + i * sz);
    bool ok;
    if (isFloat(dt)) {
      double a = interp::asDouble(interp::loadWord(dt, g)), b = interp::asDouble(interp::loadWord(dt, w));
      ok = (std::isnan(a) && std::isnan(b)) || (std::isinf(a) || std::isinf(b) ? a == b : std::fabs(a - b) <= atol + rtol * std::fabs(b));
    } else {
      ok = std::memcmp(g, w, sz) == 0;
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (!bad) return "";
  auto show = [&](const std::string &b) {
    Word w = interp::loadWord(dt, reinterpret_cast<const unsigned char *>(b.data() + first * sz));
    return isFloat(dt) ? std::to_string(interp::asDouble(w)) : std::to_string(interp::asInt(w));
  };
  return std::to_string(bad) + " elements differ, first at [" + std::to_string(first) + "]: got " + show(got) +
         ", expected " + show(want);
}

Graph kernelGraph(const fs::path &graphFile, const std::string &pipeline = kKernelPipeline) {
  Graph g = readGraphFile(graphFile.string());
  std::ostringstream out, err;
  runPipeline(g, parsePipeline(pipeline), {}, out, err);
  // the kernels are called directly with their buffers: none split across threads (no lo, hi arguments)
  runPipeline(g, parsePipeline("lower-index,linearize{threads=0}"), {}, out, err);
  return g;
}

/// Runs every kernel of a corpus case as C (copies as memcpy) and compares with the expected outputs.
std::string runCaseC(const fs::path &dir, int *kernels) {
  nlohmann::json cs = nlohmann::json::parse(readFile(dir / "case.json"));
  Graph g = kernelGraph(dir / "graph.json");
  std::map<std::string, int64_t> vars;
  std::unordered_map<std::string, int64_t> uvars;
  for (auto &[k, v] : cs["vars"].items()) vars[k] = v.get<int64_t>(), uvars[k] = v.get<int64_t>();
  std::map<int64_t, const nlohmann::json *> params;
  for (const auto &p : cs["params"])
    if (p.value("kind", "") == "buffer") params[p["slot"].get<int64_t>()] = &p;

  std::unordered_map<const UOp *, std::vector<std::string>> mem;
  auto storage = [&](const UOp *state) -> std::vector<std::string> & {
    const UOp *raw = rawBuffer(state);
    auto [it, fresh] = mem.try_emplace(raw);
    if (!fresh) return it->second;
    ParamArg pa = ParamArg::decode(raw->arg);
    size_t nd = deviceCount(raw);
    if (raw->op == Op::PARAM) {
      const nlohmann::json &p = *params.at(pa.slot);
      for (size_t d = 0; d < nd; ++d) {
        int64_t numel = p["numel"][d].get<int64_t>();
        if (p.contains("input")) it->second.push_back(readFile(dir / p["input"][d].get<std::string>()));
        else it->second.push_back(std::string(static_cast<size_t>(numel) * dtypeSize(raw->dtype), '\0'));
      }
    } else {
      const UOp *n = bindVariables(*g.ctx, raw->src(0), uvars);
      auto b = constBound(simplify(*g.ctx, n));
      if (!b) fail("buffer size is not constant");
      for (size_t d = 0; d < nd; ++d)
        it->second.push_back(std::string(static_cast<size_t>(*b) * dtypeSize(raw->dtype), '\0'));
    }
    return it->second;
  };

  for (const UOp *call : callOrder(g)) {
    auto &out = storage(call->src(1));
    if (call->src(0)->op == Op::COPY) {
      auto &src = storage(call->src(2));
      int64_t from = call->src(0)->arg->elems()[1]->i();
      for (size_t d = 0; d < out.size(); ++d) {
        size_t s = from >= 0 ? static_cast<size_t>(from) : (src.size() == 1 ? 0 : d);
        out[d] = src.at(s);
      }
      continue;
    }
    if (call->src(0)->op == Op::ALLREDUCE) { // multi-lower's collective: the shards reduced in device order
      auto &src = storage(call->src(2));
      DType dt = call->src(0)->dtype;
      Op rop = call->src(0)->arg->elems()[0]->op();
      size_t n = out[0].size() / dtypeSize(dt);
      REQUIRE(call->src(0)->arg->elems()[2]->str() == "devices");
      for (size_t e = 0; e < n; ++e) {
        auto at = [&](const std::string &b) { return reinterpret_cast<const unsigned char *>(b.data()) + e * dtypeSize(dt); };
        interp::Word acc = interp::loadWord(dt, at(src[0]));
        for (size_t d = 1; d < src.size(); ++d) {
          acc = interp::reduceStep(rop, dt, acc, interp::loadWord(dt, at(src[d])));
          if (interp::isFloatDType(dt)) acc = interp::fromDouble(interp::roundFloat(dt, interp::asDouble(acc)));
        }
        for (std::string &o : out) interp::storeWord(dt, acc, reinterpret_cast<unsigned char *>(o.data()) + e * dtypeSize(dt));
      }
      continue;
    }
    std::vector<std::string> names = kernelVariables(call);
    for (size_t d = 0; d < out.size(); ++d) {
      EmittedKernel k = emitCKernel(*g.ctx, call, static_cast<int64_t>(d), "kernel");
      ++*kernels;
      std::vector<uint64_t> args;
      for (const UOp *a : call->src().subspan(1)) {
        auto &s = storage(a);
        std::string &buf = s.size() == out.size() ? s[d] : s[0];
        args.push_back(reinterpret_cast<uint64_t>(buf.data()));
      }
      for (const std::string &v : names) args.push_back(static_cast<uint64_t>(vars.at(v)));
      callKernel(loadKernel(k), args);
    }
  }
  double rtol = cs["tolerance"].value("rtol", 0.0), atol = cs["tolerance"].value("atol", 0.0);
  for (const UOp *u : toposort(g.root)) (void)u;
  for (const auto &[slot, p] : params) {
    if (!p->contains("expected")) continue;
    const UOp *raw = nullptr;
    for (auto &[r, bufs] : mem)
      if (r->op == Op::PARAM && ParamArg::decode(r->arg).slot == slot) raw = r;
    if (!raw) return "slot " + std::to_string(slot) + " never written";
    const auto &files = (*p)["expected"];
    for (size_t d = 0; d < files.size(); ++d) {
      std::string why = compareBytes(mem[raw].at(d), readFile(dir / files[d].get<std::string>()), raw->dtype, rtol, atol);
      if (!why.empty()) return "slot " + std::to_string(slot) + " device " + std::to_string(d) + ": " + why;
    }
  }
  return "";
}

std::vector<fs::path> corpusCases() {
  std::vector<fs::path> out;
  fs::path root = fs::path(UOPC_CORPUS_DIR) / "public";
  if (!fs::exists(root)) return out;
  for (const auto &e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "case.json")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// A hand-built kernel: out[i] = op(a[i], b[i]) over n elements of dtype dt, via kernel-split's form.
struct KernelBuilder {
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
  const UOp *call(const UOp *value, const UOp *idx, const std::vector<const UOp *> &ranges, const std::vector<const UOp *> &args) {
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

/// Runs a one-kernel graph with the interpreter and as C (with `compiler`); returns both outputs of slot 0.
std::pair<std::string, std::string> bothWays(KernelBuilder &kb, const UOp *call, const std::vector<std::string> &inputs,
                                             const std::string &compiler) {
  kb.g.root = kb.c.make(Op::SINK, DType::Void, {kb.c.make(Op::AFTER, call->src(1)->dtype, {call->src(1), call})});
  InterpInputs in;
  for (size_t s = 0; s < inputs.size(); ++s) in.buffers[static_cast<int64_t>(s + 1)] = {inputs[s]};
  InterpOutputs ref = interpret(kb.g, in);
  std::vector<std::string> bufs{std::string(ref.at(0)[0].size(), '\0')};
  bufs.insert(bufs.end(), inputs.begin(), inputs.end());
  std::vector<uint64_t> args;
  for (auto &b : bufs) args.push_back(reinterpret_cast<uint64_t>(b.data()));
  callKernel(loadKernel(emitCKernel(kb.c, lowerKernelForRendering(kb.c, call, PassTarget{}), 0, "k0"), compiler), args);
  return {ref.at(0)[0], bufs[0]};
}

template <typename T> std::string bytesOf(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}

} // namespace

TEST_CASE("sanitizeCName keeps identifiers and file names safe", "[ctarget]") {
  CHECK(sanitizeCName("k0") == "k0");
  CHECK(sanitizeCName("E_4_4_cpu") == "E_4_4_cpu");
  // anything else is made an identifier and given a hash of the whole name: distinct names stay distinct
  CHECK(sanitizeCName("../../etc/passwd").rfind("k_______etc_passwd_", 0) == 0);
  CHECK(sanitizeCName("0abc").rfind("k_0abc_", 0) == 0);
  CHECK(sanitizeCName("").rfind("k__", 0) == 0);
  CHECK(sanitizeCName("a.b") != sanitizeCName("a_b"));
  std::string a = std::string(100, 'a'), b = a + "b", c = a + "c";
  CHECK(sanitizeCName(b).size() == 64);
  CHECK(sanitizeCName(b) != sanitizeCName(c)); // (a cut at 64 made these one name, issue 30)
  // never a keyword or a macro of the headers the output includes, nor a reserved name
  for (const char *w : {"int", "class", "new", "delete", "NULL", "SIZE_MAX", "NAN", "INFINITY", "HUGE_VAL", "linux",
                        "unix", "INT64_C", "bool", "true", "__x", "_Bool", "isnan", "M_PI"}) {
    INFO(w);
    CHECK(isReservedCName(w));
    CHECK(sanitizeCName(w) != w);
    CHECK(isCIdentifier(sanitizeCName(w)));
    CHECK(!isReservedCName(sanitizeCName(w)));
    CHECK(!isReservedCName(cIdentifier(w, "p_")));
  }
  CHECK(!isReservedCName("weight"));
  CHECK(!isReservedCName("_x"));
}

TEST_CASE("C comments and strings hold any name", "[ctarget]") {
  CHECK(cComment("a*/b") == "a* /b");
  CHECK(cComment("a/*b") == "a/ *b");
  CHECK(cComment("n*/ evil() /*") == "n* / evil() / *");
  CHECK(cComment("x??/") == "x? ?/");
  CHECK(cComment("l1\nl2\x1b[31m") == "l1 l2\\x1b[31m");
  CHECK(cComment("caf\xc3\xa9") == "caf\\xc3\\xa9");
  CHECK(cStringLiteral("a\"b\\c??=\n") == "\"a\\\"b\\\\c\\077\\077=\\012\"");
  CHECK(isSystemHeaderName("unistd"));
  CHECK(isSystemHeaderName("Math"));
  CHECK(isSystemHeaderName("pthread"));
  CHECK(!isSystemHeaderName("mlp"));
}

TEST_CASE("C kernels compute what the interpreter computes", "[ctarget]") {
  for (std::string compiler : {"cc", "clang"}) {
    SECTION("int32 wraparound, division by zero and shifts with " + compiler) {
      for (Op op : {Op::ADD, Op::MUL, Op::FLOORDIV, Op::FLOORMOD, Op::CDIV, Op::CMOD, Op::SHL, Op::SHR, Op::MAX}) {
        KernelBuilder kb;
        const UOp *out = kb.buf(0, DType::Int32, 8), *a = kb.buf(1, DType::Int32, 8), *b = kb.buf(2, DType::Int32, 8);
        const UOp *r = kb.range(8, 0);
        const UOp *v = kb.c.make(op, DType::Int32, {kb.c.make(Op::INDEX, DType::Int32, {a, r}), kb.c.make(Op::INDEX, DType::Int32, {b, r})});
        std::vector<int32_t> x{INT32_MAX, -7, 7, INT32_MIN, 5, -1, 100, 3}, y{1, 2, -2, -1, 0, 40, 3, -5};
        auto [want, got] = bothWays(kb, kb.call(v, r, {r}, {out, a, b}), {bytesOf(x), bytesOf(y)}, compiler);
        INFO(opName(op));
        CHECK(got == want);
      }
    }
    SECTION("float casts to int (out of range, NaN) and half rounding with " + compiler) {
      for (DType to : {DType::Int8, DType::UInt8, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Float16}) {
        KernelBuilder kb;
        const UOp *out = kb.buf(0, to, 6), *a = kb.buf(1, DType::Float32, 6);
        const UOp *r = kb.range(6, 0);
        const UOp *v = kb.c.make(Op::CAST, to, {kb.c.make(Op::INDEX, DType::Float32, {a, r})}, kb.c.argDType(to));
        std::vector<float> x{1e10f, -3.7f, NAN, 300.5f, -1e30f, 65519.0f};
        auto [want, got] = bothWays(kb, kb.call(v, r, {r}, {out, a}), {bytesOf(x)}, compiler);
        INFO(dtypeName(to));
        CHECK(got == want);
      }
    }
    SECTION("a padded read is a gated load; a sum skips nothing with " + compiler) {
      // out[i] = sum_j where(i+j < 4, a[i+j], 0) over i < 4, j < 3: reads past the end are gated off
      KernelBuilder kb;
      Context &c = kb.c;
      const UOp *out = kb.buf(0, DType::Float32, 4), *a = kb.buf(1, DType::Float32, 4);
      const UOp *i = kb.range(4, 0), *j = kb.range(3, 1);
      const UOp *ij = c.make(Op::ADD, DType::WeakInt, {i, j});
      const UOp *inb = c.make(Op::CMPLT, DType::Bool, {ij, c.constInt(DType::WeakInt, 4)});
      const UOp *ld = c.make(Op::INDEX, DType::Float32, {a, c.make(Op::WHERE, DType::WeakInt, {inb, ij, makeInvalid(c, DType::WeakInt)})});
      const UOp *val = c.make(Op::WHERE, DType::Float32, {inb, ld, c.constFloat(DType::Float32, 0.0)});
      const UOp *red = c.make(Op::REDUCE, DType::Float32, {val, j}, c.argTuple({c.argOp(Op::ADD)}));
      std::vector<float> x{1.5f, 2.25f, -4.0f, 8.0f};
      auto [want, got] = bothWays(kb, kb.call(red, i, {i}, {out, a}), {bytesOf(x)}, compiler);
      CHECK(compareBytes(got, want, DType::Float32, 1e-6, 1e-6) == "");
    }
  }
}

TEST_CASE("commit-weak casts a weak operand to the strong one's dtype; the targets refuse one it did not", "[ctarget]") {
  // out[i] = a[i] + 3000000000 (a weakint: an int32 add wraps at 32 bits whatever the literal's width),
  // out2[i] = b[i] * 0.5 (a weakfloat next to float32)
  KernelBuilder kb;
  Context &c = kb.c;
  const UOp *out = kb.buf(0, DType::Int32, 4), *a = kb.buf(1, DType::Int32, 4);
  const UOp *r = kb.range(4, 0);
  const UOp *v = c.make(Op::ADD, DType::Int32, {c.make(Op::INDEX, DType::Int32, {a, r}), c.constInt(DType::WeakInt, 3000000000LL)});
  const UOp *call = kb.call(v, r, {r}, {out, a});
  const UOp *committed = commitWeakKernel(c, call->src(0));
  REQUIRE(committed != call->src(0));
  const UOp *add = nullptr;
  for (const UOp *u : toposort(committed))
    if (u->op == Op::ADD) add = u;
  REQUIRE(add);
  CHECK(add->src(1)->op == Op::CAST);
  CHECK(add->src(1)->dtype == DType::Int32);
  CHECK(add->src(1)->src(0)->dtype == DType::WeakInt);
  // rendered through lowerKernelForRendering (the rendering tail): C and the interpreter agree
  std::vector<int32_t> x{1, -2, 2147483647, 0};
  auto [want, got] = bothWays(kb, call, {bytesOf(x)}, "cc");
  CHECK(got == want);
  // weakfloat: float64 next to nothing weak
  const UOp *fo = kb.buf(0, DType::Float32, 4), *fb = kb.buf(1, DType::Float32, 4);
  const UOp *m = c.make(Op::MUL, DType::Float32, {c.make(Op::INDEX, DType::Float32, {fb, r}), c.constFloat(DType::WeakFloat, 0.5)});
  const UOp *fcall = kb.call(m, r, {r}, {fo, fb});
  for (const UOp *u : toposort(commitWeakKernel(c, fcall->src(0)))) {
    CHECK(u->dtype != DType::WeakFloat);
    if (u->op == Op::MUL) CHECK(u->src(1)->op == Op::CAST);
  }
  // linearized without commit-weak, the weak operand reaches the target: refused, naming the pass
  Graph &g = kb.g;
  g.root = c.make(Op::SINK, DType::Void, {c.make(Op::AFTER, call->src(1)->dtype, {call->src(1), call})});
  std::ostringstream o, e;
  runPipeline(g, parsePipeline("lower-index,linearize"), PassManagerOptions{}, o, e, PassTarget{});
  const UOp *lin = nullptr;
  for (const UOp *u : toposort(g.root))
    if (u->op == Op::CALL && u->src(0)->op == Op::LINEAR) lin = u;
  REQUIRE(lin);
  CHECK_THROWS_WITH(emitCKernel(c, lin, 0, "k0"), Catch::Contains("commit-weak"));
}

TEST_CASE("emitCKernel refuses copies and names what it cannot render", "[ctarget]") {
  KernelBuilder kb;
  const UOp *dst = kb.buf(0, DType::Float32, 4), *src = kb.buf(1, DType::Float32, 4);
  const UOp *copy = kb.c.make(Op::CALL, DType::Void,
                              {kb.c.make(Op::COPY, DType::Float32, {src}, kb.c.argTuple({kb.c.argString("CPU"), kb.c.argInt(-1)})), dst, src});
  CHECK_THROWS_WITH(emitCKernel(kb.c, copy, 0, "c"), Catch::Contains("copy is not a kernel"));
}

TEST_CASE("every corpus kernel compiles with gcc and clang -std=c11 -Wall -Werror", "[.c-compile]") {
  int emitted = 0, gccOk = 0, clangOk = 0, cases = 0;
  std::vector<std::string> failures;
  for (const fs::path &dir : corpusCases()) {
    ++cases;
    Graph g;
    try {
      g = kernelGraph(dir / "graph.json");
    } catch (const Error &e) {
      failures.push_back(dir.filename().string() + ": pipeline: " + e.what());
      continue;
    }
    int n = 0;
    for (const UOp *call : callOrder(g)) {
      if (call->src(0)->op != Op::LINEAR) continue;
      for (size_t d = 0; d < deviceCount(rawBuffer(call->src(1))); ++d) {
        std::string name = dir.filename().string() + "_k" + std::to_string(n++);
        try {
          EmittedKernel k = emitCKernel(*g.ctx, call, static_cast<int64_t>(d), name);
          ++emitted;
          fs::path src = scratch() / (k.symbol + ".c");
          writeFile(src, k.source());
          for (std::string cc : {"gcc", "clang"}) {
            std::string log;
            int rc = shell(cc + " -std=c11 -Wall -Werror -fsyntax-only " + src.string(), &log);
            if (rc == 0) ++(cc == "gcc" ? gccOk : clangOk);
            else failures.push_back(name + " (" + cc + "): " + log.substr(0, 400));
          }
        } catch (const Error &e) {
          failures.push_back(name + ": emit: " + e.what());
        }
      }
    }
  }
  std::printf("c-kernels-compile: %d cases, %d kernels emitted, %d clean under gcc, %d clean under clang\n", cases,
              emitted, gccOk, clangOk);
  for (const std::string &f : failures) std::printf("  %s\n", f.c_str());
  CHECK(failures.empty());
}

TEST_CASE("corpus cases run as C kernels match tinygrad's results", "[.c-run]") {
  int pass = 0, total = 0, kernels = 0;
  std::vector<std::string> failures;
  for (const fs::path &dir : corpusCases()) {
    ++total;
    std::string why;
    try {
      why = runCaseC(dir, &kernels);
    } catch (const Error &e) {
      why = e.what();
    }
    if (why.empty()) ++pass;
    else failures.push_back(dir.filename().string() + ": " + why.substr(0, 600));
  }
  std::printf("c-kernels-run: %d/%d cases match expected (%d kernel runs)\n", pass, total, kernels);
  for (const std::string &f : failures) std::printf("  FAIL %s\n", f.c_str());
  CHECK(failures.empty());
}
