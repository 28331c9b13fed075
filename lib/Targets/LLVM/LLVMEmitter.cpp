//===- LLVMEmitter.cpp - renders one linearized kernel CALL as an LLVM IR module (IRBuilder) ===//
// One loop over the kernel's LINEAR items (lib/Passes/Linearize.cpp), as the C target's: RANGE opens a
// loop (a condition block, a body, an exit), END closes it, IF/ENDIF branch around a guarded thread,
// REDUCE allocates an accumulator and STORE(REDUCE, x) updates it, every other value is built at the
// current insertion point. Nothing is placed or proven here: order, loops and bounds checks are the IR's.
// Loop counters and accumulators live in allocas that -O2's mem2reg turns into phis. Every value carries a
// validity flag (nullptr = always valid).
// ALU ops are built from Targets/OpSpelling.def's LLVM columns (alu()). Code here builds what is not one
// form per op: WHERE (it selects a validity too), CAST and BITCAST (by the pair of dtypes), loads and stores,
// and the accumulators' updates (the reduce op in the accumulator's own type: not rounded to float16 each
// step, integers not widened to 64 bits).
//
// The GPU mappings (LLVMTarget.h) read the thread coordinates linearize put in the IR (SPECIAL gidx0 and
// lidx0, whose sizes are the launch): from the special registers (PTX), or, on the host, from a loop over
// every thread of the launch (GridOnHost: the mapping checked on a machine without a GPU).
//
// Target machines, the -O2 pipeline, libdevice and PTX output are in Machines.cpp.
#include "Targets/LLVM/Backend.h"
#include "Targets/LLVM/Machines.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "IR/ScalarOps.h"
#include "Targets/CTarget.h"
#include "Targets/KernelABI.h"
#include "Targets/OpSpelling.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

using interp::Word;
using llvm::Value;
using Mapping = LLVMEmitOptions::Mapping;

[[noreturn]] void failAt(const UOp *u, const std::string &msg) {
  fail("LLVM target: UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + "): " + msg);
}

bool isF(DType dt) { return isFloat(dt); }
bool isSingle(DType dt) { return dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16; }
bool isHalf(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }
/// Signed integers (weakint included); bool and unsigned integers are extended with zeros.
bool isSignedInt(DType dt) { return isInt(dt) && !isUnsigned(dt); }

/// A value and its validity (nullptr: always valid).
struct Val {
  Value *v = nullptr, *ok = nullptr;
};

/// One open loop.
struct Loop {
  const UOp *range = nullptr;
  llvm::BasicBlock *header = nullptr; ///< the loop's condition block
  llvm::BasicBlock *exit = nullptr;   ///< where the code goes on once the loop closes
  llvm::AllocaInst *counter = nullptr;
};

struct Emitter;
/// The forms of OpSpelling.def's LLVM columns.
enum class Form {
  None, Cmp, Max, Bin, Un, Wrap, Neg, Operand, Recip, Intr, Libm, RoundDiv, RoundMod, MulAdd, Shl, Shr, Div,
  CheckedDiv, Call
};
/// One cell of OpSpelling.def's LLVM columns.
struct LSpell {
  Form form = Form::None;
  unsigned code = 0;               ///< the form's predicate, instruction or intrinsic
  const char *libdevice = nullptr; ///< Libm: the libdevice function
  llvm::Function *(Emitter::*function)() = nullptr; ///< Call: builds the function called
  bool same = false;               ///< as the signed column
  llvm::CmpInst::Predicate predicate() const { return static_cast<llvm::CmpInst::Predicate>(code); }
  llvm::Instruction::BinaryOps binary() const { return static_cast<llvm::Instruction::BinaryOps>(code); }
};
/// An op's row of OpSpelling.def (the table follows Emitter, whose functions Call names), nullptr if none.
const OpSpelling<LSpell> *spelling(Op op);

struct Emitter {
  Context &ctx;
  int64_t deviceNum;
  llvm::LLVMContext &lc;
  llvm::Module &mod;
  llvm::IRBuilder<> b;
  llvm::Function *fn = nullptr;
  llvm::BasicBlock *entry = nullptr;
  std::vector<std::unique_ptr<Loop>> loops; ///< every loop opened (open ones are on `open`)
  std::vector<Loop *> open;
  std::vector<llvm::BasicBlock *> ifs; ///< the block after each open IF
  std::unordered_map<const UOp *, Val> memo; ///< each value's latest definition
  std::unordered_map<const UOp *, Value *> sharedPtrs; ///< a block's shared BUFFERs
  struct Acc {
    llvm::AllocaInst *value = nullptr, *ok = nullptr; ///< [count x T] and [count x i1] with lanes
    Loop *outer = nullptr; ///< the loop the accumulator is defined in (nullptr: the function)
    bool poisoned = false; ///< an Invalid lane was accumulated: `ok` exists (ensureOk)
    llvm::Instruction *initEnd = nullptr; ///< the last instruction setting `value` to the identity
    std::vector<const UOp *> lanes; ///< an array accumulator's lanes (IR/Kernel.h), empty for a scalar
    int64_t count = 1;
  };
  /// The accumulator's element (and validity flag) for its lanes' current loop counters.
  std::pair<Value *, Value *> accSlot(const Acc &a, llvm::Type *T) {
    if (a.lanes.empty()) return {a.value, a.ok};
    Value *k = b.getInt64(0);
    int64_t stride = a.count;
    for (const UOp *r : a.lanes) {
      stride /= static_cast<int64_t>(*constBound(r->src(0)));
      k = b.CreateAdd(k, b.CreateMul(ext64(val(r).v, r->dtype), b.getInt64(stride)));
    }
    return {b.CreateInBoundsGEP(llvm::ArrayType::get(T, static_cast<uint64_t>(a.count)), a.value, {b.getInt64(0), k}),
            a.ok ? b.CreateInBoundsGEP(llvm::ArrayType::get(b.getInt1Ty(), static_cast<uint64_t>(a.count)), a.ok, {b.getInt64(0), k})
                 : nullptr};
  }
  std::unordered_map<const UOp *, Acc> accs;
  KernelABI abi; ///< the function's arguments
  std::map<std::string, Value *> varValues;
  std::map<int64_t, Value *> bufArgs;

