//===- Types.h - ops, dtypes and the small enums of graph format v1 -------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace uopc {

/// Every op of graph format v1 (see lib/IR/Ops.def).
enum class Op : uint8_t {
#define UOPC_OP(Name, Group) Name,
#include "IR/Ops.def"
};
inline constexpr unsigned kNumOps = 0
#define UOPC_OP(Name, Group) +1
#include "IR/Ops.def"
    ;

enum class OpGroup : uint8_t { Define, Meta, Mem, Unary, Binary, Ternary, Control, Const, Buffer, Movement, Reduce };

std::string_view opName(Op op);
OpGroup opGroup(Op op);
/// Looks an op up by name; accepts the newer alias UNSHARD for MULTI.
std::optional<Op> opFromName(std::string_view name);

inline bool isUnary(Op op) { return opGroup(op) == OpGroup::Unary && op != Op::CAST && op != Op::BITCAST; }
inline bool isBinary(Op op) { return opGroup(op) == OpGroup::Binary; }
inline bool isTernary(Op op) { return opGroup(op) == OpGroup::Ternary; }
/// tinygrad's GroupOp.ALU: unary, binary and ternary math.
inline bool isALU(Op op) { return isUnary(op) || isBinary(op) || isTernary(op); }
/// tinygrad's GroupOp.Elementwise: ALU plus CAST and BITCAST.
inline bool isElementwise(Op op) { return isALU(op) || op == Op::CAST || op == Op::BITCAST; }
/// tinygrad's GroupOp.Movement (MULTI is not in it).
inline bool isMovement(Op op) {
  return op == Op::RESHAPE || op == Op::EXPAND || op == Op::PERMUTE || op == Op::PAD || op == Op::SHRINK ||
         op == Op::FLIP;
}
inline bool isComparison(Op op) { return op == Op::CMPLT || op == Op::CMPNE || op == Op::CMPEQ; }
/// f(a,b) == f(b,a).
inline bool isCommutative(Op op) {
  return op == Op::ADD || op == Op::MUL || op == Op::MAX || op == Op::CMPNE || op == Op::CMPEQ || op == Op::XOR ||
         op == Op::AND || op == Op::OR;
}
/// Ops allowed as the reduce op of REDUCE/ALLREDUCE.
inline bool isReduceOp(Op op) { return op == Op::ADD || op == Op::MUL || op == Op::MAX; }

/// Scalar dtypes (see lib/IR/DTypes.def).
enum class DType : uint8_t {
#define UOPC_DTYPE(Enum, Name, Size, Kind) Enum,
#include "IR/DTypes.def"
};
enum class DTypeKind : uint8_t { Void, Int, UInt, Float, Bool };

std::string_view dtypeName(DType dt);
std::optional<DType> dtypeFromName(std::string_view name);
/// Bytes one element takes in a buffer.
unsigned dtypeSize(DType dt);
DTypeKind dtypeKind(DType dt);
inline bool isInt(DType dt) { return dtypeKind(dt) == DTypeKind::Int || dtypeKind(dt) == DTypeKind::UInt; }
inline bool isUnsigned(DType dt) { return dtypeKind(dt) == DTypeKind::UInt; }
inline bool isFloat(DType dt) { return dtypeKind(dt) == DTypeKind::Float; }
inline bool isBool(DType dt) { return dt == DType::Bool; }

/// tinygrad's AxisType (the arg of RANGE). DEVICE and WEAK are tinygrad 0.14.0's (DEVICE: the range over a
/// multi-device value's devices); they come last so the .uopb codes of the others stay as they were.
enum class AxisType : uint8_t { GLOBAL, WARP, LOCAL, LOOP, GROUP_REDUCE, REDUCE, UPCAST, UNROLL, THREAD, PLACEHOLDER,
                                DEVICE, WEAK };
std::string_view axisTypeName(AxisType a);
std::optional<AxisType> axisTypeFromName(std::string_view name);

/// tinygrad's AddrSpace.
enum class AddrSpace : uint8_t { GLOBAL, LOCAL, REG, ALU };
std::string_view addrSpaceName(AddrSpace a);
std::optional<AddrSpace> addrSpaceFromName(std::string_view name);

} // namespace uopc
