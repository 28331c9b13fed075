//===- ConstFold.cpp - constant folding with the target's per-dtype semantics ===//
// One element of every dtype is evaluated exactly as the reference interpreter does (Interp/ScalarOps.h):
// sized integers wrap, CDIV/CMOD truncate and FLOORDIV/FLOORMOD floor, x//0 = 0 and x%0 = x, shifts
// out of range give 0 (or the sign), floats round to their dtype after every op, casts from float to int
// follow the C conversion on x86-64, bitcasts reinterpret the storage bytes. weakint is exact: a fold whose
// result would leave int64 is not done.
#include "IR/ScalarOps.h"
#include "Passes/Symbolic/Internal.h"

#include <cmath>
#include <limits>

namespace uopc::sym {
namespace {

using interp::Word;

/// The interpreter word of a CONST (null when its arg is not a number, e.g. Invalid).
std::optional<Word> constWord(const UOp *c) {
  const Arg *a = c->arg;
  if (!a) return std::nullopt;
  DType dt = c->dtype;
  if (!interp::isFloatDType(dt) && !interp::isIntWordDType(dt)) return std::nullopt;
  if (dtypeSize(dt) > 8) return std::nullopt; // uint128/uint256: not held in a word
  switch (a->kind) {
  case ArgKind::Int: return interp::intToWord(dt, a->i());
  case ArgKind::UInt: return interp::uintToWord(dt, a->u());
  case ArgKind::Bool: return interp::intToWord(dt, a->b() ? 1 : 0);
  case ArgKind::Float:
    if (!interp::isFloatDType(dt)) return std::nullopt;
    return interp::floatToWord(dt, a->f());
  default: return std::nullopt;
  }
}

/// A CONST of dtype dt holding word w (NaN canonicalized, as tinygrad's dtype.const does).
const UOp *wordConst(Context &ctx, DType dt, Word w) {
  switch (dtypeKind(dt)) {
  case DTypeKind::Bool: return ctx.constBool(w != 0);
  case DTypeKind::Float: {
    double d = interp::asDouble(w);
    return ctx.constFloat(dt, std::isnan(d) ? std::numeric_limits<double>::quiet_NaN() : d);
  }
  case DTypeKind::UInt: return ctx.make(Op::CONST, dt, {}, ctx.argUInt(w));
  default: return ctx.constInt(dt, int64_t(w));
  }
}

/// The exact result of a weakint op on int64 operands, where it can leave int64 (null: it cannot).
std::optional<Bound> exactWeak(Op op, const Word *o) {
  Bound a = int64_t(o[0]), b = int64_t(o[1]);
  switch (op) {
  case Op::ADD: return a + b;
  case Op::SUB: return a - b;
  case Op::MUL: return a * b;
  case Op::NEG: return -a;
  case Op::SHL: return b >= 0 && b < 64 ? std::optional<Bound>(a * (Bound(1) << int(b))) : std::nullopt;
  case Op::MULACC: return a * b + Bound(int64_t(o[2]));
  case Op::FLOORDIV: case Op::CDIV: return b == -1 ? std::optional<Bound>(-a) : std::nullopt;
  default: return std::nullopt;
  }
}

V foldAlu(S &s) { return s.wrap(foldConstAlu(s.ctx(), s.root().op(), s.root().dt(), s.root()->src())); }

/// CAST(c) -> c converted (an Invalid constant stays Invalid in the new dtype).
V foldCast(S &s) {
  V r = s.root(), c = s["c"];
  if (isInvalidConst(c)) return s.wrap(makeInvalid(s.ctx(), r.dt()));
  auto w = constWord(c);
  if (!w || dtypeSize(r.dt()) > 8 || (!interp::isFloatDType(r.dt()) && !interp::isIntWordDType(r.dt()))) return nullptr;
  return s.wrap(wordConst(s.ctx(), r.dt(), interp::castWord(c.dt(), r.dt(), *w)));
}

/// BITCAST(c) -> c reinterpreted (same item size only).
V foldBitcast(S &s) {
  V r = s.root(), c = s["c"];
  if (isInvalidConst(c)) return s.wrap(makeInvalid(s.ctx(), r.dt()));
  auto w = constWord(c);
  if (!w || dtypeSize(c.dt()) != dtypeSize(r.dt()) || dtypeSize(r.dt()) > 8 || c.dt() == DType::WeakInt ||
      r.dt() == DType::WeakInt || c.dt() == DType::WeakFloat || r.dt() == DType::WeakFloat)
    return nullptr;
  return s.wrap(wordConst(s.ctx(), r.dt(), interp::bitcastWord(c.dt(), r.dt(), *w)));
}

} // namespace

const UOp *foldConstAlu(Context &ctx, Op op, DType out, std::span<const UOp *const> srcs) {
  if (srcs.empty() || srcs.size() > 3) return nullptr;
  for (const UOp *x : srcs) { // tinygrad's exec_alu: a binary op on Invalid is Invalid
    if (x->op != Op::CONST) return nullptr;
    if (isInvalidConst(x)) return isBinary(op) ? makeInvalid(ctx, out) : nullptr;
  }
  DType in = srcs[0]->dtype;
  if (!interp::aluSupported(op, in) || op == Op::WHERE) return nullptr;
  Word ops[3] = {0, 0, 0};
  for (size_t i = 0; i < srcs.size(); ++i) {
    auto w = constWord(srcs[i]);
    if (!w) return nullptr;
    ops[i] = *w;
  }
  if (in == DType::WeakInt)
    if (auto e = exactWeak(op, ops); e && !fitsInt64(*e)) return nullptr; // tinygrad's ints are unbounded
  return wordConst(ctx, out, interp::aluWord(op, out, in, ops));
}

const RuleSet &constFoldRules() {
  static const RuleSet rules{
      srule(pat(isUnary).src(cvar()), foldAlu),                                         // op(c) -> fold
      srule(pat(isBinary).src(cvar(), cvar()), foldAlu),                                // c0 op c1 -> fold
      srule(pat(Op::MULACC).src(cvar(), cvar(), cvar()), foldAlu),                      // c0*c1+c2 -> fold
      srule(pat(Op::CAST).src(cvar("c")), foldCast),                                    // cast(c) -> fold
      srule(pat(Op::BITCAST).src(cvar("c")), foldBitcast),                              // bitcast(c) -> fold
  };
  return rules;
}

} // namespace uopc::sym
