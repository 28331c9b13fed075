//===- CEmitter.cpp - renders one linearized kernel CALL as a C11 translation unit ===//
// One loop over the kernel's LINEAR items (lib/Passes/Linearize.cpp says what each means): RANGE opens a
// `for`, END closes it, REDUCE declares an accumulator and STORE(REDUCE, x) updates it, every other value
// becomes one `const` local where it stands. Nothing is placed, hoisted or proven here: the order, the
// loops and the bounds checks (lower-index made them INDEX gates) are the IR's.
// Every value carries a validity expression beside it ("" when always valid): Invalid constants and
// INDEX gates make it, ALU ops AND it, a load is only performed where it holds, a store only happens
// where it holds (see CTarget.h for the semantics). CUSTOM/CUSTOMI (only with CEmitOptions::allowCustom)
// paste their format string with the sources' C expressions substituted: CUSTOMI inline (parenthesized),
// CUSTOM as a `const` local, a void CUSTOM as a statement of its own.
// ALU ops are spelled from Targets/OpSpelling.def's C columns (alu()). Code here spells what is not one
// text per op: WHERE (it selects a validity too), CAST and BITCAST (by the pair of dtypes), loads and stores,
// and the accumulators' updates (the reduce op in the accumulator's type: not rounded to float16 each step,
// bool's ADD/MUL are | and &).
#include "Targets/CTarget.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "IR/ScalarOps.h"
#include "Targets/C/LoopShapes.h"
#include "Targets/C/Prelude.h"
#include "Targets/KernelABI.h"
#include "Targets/OpSpelling.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

using ctarget::Helper;
using ctarget::chunkedLaneLoops;
using ctarget::gatherLaneLoops;
using ctarget::tileOuterLoops;
using ctarget::tileWindowLoops;
using ctarget::windowLoops;
using interp::Word;

[[noreturn]] void failAt(const UOp *u, const std::string &msg) {
  std::string what(opName(u->op));
  if ((u->op == Op::CUSTOM || u->op == Op::CUSTOMI) && u->arg && u->arg->kind == ArgKind::String) {
    std::string_view f = u->arg->str(); // the format string says which CUSTOM it is (node numbers change)
    std::string q;
    for (char ch : f.substr(0, 60)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(ch));
      q += ch == '"' || ch == '\\' ? std::string("\\") + ch
           : ch == '\n'               ? std::string("\\n")
           : static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? std::string(buf)
                                                                  : std::string(1, ch);
    }
    what += " \"" + q + (f.size() > 60 ? "...\"" : "\"");
  }
  fail("C target: UOp #" + std::to_string(u->index) + " (" + what + "): " + msg);
}

/// e in parentheses, unless one pair already encloses all of it (not judged through C literals).
std::string parenthesize(const std::string &e) {
  if (e.size() >= 2 && e.front() == '(' && e.back() == ')' && e.find_first_of("'\"") == std::string::npos) {
    int depth = 0;
    size_t i = 0;
    for (; i < e.size(); ++i) {
      depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
      if (depth == 0) break;
    }
    if (i == e.size() - 1) return e;
  }
  return "(" + e + ")";
}

/// The C text of a CUSTOM/CUSTOMI node: its string arg read as a Python format string ("{0} + {1}",
/// "{}" numbering automatically, "{{"/"}}" for literal braces) with args[i] for field i. Conversions,
/// format specs and named fields are refused, as are fields past the sources and unmatched braces.
std::string formatCustom(const UOp *u, const std::vector<std::string> &args) {
  if (!u->arg || u->arg->kind != ArgKind::String) failAt(u, "the arg of a CUSTOM op must be a string (a C format string)");
  std::string_view f = u->arg->str();
  std::string out;
  int mode = 0; // 0: no field yet, 1: automatic numbering ("{}"), 2: explicit ("{0}")
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char ch = f[i];
    if (ch == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out += '}', ++i;
        continue;
      }
      failAt(u, "format string: single '}' at offset " + std::to_string(i) + " (write '}}' for a literal brace)");
    }
    if (ch != '{') {
      out += ch;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{', ++i;
      continue;
    }
    size_t close = f.find('}', i + 1);
    if (close == std::string_view::npos)
      failAt(u, "format string: unmatched '{' at offset " + std::to_string(i) + " (write '{{' for a literal brace)");
    std::string_view field = f.substr(i + 1, close - i - 1);
    size_t k;
    if (field.empty()) {
      if (mode == 2) failAt(u, "format string: cannot switch from explicit field numbering to automatic ('{}')");
      mode = 1, k = next++;
    } else {
      if (!std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; }))
        failAt(u, "format string: unsupported replacement field '{" + std::string(field) +
                      "}' (only '{N}' and '{}' are supported)");
      if (mode == 1) failAt(u, "format string: cannot switch from automatic field numbering ('{}') to explicit");
      mode = 2, k = field.size() > 9 ? SIZE_MAX : std::stoul(std::string(field));
    }
    if (k >= args.size())
      failAt(u, "format string: replacement field " +
                    (field.empty() ? "{} (source " + std::to_string(k) + ")" : "{" + std::string(field) + "}") +
                    " is out of range: the node has " + std::to_string(args.size()) + " source" +
                    (args.size() == 1 ? "" : "s"));
    out += args[k];
    i = close;
  }
  return out;
}

} // namespace

