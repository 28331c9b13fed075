//===- PadForms.cpp - building blocks of the Invalid-pad and multi-device forms ===//
#include "Passes/Multi/PadForms.h"

#include "IR/Error.h"
#include "IR/Records.h"
#include "IR/ProducerForms.h"

#include <cmath>
#include <limits>

namespace uopc::padforms {

const UOp *constOf(Context &ctx, DType dt, int64_t v) {
  if (isFloat(dt) || dt == DType::WeakFloat) return ctx.constFloat(dt, double(v));
  if (dt == DType::Bool) return ctx.make(Op::CONST, dt, {}, ctx.argBool(v != 0));
  return ctx.constInt(dt, v);
}

const UOp *reduceIdentityConst(Context &ctx, Op rop, DType dt) {
  switch (rop) {
  case Op::ADD: return constOf(ctx, dt, 0);
  case Op::MUL: return constOf(ctx, dt, 1);
  case Op::MAX:
    if (isFloat(dt) || dt == DType::WeakFloat) return ctx.constFloat(dt, -std::numeric_limits<double>::infinity());
    if (dt == DType::Bool || isUnsigned(dt)) return constOf(ctx, dt, 0);
    if (dt == DType::WeakInt || dtypeSize(dt) >= 8) return ctx.constInt(dt, std::numeric_limits<int64_t>::min());
    return ctx.constInt(dt, -(int64_t(1) << (8 * dtypeSize(dt) - 1)));
  default: fail("no reduce identity for " + std::string(opName(rop)));
  }
}

const UOp *shapeOperand(Context &ctx, const Shape &dims) {
  if (dims.empty()) return ctx.make(Op::STACK, DType::Void);
  return ctx.make(Op::STACK, DType::WeakInt, std::span<const UOp *const>(dims.data(), dims.size()));
}

std::optional<std::vector<int64_t>> constOperand(const UOp *operand) {
  std::vector<int64_t> out;
  if (operand->op == Op::CONST) {
    if (!operand->arg || !operand->arg->isInt()) return std::nullopt;
    return std::vector<int64_t>{operand->arg->i()};
  }
  if (operand->op != Op::STACK) return std::nullopt;
  for (const UOp *s : operand->src()) {
    if (s->op != Op::CONST || !s->arg || !s->arg->isInt()) return std::nullopt;
    out.push_back(s->arg->i());
  }
  return out;
}

const UOp *padMask(Context &ctx, DType xdt, const Shape &xshape, const UOp *off, const UOp *size) {
  const UOp *one = constOf(ctx, xdt == DType::Void ? DType::Bool : xdt, 1);
  // a rank-1 pad spelled with single CONST operands gets a single-CONST shape too (tinygrad's form), so
  // the mask is the very node an existing explicit mask of the graph uses
  const UOp *shapeOp = xshape.size() == 1 && off->op == Op::CONST ? xshape[0] : shapeOperand(ctx, xshape);
  const UOp *full = xshape.empty() ? one : ctx.make(Op::EXPAND, one->dtype, {one, shapeOp});
  const UOp *b = one->dtype == DType::Bool ? full : ctx.make(Op::CAST, DType::Bool, {full}, ctx.argDType(DType::Bool));
  return ctx.make(Op::PAD, DType::Bool, {b, off, size});
}

const UOp *zeroFilledPad(Context &ctx, const UOp *x, const Shape &xshape, const UOp *off, const UOp *size) {
  const UOp *padded = ctx.make(Op::PAD, x->dtype, {x, off, size});
  if (x->dtype == DType::Bool) return padded; // bool pads fill False in either semantics
  return ctx.make(Op::WHERE, x->dtype, {padMask(ctx, x->dtype, xshape, off, size), padded, constOf(ctx, x->dtype, 0)});
}

// the same node the reader makes of a 0.14.0 DEVICE range (IR/ProducerForms.h)
const UOp *deviceNum(Context &ctx, int64_t ndev) { return deviceNumParam(ctx, ndev); }

static std::optional<int64_t> cint(const UOp *u) {
  if (u->op == Op::CONST && u->arg && u->arg->isInt()) return u->arg->i();
  return std::nullopt;
}

const UOp *mulW(Context &ctx, const UOp *a, const UOp *b) {
  auto ca = cint(a), cb = cint(b);
  if (ca && cb) return ctx.constInt(DType::WeakInt, *ca * *cb);
  if (ca && *ca == 1) return b;
  if (cb && *cb == 1) return a;
  if (ca) std::swap(a, b); // variable first, as tinygrad prints dnum*3
  return ctx.make(Op::MUL, DType::WeakInt, {a, b});
}

const UOp *addW(Context &ctx, const UOp *a, const UOp *b) {
  auto ca = cint(a), cb = cint(b);
  if (ca && cb) return ctx.constInt(DType::WeakInt, *ca + *cb);
  if (ca && *ca == 0) return b;
  if (cb && *cb == 0) return a;
  return ctx.make(Op::ADD, DType::WeakInt, {a, b});
}

namespace {
/// Offsets (0 except `axis`: bsz*dnum) and the full sizes of an unshard.
std::pair<const UOp *, const UOp *> unshardOperands(Context &ctx, const Shape &shard, int axis, int64_t ndev) {
  Shape off(shard.size(), ctx.constInt(DType::WeakInt, 0)), size = shard;
  const UOp *bsz = shard.at(static_cast<size_t>(axis));
  off[static_cast<size_t>(axis)] = mulW(ctx, deviceNum(ctx, ndev), bsz);
  size[static_cast<size_t>(axis)] = mulW(ctx, bsz, ctx.constInt(DType::WeakInt, ndev));
  return {shapeOperand(ctx, off), shapeOperand(ctx, size)};
}
} // namespace

const UOp *unshard(Context &ctx, const UOp *x, const Shape &shardShape, int axis, int64_t ndev) {
  auto [off, size] = unshardOperands(ctx, shardShape, axis, ndev);
  return ctx.make(Op::PAD, x->dtype, {x, off, size});
}

const UOp *unshardFill(Context &ctx, const UOp *x, const Shape &shardShape, int axis, int64_t ndev) {
  auto [off, size] = unshardOperands(ctx, shardShape, axis, ndev);
  return zeroFilledPad(ctx, x, shardShape, off, size);
}

const UOp *shard(Context &ctx, const UOp *x, const Shape &full, int axis, int64_t ndev) {
  if (full.empty()) return x;
  auto c = cint(full.at(static_cast<size_t>(axis)));
  if (!c || *c % ndev != 0) return nullptr;
  Shape off(full.size(), ctx.constInt(DType::WeakInt, 0)), size = full;
  const UOp *sz = ctx.constInt(DType::WeakInt, *c / ndev);
  off[static_cast<size_t>(axis)] = mulW(ctx, deviceNum(ctx, ndev), sz);
  size[static_cast<size_t>(axis)] = sz;
  return ctx.make(Op::SHRINK, x->dtype, {x, shapeOperand(ctx, off), shapeOperand(ctx, size)});
}

} // namespace uopc::padforms
