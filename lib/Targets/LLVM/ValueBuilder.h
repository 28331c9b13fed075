//===- ValueBuilder.h - what LLVMEmitter.cpp and ValueBuilder.cpp share (plugin-internal) ===//
// Private to lib/Targets/LLVM/{LLVMEmitter,ValueBuilder}.cpp; not part of the public API.
// ValueBuilder builds the IR of values at the builder's insertion point: the dtypes' types and constants,
// the conversions, the ALU ops (alu(), from Targets/OpSpelling.def's LLVM columns: the forms below; the
// table is LLVMEmitter.cpp's) and the C prelude's helpers as IR. LLVMEmitter.cpp's Emitter is a
// ValueBuilder and builds the kernel around them: loops, loads and stores, accumulators, the GPU mappings.
#pragma once

#include "IR/ScalarOps.h"
#include "IR/UOp.h"
#include "Targets/LLVMTarget.h"
#include "Targets/OpSpelling.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <string>
#include <vector>

namespace uopc::llvmbackend::detail {

using interp::Word;
using llvm::Value;
using Mapping = LLVMEmitOptions::Mapping;

[[noreturn]] void failAt(const UOp *u, const std::string &msg);

inline bool isF(DType dt) { return isFloat(dt); }
inline bool isSingle(DType dt) { return dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16; }
inline bool isHalf(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }
/// Signed integers (weakint included); bool and unsigned integers are extended with zeros.
inline bool isSignedInt(DType dt) { return isInt(dt) && !isUnsigned(dt); }

/// A value and its validity (nullptr: always valid).
struct Val {
  Value *v = nullptr, *ok = nullptr;
};

struct ValueBuilder;
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
  llvm::Function *(ValueBuilder::*function)() = nullptr; ///< Call: builds the function called
  bool same = false;               ///< as the signed column
  llvm::CmpInst::Predicate predicate() const { return static_cast<llvm::CmpInst::Predicate>(code); }
  llvm::Instruction::BinaryOps binary() const { return static_cast<llvm::Instruction::BinaryOps>(code); }
};
/// An op's row of OpSpelling.def (the table follows Emitter in LLVMEmitter.cpp, whose functions Call names),
/// nullptr if none.
const OpSpelling<LSpell> *spelling(Op op);

struct ValueBuilder {
  llvm::LLVMContext &lc;
  llvm::Module &mod;
  llvm::IRBuilder<> b;
  Mapping mapping = Mapping::Loops;
  std::vector<std::string> libdeviceUsers; ///< ops that call libdevice (PTX)

  explicit ValueBuilder(llvm::Module &m) : lc(m.getContext()), mod(m), b(lc) {}
  /// v with the `contract` flag when it is a float add, subtract or multiply of the graph's (an ALU op or an
  /// accumulator's step): a multiply feeding an add may become one fused multiply-add, as C's
  /// -ffp-contract=fast allows the C target's compiler; the one rounding less is within every tolerance
  /// the corpora give. The emulations of other ops (a float modulo's x - q*y) stay uncontracted.
  Value *contract(Value *v);

  // ---- types and constants ---------------------------------------------------------------------------
  llvm::Type *computeType(DType dt);
  llvm::Type *storageType(DType dt);
  Value *literal(DType dt, Word w);
  Value *zeroOf(DType dt) { return literal(dt, isF(dt) ? interp::fromDouble(0) : 0); }
  Val constant(const UOp *u);
  Value *andOk(Value *x, Value *y);
  Value *i64(uint64_t v) { return b.getInt64(v); }
  /// An integer value of dtype dt as 64 bits (sign-extended when dt is signed).
  Value *ext64(Value *v, DType dt);
  /// A 64-bit integer narrowed to dt the C way: wrapped, bool nonzero.
  Value *narrow(Value *v, DType dt);
  Value *toDouble(Value *v, DType dt);
  Value *toFloat(Value *v, DType dt);
  Value *intrinsic(llvm::Intrinsic::ID id, std::vector<Value *> args);
  /// Libm(I) (OpSpelling.def): LLVM's intrinsic (libm) on the host, libdevice's double function on NVPTX.
  Value *math(const UOp *u, const LSpell &c, std::vector<Value *> args);

  // ---- the C prelude's helpers, as IR ----------------------------------------------------------------
  /// float16 bits (i16) of a double, round to nearest even, overflow to inf (uopc_f16_bits).
  Value *f16Bits(Value *x);
  /// The float value of float16 bits (uopc_f16_value).
  Value *f16Value(Value *h);
  Value *isFiniteBits32(Value *u);
  /// tinygrad's float_to_bf16 (uopc_bf16_bits): i16.
  Value *bf16Bits(Value *x);
  Value *bf16Value(Value *h);
  Value *roundBF16(Value *x);
  /// A value of dt's compute type rounded to dt (float16, bfloat16); x is float or double.
  Value *roundTo(DType dt, Value *x);
  /// cvttsd2si-like conversions of a double: lo <= trunc(x) < hi gives it, else `bad`.
  Value *cvtI(Value *x, double lo, double hi, uint64_t bad);
  Value *cvtI32(Value *x) { return cvtI(x, -2147483648.0, 2147483648.0, static_cast<uint64_t>(int64_t{INT32_MIN})); }
  Value *cvtI64(Value *x) { return cvtI(x, -9223372036854775808.0, 9223372036854775808.0, 1ull << 63); }
  Value *cvtU64(Value *x);
  /// Divisor `d` made safe to divide by (1 where it is 0 or, for signed division, -1).
  Value *safeDivisor(Value *d, bool isSigned);
  /// uopc_floordiv_s & co on 64-bit words.
  Value *intDiv(Op op, bool uns, Value *x, Value *y);
  /// uint64 uopc_ipow(int64 base, int64 e): an internal function with a loop.
  llvm::Function *ipowFn();

  // ---- conversions and ALU ops ----------------------------------------------------------------------
  Value *bitsOf(DType dt, Value *a);
  Value *fromBits(DType dt, Value *w);
  Value *cast(DType from, DType to, Value *a);
  /// ALU op u on operands a of dtypes dts (OpSpelling.def), nullptr where the op is not defined on them.
  Value *alu(const UOp *u, DType out, DType in, std::vector<Value *> a, const std::vector<DType> &dts);
};

} // namespace uopc::llvmbackend::detail