std::string cStorageType(DType dt) {
  switch (dt) {
  case DType::Bool: return "bool";
  case DType::Int8: return "int8_t";
  case DType::UInt8: return "uint8_t";
  case DType::Int16: return "int16_t";
  case DType::UInt16: case DType::Float16: case DType::BFloat16: return "uint16_t";
  case DType::Int32: return "int32_t";
  case DType::UInt32: return "uint32_t";
  case DType::Int64: case DType::WeakInt: return "int64_t";
  case DType::UInt64: return "uint64_t";
  case DType::Float32: return "float";
  case DType::Float64: case DType::WeakFloat: return "double";
  default: fail("C target: dtype " + std::string(dtypeName(dt)) + " is not supported");
  }
}

namespace {

std::string storageType(DType dt) { return cStorageType(dt); }

/// The C type values of dt are computed in.
std::string computeType(DType dt) {
  return dt == DType::Float16 || dt == DType::BFloat16 ? "float" : storageType(dt);
}
bool isF(DType dt) { return isFloat(dt); }
bool isSingle(DType dt) { return dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16; }

/// A value as C sees it: an expression of the compute type and its validity ("" = always valid).
struct Val {
  std::string v, ok;
};

std::string andOk(const std::string &a, const std::string &b) {
  if (a.empty() || a == b) return b;
  if (b.empty()) return a;
  if (a == "0" || b == "0") return "0";
  return "(" + a + " && " + b + ")";
}

/// What a C spelling needs besides its text (OpSpelling.def).
enum class Uses { Plain, Math, Libm, Wraps, Helper };
/// One cell of OpSpelling.def's C columns.
struct CSpell {
  Uses uses = Uses::Plain;
  Helper helper{};                  ///< Uses::Helper: the prelude helper the text calls
  const char *text = nullptr;       ///< nullptr: the op is not defined on these operands
  const char *byConstant = nullptr; ///< the text where the divisor is a positive constant
  bool same = false;                ///< as the signed column
};
#define UOPC_NONE CSpell{}
#define UOPC_SAME CSpell{Uses::Plain, Helper{}, nullptr, nullptr, true}
#define UOPC_C(uses, text) CSpell{Uses::uses, Helper{}, text}
#define UOPC_HELPER(helper, ...) CSpell{Uses::Helper, Helper::helper, __VA_ARGS__}
#define UOPC_ALU(Op_, CF, CS, CU, LF, LS, LU) OpSpelling<CSpell>{Op::Op_, CF, CS, CU},
constexpr OpSpelling<CSpell> kSpellings[] = {
#include "Targets/OpSpelling.def"
};

/// A spelling's text with its fields filled in: {0} {1} {2} the operands, {T} the type, {f} "f" in single
/// precision (OpSpelling.def).
std::string spell(std::string_view text, const std::vector<std::string> &a, const std::string &T, bool single) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    char k = text[i + 1];
    if (k == 'T') out += T;
    else if (k == 'f') out += single ? "f" : "";
    else out += a.at(static_cast<size_t>(k - '0'));
    i += 2;
  }
  return out;
}

struct Emitter {
  Context &ctx;
  int64_t deviceNum;
  std::set<Helper> helpers;
  bool needMath = false;
  std::vector<std::string> lines; ///< the function body, one statement a line (indentation included)
  int depth = 1;
  std::unordered_map<const UOp *, Val> memo; ///< each value's latest definition
  std::vector<size_t> openLoops;             ///< the line of each open `for`
  struct Acc {
    std::string name;
    size_t okLine; ///< "bool acc_ok = 1;" goes here once the reduced value turns out to be gated
    std::vector<const UOp *> lanes; ///< an array accumulator's lanes (IR/Kernel.h), empty for a scalar
    int64_t count = 1;              ///< its slots
    bool poisoned = false;
  };
  std::unordered_map<const UOp *, Acc> accs;
  std::map<std::string, int> counters;
  KernelABI abi; ///< the function's arguments

  bool allowCustom = false;
  bool customStatements = false; ///< a void CUSTOM was rendered (a kernel may then store nothing)

  Emitter(Context &c, int64_t dev) : ctx(c), deviceNum(dev) {}
  void line(const std::string &text) { lines.push_back(std::string(static_cast<size_t>(depth) * 2, ' ') + text); }

  std::string fresh(const std::string &prefix) { return prefix + std::to_string(counters[prefix]++); }
  void use(Helper h) { helpers.insert(h), needMath = true; }

  // ---- analysis -----------------------------------------------------------------------------------
  void analyze(const UOp *body) {
    for (const UOp *u : toposort(body)) {
      if (u->op == Op::SPECIAL) failAt(u, "a GPU thread coordinate: the C target renders loops (linearize without grid)");
      if (u->op == Op::CUSTOM || u->op == Op::CUSTOMI) {
        if (!allowCustom)
          failAt(u, "refusing to render a CUSTOM op: its arg is C code pasted into the kernel (pass --allow-custom "
                    "to allow it)");
        formatCustom(u, std::vector<std::string>(u->nsrc, "")); // format errors before any C is written
        if (u->op == Op::CUSTOMI && u->dtype == DType::Void) failAt(u, "a CUSTOMI (inline expression) of dtype void");
      }
    }
  }
  /// A CUSTOM/CUSTOMI that is a value (elementwise over its sources); a void CUSTOM is a statement.
  static bool isCustomValue(const UOp *u) {
    return (u->op == Op::CUSTOM || u->op == Op::CUSTOMI) && u->dtype != DType::Void;
  }

