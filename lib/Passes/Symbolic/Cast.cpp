//===- Cast.cpp - CAST/BITCAST chains and narrowing integer math ----------===//
#include "Passes/Symbolic/Internal.h"

namespace uopc::sym {
namespace {

bool isFp8(DType d) {
  return d == DType::FP8E4M3 || d == DType::FP8E5M2 || d == DType::FP8E4M3FNUZ || d == DType::FP8E5M2FNUZ;
}
bool oneOf(DType d, std::initializer_list<DType> ds) {
  for (DType x : ds)
    if (x == d) return true;
  return false;
}

/// tinygrad's can_lossless_cast: dt1 holds every value of dt0.
bool canLosslessCast(DType dt0, DType dt1) {
  using D = DType;
  if (dt0 == dt1 || dt0 == D::Bool) return true;
  switch (dt1) {
  case D::WeakInt: return isInt(dt0) && dt0 != D::WeakInt && dtypeSize(dt0) <= 8;
  case D::Float64:
    return isFp8(dt0) || oneOf(dt0, {D::Float32, D::Float16, D::BFloat16, D::UInt32, D::UInt16, D::UInt8, D::Int32,
                                     D::Int16, D::Int8});
  case D::Float32: return isFp8(dt0) || oneOf(dt0, {D::Float16, D::BFloat16, D::UInt16, D::UInt8, D::Int16, D::Int8});
  case D::Float16: return isFp8(dt0) || oneOf(dt0, {D::UInt8, D::Int8});
  case D::UInt64: return oneOf(dt0, {D::UInt32, D::UInt16, D::UInt8});
  case D::UInt32: return oneOf(dt0, {D::UInt16, D::UInt8});
  case D::UInt16: return dt0 == D::UInt8;
  case D::Int64: return oneOf(dt0, {D::UInt32, D::UInt16, D::UInt8, D::Int32, D::Int16, D::Int8});
  case D::Int32: return oneOf(dt0, {D::UInt16, D::UInt8, D::Int16, D::Int8});
  case D::Int16: return oneOf(dt0, {D::UInt8, D::Int8});
  default: return false;
  }
}

bool fitsRange(S &s, const UOp *u, DType dt) {
  VRange r = dtypeRange(dt);
  return s.vmin(u) >= r.lo && s.vmax(u) <= r.hi;
}

/// b(a(x)) -> x when x is already a b and a holds every b.
V castRoundTrip(S &s) {
  V x = s["x"];
  return x.dt() == s.root().dt() && canLosslessCast(s.root().dt(), s["a"].dt()) ? x : V();
}

/// b(a(x)) -> b(x) when a holds every value of x's dtype, or (ints) every value x takes.
V castChain(S &s) {
  V x = s["x"], a = s["a"];
  bool keeps = canLosslessCast(x.dt(), a.dt()) || (isInt(x.dt()) && isInt(a.dt()) && fitsRange(s, x, a.dt()));
  return keeps ? x.cast(s.root().dt()) : V();
}

/// int64 math whose operands and result fit int32 is done in int32 (tinygrad: "do math in int, not long").
V narrowInt64(S &s) {
  V u = s.root(), x = s["x"], y = s["y"];
  if (u.op() == Op::THREEFRY || u.op() == Op::POW) return nullptr;
  for (const UOp *v : {u.u, x.u, y.u})
    if (!fitsRange(s, v, DType::Int32)) return nullptr;
  return x.cast(DType::Int32).alu(u.op(), y.cast(DType::Int32)).cast(u.dt());
}

V sameDTypeCast(S &s) { return s.root().dt() == s["x"].dt() ? s["x"] : V(); }
V bitcastOnce(S &s) { return s["x"].dt() == s.root().dt() ? s["x"] : s.root().with({s["x"]}); }
V toBoolIsNe(S &s) { return s["x"].dt() == DType::Bool ? V() : s["x"].ne(s["x"].k(0)); }
V castSumApart(S &s) { return s["x"].cast(s.root().dt()) + s["c"].cast(s.root().dt()); }
V castIntoWhere(S &s) { return s["s"].where(s["a"].cast(s.root().dt()), s["b"].cast(s.root().dt())); }

/// threefry's 64-bit words: (hi * 2^32 | lo) has lo in its low word, and hi in its high word when hi < 2^32.
Pat hiLo(Pat hi, Pat lo) {
  return anyOf({(hi * (int64_t(1) << 32)) | lo.cast(DType::UInt64), (hi << 32) | lo.cast(DType::UInt64)});
}
V lowWord(S &s) { return s["y"]; }
V highWord(S &s) { return fitsRange(s, s["x"], DType::UInt32) ? s["x"] : V(); }
V low32(S &s) { return s["x"].cast(DType::UInt32); }

} // namespace

const RuleSet &castSimpleRules() {
  static const Pat a = pat(Op::CAST).src(var("x")).named("a");
  static const Pat u64 = var("x", DType::UInt64), hi = var({}, DType::UInt64), lo = var({}, DType::UInt32);
  static const RuleSet rules{
      srule(pat({Op::CAST, Op::BITCAST}).src(var("x")), sameDTypeCast),                 // T(x: T) -> x
      srule(pat(Op::CAST).src(a), castRoundTrip),                                       // b(a(x: b)) -> x, a holds b
      srule(pat(Op::BITCAST).src(pat(Op::BITCAST).src(var("x"))), bitcastOnce),         // b(a(x)) bitcasts -> b(x)
      srule(pat(Op::CAST).dtype(DType::Bool).src(var("x")), toBoolIsNe),               // bool(x) -> x!=0
      // ** threefry's 64-bit word packing **
      srule((u64 & 0xFFFFFFFF).cast(DType::UInt32), low32),                             // u32(x&0xFFFFFFFF) -> u32(x)
      srule(hiLo(hi, var("y", DType::UInt32)).cast(DType::UInt32), lowWord),           // u32(hi<<32|lo) -> lo
      srule(floordiv(hiLo(u64, lo), int64_t(1) << 32), highWord),                       // (hi<<32|lo)//2^32 -> hi
      srule(hiLo(u64, lo) >> 32, highWord),                                             // (hi<<32|lo)>>32 -> hi
  };
  return rules;
}

const RuleSet &castRules() {
  static const Pat a = pat(Op::CAST).src(var("x")).named("a");
  static const Pat i64 = pat(isBinary).src(var("x", DType::Int64), var("y", DType::Int64));
  static const Pat signedCast = pat(Op::CAST).dtype({DType::Int8, DType::Int16, DType::Int32, DType::Int64});
  static const RuleSet rules{
      srule(pat(Op::CAST).src(a), castChain),                                           // b(a(x)) -> b(x), a keeps x
      srule(i64, narrowInt64),                                                          // int64 math fitting int32
      srule(signedCast.src(weak("x") + cvar("c")), castSumApart),                       // int(x+c) -> int(x)+int(c)
  };
  return rules;
}

const RuleSet &castLateRules() {
  static const RuleSet rules{
      srule(pat(Op::CAST).src(where(var("s"), var("a"), var("b"))), castIntoWhere),     // T(s?a:b) -> s?T(a):T(b)
  };
  return rules;
}

} // namespace uopc::sym