  // ---- the GPU mappings --------------------------------------------------------------------------------
  Mapping mapping = Mapping::Loops;
  GpuLaunch launch;
  // GridOnHost: a loop over the blocks, in it one loop over the block's threads per stretch between
  // barriers, each `for (i = n; i-- > 0;)` (last to first)
  struct Countdown {
    llvm::AllocaInst *addr = nullptr;
    llvm::BasicBlock *cond = nullptr, *exit = nullptr;
    Value *index = nullptr; ///< i64, in the body
  };
  Countdown blocks, lanes; ///< gidx0's loop and the current stretch's lidx0 loop
  /// Opens a countdown loop over n at the insertion point (reusing c's counter slot, if any).
  void beginCountdown(Countdown &c, int64_t n, const std::string &name) {
    if (!c.addr) c.addr = makeAlloca(b.getInt64Ty(), name + ".addr");
    b.CreateStore(i64(static_cast<uint64_t>(n)), c.addr);
    c.cond = llvm::BasicBlock::Create(lc, name + ".cond", fn);
    auto *body = llvm::BasicBlock::Create(lc, name + ".body", fn);
    c.exit = llvm::BasicBlock::Create(lc, name + ".end", fn);
    b.CreateBr(c.cond);
    b.SetInsertPoint(c.cond);
    b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(b.getInt64Ty(), c.addr), i64(0)), body, c.exit);
    b.SetInsertPoint(body);
    c.index = b.CreateSub(b.CreateLoad(b.getInt64Ty(), c.addr), i64(1), name);
  }
  void endCountdown(Countdown &c) {
    b.CreateStore(c.index, c.addr);
    b.CreateBr(c.cond);
    b.SetInsertPoint(c.exit);
  }
  /// A stretch's loop over the block's threads; what linearize placed before a barrier is computed again
  /// after it, so nothing from the stretch before is used.
  void beginLanes() {
    beginCountdown(lanes, launch.local[0], "lidx");
    memo.clear();
  }
  Value *threadLo = nullptr, *threadHi = nullptr; ///< a kernel split across CPU threads: its [lo, hi)
  std::vector<std::string> libdeviceUsers; ///< ops that call libdevice (PTX)

  Emitter(Context &c, int64_t dev, llvm::Module &m) : ctx(c), deviceNum(dev), lc(m.getContext()), mod(m), b(lc) {}
  /// v with the `contract` flag when it is a float add, subtract or multiply of the graph's (an ALU op or an
  /// accumulator's step): a multiply feeding an add may become one fused multiply-add, as C's
  /// -ffp-contract=fast allows the C target's compiler; the one rounding less is within every tolerance
  /// the corpora give. The emulations of other ops (a float modulo's x - q*y) stay uncontracted.
  Value *contract(Value *v) {
    if (auto *i = llvm::dyn_cast<llvm::BinaryOperator>(v);
        i && (i->getOpcode() == llvm::Instruction::FAdd || i->getOpcode() == llvm::Instruction::FSub ||
              i->getOpcode() == llvm::Instruction::FMul))
      i->setHasAllowContract(true);
    return v;
  }
  bool gpu() const { return mapping != Mapping::Loops; }

  // ---- analysis -----------------------------------------------------------------------------------------
  void analyze(const UOp *body) {
    for (const UOp *u : toposort(body)) {
      if (u->op == Op::SPECIAL) {
        if (!gpu()) failAt(u, "a GPU thread coordinate: the loops mapping renders none (linearize without grid)");
        auto n = u->nsrc ? constBound(u->src(0)) : std::nullopt;
        std::string_view which = u->arg && u->arg->kind == ArgKind::String ? u->arg->str() : "";
        if (!n || *n < 1 || *n > INT32_MAX || (which != "gidx0" && which != "lidx0"))
          failAt(u, "expected SPECIAL gidx0 or lidx0 of a constant size");
      }
      if (u->op == Op::CUSTOM || u->op == Op::CUSTOMI) failAt(u, "CUSTOM ops carry C source: only the C target renders them (with --allow-custom)");
      if (u->op == Op::THREEFRY) failAt(u, "THREEFRY: the LLVM targets lack it (PassTarget::lacks); the decompose pass writes it with 32-bit ops");
    }
  }

  // ---- types and constants ---------------------------------------------------------------------------
  llvm::Type *computeType(DType dt) {
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
  llvm::Type *storageType(DType dt) {
    if (dt == DType::Bool) return b.getInt8Ty();
    if (isHalf(dt)) return b.getInt16Ty();
    return computeType(dt);
  }
  Value *literal(DType dt, Word w) {
    llvm::Type *T = computeType(dt);
    if (isF(dt)) return llvm::ConstantFP::get(T, interp::asDouble(w));
    if (dt == DType::Bool) return b.getInt1(w != 0);
    return llvm::ConstantInt::get(T, w);
  }
  Value *zeroOf(DType dt) { return literal(dt, isF(dt) ? interp::fromDouble(0) : 0); }
  Val constant(const UOp *u) {
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
  Value *andOk(Value *x, Value *y) {
    if (!x || x == y) return y;
    if (!y) return x;
    return b.CreateAnd(x, y);
  }
  Value *i64(uint64_t v) { return b.getInt64(v); }
  /// An integer value of dtype dt as 64 bits (sign-extended when dt is signed).
  Value *ext64(Value *v, DType dt) {
    if (v->getType()->getIntegerBitWidth() == 64) return v;
    return isSignedInt(dt) ? b.CreateSExt(v, b.getInt64Ty()) : b.CreateZExt(v, b.getInt64Ty());
  }
  /// A 64-bit integer narrowed to dt the C way: wrapped, bool nonzero.
  Value *narrow(Value *v, DType dt) {
    if (dt == DType::Bool) return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    return b.CreateZExtOrTrunc(v, computeType(dt));
  }
  Value *toDouble(Value *v, DType dt) {
    if (v->getType()->isDoubleTy()) return v;
    if (v->getType()->isFloatTy()) return b.CreateFPExt(v, b.getDoubleTy());
    return isSignedInt(dt) ? b.CreateSIToFP(v, b.getDoubleTy()) : b.CreateUIToFP(v, b.getDoubleTy());
  }
  Value *toFloat(Value *v, DType dt) {
    if (v->getType()->isFloatTy()) return v;
    if (v->getType()->isDoubleTy()) return b.CreateFPTrunc(v, b.getFloatTy());
    return isSignedInt(dt) ? b.CreateSIToFP(v, b.getFloatTy()) : b.CreateUIToFP(v, b.getFloatTy());
  }
  Value *intrinsic(llvm::Intrinsic::ID id, std::vector<Value *> args) {
    llvm::Function *f = llvm::Intrinsic::getDeclaration(&mod, id, {args[0]->getType()});
    return b.CreateCall(f, args);
  }
  /// Libm(I) (OpSpelling.def): LLVM's intrinsic (libm) on the host, libdevice's double function on NVPTX.
  Value *math(const UOp *u, const LSpell &c, std::vector<Value *> args) {
    if (mapping != Mapping::PTX) return intrinsic(static_cast<llvm::Intrinsic::ID>(c.code), args);
    libdeviceUsers.push_back("UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + ")");
    std::vector<llvm::Type *> tys(args.size(), b.getDoubleTy());
    llvm::FunctionCallee f = mod.getOrInsertFunction(c.libdevice, llvm::FunctionType::get(b.getDoubleTy(), tys, false));
    return b.CreateCall(f, args);
  }

  // ---- the C prelude's helpers, as IR ----------------------------------------------------------------
  /// float16 bits (i16) of a double, round to nearest even, overflow to inf (uopc_f16_bits).
  Value *f16Bits(Value *x) {
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
  /// The float value of float16 bits (uopc_f16_value).
  Value *f16Value(Value *h) {
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
  Value *isFiniteBits32(Value *u) {
    return b.CreateICmpNE(b.CreateAnd(u, b.getInt32(0x7f800000)), b.getInt32(0x7f800000));
  }
  /// tinygrad's float_to_bf16 (uopc_bf16_bits): i16.
  Value *bf16Bits(Value *x) {
    Value *u = b.CreateBitCast(x, b.getInt32Ty());
    Value *rounded = b.CreateAdd(b.CreateAdd(u, b.getInt32(0x7FFF)), b.CreateAnd(b.CreateLShr(u, 16), b.getInt32(1)));
    u = b.CreateSelect(isFiniteBits32(u), rounded, u);
    return b.CreateTrunc(b.CreateLShr(u, 16), b.getInt16Ty());
  }
  Value *bf16Value(Value *h) {
    return b.CreateBitCast(b.CreateShl(b.CreateZExt(h, b.getInt32Ty()), 16), b.getFloatTy());
  }
  Value *roundBF16(Value *x) {
    Value *u = b.CreateBitCast(x, b.getInt32Ty());
    Value *r = b.CreateAnd(b.CreateAdd(b.CreateAdd(u, b.getInt32(0x7FFF)), b.CreateAnd(b.CreateLShr(u, 16), b.getInt32(1))),
                           b.getInt32(0xFFFF0000u));
    return b.CreateSelect(isFiniteBits32(u), b.CreateBitCast(r, b.getFloatTy()), x);
  }
  /// A value of dt's compute type rounded to dt (float16, bfloat16); x is float or double.
  Value *roundTo(DType dt, Value *x) {
    if (dt == DType::Float16) return f16Value(f16Bits(x->getType()->isDoubleTy() ? x : b.CreateFPExt(x, b.getDoubleTy())));
    if (dt == DType::BFloat16) return roundBF16(x->getType()->isFloatTy() ? x : b.CreateFPTrunc(x, b.getFloatTy()));
    return x;
  }
  /// cvttsd2si-like conversions of a double: lo <= trunc(x) < hi gives it, else `bad`.
  Value *cvtI(Value *x, double lo, double hi, uint64_t bad) {
    Value *t = intrinsic(llvm::Intrinsic::trunc, {x});
    Value *in = b.CreateAnd(b.CreateFCmpOGE(t, llvm::ConstantFP::get(b.getDoubleTy(), lo)),
                            b.CreateFCmpOLT(t, llvm::ConstantFP::get(b.getDoubleTy(), hi)));
    return b.CreateSelect(in, b.CreateFPToSI(t, b.getInt64Ty()), i64(bad));
  }
  Value *cvtI32(Value *x) { return cvtI(x, -2147483648.0, 2147483648.0, static_cast<uint64_t>(int64_t{INT32_MIN})); }
  Value *cvtI64(Value *x) { return cvtI(x, -9223372036854775808.0, 9223372036854775808.0, 1ull << 63); }
  Value *cvtU64(Value *x) {
    Value *t = intrinsic(llvm::Intrinsic::trunc, {x});
    Value *hiRange = b.CreateAnd(b.CreateFCmpOGE(t, llvm::ConstantFP::get(b.getDoubleTy(), 9223372036854775808.0)),
                                 b.CreateFCmpOLT(t, llvm::ConstantFP::get(b.getDoubleTy(), 18446744073709551616.0)));
    return b.CreateSelect(hiRange, b.CreateFPToUI(t, b.getInt64Ty()), cvtI64(t));
  }
  /// Divisor `d` made safe to divide by (1 where it is 0 or, for signed division, -1).
  Value *safeDivisor(Value *d, bool isSigned) {
    Value *bad = b.CreateICmpEQ(d, i64(0));
    if (isSigned) bad = b.CreateOr(bad, b.CreateICmpEQ(d, i64(~0ull)));
    return b.CreateSelect(bad, i64(1), d);
  }
  /// uopc_floordiv_s & co on 64-bit words.
  Value *intDiv(Op op, bool uns, Value *x, Value *y) {
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
  /// uint64 uopc_ipow(int64 base, int64 e): an internal function with a loop.
  llvm::Function *ipowFn() {
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
  // ---- loops ---------------------------------------------------------------------------------------------
  llvm::AllocaInst *makeAlloca(llvm::Type *T, const std::string &name) {
    llvm::IRBuilder<> a(entry, entry->begin());
    return a.CreateAlloca(T, nullptr, name);
  }
  std::string rangeName(const UOp *r) {
    return "r" + std::to_string(r->arg && r->arg->kind == ArgKind::Tuple && r->arg->count ? r->arg->elems()[0]->i()
                                                                                           : static_cast<int64_t>(r->index));
  }
  /// RANGE r: `for (r = 0; r < size; r++)` from the current insertion point.
  void loopBegin(const UOp *r) {
    Val n = val(r->src(0));
    llvm::Type *T = computeType(r->dtype);
    auto lp = std::make_unique<Loop>();
    Loop *L = lp.get();
    loops.push_back(std::move(lp));
    std::string name = rangeName(r);
    L->range = r;
    L->counter = makeAlloca(T, name + ".addr");
    L->header = llvm::BasicBlock::Create(lc, name + ".cond", fn);
    auto *body = llvm::BasicBlock::Create(lc, name + ".body", fn);
    L->exit = llvm::BasicBlock::Create(lc, name + ".end", fn);
    // a THREAD loop runs the iterations [uopc_lo, uopc_hi) this call was given (KernelABI.h)
    bool split = isThreadRange(r);
    Value *from = split ? b.CreateSExtOrTrunc(threadLo, T) : llvm::ConstantInt::get(T, 0);
    Value *bound = split ? threadHi : n.v;
    Value *nv = bound->getType() == T ? bound : b.CreateSExtOrTrunc(bound, T);
    if (split && r->arg->count >= 3) { // one piece's loop: its share of [uopc_lo, uopc_hi)
      Value *off = llvm::ConstantInt::get(T, threadOffset(r)), *zero = llvm::ConstantInt::get(T, 0);
      Value *size = n.v->getType() == T ? n.v : b.CreateSExtOrTrunc(n.v, T);
      Value *lo = b.CreateSub(from, off), *hi = b.CreateSub(nv, off);
      from = b.CreateSelect(b.CreateICmpSGT(lo, zero), lo, zero);
      nv = b.CreateSelect(b.CreateICmpSLT(hi, size), hi, size);
    }
    b.CreateStore(from, L->counter);
    b.CreateBr(L->header);
    b.SetInsertPoint(L->header);
    Value *iv = b.CreateLoad(T, L->counter, name + ".iv");
    b.CreateCondBr(b.CreateICmpSLT(iv, nv), body, L->exit);
    b.SetInsertPoint(body);
    memo[r] = {b.CreateLoad(T, L->counter, name), nullptr};
    open.push_back(L);
  }
  /// END: the latch, then on after the loop.
  void loopEnd(const UOp *e) {
    if (open.empty()) failAt(e, "END without an open loop");
    Loop *L = open.back();
    llvm::Type *T = L->counter->getAllocatedType();
    Value *iv = b.CreateLoad(T, L->counter);
    b.CreateStore(b.CreateAdd(iv, llvm::ConstantInt::get(T, 1)), L->counter);
    llvm::BranchInst *latch = b.CreateBr(L->header);
    if (isUnrollRange(L->range)) { // an UNROLL range: the loop run as copies of its body
      llvm::Metadata *full[] = {llvm::MDString::get(lc, "llvm.loop.unroll.full")};
      llvm::Metadata *ops[] = {nullptr, llvm::MDNode::get(lc, full)};
      llvm::MDNode *self = llvm::MDNode::getDistinct(lc, ops);
      self->replaceOperandWith(0, self);
      latch->setMetadata(llvm::LLVMContext::MD_loop, self);
    }
    open.pop_back();
    b.SetInsertPoint(L->exit);
  }

  // ---- values ----------------------------------------------------------------------------------------------
  /// u's value: a constant or a variable where used, a REDUCE's accumulator as it is now, anything else
  /// its latest definition.
  Val val(const UOp *u) {
    if (u->op == Op::CONST) return constant(u);
    if (u->op == Op::PARAM) return param(u);
    if (u->op == Op::REDUCE) {
      auto it = accs.find(u);
      if (it == accs.end()) failAt(u, "used before its REDUCE item");
      llvm::Type *T = computeType(u->dtype);
      auto [slot, okSlot] = accSlot(it->second, T);
      Val r{b.CreateLoad(T, slot, "red"), it->second.poisoned ? b.CreateLoad(b.getInt1Ty(), okSlot) : nullptr};
      if (isHalf(u->dtype)) r.v = roundTo(u->dtype, r.v);
      return r;
    }
    auto it = memo.find(u);
    if (it == memo.end()) failAt(u, "used before the item that computes it (the LINEAR order is broken)");
    return it->second;
  }
  /// The validity of an access by INDEX u (index value i): the index's and every gate's.
  Value *access(const UOp *u, const Val &i) {
    Value *ok = i.ok;
    for (const UOp *g : u->src().subspan(2)) ok = andOk(ok, val(g).v);
    return ok;
  }
  /// The address of element iv64 of the buffer INDEX u reads or writes: a kernel argument, or a block's
  /// shared BUFFER (its item made it: sharedPtrs).
  Value *elemPtr(const UOp *u, DType dt, Value *iv64) {
    const UOp *p = u->src(0);
    Value *base = nullptr;
    if (const UOp *shared = blockBufferOf(p)) {
      auto it = sharedPtrs.find(shared);
      if (it == sharedPtrs.end()) failAt(u, "a block's shared BUFFER used before its item");
      base = it->second;
    } else {
      if (p->op != Op::PARAM || isScalarParamNode(p)) failAt(u, "INDEX into something other than a buffer PARAM or a block's shared BUFFER");
      base = bufArgs.at(ParamArg::slotOf(p->arg));
    }
    return b.CreateInBoundsGEP(storageType(dt), base, iv64);
  }
  /// A block's shared BUFFER item: L elements in the block's shared memory (PTX), or one array for the
  /// host's blocks, which run one after the other.
  Val sharedBuffer(const UOp *u) {
    uint64_t size = 0;
    if (u->nsrc)
      if (auto n = constBound(u->src(0)); n && *n >= 1 && *n <= 1024) size = static_cast<uint64_t>(*n);
    if (!gpu() || !size) failAt(u, "a block's shared BUFFER needs a GPU grid and a constant size of 1..1024");
    auto *T = llvm::ArrayType::get(storageType(u->dtype), size);
    std::string name = "shared" + std::to_string(ParamArg::slotOf(u->arg));
    if (mapping == Mapping::PTX) {
      auto *gv = new llvm::GlobalVariable(mod, T, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(T), name,
                                          nullptr, llvm::GlobalValue::NotThreadLocal, 3);
      gv->setAlignment(llvm::Align(16));
      return {sharedPtrs[u] = gv, nullptr};
    }
    return {sharedPtrs[u] = makeAlloca(T, name), nullptr};
  }
  /// BARRIER: every thread of the block has done what comes before it. On the host, where a block's
  /// threads run one after the other, the loop over them ends and a new one begins.
  void barrier(const UOp *u) {
    if (mapping == Mapping::PTX) {
      b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, llvm::Intrinsic::nvvm_barrier0));
      return;
    }
    if (!gpu() || !open.empty() || !ifs.empty()) failAt(u, "a BARRIER outside a GPU grid's top level (in a loop or an IF)");
    endCountdown(lanes);
    beginLanes();
  }
  Value *loadElem(DType dt, Value *ptr) {
    Value *v = b.CreateLoad(storageType(dt), ptr);
    if (dt == DType::Bool) return b.CreateICmpNE(v, b.getInt8(0));
    if (dt == DType::Float16) return f16Value(v);
    if (dt == DType::BFloat16) return bf16Value(v);
    return v;
  }
  Val load(const UOp *u) {
    Val i = val(u->src(1));
    Value *ok = access(u, i);
    if (auto *c = llvm::dyn_cast_or_null<llvm::ConstantInt>(ok); c && c->isZero()) return {zeroOf(u->dtype), b.getFalse()};
    if (auto *c = llvm::dyn_cast_or_null<llvm::ConstantInt>(ok); c && c->isOne()) ok = nullptr;
    Value *iv = ext64(i.v, u->src(1)->dtype);
    if (!ok) return {loadElem(u->dtype, elemPtr(u, u->dtype, iv)), nullptr};
    // (a read that stays put along the innermost open loop, a tile's broadcast input, gets the select
    // below: branchless, where a branch per unrolled pixel split the tile's loop body into blocks: ResNet-50's
    // 3x3 convolutions at 56x56 and 28x28, their 32 x 14 tiles gated at the row borders, one thread, 6.1-6.8 -> 4.8-5.0 ms)
    bool alongLanes = false;
    if (mapping != Mapping::PTX && !open.empty())
      for (const UOp *x : toposort(u->src(1))) alongLanes = alongLanes || x == open.back()->range;
    if (alongLanes) {
      // gated, on a CPU: load only where the gate holds (a branch the loop vectorizer turns into a masked
      // load of consecutive elements; a select of the index would make it a gather)
      llvm::BasicBlock *pre = b.GetInsertBlock();
      auto *yes = llvm::BasicBlock::Create(lc, "ld", fn), *join = llvm::BasicBlock::Create(lc, "ld.join", fn);
      b.CreateCondBr(ok, yes, join);
      b.SetInsertPoint(yes);
      Value *v = loadElem(u->dtype, elemPtr(u, u->dtype, iv));
      llvm::BasicBlock *loaded = b.GetInsertBlock();
      b.CreateBr(join);
      b.SetInsertPoint(join);
      llvm::PHINode *phi = b.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, loaded);
      phi->addIncoming(zeroOf(u->dtype), pre);
      return {phi, ok};
    }
    // gated (PTX, and a CPU's read that stays put along the innermost loop): read element 0 (every buffer has
    // one) where the gate does not hold, then replace the value
    Value *safe = b.CreateSelect(ok, iv, i64(0));
    Value *v = loadElem(u->dtype, elemPtr(u, u->dtype, safe));
    return {b.CreateSelect(ok, v, zeroOf(u->dtype)), ok};
  }

  Value *bitsOf(DType dt, Value *a) {
    switch (dt) {
    case DType::Float32: return b.CreateZExt(b.CreateBitCast(a, b.getInt32Ty()), b.getInt64Ty());
    case DType::Float64: case DType::WeakFloat: return b.CreateBitCast(a, b.getInt64Ty());
    case DType::Float16: return b.CreateZExt(f16Bits(b.CreateFPExt(a, b.getDoubleTy())), b.getInt64Ty());
    case DType::BFloat16: return b.CreateZExt(bf16Bits(a), b.getInt64Ty());
    default: return ext64(a, dt);
    }
  }
  Value *fromBits(DType dt, Value *w) {
    switch (dt) {
    case DType::Float32: return b.CreateBitCast(b.CreateTrunc(w, b.getInt32Ty()), b.getFloatTy());
    case DType::Float64: case DType::WeakFloat: return b.CreateBitCast(w, b.getDoubleTy());
    case DType::Float16: return f16Value(b.CreateTrunc(w, b.getInt16Ty()));
    case DType::BFloat16: return bf16Value(b.CreateTrunc(w, b.getInt16Ty()));
    case DType::Bool: return b.CreateICmpNE(b.CreateTrunc(w, b.getInt8Ty()), b.getInt8(0));
    default: return b.CreateTrunc(w, computeType(dt));
    }
  }
  Value *cast(DType from, DType to, Value *a) {
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

  /// ALU op u on operands a of dtypes dts (OpSpelling.def), nullptr where the op is not defined on them.
  Value *alu(const UOp *u, DType out, DType in, std::vector<Value *> a, const std::vector<DType> &dts) {
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

  Val param(const UOp *u) {
    ParamArg pa = ParamArg::decode(u->arg);
    if (!isScalarParamNode(u)) failAt(u, "a buffer PARAM must be read through INDEX");
    if (*pa.name == "_device_num") return {literal(u->dtype, interp::intToWord(u->dtype, deviceNum)), nullptr};
    Value *a = varValues.at(*pa.name);
    if (isF(u->dtype)) return {b.CreateSIToFP(a, computeType(u->dtype)), nullptr};
    if (u->dtype == DType::Bool) return {b.CreateICmpNE(a, i64(0)), nullptr};
    return {b.CreateTrunc(a, computeType(u->dtype)), nullptr};
  }
  /// SPECIAL: a thread coordinate, from the special registers or the host's loop over the launch.
  Val special(const UOp *u) {
    bool block = u->arg->str() == "gidx0";
    if (mapping == Mapping::PTX) {
      auto id = block ? llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x : llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
      return {b.CreateZExt(b.CreateCall(llvm::Intrinsic::getDeclaration(&mod, id)), b.getInt64Ty()), nullptr};
    }
    return {block ? blocks.index : lanes.index, nullptr};
  }

  /// A value item: u computed from the values of its sources.
  Val node(const UOp *u) {
    switch (u->op) {
    case Op::SPECIAL: return special(u);
    case Op::BUFFER: return sharedBuffer(u);
    case Op::INDEX: return load(u);
    case Op::LOAD: {
      Val v = val(u->src(0));
      if (u->nsrc > 1 && v.ok) {
        Val alt = val(u->src(1));
        // valid where the read is, else as valid as the alternative
        return {b.CreateSelect(v.ok, v.v, alt.v), alt.ok ? b.CreateOr(v.ok, alt.ok) : nullptr};
      }
      return v;
    }
    default: break;
    }
    if (!isElementwise(u->op)) failAt(u, "the LLVM target cannot render this op");
    std::vector<Val> s;
    for (const UOp *x : u->src()) s.push_back(val(x));
    std::vector<Value *> a;
    for (const Val &v : s) a.push_back(v.v);
    // (a weak operand never meets a strong one here: commit-weak cast it, KernelABI checks)
    DType in = u->src(0)->dtype;
    std::vector<DType> dts;
    for (const UOp *x : u->src()) dts.push_back(x->dtype);
    if (u->op == Op::WHERE) {
      Value *ok = s[0].ok;
      if (s[1].ok || s[2].ok)
        ok = andOk(ok, b.CreateSelect(a[0], s[1].ok ? s[1].ok : b.getTrue(), s[2].ok ? s[2].ok : b.getTrue()));
      return {b.CreateSelect(a[0], a[1], a[2]), ok};
    }
    Value *ok = nullptr;
    for (const Val &v : s) ok = andOk(ok, v.ok);
    Value *e = nullptr;
    if (u->op == Op::CAST) e = cast(in, u->dtype, a[0]);
    else if (u->op == Op::BITCAST) {
      if (dtypeSize(in) != dtypeSize(u->dtype)) failAt(u, "BITCAST between dtypes of different sizes");
      e = fromBits(u->dtype, bitsOf(in, a[0]));
    } else e = alu(u, u->dtype, in, a, dts);
    if (!e) failAt(u, "op not defined on " + std::string(dtypeName(in)));
    return {e, ok};
  }

  /// REDUCE u: its accumulator (and validity flag) at the identity.
  void accumulator(const UOp *u) {
    Op op = u->arg->elems()[0]->op();
    DType dt = u->dtype;
    if (op != Op::ADD && op != Op::MUL && op != Op::MAX) failAt(u, "unsupported reduce op");
    Acc a;
    a.lanes = accumulatorLanes(u);
    a.count = laneCount(a.lanes);
    llvm::Type *T = computeType(dt);
    // one slot per lane, set one by one (SROA makes registers of them once the lanes are unrolled); an
    // identity of zero bytes (a sum's) with one memset: a 32 x 3 tile's 96 stores were half its IR and a
    // large part of LLVM's time on it
    a.value = makeAlloca(a.lanes.empty() ? T : llvm::ArrayType::get(T, static_cast<uint64_t>(a.count)), "acc");
    a.outer = open.empty() ? nullptr : open.back();
    Value *init = literal(dt, interp::reduceIdentity(op, dt));
    auto *constant = llvm::dyn_cast<llvm::Constant>(init);
    if (a.count > 1 && constant && constant->isNullValue()) {
      a.initEnd = b.CreateMemSet(a.value, b.getInt8(0), mod.getDataLayout().getTypeAllocSize(a.value->getAllocatedType()),
                                 a.value->getAlign());
    } else {
      for (int64_t k = 0; k < a.count; ++k) {
        Value *v = a.lanes.empty() ? a.value : b.CreateConstInBoundsGEP2_64(a.value->getAllocatedType(), a.value, 0, static_cast<uint64_t>(k));
        a.initEnd = b.CreateStore(init, v);
      }
    }
    accs[u] = a;
  }
  /// The validity flags of `a`, all true where its value was set to the identity, made at the first Invalid
  /// lane accumulated (an accumulator that never sees one has none: no stores for LLVM to remove).
  void ensureOk(Acc &a) {
    if (a.ok) return;
    a.ok = makeAlloca(a.lanes.empty() ? static_cast<llvm::Type *>(b.getInt1Ty())
                                      : llvm::ArrayType::get(b.getInt1Ty(), static_cast<uint64_t>(a.count)),
                      "acc.ok");
    llvm::IRBuilderBase::InsertPointGuard keep(b);
    b.SetInsertPoint(a.initEnd->getParent(), std::next(a.initEnd->getIterator()));
    for (int64_t k = 0; k < a.count; ++k) {
      Value *o = a.lanes.empty() ? a.ok : b.CreateConstInBoundsGEP2_64(a.ok->getAllocatedType(), a.ok, 0, static_cast<uint64_t>(k));
      b.CreateStore(b.getTrue(), o);
    }
  }
  /// STORE(REDUCE u, x): acc = acc <op> x.
  void accumulate(const UOp *u, const UOp *xu) {
    auto it = accs.find(u);
    if (it == accs.end()) failAt(u, "an accumulation before its REDUCE item");
    Acc &acc = it->second;
    Op op = u->arg->elems()[0]->op();
    DType dt = u->dtype;
    llvm::Type *T = computeType(dt);
    Val x = val(xu);
    if (x.ok) ensureOk(acc);
    auto [slot, okSlot] = accSlot(acc, T);
    Value *cur = b.CreateLoad(T, slot);
    Value *step;
    if (isF(dt)) {
      step = op == Op::ADD ? contract(b.CreateFAdd(cur, x.v))
             : op == Op::MUL ? contract(b.CreateFMul(cur, x.v))
                             : b.CreateSelect(b.CreateFCmpOLT(cur, x.v), x.v, cur);
    } else if (op == Op::MAX) {
      step = b.CreateSelect(isSignedInt(dt) ? b.CreateICmpSLT(cur, x.v) : b.CreateICmpULT(cur, x.v), x.v, cur);
    } else if (dt == DType::Bool) {
      step = op == Op::ADD ? b.CreateOr(cur, x.v) : b.CreateAnd(cur, x.v);
    } else {
      step = op == Op::ADD ? b.CreateAdd(cur, x.v) : b.CreateMul(cur, x.v);
    }
    if (x.ok) {
      acc.poisoned = true;
      b.CreateStore(b.CreateAnd(b.CreateLoad(b.getInt1Ty(), okSlot), x.ok), okSlot);
      step = b.CreateSelect(x.ok, step, cur);
    }
    b.CreateStore(step, slot);
  }

  /// STORE(INDEX(buf, i, gates...), v): the write, where it is valid.
  void store(const UOp *st) {
    const UOp *ix = st->src(0);
    if (ix->op != Op::INDEX) failAt(st, "expected STORE(INDEX(buffer, i), value)");
    Val i = val(ix->src(1));
    Val v = val(st->src(1));
    if (st->src(1)->dtype != ix->dtype) failAt(st, "stored value's dtype differs from the buffer's");
    Value *ok = andOk(access(ix, i), v.ok);
    Value *value = v.v;
    if (ix->dtype == DType::Float16) value = f16Bits(b.CreateFPExt(value, b.getDoubleTy()));
    else if (ix->dtype == DType::BFloat16) value = bf16Bits(value);
    else if (ix->dtype == DType::Bool) value = b.CreateZExt(value, b.getInt8Ty());
    Value *iv = ext64(i.v, ix->src(1)->dtype);
    auto *c = llvm::dyn_cast_or_null<llvm::ConstantInt>(ok);
    if (c && c->isZero()) return; // every lane is Invalid: nothing stored
    if (!ok || (c && c->isOne())) {
      b.CreateStore(value, elemPtr(ix, ix->dtype, iv));
      return;
    }
    auto *doStore = llvm::BasicBlock::Create(lc, "store", fn), *cont = llvm::BasicBlock::Create(lc, "store.end", fn);
    b.CreateCondBr(ok, doStore, cont);
    b.SetInsertPoint(doStore);
    b.CreateStore(value, elemPtr(ix, ix->dtype, iv));
    b.CreateBr(cont);
    b.SetInsertPoint(cont);
  }

  // ---- the items (renderItems calls these, and loopBegin/loopEnd above) ---------------------------------
  void ifBegin(const UOp *u) {
    auto *then = llvm::BasicBlock::Create(lc, "thread", fn), *after = llvm::BasicBlock::Create(lc, "thread.end", fn);
    b.CreateCondBr(val(u->src(0)).v, then, after);
    b.SetInsertPoint(then);
    ifs.push_back(after);
  }
  void ifEnd(const UOp *u) {
    if (ifs.empty()) failAt(u, "ENDIF without an IF");
    b.CreateBr(ifs.back());
    b.SetInsertPoint(ifs.back());
    ifs.pop_back();
  }
  void statement(const UOp *u) { failAt(u, "CUSTOM ops carry C source: only the C target renders them"); }
  void value(const UOp *u) { memo[u] = node(u); }
};


#define UOPC_NONE LSpell{}
#define UOPC_SAME LSpell{Form::None, 0, nullptr, nullptr, true}
#define UOPC_LLVM(form, ...) LSpell{Form::form, __VA_ARGS__}
#define UOPC_ALU(Op_, CF, CS, CU, LF, LS, LU) OpSpelling<LSpell>{Op::Op_, LF, LS, LU},
const OpSpelling<LSpell> kSpellings[] = {
#include "Targets/OpSpelling.def"
};
const OpSpelling<LSpell> *spelling(Op op) { return findSpelling(kSpellings, op); }

} // namespace

namespace llvmbackend {

void checkGpuArch(const std::string &arch) { nvptxMachine(arch); }
void checkHostCpu(const std::string &cpu) { hostMachine(cpu); }

namespace {

/// A kernel's module as the emitter built it from the graph (phase one: reads the graph's Context, so one
/// kernel at a time), before the -O2 pipeline and printing (phase two: LLVM alone, one module per thread).
struct BuiltModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> mod;
  EmittedLLVMKernel k; ///< symbol, summary, launch
  bool ptx = false, o3 = false, optimize = false;
  std::string machine; ///< options.gpuArch (ptx) or options.cpu
};

BuiltModule buildModule(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name,
                        const LLVMEmitOptions &options) {
  KernelABI abi = KernelABI::of(call, "LLVM target"); // (refuses what is not a linearized kernel)
  const UOp *linear = call->src(0);
  const bool ptx = options.mapping == Mapping::PTX;
  llvm::TargetMachine *tm = ptx ? nvptxMachine(options.gpuArch) : hostMachine(options.cpu);
  BuiltModule built;
  built.context = std::make_unique<llvm::LLVMContext>();
  llvm::LLVMContext &lc = *built.context;
  EmittedLLVMKernel &k = built.k;
  k.symbol = sanitizeCName(name);
  auto mod = std::make_unique<llvm::Module>(k.symbol, lc);
  mod->setTargetTriple(tm->getTargetTriple().str());
  mod->setDataLayout(tm->createDataLayout());

  Emitter em(ctx, deviceNum, *mod);
  em.mapping = options.mapping;
  em.abi = std::move(abi);
  em.analyze(linear);
  if (em.abi.written.empty()) failAt(call, "the kernel stores nothing");
  if (em.gpu()) {
    auto launch = linearLaunch(linear); // (the sizes analyze() checked)
    if (!launch) failAt(call, "the kernel was linearized into loops, not for a GPU grid (linearize{grid=1})");
    em.launch.global[0] = launch->first, em.launch.local[0] = launch->second;
    k.launch = em.launch;
  }

  // signature: one pointer per CALL argument, then the variables (KernelABI.h)
  std::vector<llvm::Type *> params;
  std::vector<std::string> names;
  for (const KernelABI::Buffer &buf : em.abi.buffers) {
    params.push_back(em.b.getPtrTy());
    names.push_back(buf.name);
  }
  const std::vector<std::string> &vars = em.abi.vars;
  for (const std::string &v : vars) {
    params.push_back(em.b.getInt64Ty());
    names.push_back(em.abi.varArg.at(v));
  }
  if (em.abi.parallel)
    for (const char *n : {"uopc_lo", "uopc_hi"}) {
      params.push_back(em.b.getInt64Ty());
      names.push_back(n);
    }
  auto *fty = llvm::FunctionType::get(em.b.getVoidTy(), params, false);
  em.fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, k.symbol, *mod);
  em.fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < params.size(); ++i) {
    llvm::Argument *a = em.fn->getArg(static_cast<unsigned>(i));
    a->setName(names[i]);
    if (i + 1 < call->nsrc) {
      a->addAttr(llvm::Attribute::NoAlias);
      a->addAttr(llvm::Attribute::NoCapture);
      if (!em.abi.written.count(static_cast<int64_t>(i))) a->addAttr(llvm::Attribute::ReadOnly);
      em.bufArgs[static_cast<int64_t>(i)] = a;
    } else if (i + 1 - call->nsrc < vars.size()) {
      em.varValues[vars[i + 1 - call->nsrc]] = a;
    } else {
      (i + 1 - call->nsrc == vars.size() ? em.threadLo : em.threadHi) = a; // uopc_lo, uopc_hi
    }
  }
  em.entry = llvm::BasicBlock::Create(lc, "entry", em.fn);
  em.b.SetInsertPoint(em.entry);
  // GridOnHost: the kernel body inside a loop over every thread of the launch
  if (ptx) {
    llvm::NamedMDNode *md = mod->getOrInsertNamedMetadata("nvvm.annotations");
    auto annotate = [&](const char *key, int v) {
      md->addOperand(llvm::MDNode::get(lc, {llvm::ValueAsMetadata::get(em.fn), llvm::MDString::get(lc, key),
                                            llvm::ValueAsMetadata::get(em.b.getInt32(v))}));
    };
    annotate("kernel", 1);
    annotate("maxntidx", static_cast<int>(em.launch.local[0]));
  } else if (em.gpu()) {
    // The blocks, and the threads in each, run last to first, the opposite of the CPU loops: a kernel in
    // which a thread reads what a later-numbered thread writes gives a different result here (on a GPU it
    // would be a race). Races the other way round need linearize's static check; a run on the host cannot
    // show them. Each stretch of items between barriers is a loop over the block's threads of its own.
    em.beginCountdown(em.blocks, em.launch.global[0], "gidx");
    em.beginLanes();
  }
  renderItems(linearItems(linear), em);
  if (!em.open.empty() || !em.ifs.empty()) fail("LLVM target: the LINEAR items leave a loop or an IF open");
  if (em.blocks.addr) {
    em.endCountdown(em.lanes);
    em.endCountdown(em.blocks);
  }
  em.b.CreateRetVoid();

  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*mod, &es)) fail("LLVM target: kernel " + k.symbol + " does not verify: " + es.str());
  if (ptx && !em.libdeviceUsers.empty()) linkLibdevice(*mod, em.fn, em.libdeviceUsers);
  // a register tile: two output loops or more upcast into lanes (the optimizer's applied_opts)
  int upcasts = 0;
  for (const std::string &o : appliedOpts(kernelSink(call))) upcasts += o.rfind("upcast:", 0) == 0;
  built.ptx = ptx;
  built.optimize = options.optimize || ptx;
  built.o3 = !ptx && upcasts >= 2;
  built.machine = ptx ? options.gpuArch : options.cpu;
  k.summary = em.abi.summary(call, k.symbol, deviceNum);
  if (k.launch)
    k.summary += "; grid " + std::to_string(k.launch->global[0]) + " x " + std::to_string(k.launch->local[0]) +
                 " threads";
  built.mod = std::move(mod);
  return built;
}