  // ---- literals -----------------------------------------------------------------------------------
  std::string literal(DType dt, Word w) {
    if (isF(dt)) {
      double d = interp::asDouble(w);
      if (std::isnan(d)) return needMath = true, "NAN";
      if (std::isinf(d)) return needMath = true, d > 0 ? "INFINITY" : "(-INFINITY)";
      char buf[64];
      if (d == std::trunc(d) && std::fabs(d) < 1e15) std::snprintf(buf, sizeof buf, "%.1f%s", d, isSingle(dt) ? "f" : "");
      else std::snprintf(buf, sizeof buf, "%a%s", d, isSingle(dt) ? "f" : "");
      return d < 0 || std::signbit(d) ? "(" + std::string(buf) + ")" : buf;
    }
    if (dt == DType::Bool) return w ? "1" : "0";
    if (isUnsigned(dt)) return dtypeSize(dt) >= 8 ? "UINT64_C(" + std::to_string(w) + ")" : std::to_string(w) + "u";
    int64_t v = interp::asInt(w);
    if (v == INT64_MIN) return "INT64_MIN";
    std::string s = (v >= INT32_MIN && v <= INT32_MAX) ? std::to_string(v) : "INT64_C(" + std::to_string(v) + ")";
    return v < 0 ? "(" + s + ")" : s;
  }

  Val constant(const UOp *u) {
    const Arg *a = u->arg;
    DType dt = u->dtype;
    switch (a ? a->kind : ArgKind::Invalid) {
    case ArgKind::Invalid: return {literal(dt, isF(dt) ? interp::fromDouble(0) : 0), "0"};
    case ArgKind::Bool: return {literal(dt, interp::intToWord(dt, a->b())), ""};
    case ArgKind::Int: return {literal(dt, interp::intToWord(dt, a->i())), ""};
    case ArgKind::UInt: return {literal(dt, interp::uintToWord(dt, a->u())), ""};
    case ArgKind::Float: return {literal(dt, interp::floatToWord(dt, a->f())), ""};
    default: failAt(u, "unsupported constant");
    }
  }

  /// Declares `const T name = expr;` (and its validity) in block t.
  ///
  /// Past kSpillAfter declarations, every kSpillEvery-th value goes through a volatile local: GCC's
  /// optimizers are superlinear in (and overflow their stack on) one function's unbroken def-use chains,
  /// so a 100,000-op elementwise chain did not compile at all; a volatile cuts the chain every
  /// kSpillEvery values (a store and a load each, nothing in kernels below kSpillAfter values).
  static constexpr size_t kSpillAfter = 4000, kSpillEvery = 500;
  size_t declared = 0;
  Val declare(DType dt, const std::string &prefix, const std::string &expr, const std::string &ok) {
    std::string name = fresh(prefix);
    if (++declared > kSpillAfter && declared % kSpillEvery == 0) {
      line("volatile " + computeType(dt) + " " + name + "_v = " + expr + ";");
      line("const " + computeType(dt) + " " + name + " = " + name + "_v;");
    } else {
      line("const " + computeType(dt) + " " + name + " = " + expr + ";");
    }
    std::string okName = ok;
    if (!ok.empty() && ok != "0" && ok != "1" && ok.find_first_of("( &|<>=!") != std::string::npos) {
      okName = name + "_ok";
      line("const bool " + okName + " = " + ok + ";");
    }
    return {name, okName};
  }

  // ---- values -----------------------------------------------------------------------------------
  /// u's C expression: a constant or a variable where used, anything else its latest definition.
  Val val(const UOp *u) {
    if (u->op == Op::CONST) return constant(u);
    if (u->op == Op::PARAM) return param(u);
    if (u->op == Op::REDUCE)
      if (auto a = accs.find(u); a != accs.end() && !a->second.lanes.empty()) { // the current lanes' slot
        std::string slot = laneSlot(a->second);
        return {roundTo(u->dtype, a->second.name + slot), a->second.poisoned ? a->second.name + "_ok" + slot : ""};
      }
    auto it = memo.find(u);
    if (it == memo.end()) failAt(u, "used before the item that computes it (the LINEAR order is broken)");
    return it->second;
  }
  /// The validity of an access by INDEX u (index value i): the index's and every gate's.
  std::string access(const UOp *u, const Val &i) {
    std::string ok = i.ok;
    for (const UOp *g : u->src().subspan(2)) ok = andOk(ok, val(g).v);
    return ok;
  }
  std::string bufName(int64_t slot) { return abi.buffers.at(static_cast<size_t>(slot)).name; }

