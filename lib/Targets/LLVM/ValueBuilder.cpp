//===- ValueBuilder.cpp - the IR of values: types, constants, conversions, ALU ops, the prelude's helpers ===//
// ValueBuilder (ValueBuilder.h): what LLVMEmitter.cpp's Emitter builds a value with, at the current
// insertion point, knowing nothing of the kernel's loops, buffers or accumulators. ALU ops are built from
// Targets/OpSpelling.def's LLVM columns (alu(); the table is in LLVMEmitter.cpp); CAST and BITCAST go by the
// pair of dtypes (cast, bitsOf and fromBits); float16, bfloat16, the float-to-integer conversions, the
// integer divisions and pow are the C prelude's helpers (Targets/C/Prelude.h) written as IR.
#include "Targets/LLVM/ValueBuilder.h"

#include "IR/Error.h"
#include "IR/Range.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cmath>

namespace uopc::llvmbackend::detail {

[[noreturn]] void failAt(const UOp *u, const std::string &msg) {
  fail("LLVM target: UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + "): " + msg);
}

Value *ValueBuilder::contract(Value *v) {
  if (auto *i = llvm::dyn_cast<llvm::BinaryOperator>(v);
      i && (i->getOpcode() == llvm::Instruction::FAdd || i->getOpcode() == llvm::Instruction::FSub ||
            i->getOpcode() == llvm::Instruction::FMul))
    i->setHasAllowContract(true);
  return v;
}

// ---- types and constants ---------------------------------------------------------------------------
llvm::Type *ValueBuilder::computeType(DType dt) {
  switch (dt) {
  case DType::Bool: return b.getInt1Ty();
  case DType::Int8: case DType::UInt8: return b.getInt8Ty();
  case DType::Int16: case DType::UInt16: return b.getInt16Ty();
  case DType::Int32: case DType::UInt32: return b.getInt32Ty();
  case DType::Int64: case DType::UInt64: case DType::WeakInt: return b.getInt64Ty();
  case DType::Float16: case DType::BFloat16: case DType::Float32: return b.getFloatTy();
  case DType::Float64: case DType::WeakFloat: return b.getDoubleTy();
  default: fail("LLVM target: dtype " + std::string(dtypeName(dt)) + " is not supported");
  }
}
llvm::Type *ValueBuilder::storageType(DType dt) {
  if (dt == DType::Bool) return b.getInt8Ty();
  if (isHalf(dt)) return b.getInt16Ty();
  return computeType(dt);
}
Value *ValueBuilder::literal(DType dt, Word w) {
  llvm::Type *T = computeType(dt);
  if (isF(dt)) return llvm::ConstantFP::get(T, interp::asDouble(w));
  if (dt == DType::Bool) return b.getInt1(w != 0);
  return llvm::ConstantInt::get(T, w);
}
Val ValueBuilder::constant(const UOp *u) {
  const Arg *a = u->arg;
  DType dt = u->dtype;
  switch (a ? a->kind : ArgKind::Invalid) {
  case ArgKind::Invalid: return {zeroOf(dt), b.getFalse()};
  case ArgKind::Bool: return {literal(dt, interp::intToWord(dt, a->b())), nullptr};
  case ArgKind::Int: return {literal(dt, interp::intToWord(dt, a->i())), nullptr};
  case ArgKind::UInt: return {literal(dt, interp::uintToWord(dt, a->u())), nullptr};
  case ArgKind::Float: return {literal(dt, interp::floatToWord(dt, a->f())), nullptr};
  default: failAt(u, "unsupported constant");
  }
}
Value *ValueBuilder::andOk(Value *x, Value *y) {
  if (!x || x == y) return y;
  if (!y) return x;
  return b.CreateAnd(x, y);
}
Value *ValueBuilder::ext64(Value *v, DType dt) {
  if (v->getType()->getIntegerBitWidth() == 64) return v;
  return isSignedInt(dt) ? b.CreateSExt(v, b.getInt64Ty()) : b.CreateZExt(v, b.getInt64Ty());
}
Value *ValueBuilder::narrow(Value *v, DType dt) {
  if (dt == DType::Bool) return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  return b.CreateZExtOrTrunc(v, computeType(dt));
}
Value *ValueBuilder::toDouble(Value *v, DType dt) {
  if (v->getType()->isDoubleTy()) return v;
  if (v->getType()->isFloatTy()) return b.CreateFPExt(v, b.getDoubleTy());
  return isSignedInt(dt) ? b.CreateSIToFP(v, b.getDoubleTy()) : b.CreateUIToFP(v, b.getDoubleTy());
}
Value *ValueBuilder::toFloat(Value *v, DType dt) {
  if (v->getType()->isFloatTy()) return v;
  if (v->getType()->isDoubleTy()) return b.CreateFPTrunc(v, b.getFloatTy());
  return isSignedInt(dt) ? b.CreateSIToFP(v, b.getFloatTy()) : b.CreateUIToFP(v, b.getFloatTy());
}
Value *ValueBuilder::intrinsic(llvm::Intrinsic::ID id, std::vector<Value *> args) {
  llvm::Function *f = llvm::Intrinsic::getDeclaration(&mod, id, {args[0]->getType()});
  return b.CreateCall(f, args);
}
Value *ValueBuilder::math(const UOp *u, const LSpell &c, std::vector<Value *> args) {
  if (mapping != Mapping::PTX) return intrinsic(static_cast<llvm::Intrinsic::ID>(c.code), args);
  libdeviceUsers.push_back("UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + ")");
  std::vector<llvm::Type *> tys(args.size(), b.getDoubleTy());
  llvm::FunctionCallee f = mod.getOrInsertFunction(c.libdevice, llvm::FunctionType::get(b.getDoubleTy(), tys, false));
  return b.CreateCall(f, args);
}

// ---- the C prelude's helpers, as IR ----------------------------------------------------------------
Value *ValueBuilder::f16Bits(Value *x) {
  Value *bits = b.CreateBitCast(x, b.getInt64Ty());
  Value *sign = b.CreateSelect(b.CreateICmpSLT(bits, i64(0)), b.getInt16(0x8000), b.getInt16(0));
  Value *a = intrinsic(llvm::Intrinsic::fabs, {x});
  Value *abits = b.CreateBitCast(a, b.getInt64Ty());
  // frexp(a).e - 1 = the unbiased exponent; clamped below at -14 (subnormal doubles included)
  Value *bexp = b.CreateTrunc(b.CreateLShr(abits, 52), b.getInt32Ty());
  Value *ex = b.CreateSub(bexp, b.getInt32(1023));
  ex = b.CreateSelect(b.CreateICmpSLT(ex, b.getInt32(-14)), b.getInt32(-14), ex);
  // q = 2^(ex - 10), exactly, from its bits
  Value *qe = b.CreateAdd(b.CreateSub(ex, b.getInt32(10)), b.getInt32(1023));
  Value *q = b.CreateBitCast(b.CreateShl(b.CreateZExt(qe, b.getInt64Ty()), 52), b.getDoubleTy());
  Value *r = b.CreateFMul(intrinsic(llvm::Intrinsic::nearbyint, {b.CreateFDiv(a, q)}), q);
  Value *rbits = b.CreateBitCast(r, b.getInt64Ty());
  // subnormal result: r * 2^24 (an integer below 1024)
  Value *sub = b.CreateFPToUI(b.CreateFMul(r, llvm::ConstantFP::get(b.getDoubleTy(), 16777216.0)), b.getInt16Ty());
  // normal: biased exponent (e - 1 + 15) << 10 | the 10 mantissa bits below the leading one
  Value *re = b.CreateSub(b.CreateTrunc(b.CreateLShr(rbits, 52), b.getInt16Ty()), b.getInt16(1023 - 15));
  Value *mant = b.CreateTrunc(b.CreateAnd(b.CreateLShr(rbits, 42), i64(0x3ff)), b.getInt16Ty());
  Value *normal = b.CreateOr(b.CreateShl(re, 10), mant);
  Value *v = b.CreateSelect(b.CreateFCmpOLT(r, llvm::ConstantFP::get(b.getDoubleTy(), std::ldexp(1.0, -14))), sub, normal);
  v = b.CreateSelect(b.CreateFCmpOGT(r, llvm::ConstantFP::get(b.getDoubleTy(), 65504.0)), b.getInt16(0x7c00), v);
  v = b.CreateSelect(b.CreateFCmpOEQ(a, llvm::ConstantFP::get(b.getDoubleTy(), 0.0)), b.getInt16(0), v);
  v = b.CreateSelect(b.CreateFCmpOEQ(a, llvm::ConstantFP::getInfinity(b.getDoubleTy())), b.getInt16(0x7c00), v);
  v = b.CreateSelect(b.CreateFCmpUNO(x, x), b.getInt16(0x7e00), v);
  return b.CreateOr(sign, v);
}
Value *ValueBuilder::f16Value(Value *h) {
  Value *h32 = b.CreateZExt(h, b.getInt32Ty());
  Value *ex = b.CreateAnd(b.CreateLShr(h32, 10), b.getInt32(0x1f));
  Value *mant = b.CreateAnd(h32, b.getInt32(0x3ff));
  llvm::Type *F = b.getFloatTy();
  Value *sub = b.CreateFMul(b.CreateUIToFP(mant, F), llvm::ConstantFP::get(F, std::ldexp(1.0, -24)));
  // 2^(ex - 25) from its bits (ex in 1..30: a normal float)
  Value *scale = b.CreateBitCast(b.CreateShl(b.CreateAdd(ex, b.getInt32(127 - 25)), 23), F);
  Value *norm = b.CreateFMul(b.CreateUIToFP(b.CreateAdd(mant, b.getInt32(1024)), F), scale);
  Value *special = b.CreateSelect(b.CreateICmpNE(mant, b.getInt32(0)), llvm::ConstantFP::getNaN(F),
                                  llvm::ConstantFP::getInfinity(F));
  Value *v = b.CreateSelect(b.CreateICmpEQ(ex, b.getInt32(0)), sub,
                            b.CreateSelect(b.CreateICmpEQ(ex, b.getInt32(31)), special, norm));
  return b.CreateSelect(b.CreateICmpNE(b.CreateAnd(h32, b.getInt32(0x8000)), b.getInt32(0)), b.CreateFNeg(v), v);
}
Value *ValueBuilder::isFiniteBits32(Value *u) {
  return b.CreateICmpNE(b.CreateAnd(u, b.getInt32(0x7f800000)), b.getInt32(0x7f800000));
}
Value *ValueBuilder::bf16Bits(Value *x) {
  Value *u = b.CreateBitCast(x, b.getInt32Ty());
  Value *rounded = b.CreateAdd(b.CreateAdd(u, b.getInt32(0x7FFF)), b.CreateAnd(b.CreateLShr(u, 16), b.getInt32(1)));
  u = b.CreateSelect(isFiniteBits32(u), rounded, u);
  return b.CreateTrunc(b.CreateLShr(u, 16), b.getInt16Ty());
}
Value *ValueBuilder::bf16Value(Value *h) {
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(h, b.getInt32Ty()), 16), b.getFloatTy());
}
Value *ValueBuilder::roundBF16(Value *x) {
  Value *u = b.CreateBitCast(x, b.getInt32Ty());
  Value *r = b.CreateAnd(b.CreateAdd(b.CreateAdd(u, b.getInt32(0x7FFF)), b.CreateAnd(b.CreateLShr(u, 16), b.getInt32(1))),
                         b.getInt32(0xFFFF0000u));
  return b.CreateSelect(isFiniteBits32(u), b.CreateBitCast(r, b.getFloatTy()), x);
}
Value *ValueBuilder::roundTo(DType dt, Value *x) {
  if (dt == DType::Float16) return f16Value(f16Bits(x->getType()->isDoubleTy() ? x : b.CreateFPExt(x, b.getDoubleTy())));
  if (dt == DType::BFloat16) return roundBF16(x->getType()->isFloatTy() ? x : b.CreateFPTrunc(x, b.getFloatTy()));
  return x;
}
Value *ValueBuilder::cvtI(Value *x, double lo, double hi, uint64_t bad) {
  Value *t = intrinsic(llvm::Intrinsic::trunc, {x});
  Value *in = b.CreateAnd(b.CreateFCmpOGE(t, llvm::ConstantFP::get(b.getDoubleTy(), lo)),
                          b.CreateFCmpOLT(t, llvm::ConstantFP::get(b.getDoubleTy(), hi)));
  return b.CreateSelect(in, b.CreateFPToSI(t, b.getInt64Ty()), i64(bad));
}
Value *ValueBuilder::cvtU64(Value *x) {
  Value *t = intrinsic(llvm::Intrinsic::trunc, {x});
  Value *hiRange = b.CreateAnd(b.CreateFCmpOGE(t, llvm::ConstantFP::get(b.getDoubleTy(), 9223372036854775808.0)),
                               b.CreateFCmpOLT(t, llvm::ConstantFP::get(b.getDoubleTy(), 18446744073709551616.0)));
  return b.CreateSelect(hiRange, b.CreateFPToUI(t, b.getInt64Ty()), cvtI64(t));
}
Value *ValueBuilder::safeDivisor(Value *d, bool isSigned) {
  Value *bad = b.CreateICmpEQ(d, i64(0));
  if (isSigned) bad = b.CreateOr(bad, b.CreateICmpEQ(d, i64(~0ull)));
  return b.CreateSelect(bad, i64(1), d);
}
Value *ValueBuilder::intDiv(Op op, bool uns, Value *x, Value *y) {
  bool isDiv = op == Op::FLOORDIV || op == Op::CDIV;
  Value *zero = i64(0), *isZero = b.CreateICmpEQ(y, zero);
  if (uns) {
    Value *d = safeDivisor(y, false);
    return isDiv ? b.CreateSelect(isZero, zero, b.CreateUDiv(x, d)) : b.CreateSelect(isZero, x, b.CreateURem(x, d));
  }
  Value *d = safeDivisor(y, true), *isM1 = b.CreateICmpEQ(y, i64(~0ull));
  Value *q = b.CreateSDiv(x, d), *m = b.CreateSRem(x, d);
  Value *res;
  if (op == Op::CDIV) res = q;
  else if (op == Op::CMOD) res = m;
  else if (op == Op::FLOORDIV) {
    Value *adj = b.CreateAnd(b.CreateICmpNE(m, zero), b.CreateXor(b.CreateICmpSLT(x, zero), b.CreateICmpSLT(y, zero)));
    res = b.CreateSelect(adj, b.CreateSub(q, i64(1)), q);
  } else {
    Value *adj = b.CreateAnd(b.CreateICmpNE(m, zero), b.CreateXor(b.CreateICmpSLT(m, zero), b.CreateICmpSLT(y, zero)));
    res = b.CreateSelect(adj, b.CreateAdd(m, y), m);
  }
  res = b.CreateSelect(isM1, isDiv ? b.CreateSub(zero, x) : zero, res);
  return b.CreateSelect(isZero, isDiv ? zero : x, res);
}
llvm::Function *ValueBuilder::ipowFn() {
  if (llvm::Function *f = mod.getFunction("uopc_ipow")) return f;
  auto *ty = llvm::FunctionType::get(b.getInt64Ty(), {b.getInt64Ty(), b.getInt64Ty()}, false);
  auto *f = llvm::Function::Create(ty, llvm::Function::InternalLinkage, "uopc_ipow", mod);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> h(lc);
  auto *bb = llvm::BasicBlock::Create(lc, "entry", f), *neg = llvm::BasicBlock::Create(lc, "neg", f),
       *loop = llvm::BasicBlock::Create(lc, "loop", f), *done = llvm::BasicBlock::Create(lc, "done", f);
  Value *base = f->getArg(0), *e = f->getArg(1);
  h.SetInsertPoint(bb);
  h.CreateCondBr(h.CreateICmpSLT(e, h.getInt64(0)), neg, loop);
  h.SetInsertPoint(neg);
  Value *odd = h.CreateICmpNE(h.CreateAnd(e, h.getInt64(1)), h.getInt64(0));
  Value *m1 = h.CreateSelect(odd, h.getInt64(~0ull), h.getInt64(1));
  h.CreateRet(h.CreateSelect(h.CreateICmpEQ(base, h.getInt64(1)), h.getInt64(1),
                             h.CreateSelect(h.CreateICmpEQ(base, h.getInt64(~0ull)), m1, h.getInt64(0))));
  h.SetInsertPoint(loop);
  auto *r = h.CreatePHI(h.getInt64Ty(), 2), *bv = h.CreatePHI(h.getInt64Ty(), 2), *k = h.CreatePHI(h.getInt64Ty(), 2);
  r->addIncoming(h.getInt64(1), bb);
  bv->addIncoming(base, bb);
  k->addIncoming(e, bb);
  Value *done0 = h.CreateICmpEQ(k, h.getInt64(0));
  Value *bit = h.CreateICmpNE(h.CreateAnd(k, h.getInt64(1)), h.getInt64(0));
  Value *r2 = h.CreateSelect(bit, h.CreateMul(r, bv), r);
  Value *b2 = h.CreateMul(bv, bv), *k2 = h.CreateLShr(k, 1);
  r->addIncoming(r2, loop);
  bv->addIncoming(b2, loop);
  k->addIncoming(k2, loop);
  // exits with the value before this iteration once k is 0
  h.CreateCondBr(done0, done, loop);
  h.SetInsertPoint(done);
  h.CreateRet(r);
  return f;
}

