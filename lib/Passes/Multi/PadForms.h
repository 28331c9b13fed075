//===- PadForms.h - building blocks of the Invalid-pad and multi-device forms ===//
// Shared by invalid-pad, multi-lower and reduce-identity: typed constants, shape operands, the explicit
// fill mask of an external pad, `_device_num`, and tinygrad's _shard/_unshard/_unshard_fill.
#pragma once

#include "IR/Shape.h"

#include <cstdint>
#include <optional>

namespace uopc::padforms {

/// A CONST of dtype dt with value v (bool, int or float arg by dtype): tinygrad's const_like.
const UOp *constOf(Context &ctx, DType dt, int64_t v);
/// The identity of a reduce op in dtype dt (tinygrad's identity_element): ADD 0, MUL 1, MAX dtype.min.
const UOp *reduceIdentityConst(Context &ctx, Op rop, DType dt);
/// A shape operand for these dims: a STACK of weakints (STACK void for ()).
const UOp *shapeOperand(Context &ctx, const Shape &dims);
/// The constant dims of a shape operand (a STACK of CONSTs or one CONST), nullopt when symbolic.
std::optional<std::vector<int64_t>> constOperand(const UOp *operand);
/// The explicit mask of `PAD(x, off, size)`: PAD(CAST(EXPAND(x.const_like(1), x.shape), bool), off, size),
/// True where x lies. tinygrad's `X.const_like(1).cast(bool)` padded like x (bool pads fill False).
const UOp *padMask(Context &ctx, DType xdt, const Shape &xshape, const UOp *off, const UOp *size);
/// `where(padMask, PAD(x), 0)`: a pad that fills 0 whatever PAD itself fills (tinygrad's external pad).
const UOp *zeroFilledPad(Context &ctx, const UOp *x, const Shape &xshape, const UOp *off, const UOp *size);

/// The `_device_num` variable of `ndev` devices: PARAM weakint, slot -1, vmin_vmax [0, ndev-1], as
/// tinygrad's UOp.variable("_device_num", 0, ndev-1) spells it.
const UOp *deviceNum(Context &ctx, int64_t ndev);
/// a*b and a+b on weakints, folding constants.
const UOp *mulW(Context &ctx, const UOp *a, const UOp *b);
const UOp *addW(Context &ctx, const UOp *a, const UOp *b);

/// tinygrad's _unshard: PAD a shard of shape `shard` back to the full shape along `axis`, at offset
/// shard[axis]*_device_num; with pad_fill invalid the other shards read Invalid.
const UOp *unshard(Context &ctx, const UOp *x, const Shape &shard, int axis, int64_t ndev);
/// tinygrad's _unshard_fill: the same with an explicit 0 fill (for an ALU allreduce).
const UOp *unshardFill(Context &ctx, const UOp *x, const Shape &shard, int axis, int64_t ndev);
/// tinygrad's _shard: SHRINK a full tensor to device _device_num's part of `axis` (x itself for rank 0).
/// nullopt-like null when the axis does not split evenly.
const UOp *shard(Context &ctx, const UOp *x, const Shape &full, int axis, int64_t ndev);

} // namespace uopc::padforms