  Val load(const UOp *u) {
    const UOp *p = u->src(0);
    if (p->op != Op::PARAM || isScalarParamNode(p)) failAt(u, "INDEX of something other than a buffer PARAM");
    int64_t slot = ParamArg::slotOf(p->arg);
    Val i = val(u->src(1));
    std::string ok = access(u, i);
    std::string elem = bufName(slot) + "[" + i.v + "]";
    if (u->dtype == DType::Float16) use(Helper::F16Value), elem = "uopc_f16_value(" + elem + ")";
    if (u->dtype == DType::BFloat16) use(Helper::BF16Value), elem = "uopc_bf16_value(" + elem + ")";
    if (ok == "0") return {literal(u->dtype, isF(u->dtype) ? interp::fromDouble(0) : 0), "0"};
    if (ok.empty()) return declare(u->dtype, "val", elem, "");
    Val okv = declare(DType::Bool, "gate", ok, "");
    std::string zero = literal(u->dtype, isF(u->dtype) ? interp::fromDouble(0) : 0);
    return declare(u->dtype, "val", okv.v + " ? " + elem + " : " + zero, okv.v);
  }

  std::string roundTo(DType dt, const std::string &e) {
    if (dt == DType::Float16) return use(Helper::RoundF16), "uopc_round_f16(" + e + ")";
    if (dt == DType::BFloat16) return use(Helper::RoundBF16), "uopc_round_bf16(" + e + ")";
    return e;
  }
  std::string bitsOf(DType dt, const std::string &a) {
    switch (dt) {
    case DType::Float32: use(Helper::Bits); return "(uint64_t)uopc_bits32(" + a + ")";
    case DType::Float64: case DType::WeakFloat: use(Helper::Bits); return "uopc_bits64(" + a + ")";
    case DType::Float16: use(Helper::F16Bits); return "(uint64_t)uopc_f16_bits(" + a + ")";
    case DType::BFloat16: use(Helper::BF16Bits); return "(uint64_t)uopc_bf16_bits(" + a + ")";
    default: return "(uint64_t)" + a;
    }
  }
  std::string fromBits(DType dt, const std::string &b) {
    switch (dt) {
    case DType::Float32: use(Helper::Bits); return "uopc_from_bits32((uint32_t)(" + b + "))";
    case DType::Float64: case DType::WeakFloat: use(Helper::Bits); return "uopc_from_bits64(" + b + ")";
    case DType::Float16: use(Helper::F16Value); return "uopc_f16_value((uint16_t)(" + b + "))";
    case DType::BFloat16: use(Helper::BF16Value); return "uopc_bf16_value((uint16_t)(" + b + "))";
    case DType::Bool: return "(bool)(uint8_t)(" + b + ")";
    default: return "(" + storageType(dt) + ")(" + b + ")";
    }
  }

  std::string cast(DType from, DType to, const std::string &a) {
    std::string T = computeType(to);
    if (to == DType::Bool) return "(" + a + " != 0)";
    if (isF(from) && !isF(to)) {
      switch (to) {
      case DType::UInt64: use(Helper::CvtU64); return "uopc_cvt_u64((double)" + a + ")";
      case DType::Int64: case DType::UInt32: case DType::WeakInt:
        use(Helper::CvtI64);
        return "(" + T + ")uopc_cvt_i64((double)" + a + ")";
      default: use(Helper::CvtI32); return "(" + T + ")uopc_cvt_i32((double)" + a + ")";
      }
    }
    if (to == DType::Float16) return roundTo(to, "(double)" + a);
    if (to == DType::BFloat16) return roundTo(to, isF(from) ? "(float)" + a : "(float)(double)" + a);
    return "(" + T + ")" + a;
  }

  /// The C expression of ALU op u on operands a (OpSpelling.def), "" where the op is not defined on them.
  std::string alu(const UOp *u, DType out, DType in, std::vector<std::string> a) {
    const OpSpelling<CSpell> *row = findSpelling(kSpellings, u->op);
    if (!row) return "";
    std::string T = isF(in) ? computeType(in) : storageType(out);
    const CSpell *c = &row->on(isF(in), isUnsigned(in));
    if (c->uses == Uses::Wraps && (out == DType::WeakInt || in == DType::WeakInt)) c = &row->f; // C's int64 arithmetic
    if (!c->text) return "";
    if (auto d = c->byConstant ? constBound(u->src(1)) : std::nullopt; d && *d > 0) return spell(c->byConstant, a, T, false);
    // uopc_ipow's exponent is an int64: a uint64 one is clamped
    if (u->op == Op::POW && in == DType::UInt64) a[1] = "(" + a[1] + " > INT64_MAX ? INT64_MAX : " + a[1] + ")";
    uses(*c, isSingle(in));
    return roundTo(out, spell(c->text, a, T, isSingle(in)));
  }
  void uses(const CSpell &c, bool single) {
    if (c.uses == Uses::Math || c.uses == Uses::Libm) needMath = true;
    if (c.uses == Uses::Libm && single) use(Helper::SimdMath);
    if (c.uses == Uses::Helper) use(c.helper);
  }

