//===- Verifier.cpp - structural checks of a graph: tinygrad's spec.py as a rule table ---===//
#include "IR/Verifier.h"

#include "IR/Error.h"
#include "IR/Records.h"
#include "IR/Shape.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>

namespace uopc {
namespace {

constexpr uint32_t kAny = UINT32_MAX;

/// What the node's own dtype must be.
enum class Res : uint8_t { Any, Void, Bool, Float, Int, Src0, CastArg, UInt8, UInt64, BindInt };
/// How the sources' dtypes relate to the node's (tinygrad's matches_dtype; weak dtypes match anything).
enum class Srcs : uint8_t { Any, Alu, Cmp, Where, Shift, Bitwise, AllMatch, Src0Matches };
/// What the arg must be.
enum class ArgK : uint8_t {
  Any,
  None,
  Const,
  DType,
  Int,
  String,
  Param,
  Reduce,
  Allreduce,
  Device,
  Tuple,
  Range,
  Wmma,
  Bytes
};

struct OpRule {
  uint32_t minSrc = 0, maxSrc = kAny;
  Res res = Res::Any;
  Srcs srcs = Srcs::Any;
  ArgK arg = ArgK::Any;
};

struct Row {
  Op op;
  OpRule rule;
};
// One row per op with a rule of its own; unary/binary/ternary ALU ops get theirs in ruleOf().
// The ordinary tensor-graph forms come first, then the forms later passes produce (kernels, programs).
// clang-format off
const Row kRows[] = {
    //  op                         min  max   result        sources            arg
    {Op::SINK,                   {0,   kAny, Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::CONST,                  {0,   0,    Res::Any,     Srcs::Any,         ArgK::Const}},
    {Op::STACK,                  {0,   kAny, Res::Any,     Srcs::AllMatch,    ArgK::None}},
    {Op::PARAM,                  {1,   1,    Res::Any,     Srcs::Any,         ArgK::Param}},
    {Op::BUFFER,                 {0,   1,    Res::Any,     Srcs::Any,         ArgK::Param}},
    {Op::CAST,                   {1,   1,    Res::CastArg, Srcs::Any,         ArgK::DType}},
    {Op::BITCAST,                {1,   1,    Res::CastArg, Srcs::Any,         ArgK::DType}},
    {Op::RESHAPE,                {2,   2,    Res::Src0,    Srcs::Src0Matches, ArgK::None}},
    {Op::EXPAND,                 {2,   2,    Res::Src0,    Srcs::Src0Matches, ArgK::None}},
    {Op::PAD,                    {3,   3,    Res::Src0,    Srcs::Src0Matches, ArgK::None}},
    {Op::SHRINK,                 {3,   3,    Res::Src0,    Srcs::Src0Matches, ArgK::None}},
    {Op::PERMUTE,                {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::Tuple}},
    {Op::FLIP,                   {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::Tuple}},
    {Op::REDUCE,                 {1,   kAny, Res::Src0,    Srcs::Src0Matches, ArgK::Reduce}},
    {Op::STORE,                  {2,   3,    Res::Void,    Srcs::Any,         ArgK::None}},
    {Op::AFTER,                  {1,   kAny, Res::Src0,    Srcs::Src0Matches, ArgK::Any}},
    {Op::CONTIGUOUS,             {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::None}},
    {Op::CONTIGUOUS_BACKWARD,    {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::None}},
    {Op::DETACH,                 {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::None}},
    {Op::COPY,                   {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::Device}},
    {Op::MULTI,                  {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::Int}},
    {Op::MSELECT,                {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::Int}},
    {Op::MSTACK,                 {1,   kAny, Res::Src0,    Srcs::AllMatch,    ArgK::None}},
    {Op::ALLREDUCE,              {1,   1,    Res::Src0,    Srcs::Src0Matches, ArgK::Allreduce}},
    {Op::BIND,                   {2,   2,    Res::BindInt, Srcs::AllMatch,    ArgK::None}},
    {Op::STAGE,                  {1,   kAny, Res::Any,     Srcs::Any,         ArgK::Any}},
    {Op::CALL,                   {1,   kAny, Res::Any,     Srcs::Any,         ArgK::Any}},
    {Op::FUNCTION,               {1,   kAny, Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::TUPLE,                  {0,   kAny, Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::GETTUPLE,               {1,   1,    Res::Any,     Srcs::Any,         ArgK::Int}},
    {Op::CUSTOM_FUNCTION,        {0,   kAny, Res::Void,    Srcs::Any,         ArgK::String}},
    {Op::CUSTOM,                 {0,   kAny, Res::Any,     Srcs::Any,         ArgK::String}},
    {Op::CUSTOMI,                {0,   kAny, Res::Any,     Srcs::Any,         ArgK::String}},
    {Op::SPECIAL,                {1,   1,    Res::Int,     Srcs::Src0Matches, ArgK::String}},
    {Op::RANGE,                  {1,   kAny, Res::Any,     Srcs::Any,         ArgK::Range}},
    {Op::INDEX,                  {1,   kAny, Res::Any,     Srcs::Any,         ArgK::Any}},
    {Op::LOAD,                   {1,   kAny, Res::Any,     Srcs::Any,         ArgK::Any}},
    {Op::END,                    {1,   kAny, Res::Any,     Srcs::Any,         ArgK::Any}},
    {Op::GROUP,                  {0,   kAny, Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::BARRIER,                {0,   kAny, Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::IF,                     {1,   kAny, Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::ENDIF,                  {1,   1,    Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::PREFETCH,               {1,   1,    Res::Void,    Srcs::Any,         ArgK::None}},
    {Op::WMMA,                   {3,   3,    Res::Any,     Srcs::Any,         ArgK::Wmma}},
    {Op::LINEAR,                 {0,   kAny, Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::SOURCE,                 {0,   0,    Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::BINARY,                 {0,   0,    Res::UInt8,   Srcs::Any,         ArgK::Bytes}},
    {Op::PROGRAM,                {1,   4,    Res::Void,    Srcs::Any,         ArgK::Any}},
    {Op::GETADDR,                {1,   1,    Res::UInt64,  Srcs::Any,         ArgK::Any}},
    {Op::SLICE,                  {2,   kAny, Res::Any,     Srcs::Any,         ArgK::Int}},
    {Op::REWRITE_ERROR,          {0,   kAny, Res::Void,    Srcs::Any,         ArgK::String}},
};
// clang-format on

OpRule ruleOf(Op op) {
  static const std::array<OpRule, kNumOps> table = [] {
    std::array<OpRule, kNumOps> t{};
    for (unsigned i = 0; i < kNumOps; ++i) {
      Op o = static_cast<Op>(i);
      if (isUnary(o)) t[i] = {1, 1, Res::Any, Srcs::Alu, ArgK::None};
      if (isBinary(o)) t[i] = {2, 2, Res::Any, Srcs::Alu, ArgK::None};
      if (isTernary(o)) t[i] = {3, 3, Res::Any, Srcs::Alu, ArgK::None};
    }
    for (Op o : {Op::EXP2, Op::LOG2, Op::SIN, Op::SQRT, Op::RECIPROCAL}) t[unsigned(o)].res = Res::Float;
    for (Op o : {Op::CMPLT, Op::CMPNE, Op::CMPEQ}) t[unsigned(o)].res = Res::Bool, t[unsigned(o)].srcs = Srcs::Cmp;
    for (Op o : {Op::CDIV, Op::CMOD, Op::FLOORDIV, Op::FLOORMOD}) t[unsigned(o)].res = Res::Int;
    for (Op o : {Op::AND, Op::OR, Op::XOR}) t[unsigned(o)].srcs = Srcs::Bitwise;
    for (Op o : {Op::SHL, Op::SHR}) t[unsigned(o)].srcs = Srcs::Shift;
    t[unsigned(Op::WHERE)].srcs = Srcs::Where;
    for (const Row &r : kRows) t[unsigned(r.op)] = r.rule;
    return t;
  }();
  return table[unsigned(op)];
}

bool isWeak(DType d) { return d == DType::WeakInt || d == DType::WeakFloat; }

/// tinygrad's `x.base.arg is Invalid`: an Invalid CONST, possibly behind movement ops.
bool isInvalidBase(const UOp *x) {
  while ((isMovement(x->op) || x->op == Op::DETACH) && x->nsrc > 0) x = x->src(0);
  return x->op == Op::CONST && x->arg && x->arg->kind == ArgKind::Invalid;
}
bool matches(const UOp *x, DType dt) { return x->dtype == dt || isInvalidBase(x); }

/// A short rendering of an arg for messages.
void renderArg(const Arg *a, std::string &out, int depth) {
  if (out.size() > 80) return;
  if (!a) return void(out += "None");
  switch (a->kind) {
  case ArgKind::Bool: out += a->b() ? "True" : "False"; return;
  case ArgKind::Int: out += std::to_string(a->i()); return;
  case ArgKind::UInt: out += std::to_string(a->u()); return;
  case ArgKind::BigInt: out += a->str(); return;
  case ArgKind::Float: {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, a->f());
    out.append(buf, r.ptr);
    return;
  }
  case ArgKind::String: out += "'" + std::string(a->str().substr(0, 40)) + "'"; return;
  case ArgKind::Invalid: out += "Invalid"; return;
  case ArgKind::OpName: out += "Ops." + std::string(opName(a->op())); return;
  case ArgKind::AxisType: out += "AxisType." + std::string(axisTypeName(a->axisType())); return;
  case ArgKind::AddrSpace: out += "AddrSpace." + std::string(addrSpaceName(a->addrSpace())); return;
  case ArgKind::DType: out += "dtypes." + std::string(dtypeName(a->dtype())); return;
  case ArgKind::UOpRef: out += "UOp"; return;
  case ArgKind::Bytes: out += "bytes"; return;
  case ArgKind::Tuple:
  case ArgKind::Record: break;
  }
  if (depth > 3) return void(out += "...");
  bool rec = a->kind == ArgKind::Record;
  out += rec ? std::string(a->str()) + "(" : "[";
  for (uint32_t i = 0; i < a->count && out.size() <= 80; ++i) {
    if (i) out += ", ";
    if (rec) out += std::string(a->keys()[i]) + "=";
    renderArg(a->elems()[i], out, depth + 1);
  }
  out += out.size() > 80 ? "..." : rec ? ")" : "]";
}
std::string argStr(const Arg *a) {
  std::string s;
  renderArg(a, s, 0);
  return s;
}

std::string devStr(const std::vector<std::string> &d) {
  if (d.size() == 1) return d[0];
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + d[i];
  return s + ")";
}

std::string plural(uint32_t n, const char *word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

/// Does a CONST's value fit its dtype? (tinygrad: type(arg) is type(dtype.const(arg)); plus the range.)
std::string constProblem(const UOp *u) {
  const Arg *a = u->arg;
  std::string dt(dtypeName(u->dtype));
  if (a && a->kind == ArgKind::Invalid) return "";
  if (!a) return "CONST needs a value";
  if (u->dtype == DType::Void) return "CONST cannot have dtype void";
  std::string got = "got " + argStr(a);
  if (isBool(u->dtype)) return a->kind == ArgKind::Bool ? "" : "CONST bool needs true or false, " + got;
  if (isFloat(u->dtype)) return a->kind == ArgKind::Float ? "" : "CONST " + dt + " needs a float value, " + got;
  bool integral = a->kind == ArgKind::Int || a->kind == ArgKind::UInt || a->kind == ArgKind::BigInt;
  if (!integral) return "CONST " + dt + " needs an integer value, " + got;
  if (u->dtype == DType::WeakInt) return "";
  // tinygrad keeps the Python int as is; a renderer wraps it to n bits. Accept what n bits can hold,
  // read as signed or unsigned: [-2^(n-1), 2^n).
  unsigned bits = dtypeSize(u->dtype) * 8;
  bool fits = bits >= 128 || (bits == 64 ? a->kind != ArgKind::BigInt
                                         : a->kind == ArgKind::Int && a->i() >= -(int64_t(1) << (bits - 1)) &&
                                               a->i() < (int64_t(1) << bits));
  return fits ? "" : "CONST value " + argStr(a) + " does not fit " + dt;
}

bool isReduceOpArg(const Arg *a) { return a && a->kind == ArgKind::OpName && isReduceOp(a->op()); }

/// Checks one node against its row and the op-specific rules; returns the problem or "".
class NodeChecker {
public:
  NodeChecker(const Graph &g, ShapeInfo &si) : g_(g), si_(si) {}
  void check(const UOp *u);

private:
  const Graph &g_;
  ShapeInfo &si_;
  const UOp *u_ = nullptr;

  [[noreturn]] void error(const std::string &msg) const { fail(g_.describe(u_) + ": " + msg); }
  std::string dt(DType d) const { return std::string(dtypeName(d)); }
  /// A weak source (a Python literal) takes the dtype it meets, but only of its own kind: weakint among
  /// integers (and bool), weakfloat among floats. weakint + float32 has no one meaning the interpreter,
  /// the simplifier and the targets agree on, so it is refused here.
  static bool weakFits(DType weak, DType other) {
    return weak == DType::WeakInt ? !isFloat(other) : weak == DType::WeakFloat ? isFloat(other) : false;
  }
  void srcDType(const UOp *s, DType want, const char *role = "source") const {
    if (!matches(s, want) && !(isWeak(s->dtype) && weakFits(s->dtype, want)))
      error(std::string(role) + " " + g_.describe(s) + " has dtype " + dt(s->dtype) + ", expected " + dt(want));
  }
  void checkArity(const OpRule &r);
  void checkResult(const OpRule &r);
  void checkSources(const OpRule &r);
  void checkArg(const OpRule &r);
  void checkSpecial();
  void checkDevicesAndShapes();
};

void NodeChecker::check(const UOp *u) {
  u_ = u;
  OpRule r = ruleOf(u->op);
  checkArity(r);
  checkResult(r);
  checkSources(r);
  checkArg(r);
  checkSpecial();
  checkDevicesAndShapes();
}

void NodeChecker::checkArity(const OpRule &r) {
  uint32_t n = u_->nsrc;
  if (n >= r.minSrc && n <= r.maxSrc) return;
  std::string want = r.minSrc == r.maxSrc ? (r.minSrc == 0 ? "no sources" : plural(r.minSrc, "source"))
                     : r.maxSrc == kAny   ? "at least " + plural(r.minSrc, "source")
                                          : std::to_string(r.minSrc) + " to " + std::to_string(r.maxSrc) + " sources";
  error("expected " + want + ", got " + std::to_string(n));
}

void NodeChecker::checkResult(const OpRule &r) {
  DType d = u_->dtype;
  auto want = [&](bool ok, const std::string &what) {
    if (!ok) error("dtype must be " + what + ", got " + dt(d));
  };
  switch (r.res) {
  case Res::Any: break;
  case Res::Void: want(d == DType::Void, "void"); break;
  case Res::Bool: want(d == DType::Bool, "bool"); break;
  case Res::Float: want(isFloat(d), "a float"); break;
  case Res::Int: want(isInt(d), "an integer"); break;
  case Res::UInt8: want(d == DType::UInt8, "uint8"); break;
  case Res::UInt64: want(d == DType::UInt64, "uint64"); break;
  case Res::BindInt: want(d == DType::Int32 || d == DType::WeakInt, "int32 or weakint"); break;
  case Res::CastArg:
    if (u_->arg && u_->arg->kind == ArgKind::DType && u_->arg->dtype() != d)
      error("dtype " + dt(d) + " differs from its arg " + argStr(u_->arg));
    break;
  case Res::Src0:
    if (u_->nsrc && u_->src(0)->dtype != d && !isInvalidBase(u_->src(0)))
      error("dtype " + dt(d) + " differs from its source " + g_.describe(u_->src(0)) + " (" + dt(u_->src(0)->dtype) +
            ")");
    break;
  }
}

void NodeChecker::checkSources(const OpRule &r) {
  auto srcs = u_->src();
  auto noFloat = [&] {
    for (const UOp *s : srcs)
      if (isFloat(s->dtype)) error("source " + g_.describe(s) + " has float dtype " + dt(s->dtype));
  };
  switch (r.srcs) {
  case Srcs::Any:
  case Srcs::Src0Matches: break; // Src0Matches: the node's dtype rule covers it
  case Srcs::Alu:
  case Srcs::AllMatch:
    for (const UOp *s : srcs) srcDType(s, u_->dtype);
    break;
  case Srcs::Bitwise:
    noFloat();
    for (const UOp *s : srcs) srcDType(s, u_->dtype);
    break;
  case Srcs::Shift:
    noFloat();
    srcDType(srcs[0], u_->dtype);
    if (srcs[1]->dtype != DType::UInt32) srcDType(srcs[1], u_->dtype);
    break;
  case Srcs::Cmp: {
    const UOp *x = srcs[0], *y = srcs[1];
    if (!matches(x, y->dtype) && !matches(y, x->dtype) && !(isWeak(x->dtype) && weakFits(x->dtype, y->dtype)) &&
        !(isWeak(y->dtype) && weakFits(y->dtype, x->dtype)))
      error("compares " + dt(x->dtype) + " with " + dt(y->dtype));
    break;
  }
  case Srcs::Where:
    if (srcs[0]->dtype != DType::Bool)
      error("condition " + g_.describe(srcs[0]) + " has dtype " + dt(srcs[0]->dtype) + ", expected bool");
    srcDType(srcs[1], u_->dtype);
    srcDType(srcs[2], u_->dtype);
    break;
  }
}

void NodeChecker::checkArg(const OpRule &r) {
  const Arg *a = u_->arg;
  auto bad = [&](const std::string &what) {
    error(std::string(opName(u_->op)) + " arg must be " + what + ", got " + argStr(a));
  };
  switch (r.arg) {
  case ArgK::Any: break;
  case ArgK::None:
    if (a) bad("none");
    break;
  case ArgK::Const:
    if (std::string p = constProblem(u_); !p.empty()) error(p);
    break;
  case ArgK::DType:
    if (!a || a->kind != ArgKind::DType) bad("a DType");
    break;
  case ArgK::Int:
    if (!a || a->kind != ArgKind::Int) bad("an integer");
    break;
  case ArgK::String:
    if (!a || a->kind != ArgKind::String) bad("a string");
    break;
  case ArgK::Bytes:
    if (!a || a->kind != ArgKind::Bytes) bad("bytes");
    break;
  case ArgK::Tuple:
    if (!a || a->kind != ArgKind::Tuple) bad("a list");
    break;
  case ArgK::Wmma:
    if (!a || a->kind != ArgKind::Tuple || a->count != 5) bad("a list of 5");
    break;
  case ArgK::Reduce:
    if (!a || a->kind != ArgKind::Tuple || a->count != 2 || !isReduceOpArg(a->elems()[0]) || !a->elems()[1] ||
        a->elems()[1]->kind != ArgKind::Int || a->elems()[1]->i() < 0)
      bad("[Ops ADD|MUL|MAX, number of axes]");
    break;
  case ArgK::Allreduce:
    // (a third entry, the order "devices" or "ring": multi-lower's collective kept whole, docs/schedule.md)
    if (!a || a->kind != ArgKind::Tuple || (a->count != 2 && a->count != 3) || !isReduceOpArg(a->elems()[0]) ||
        (a->count == 3 && (a->elems()[2]->kind != ArgKind::String ||
                           (a->elems()[2]->str() != "devices" && a->elems()[2]->str() != "ring"))))
      bad("[Ops ADD|MUL|MAX, device(s)] or [Ops ADD|MUL|MAX, devices, \"devices\"|\"ring\"]");
    break;
  case ArgK::Device: {
    bool ok = a && (a->kind == ArgKind::String || (a->kind == ArgKind::Tuple && a->count > 0));
    for (const Arg *e : ok && a->kind == ArgKind::Tuple ? a->elems() : std::span<const Arg *const>{})
      ok = ok && e && e->kind == ArgKind::String;
    if (!ok) bad("a device or a list of devices");
    break;
  }
  case ArgK::Range: {
    bool ok = a && a->kind == ArgKind::Tuple && a->count >= 2 && a->elems()[a->count - 1] &&
              a->elems()[a->count - 1]->kind == ArgKind::AxisType;
    for (uint32_t i = 0; ok && i + 1 < a->count; ++i) ok = a->elems()[i] && a->elems()[i]->kind == ArgKind::Int;
    if (!ok) bad("[ints..., AxisType]");
    break;
  }
  case ArgK::Param: {
    ParamArg p;
    try {
      p = ParamArg::decode(a);
    } catch (const Error &e) {
      error(e.what());
    }
    if (p.dtype != u_->dtype) error("dtype " + dt(u_->dtype) + " differs from ParamArg.dtype " + dt(p.dtype));
    if (u_->op != Op::PARAM) break;
    const UOp *size = u_->src(0);
    bool scalarShape = size->op == Op::STACK && size->nsrc == 0;
    bool variable = scalarShape && u_->dtype == DType::WeakInt;
    if (p.slot < -1) error("PARAM slot " + std::to_string(p.slot) + " is negative");
    if (variable) {
      if (!p.name) error("scalar variable PARAM needs a name");
      if (!p.vminVmax) error("scalar variable PARAM " + quote(*p.name) + " needs vmin_vmax");
      if (p.vminVmax->first > p.vminVmax->second)
        error("scalar variable PARAM " + quote(*p.name) + " has vmin " + std::to_string(p.vminVmax->first) + " > vmax " +
              std::to_string(p.vminVmax->second));
      // `_device_num` (slot -1) is the device number multi-lower binds per device: a function variable of
      // that name would silently be bound to it too
      if (*p.name == "_device_num" && p.slot != -1)
        error("a function variable (slot " + std::to_string(p.slot) +
              ") may not be named '_device_num': the name is reserved for the device number (slot -1)");
    } else {
      if (p.slot == -1) error("slot -1 is only for scalar variables (weakint, empty shape, name, vmin_vmax)");
      if (isWeak(u_->dtype)) error("a buffer PARAM cannot have weak dtype " + dt(u_->dtype));
    }
    if (p.shape) {
      // (the exporter's shape of the tensor: its elements are the buffer's, one device's)
      if (variable) error("a scalar variable PARAM has no shape");
      int64_t elements = *shapeElements(*p.shape); // (decode refused a negative size and an overflow)
      if (size->op == Op::CONST && size->arg && size->arg->kind == ArgKind::Int && size->arg->i() != elements)
        error("ParamArg.shape " + dimsText(*p.shape) + " holds " + std::to_string(elements) + " elements, the buffer " +
              std::to_string(size->arg->i()));
    }
    break;
  }
  }
}

/// Rules that relate a node to the ops of its sources.
void NodeChecker::checkSpecial() {
  const UOp *u = u_;
  switch (u->op) {
  case Op::STACK:
    if (u->nsrc == 0 && u->dtype != DType::Void) error("an empty STACK must have dtype void, got " + dt(u->dtype));
    break;
  case Op::BIND:
    if (u->src(0)->op != Op::PARAM) error("bound variable " + g_.describe(u->src(0)) + " must be a PARAM");
    if (u->src(1)->op != Op::CONST) error("bound value " + g_.describe(u->src(1)) + " must be a CONST");
    break;
  case Op::FUNCTION:
    if (u->src(0)->op != Op::TUPLE) error("body " + g_.describe(u->src(0)) + " must be a TUPLE");
    break;
  case Op::PREFETCH: // (linearize's item: a hint that a buffer element is read soon)
    if (u->src(0)->op != Op::INDEX || u->src(0)->nsrc != 2 || u->src(0)->src(0)->op != Op::PARAM)
      error("PREFETCH of " + g_.describe(u->src(0)) + ": must be of an ungated INDEX into a buffer PARAM");
    break;
  case Op::CALL: {
    Op b = u->src(0)->op;
    if (u->dtype == DType::Void && b != Op::SINK && b != Op::LINEAR && b != Op::PROGRAM && b != Op::COPY &&
        b != Op::ALLREDUCE && b != Op::CUSTOM_FUNCTION && b != Op::SLICE)
      error("callee " + g_.describe(u->src(0)) + " must be a SINK, LINEAR, PROGRAM, COPY, ALLREDUCE or CUSTOM_FUNCTION");
    if (u->dtype != DType::Void) srcDType(u->src(0), DType::UInt64, "callee");
    break;
  }
  case Op::REDUCE:
  case Op::INDEX:
    for (const UOp *s : u->src().subspan(1))
      if (!isInt(s->dtype) && !isInvalidBase(s))
        error("index " + g_.describe(s) + " has non-integer dtype " + dt(s->dtype));
    break;
  case Op::COPY:
    if (isWeak(u->dtype)) error("cannot COPY a weak dtype " + dt(u->dtype));
    break;
  default: break;
  }
}

void NodeChecker::checkDevicesAndShapes() {
  const UOp *u = u_;
  si_.shape(u); // throws for an undefined shape
  si_.device(u);
  // Sources were checked before this node, so these lookups hit the cache and the references stay valid.
  if (isALU(u->op) || u->op == Op::STORE) {
    const std::vector<std::string> *first = nullptr;
    for (const UOp *s : u->src()) {
      const std::vector<std::string> &d = si_.device(s);
      if (d.empty()) continue;
      if (first && *first != d) error("sources on different devices: " + devStr(*first) + " and " + devStr(d));
      first = &d;
    }
  }
  // Shape operands (sizes of PARAM/BUFFER, movement op STACKs) are scalars: one dimension per entry.
  uint32_t firstOperand = u->op == Op::PARAM || u->op == Op::BUFFER ? 0
                          : u->op == Op::RESHAPE || u->op == Op::EXPAND || u->op == Op::PAD || u->op == Op::SHRINK
                              ? 1
                              : u->nsrc;
  for (uint32_t i = firstOperand; i < u->nsrc; ++i) {
    const UOp *x = u->src(i);
    for (const UOp *e : x->op == Op::STACK ? x->src() : u->src().subspan(i, 1)) {
      const std::optional<Shape> &es = si_.shape(e);
      if (e->op != Op::NOOP && (!es || !es->empty())) error("shape operand " + g_.describe(e) + " is not a scalar");
    }
  }
  switch (u->op) {
  case Op::STORE: {
    const std::optional<Shape> &dst = si_.shape(u->src(0));
    const std::optional<Shape> &val = si_.shape(u->src(1));
    if (dst && val && *dst != *val)
      error("stores a value of shape " + ShapeInfo::str(*val) + " into a destination of shape " + ShapeInfo::str(*dst));
    break;
  }
  case Op::STACK:
    for (const UOp *s : u->src())
      if (si_.shape(s) != si_.shape(u->src(0)))
        error("STACK entries have different shapes: " + g_.describe(u->src(0)) + " and " + g_.describe(s));
    break;
  case Op::MSTACK: {
    bool allSingle = true, allSameNoDevice = true;
    for (const UOp *s : u->src()) {
      allSingle = allSingle && si_.device(s).size() == 1;
      allSameNoDevice = allSameNoDevice && s == u->src(0) && si_.device(s).empty();
    }
    if (!allSingle && !allSameNoDevice) error("every MSTACK source must be on exactly one device");
    for (const UOp *s : u->src())
      if (si_.shape(s) != si_.shape(u->src(0)))
        error("MSTACK sources have different shapes: " + g_.describe(u->src(0)) + " and " + g_.describe(s));
    break;
  }
  case Op::ALLREDUCE:
    if (si_.device(u->src(0)).empty()) error("ALLREDUCE source " + g_.describe(u->src(0)) + " has no device");
    break;
  default: break;
  }
}

/// A buffer's element count for comparing slot bindings: a number, or the shape when symbolic.
std::string numel(ShapeInfo &si, const UOp *param) {
  const std::optional<Shape> &s = si.shape(param);
  if (!s) return "none";
  int64_t n = 1;
  for (const UOp *d : *s) {
    auto c = ShapeInfo::constDim(d);
    if (!c) return ShapeInfo::str(*s);
    n *= *c; // bounded by the shape checks
  }
  return std::to_string(n);
}

/// PARAM slots must bind consistently within one function: the root's, and each CALL/FUNCTION body's.
void checkSlots(const Graph &g, ShapeInfo &si) {
  std::vector<const UOp *> scopes{g.root}, stack;
  NodeMap<uint32_t> seenIn(0); // scope number + 1 that last visited the node
  NodeMap<uint8_t> isScopeRoot(0);
  isScopeRoot[g.root] = 1;
  for (size_t scope = 0; scope < scopes.size(); ++scope) {
    std::map<int64_t, const UOp *> slots;
    std::vector<const UOp *> params;
    const uint32_t mark = uint32_t(scope + 1);
    stack.assign(1, scopes[scope]);
    seenIn[scopes[scope]] = mark;
    while (!stack.empty()) {
      const UOp *u = stack.back();
      stack.pop_back();
      for (uint32_t i = 0; i < u->nsrc; ++i) {
        const UOp *s = u->src(i);
        if (i == 0 && (u->op == Op::CALL || u->op == Op::FUNCTION)) { // a body: its own slot namespace
          if (!isScopeRoot.get(s)) isScopeRoot[s] = 1, scopes.push_back(s);
          continue;
        }
        if (seenIn.get(s) != mark) seenIn[s] = mark, stack.push_back(s);
      }
      if (u->op == Op::PARAM) params.push_back(u);
    }
    // Report a conflict at the later PARAM (creation order = file order for a graph read from a file).
    std::sort(params.begin(), params.end(), [](const UOp *a, const UOp *b) { return a->index < b->index; });
    for (const UOp *u : params) {
      ParamArg p = ParamArg::decode(u->arg); // already checked
      if (p.slot < 0) continue;
      auto [it, fresh] = slots.emplace(p.slot, u);
      if (fresh || it->second == u) continue;
      const UOp *o = it->second;
      std::string what;
      if (o->dtype != u->dtype)
        what = "dtype (" + std::string(dtypeName(o->dtype)) + " vs " + std::string(dtypeName(u->dtype)) + ")";
      else if (numel(si, o) != numel(si, u))
        what = "size (" + numel(si, o) + " vs " + numel(si, u) + ")";
      else if (si.device(o) != si.device(u))
        what = "device (" + devStr(si.device(o)) + " vs " + devStr(si.device(u)) + ")";
      if (!what.empty())
        fail(g.describe(u) + ": PARAM slot " + std::to_string(p.slot) + " is also " + g.describe(o) +
             " with a different " + what);
    }
  }
}

} // namespace

void verifyGraph(const Graph &g) {
  if (!g.root) fail("graph has no root");
  ShapeInfo si(g);
  NodeChecker checker(g, si);
  for (const UOp *u : toposort(g.root)) checker.check(u);
  checkSlots(g, si);
}

} // namespace uopc