// ---- conversions and ALU ops ----------------------------------------------------------------------
Value *ValueBuilder::bitsOf(DType dt, Value *a) {
  switch (dt) {
  case DType::Float32: return b.CreateZExt(b.CreateBitCast(a, b.getInt32Ty()), b.getInt64Ty());
  case DType::Float64: case DType::WeakFloat: return b.CreateBitCast(a, b.getInt64Ty());
  case DType::Float16: return b.CreateZExt(f16Bits(b.CreateFPExt(a, b.getDoubleTy())), b.getInt64Ty());
  case DType::BFloat16: return b.CreateZExt(bf16Bits(a), b.getInt64Ty());
  default: return ext64(a, dt);
  }
}
Value *ValueBuilder::fromBits(DType dt, Value *w) {
  switch (dt) {
  case DType::Float32: return b.CreateBitCast(b.CreateTrunc(w, b.getInt32Ty()), b.getFloatTy());
  case DType::Float64: case DType::WeakFloat: return b.CreateBitCast(w, b.getDoubleTy());
  case DType::Float16: return f16Value(b.CreateTrunc(w, b.getInt16Ty()));
  case DType::BFloat16: return bf16Value(b.CreateTrunc(w, b.getInt16Ty()));
  case DType::Bool: return b.CreateICmpNE(b.CreateTrunc(w, b.getInt8Ty()), b.getInt8(0));
  default: return b.CreateTrunc(w, computeType(dt));
  }
}
Value *ValueBuilder::cast(DType from, DType to, Value *a) {
  llvm::Type *T = computeType(to);
  if (to == DType::Bool)
    return isF(from) ? b.CreateFCmpUNE(a, llvm::ConstantFP::get(a->getType(), 0.0))
                     : b.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
  if (isF(from) && !isF(to)) {
    Value *d = toDouble(a, from);
    switch (to) {
    case DType::UInt64: return cvtU64(d);
    case DType::Int64: case DType::UInt32: case DType::WeakInt: return b.CreateTrunc(cvtI64(d), T);
    default: return b.CreateTrunc(cvtI32(d), T);
    }
  }
  if (to == DType::Float16) return roundTo(to, toDouble(a, from));
  if (to == DType::BFloat16) return roundTo(to, isF(from) ? toFloat(a, from) : b.CreateFPTrunc(toDouble(a, from), b.getFloatTy()));
  if (isF(to)) {
    if (isF(from)) return b.CreateFPCast(a, T);
    return isSignedInt(from) ? b.CreateSIToFP(a, T) : b.CreateUIToFP(a, T);
  }
  // integer to integer
  unsigned fw = a->getType()->getIntegerBitWidth(), tw = T->getIntegerBitWidth();
  if (tw <= fw) return b.CreateTrunc(a, T);
  return isSignedInt(from) ? b.CreateSExt(a, T) : b.CreateZExt(a, T);
}
Value *ValueBuilder::alu(const UOp *u, DType out, DType in, std::vector<Value *> a, const std::vector<DType> &dts) {
  const OpSpelling<LSpell> *row = spelling(u->op);
  if (!row) return nullptr;
  bool dbl = !isSingle(in), uns = !isSignedInt(in);
  const LSpell &c = row->on(isF(in), uns);
  llvm::Type *C = computeType(in), *D = b.getDoubleTy();
  // single precision on the host: the float intrinsics (libm's exp2f, ...), as the C target; on NVPTX
  // through libdevice's double functions
  bool hostSingle = !dbl && mapping != Mapping::PTX;
  auto viaDouble = [&](auto f) {
    Value *x = toDouble(a[0], in), *y = toDouble(a[1], in);
    Value *r = f(x, y);
    return dbl ? r : b.CreateFPTrunc(r, C);
  };
  Value *zeroD = llvm::ConstantFP::get(D, 0.0);
  auto x64 = [&](size_t k) { return ext64(a[k], dts[k]); };
  auto wrapped = [&](Value *r) { return narrow(r, out); };
  auto id = static_cast<llvm::Intrinsic::ID>(c.code);
  // uopc_ipow's exponent is an int64: a uint64 one is clamped
  if (u->op == Op::POW && c.form == Form::Call)
    a[1] = in == DType::UInt64 ? b.CreateSelect(b.CreateICmpUGT(a[1], i64(INT64_MAX)), i64(INT64_MAX), a[1]) : x64(1);
  Value *e = nullptr;
  switch (c.form) {
  case Form::Cmp: return b.CreateCmp(c.predicate(), a[0], a[1]);
  case Form::Max: e = b.CreateSelect(b.CreateCmp(c.predicate(), a[0], a[1]), a[1], a[0]); break;
  case Form::Bin: e = contract(b.CreateBinOp(c.binary(), a[0], a[1])); break;
  case Form::Un: e = b.CreateUnOp(static_cast<llvm::Instruction::UnaryOps>(c.code), a[0]); break;
  case Form::Recip: e = b.CreateFDiv(llvm::ConstantFP::get(C, 1.0), a[0]); break;
  case Form::Intr: e = intrinsic(id, {a[0]}); break;
  case Form::Libm:
    if (dbl || hostSingle) e = math(u, c, a);
    else {
      std::vector<Value *> d;
      for (Value *x : a) d.push_back(b.CreateFPExt(x, D));
      e = b.CreateFPTrunc(math(u, c, d), C);
    }
    break;
  case Form::RoundDiv:
    e = viaDouble([&](Value *x, Value *y) {
      Value *q = intrinsic(id, {b.CreateFDiv(x, y)});
      return b.CreateSelect(b.CreateFCmpOEQ(y, zeroD), zeroD, q);
    });
    break;
  case Form::RoundMod:
    e = viaDouble([&](Value *x, Value *y) {
      Value *q = intrinsic(id, {b.CreateFDiv(x, y)});
      return b.CreateSelect(b.CreateFCmpOEQ(y, zeroD), x, b.CreateFSub(x, b.CreateFMul(q, y)));
    });
    break;
  case Form::MulAdd:
    if (!isF(in)) return wrapped(b.CreateAdd(b.CreateMul(x64(0), x64(1)), x64(2)));
    e = b.CreateFAdd(b.CreateFMul(toDouble(a[0], in), toDouble(a[1], in)), toDouble(a[2], in));
    if (!dbl) e = b.CreateFPTrunc(e, C);
    break;
  case Form::Wrap: return wrapped(b.CreateBinOp(c.binary(), x64(0), x64(1)));
  case Form::Neg: return wrapped(b.CreateSub(i64(0), x64(0)));
  case Form::Operand: return a[0];
  case Form::Shl: {
    Value *x = x64(0), *y = x64(1);
    Value *bad = b.CreateICmpUGE(y, i64(64));
    if (!uns) bad = b.CreateOr(bad, b.CreateICmpSLT(y, i64(0)));
    return wrapped(b.CreateSelect(bad, i64(0), b.CreateShl(x, b.CreateSelect(bad, i64(0), y))));
  }
  case Form::Shr: {
    Value *x = x64(0), *y = x64(1);
    if (uns) {
      Value *bad = b.CreateICmpUGE(y, i64(64));
      return wrapped(b.CreateSelect(bad, i64(0), b.CreateLShr(x, b.CreateSelect(bad, i64(0), y))));
    }
    Value *neg = b.CreateICmpSLT(y, i64(0)), *big = b.CreateICmpSGE(y, i64(64));
    Value *sh = b.CreateAShr(x, b.CreateSelect(b.CreateOr(neg, big), i64(0), y));
    Value *fill = b.CreateSelect(b.CreateICmpSLT(x, i64(0)), i64(~0ull), i64(0));
    return wrapped(b.CreateSelect(neg, i64(0), b.CreateSelect(big, fill, sh)));
  }
  case Form::Div: case Form::CheckedDiv: {
    auto d = constBound(u->src(1));
    Value *x = x64(0), *y = x64(1);
    if (c.form == Form::Div && d && *d > 0) return wrapped(b.CreateBinOp(c.binary(), x, y));
    return wrapped(intDiv(u->op, uns, x, y));
  }
  case Form::Call: return wrapped(b.CreateCall((this->*c.function)(), {x64(0), x64(1)}));
  default: return nullptr;
  }
  return roundTo(out, e);
}

} // namespace uopc::llvmbackend::detail