  Val param(const UOp *u) {
    ParamArg pa = ParamArg::decode(u->arg);
    if (!isScalarParamNode(u)) failAt(u, "a buffer PARAM must be read through INDEX");
    if (*pa.name == "_device_num") return {literal(u->dtype, interp::intToWord(u->dtype, deviceNum)), ""};
    std::string a = abi.varArg.at(*pa.name);
    return {u->dtype == DType::Int64 || u->dtype == DType::WeakInt ? a : "((" + storageType(u->dtype) + ")" + a + ")", ""};
  }

  /// A value item: u computed from the values of its sources.
  Val node(const UOp *u) {
    switch (u->op) {
    case Op::INDEX: return load(u);
    case Op::LOAD: {
      Val v = val(u->src(0));
      if (u->nsrc > 1 && !v.ok.empty()) {
        Val alt = val(u->src(1));
        // valid where the read is, else as valid as the alternative
        std::string ok = alt.ok.empty() ? "" : alt.ok == "0" ? v.ok : "(" + v.ok + " || " + alt.ok + ")";
        return declare(u->dtype, "val", v.ok + " ? " + v.v + " : " + alt.v, ok);
      }
      return v;
    }
    case Op::CUSTOM: case Op::CUSTOMI: return custom(u);
    default: break;
    }
    if (!isElementwise(u->op)) failAt(u, "the C target cannot render this op");
    std::vector<Val> s;
    for (const UOp *x : u->src()) s.push_back(val(x));
    std::vector<std::string> a;
    for (const Val &v : s) a.push_back(v.v);
    if (u->op == Op::WHERE) {
      std::string ok = s[0].ok;
      if (!s[1].ok.empty() || !s[2].ok.empty()) {
        std::string t1 = s[1].ok.empty() ? "1" : s[1].ok, t2 = s[2].ok.empty() ? "1" : s[2].ok;
        ok = andOk(ok, "(" + a[0] + " ? " + t1 + " : " + t2 + ")");
      }
      return declare(u->dtype, "alu", a[0] + " ? " + a[1] + " : " + a[2], ok);
    }
    std::string ok;
    for (const Val &v : s) ok = andOk(ok, v.ok);
    DType in = u->src(0)->dtype;
    std::string e;
    if (u->op == Op::CAST) e = cast(in, u->dtype, a[0]);
    else if (u->op == Op::BITCAST) {
      if (dtypeSize(in) != dtypeSize(u->dtype)) failAt(u, "BITCAST between dtypes of different sizes");
      e = fromBits(u->dtype, bitsOf(in, a[0]));
    } else e = alu(u, u->dtype, in, a);
    if (e.empty()) failAt(u, "op not defined on " + std::string(dtypeName(in)));
    return declare(u->dtype, u->op == Op::CAST ? "cast" : "alu", e, ok);
  }

  /// CUSTOMI: the formatted text inline, parenthesized; CUSTOM: a `const` local of the node's dtype. Both
  /// are elementwise: the sources are values (an INDEX source is the element it loads) and the result is
  /// Invalid where any source is. float16/bfloat16 results are rounded like every other op's.
  Val custom(const UOp *u) {
    if (u->dtype == DType::Void) failAt(u, "a void CUSTOM is a statement: it must be a source of the kernel SINK "
                                           "(or of an END there), not a value");
    std::vector<std::string> a;
    std::string ok;
    for (const UOp *x : u->src()) {
      Val v = val(x);
      a.push_back(v.v);
      ok = andOk(ok, v.ok);
    }
    std::string e = roundTo(u->dtype, parenthesize(formatCustom(u, a)));
    if (u->op == Op::CUSTOMI) return {e, ok};
    return declare(u->dtype, "custom", e, ok);
  }
  /// A void CUSTOM item: its formatted text as a statement, only where every source is valid.
  void customStatement(const UOp *c) {
    std::vector<std::string> a;
    std::string ok;
    for (const UOp *x : c->src()) {
      Val v = val(x);
      a.push_back(v.v);
      ok = andOk(ok, v.ok);
    }
    customStatements = true;
    std::string text = formatCustom(c, a);
    if (ok == "0") {
      line("/* every lane is Invalid: CUSTOM statement not run */");
    } else if (ok.empty()) {
      line(text);
    } else { // the statement in a block of its own: its text may end in a // comment
      line("if (" + ok + ") {");
      ++depth;
      line(text);
      --depth;
      line("}");
    }
  }

