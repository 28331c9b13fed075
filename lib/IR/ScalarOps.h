//===- ScalarOps.h - per-dtype scalar semantics (tinygrad's exec_alu + truncate) ===//
// Shared by the reference interpreter, the simplifier's constant folder and the C emitter's tests; it
// lives in the namespace uopc::interp where it was born.
// One element of any dtype is held in a 64-bit Word. The meaning of each op on one element follows
// tinygrad at the corpus commit (python_alu + dtype.truncate) and, where those leave it open (casts from
// float to int out of range), what tinygrad's C renderer produces on x86-64.
#pragma once

#include "IR/Types.h"

#include <bit>
#include <cstdint>

namespace uopc::interp {

/// One element as the interpreter holds it:
///  - integers (weakint included): the value wrapped to the dtype's width, then sign-extended (signed
///    dtypes) or zero-extended (unsigned) to 64 bits; uint64 keeps its 64 bits;
///  - bool: 0 or 1;
///  - floats: the bits of a double whose value is already rounded to the dtype (float32, float16,
///    bfloat16, fp8); float64 and weakfloat are plain doubles.
using Word = uint64_t;

inline double asDouble(Word w) { return std::bit_cast<double>(w); }
inline Word fromDouble(double d) { return std::bit_cast<Word>(d); }
inline int64_t asInt(Word w) { return static_cast<int64_t>(w); }

/// Floats and weakfloat.
bool isFloatDType(DType dt);
/// Integers (weakint included) and bool: the dtypes held as integer words.
bool isIntWordDType(DType dt);
/// The dtypes a Word can hold: floats, bool and integers of up to 64 bits (not uint128/uint256, void).
bool isHoldable(DType dt);

/// Wraps an integer to dt's width (two's complement), like tinygrad's ctypes truncation. Bool: nonzero -> 1.
Word wrapInt(DType dt, uint64_t v);
/// Rounds a double to dt's precision: float32, float16, bfloat16 (via float32, as tinygrad does), fp8.
double roundFloat(DType dt, double v);
/// The word of an integer value in dt (ints wrapped, floats converted, bool nonzero).
Word intToWord(DType dt, int64_t v);
Word uintToWord(DType dt, uint64_t v);
/// The word of a float value in dt (ints: C conversion of the truncated value).
Word floatToWord(DType dt, double v);

/// CAST of one element from `from` to `to`.
Word castWord(DType from, DType to, Word w);
/// BITCAST between two dtypes of the same item size.
Word bitcastWord(DType from, DType to, Word w);

/// True when `op` is an elementwise op the interpreter evaluates on operands of dtype `in`
/// (for WHERE: the dtype of the two branches).
bool aluSupported(Op op, DType in);
/// One element of a unary, binary or ternary ALU op (not WHERE). `in` is the operands' dtype, `out`
/// the node's. Integer division by zero gives 0, as tinygrad's python semantics do.
Word aluWord(Op op, DType out, DType in, const Word *operands);

/// The identity of a reduce op (ADD, MUL, MAX) in dtype dt.
Word reduceIdentity(Op op, DType dt);
/// acc = acc (op) x for a reduce op, exact for integers. Floats accumulate in double; round the final
/// value with roundFloat.
Word reduceStep(Op op, DType dt, Word acc, Word x);

/// Decodes one element from its little-endian storage bytes (dtypeSize(dt) of them).
Word loadWord(DType dt, const unsigned char *p);
/// Encodes one element into its little-endian storage bytes.
void storeWord(DType dt, Word w, unsigned char *p);

/// tinygrad's threefry2x32 on (x, key), both uint64 (codegen/decomp/op.py).
uint64_t threefry2x32(uint64_t x, uint64_t key);

} // namespace uopc::interp