/// Phase two: the -O2 pipeline, the IR text and the PTX, with this thread's own target machine.
EmittedLLVMKernel finishModule(BuiltModule &built) {
  EmittedLLVMKernel &k = built.k;
  llvm::Module &mod = *built.mod;
  llvm::TargetMachine *tm = built.ptx ? nvptxMachine(built.machine) : hostMachine(built.machine);
  if (built.optimize) {
    optimizeO2(mod, tm, built.ptx, built.o3);
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(mod, &es)) fail("LLVM target: kernel " + k.symbol + " does not verify after -O2: " + es.str());
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  mod.print(os, nullptr);
  k.ir = "; " + k.summary + "\n; generated by uopc\n" + os.str();
  if (built.ptx) k.ptx = "// " + k.summary + "\n// generated by uopc\n" + emitPTX(mod, tm);
  return std::move(k);
}

} // namespace

EmittedLLVMKernel emitKernel(Context &ctx, const UOp *call, int64_t deviceNum, std::string_view name,
                             const LLVMEmitOptions &options) {
  BuiltModule built = buildModule(ctx, call, deviceNum, name, options);
  return finishModule(built);
}

std::vector<EmittedLLVMKernel> emitKernels(Context &ctx, const std::vector<LLVMKernelRequest> &requests) {
  std::vector<BuiltModule> built;
  built.reserve(requests.size());
  for (const LLVMKernelRequest &r : requests) built.push_back(buildModule(ctx, r.call, r.deviceNum, r.name, r.options));
  // phase two on one thread per core (at most 16), each taking the next module; the first failure (in
  // kernel order) is the one reported
  std::vector<EmittedLLVMKernel> out(built.size());
  std::vector<std::string> errors(built.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < built.size();) {
      try {
        out[i] = finishModule(built[i]);
      } catch (const std::exception &e) {
        errors[i] = e.what();
      }
      built[i].mod.reset(); // (freed on the thread that used it)
      built[i].context.reset();
    }
  };
  unsigned cores = std::thread::hardware_concurrency();
  size_t threads = std::min<size_t>(std::max(1u, std::min(cores ? cores : 1u, 16u)), built.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread &t : pool) t.join();
  for (const std::string &e : errors)
    if (!e.empty()) fail(e);
  return out;
}

} // namespace llvmbackend
} // namespace uopc