  /// "[i]": the slot of an array accumulator for its lanes' current loop counters (lane k of
  /// lanes r0, r1 of sizes n0, n1: r0 * n1 + r1).
  std::string laneSlot(const Acc &a) {
    std::string e;
    int64_t stride = a.count;
    for (const UOp *r : a.lanes) {
      stride /= static_cast<int64_t>(*constBound(r->src(0)));
      std::string term = stride == 1 ? val(r).v : val(r).v + " * " + std::to_string(stride);
      e += e.empty() ? term : " + " + term;
    }
    return "[" + e + "]";
  }
  /// REDUCE u: its accumulator, at its identity (an array of them for an accumulator with lanes).
  void accumulator(const UOp *u) {
    Op op = u->arg->elems()[0]->op();
    DType dt = u->dtype;
    if (op != Op::ADD && op != Op::MUL && op != Op::MAX) failAt(u, "unsupported reduce op");
    std::string acc = fresh("acc");
    Acc a{acc, 0, accumulatorLanes(u), 1};
    a.count = laneCount(a.lanes);
    std::string init = literal(dt, interp::reduceIdentity(op, dt));
    if (a.lanes.empty()) line(computeType(dt) + " " + acc + " = " + init + ";");
    else
      // (_Alignas: GCC 12 at -O2 vectorizes the lane loops with aligned moves on an array it leaves at the
      // element's alignment, a crash; aligned to the widest vector, every compiler's choice is right)
      line("_Alignas(64) " + computeType(dt) + " " + acc + "[" + std::to_string(a.count) + "]; for (int64_t uopc_s = 0; uopc_s < " +
           std::to_string(a.count) + "; uopc_s++) " + acc + "[uopc_s] = " + init + ";");
    a.okLine = lines.size();
    lines.emplace_back(); // the validity flag's line, filled in if the reduced value is gated
    if (a.lanes.empty()) memo[u] = {roundTo(dt, acc), ""};
    accs[u] = std::move(a);
  }
  /// STORE(REDUCE u, x): acc = acc <op> x.
  void accumulate(const UOp *u, const UOp *xu) {
    auto it = accs.find(u);
    if (it == accs.end()) failAt(u, "an accumulation before its REDUCE item");
    Acc &a = it->second;
    const std::string slot = a.lanes.empty() ? "" : laneSlot(a);
    const std::string acc = a.name + slot, ok = a.name + "_ok" + slot;
    Op op = u->arg->elems()[0]->op();
    DType dt = u->dtype;
    std::string T = computeType(dt);
    Val x = val(xu);
    std::string step;
    if (isF(dt))
      step = op == Op::ADD ? acc + " + " + x.v : op == Op::MUL ? acc + " * " + x.v
                                                               : "(" + acc + " < " + x.v + " ? " + x.v + " : " + acc + ")";
    else if (op == Op::MAX) step = "(" + acc + " < " + x.v + " ? " + x.v + " : " + acc + ")";
    else if (dt == DType::Bool) step = op == Op::ADD ? "(" + acc + " | " + x.v + ")" : "(" + acc + " & " + x.v + ")";
    else step = "(" + T + ")((uint64_t)" + acc + (op == Op::ADD ? " + " : " * ") + "(uint64_t)" + x.v + ")";
    bool poison = !x.ok.empty();
    if (poison) {
      std::string &okLine = lines[a.okLine];
      std::string indent(lines[a.okLine - 1].find_first_not_of(' '), ' ');
      std::string okName = a.name + "_ok", n = std::to_string(a.count);
      if (okLine.empty())
        okLine = indent + (a.lanes.empty() ? "bool " + okName + " = 1;"
                                           : "_Alignas(64) bool " + okName + "[" + n + "]; for (int64_t uopc_s = 0; uopc_s < " + n + "; uopc_s++) " + okName + "[uopc_s] = 1;");
      line(ok + " = " + ok + " && " + x.ok + ";");
      line(acc + " = " + x.ok + " ? " + step + " : " + acc + ";");
      a.poisoned = true;
      if (a.lanes.empty()) memo[u].ok = ok;
    } else {
      line(acc + " = " + step + ";");
    }
  }

  /// STORE(INDEX(buf, i, gates...), v): the write, where it is valid.
  void store(const UOp *st) {
    const UOp *ix = st->src(0), *p = ix->src(0);
    if (ix->op != Op::INDEX || p->op != Op::PARAM) failAt(st, "expected STORE(INDEX(PARAM, i), value)");
    Val i = val(ix->src(1));
    Val v = val(st->src(1));
    std::string ok = andOk(access(ix, i), v.ok);
    if (st->src(1)->dtype != ix->dtype) failAt(st, "stored value's dtype differs from the buffer's");
    std::string value = v.v;
    if (ix->dtype == DType::Float16) use(Helper::F16Bits), value = "uopc_f16_bits(" + value + ")";
    if (ix->dtype == DType::BFloat16) use(Helper::BF16Bits), value = "uopc_bf16_bits(" + value + ")";
    std::string text = bufName(ParamArg::slotOf(p->arg)) + "[" + i.v + "] = " + value + ";";
    if (ok == "0") text = "/* every lane is Invalid: nothing stored */";
    else if (!ok.empty()) text = "if (" + ok + ") " + text;
    line(text);
  }

  /// The loop over the items.
  // ---- the items (renderItems calls these) ----------------------------------------------------------
  void loopBegin(const UOp *u) {
    Val n = val(u->src(0));
    std::string name = "r" + std::to_string(u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count
                                                ? u->arg->elems()[0]->i()
                                                : static_cast<int64_t>(u->index));
    if (loopNames.count(name)) name = fresh(name + "_"); // a RANGE open around itself (same number)
    openLoops.push_back(lines.size());
    // a THREAD loop runs the iterations [uopc_lo, uopc_hi) this call was given (KernelABI.h)
    std::string from = isThreadRange(u) ? "uopc_lo" : "0", to = isThreadRange(u) ? "uopc_hi" : n.v;
    if (isThreadRange(u) && u->arg->count >= 3) { // one piece's loop: its share of [uopc_lo, uopc_hi)
      std::string off = std::to_string(threadOffset(u));
      from = "(uopc_lo > " + off + " ? uopc_lo - " + off + " : 0)";
      to = "(uopc_hi - " + off + " < " + n.v + " ? uopc_hi - " + off + " : " + n.v + ")";
    }
    std::string hint; // how the loop's axis type is spelled: lanes, or an unrolled reduction loop
    bool simdLanes = loopCount < laneLoops.size() && laneLoops[loopCount];
    if (simdLanes) use(Helper::SimdLanes), hint = "UOPC_SIMD_LANES ";
    if (unrolls(loopCount, u)) use(Helper::Unroll), hint = "UOPC_UNROLL(" + n.v + ") ";
    // a tile's lanes that only add a padded read's products (paddedLaneGates, KernelABI.h): run where the read is
    // in bounds. ResNet-50's 3x3 convolution 512 -> 512 at 7x7, rows of 7 tiled whole with their borders gated
    // (ChannelTile.cpp), 2 of each row's 21 window columns and 2 of 21 rows padding (18% of its multiply-adds):
    // one thread, a harness, alternating, 1502 -> 1209 us. With a condition that mixes the copies' and the rows'
    // (ResNet-50's 3x3 at 56x56, 14-pixel tiles at a runtime offset), a branch per pixel split the tile into
    // blocks, each loading its weights again: 1471 -> 1776 us; with the rows' condition alone, 1471 -> 1829
    std::string gate;
    if (loopCount < paddedLaneGates.size() && paddedLaneGates[loopCount]) {
      const UOp *ix = paddedLaneGates[loopCount];
      gate = "if (" + access(ix, val(ix->src(1))) + ") ";
    }
    const size_t k = loopCount++;
    const std::string type = computeType(u->dtype);
    if (simdLanes && !unrolls(k, u) && k < chunkedLaneLoops.size() && chunkedLaneLoops[k] && from == "0") {
      // a register tile's accumulating lanes, in pieces of one or two vector registers (chunkedLaneLoops)
      use(Helper::LaneChunk);
      std::string piece = fresh(name + "c"), lane = fresh(name + "l");
      std::string chunk = "UOPC_LANE_CHUNK(" + n.v + ", " + std::to_string(chunkedLaneLoops[k]) + ")";
      line(gate + "UOPC_UNROLL(" + n.v + ") for (" + type + " " + piece + " = 0; " + piece + " < " + n.v + "; " + piece +
           " += " + chunk + ") UOPC_SIMD_LANES for (" + type + " " + lane + " = 0; " + lane + " < " + chunk + "; " + lane + "++) {");
      ++depth;
      line("const " + type + " " + name + " = " + piece + " + " + lane + ";");
    } else {
      line(gate + hint + "for (" + type + " " + name + " = " + from + "; " + name + " < " + to + "; " + name + "++) {");
      ++depth;
    }
    loopNames.insert(name);
    openNames.push_back(name);
    memo[u] = {name, ""};
  }
  void loopEnd(const UOp *u) {
    if (openLoops.empty()) failAt(u, "END without an open loop");
    openLoops.pop_back();
    loopNames.erase(openNames.back());
    openNames.pop_back();
    --depth;
    line("}");
  }
  void ifBegin(const UOp *u) {
    line("if (" + val(u->src(0)).v + ") {");
    ++depth;
  }
  void ifEnd(const UOp *) {
    --depth;
    line("}");
  }
  void statement(const UOp *u) { customStatement(u); }
  void barrier(const UOp *u) { failAt(u, "a GPU block's BARRIER: the C target renders loops (linearize without grid)"); }
  /// PREFETCH(INDEX(buf, i)): a hint that buf[i] is read soon (no load; i may be past the buffer's end).
  void prefetch(const UOp *u) {
    const UOp *ix = u->src(0);
    if (ix->op != Op::INDEX || ix->nsrc != 2 || ix->src(0)->op != Op::PARAM) failAt(u, "expected PREFETCH(INDEX(PARAM, i))");
    use(Helper::Prefetch);
    line("UOPC_PREFETCH(" + bufName(ParamArg::slotOf(ix->src(0)->arg)) + ", (" + val(ix->src(1)).v + ") * " +
         std::to_string(dtypeSize(ix->dtype)) + ");");
  }
  void value(const UOp *u) { memo[u] = node(u); }
  std::set<std::string> loopNames;
  std::vector<std::string> openNames;
  std::vector<bool> laneLoops; ///< per RANGE item: a loop of independent lanes (KernelABI.h)
  /// per RANGE item: for a loop of lanes that updates accumulators (chunkedLaneLoops), the accumulators'
  /// element size in bytes; 0 for every other loop
  std::vector<size_t> chunkedLaneLoops;
  /// per RANGE item: an UPCAST loop of constant size whose only loops inside are vector lanes (laneLoops)
  /// holding an accumulator: a register tile's outer lanes, unrolled. gcc 12 left Inception v2's 7 x 64
  /// tile (3x3 convolution 64->192 at 56x56) a loop of 7, its 448 accumulators in memory, a load and a
  /// store per multiply-add: unrolled they stay in registers, 15.5-22 -> 4.7-7.9 ms one thread. (Not every
  /// UPCAST loop: unrolling the 32- and 64-lane loops that are no vector loop, a tile's stores to an NCHW
  /// output, made gcc take 6-8 s a kernel.)
  std::vector<bool> tileOuterLoops;
  /// per RANGE item: a pooling window's loop (windowLoops), unrolled
  std::vector<bool> windowLoops;
  /// per RANGE item: a short loop of lanes that gather into their accumulators (gatherLaneLoops), unrolled
  std::vector<bool> gatherLaneLoops;
  /// per RANGE item: a small register tile's innermost window loop (tileWindowLoops), unrolled
  std::vector<bool> tileWindowLoops;
  /// per RANGE item: the gated INDEX of the padded read whose products are all its lanes add (paddedLaneGates),
  /// the loop run only where that read is in bounds; nullptr for the other loops
  std::vector<const UOp *> paddedLaneGates;
  size_t loopCount = 0;

  /// Whether RANGE item k (u) runs as copies of the body (UOPC_UNROLL): an UNROLL range, a register tile's outer
  /// lanes (tileOuterLoops), a window's loops, a gather's lanes, a small tile's innermost window loop.
  bool unrolls(size_t k, const UOp *u) const {
    auto at = [k](const std::vector<bool> &v) { return k < v.size() && v[k]; };
    return isUnrollRange(u) || at(tileOuterLoops) || at(windowLoops) || at(gatherLaneLoops) || at(tileWindowLoops);
  }
};

} // namespace

EmittedKernel emitCKernel(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name,
                          const CEmitOptions &options) {
  KernelABI abi = KernelABI::of(call, "C target"); // (refuses what is not a linearized kernel)
  const UOp *linear = call->src(0);
  Emitter em(ctx, deviceNum);
  em.allowCustom = options.allowCustom;
  em.abi = std::move(abi);
  em.analyze(linear);

  EmittedKernel k;
  k.symbol = sanitizeCName(name);
  em.laneLoops = independentLaneLoops(linearItems(linear));
  em.chunkedLaneLoops = chunkedLaneLoops(linearItems(linear), em.laneLoops);
  em.tileOuterLoops = tileOuterLoops(linearItems(linear), em.laneLoops);
  em.windowLoops = windowLoops(linearItems(linear), em.laneLoops);
  em.gatherLaneLoops = gatherLaneLoops(linearItems(linear), em.laneLoops);
  em.tileWindowLoops = tileWindowLoops(linearItems(linear), em.laneLoops, em.tileOuterLoops);
  {
    std::unordered_set<const UOp *> unrolled; // (the loops loopBegin unrolls)
    size_t k = 0;
    for (const UOp *u : linearItems(linear))
      if (u->op == Op::RANGE && em.unrolls(k++, u)) unrolled.insert(u);
    em.paddedLaneGates = paddedLaneGates(linearItems(linear), em.laneLoops, unrolled);
  }
  renderItems(linearItems(linear), em);
  if (em.depth != 1) fail("C target: the LINEAR items leave a loop open");

  // signature: one pointer per CALL argument, then the variables (KernelABI.h)
  std::vector<std::string> params;
  for (const KernelABI::Buffer &b : em.abi.buffers)
    params.push_back(std::string(b.written ? "" : "const ") + storageType(b.dtype) + " *restrict " + b.name);
  for (const std::string &v : em.abi.vars) params.push_back("int64_t " + em.abi.varArg.at(v));
  if (em.abi.parallel) params.insert(params.end(), {"int64_t uopc_lo", "int64_t uopc_hi"});
  if (em.abi.written.empty() && !em.customStatements) failAt(call, "the kernel stores nothing");
  k.summary = em.abi.summary(call, k.symbol, deviceNum);

  k.prelude = "/* " + k.summary + " */\n/* generated by uopc */\n";
  // a register tile (two output loops or more upcast into lanes, as the LLVM target's -O3 rule counts them)
  int upcasts = 0;
  for (const std::string &o : appliedOpts(kernelSink(call))) upcasts += o.rfind("upcast:", 0) == 0;
  if (upcasts >= 2) k.prelude += std::string(kBuildAtO2Line) + "\n";
  k.prelude += "#include <stdbool.h>\n#include <stdint.h>\n";
  if (em.needMath) k.prelude += "#include <math.h>\n#include <string.h>\n";
  k.prelude += ctarget::preludeText(em.helpers);
  k.declaration = "void " + k.symbol + "(";
  for (size_t i = 0; i < params.size(); ++i) k.declaration += (i ? ", " : "") + params[i];
  if (params.empty()) k.declaration += "void";
  k.declaration += ")";
  k.body = "{\n";
  for (const std::string &l : em.lines)
    if (!l.empty()) k.body += l + "\n";
  k.body += "}\n";
  return k;
}

std::string cFunction(std::string_view declaration, std::string_view body, bool isStatic) {
  std::string linkage = isStatic ? "static " : "";
  return linkage + std::string(declaration) + ";\n" + linkage + std::string(declaration) + " " + std::string(body);
}

std::string EmittedKernel::source() const { return prelude + "\n" + cFunction(declaration, body); }

} // namespace uopc
