//===- MultiLower.cpp - the `multi-lower` pass: multi-device ops to _device_num forms ===//
// Stage 1 of seed 000, in two rewrites over the tensor-level graph.
//
// 1. Per-op handling of sharded values (tinygrad's multi_pm + replace_allreduce, schedule/multi.py):
//    MULTI moves up through every op, so each op runs on one device's shard:
//      elementwise / STACK   operands brought to the output's shard (unsharded ones SHRINK to the device's
//                            part with _device_num offsets; ones sharded on another axis are gathered first)
//      RESHAPE, EXPAND, PERMUTE, FLIP, PAD, SHRINK off the sharded axis: the same op on the shard
//      SHRINK to exactly one shard: COPY(MSELECT(shard, i)) to every device, no longer sharded
//      REDUCE over the sharded axis: local REDUCE + ALLREDUCE (in the pre-cast dtype for half/bf16 sums)
//      COPY to one device:   the shards MSELECTed, copied and concatenated (zero-filled PADs + ADD)
//      COPY to several:      ALLREDUCE(ADD) of the zero-filled unshard (tinygrad's _unshard_fill)
//      STORE / AFTER:        write the shard into the shard buffer
//      COPY of one device's value onto several: MSTACK of one COPY per device; several to one: MSELECT(0)
//      MSELECT(MSTACK(s...), i) -> s_i
//      ALLREDUCE(x):         on CPU targets, among x's own devices and of a dtype MPI has (8- to 64-bit
//                            integers, float32, float64): kept whole, ALLREDUCE(CONTIGUOUS(x))[op, devices,
//                            order], order "ring" where the rule below picks the ring, else "devices": one
//                            manifest step the runner performs (in that order; under mpirun MPI_Allreduce,
//                            docs/schedule.md). Otherwise (option collectives=0, a GPU target, one
//                            destination device, other devices, a symbolic size, another dtype): the naive allreduce, op-fold
//                            of COPY(MSELECT(x, i), dest) over the devices, or the ring allreduce for large
//                            buffers (below)
// 2. The symbolic form (tinygrad's symbolic_multi_pm):
//      MULTI(x, axis)        -> PAD(x, axis offset shard*_device_num, full size): other shards Invalid
//      MSELECT(x, i)         -> where(_device_num == i, x, Invalid)
//      MSTACK(s0..sn)        -> where(_device_num == 0, s0, where(_device_num == 1, s1, ... Invalid))
//    (the STACK(s...).index(_device_num) form of the seed is lowered straight to the nested where).
//
// What remains for kernel split: no MULTI, MSELECT or MSTACK, and ALLREDUCE only kept whole (its arg's third
// entry, the order). Other cross-device movement is COPY: to one device (its source is a `_device_num == i` gated value or a single-device one: the copy
// reads the device that holds the data), or to several devices from a value on the same number of devices
// (a per-device copy). `_device_num` (PARAM weakint, slot -1, vmin_vmax [0, ndev-1]) appears in PAD/SHRINK
// offsets and WHERE gates; every node is evaluated once per device with it bound.
//
// The allreduce (tinygrad's handle_allreduce, schedule/allreduce.py): x = CONTIGUOUS(x) first, then
//   naive  op-fold over i of COPY(MSELECT(x, i), dest): every device's buffer copied whole to each destination.
//   ring   x flattened to (numel,) and cut into ndev chunks: factor = the first of 32, 16, 8, 4, 2 dividing
//          numel (else 1); base, left = divmod(numel/factor, ndev); chunk k has (base+1)*factor elements for
//          k < left, base*factor after. Reduce-scatter, for chunk i over ndev-1 steps (src = i+step,
//          dst = i+step+1, mod ndev): r = op(COPY(r, dst), COPY(MSELECT(chunk, dst), dst)), the first copy
//          COPY(MSELECT(chunk, i), dst); r ends on device i-1 holding the whole reduction of chunk i.
//          All-gather: to one device, COPY(r, dest); to several, the chain r, COPY(r, i), COPY(.., i+1), ...
//          (ndev-1 neighbour copies) and MSTACK(chain[(j-i+1) % ndev] for device j): each device its own
//          copy. Reassembly: the chunks PADded back to (numel,) and combined, then RESHAPE to the shape.
//          Differences from tinygrad: the chunks are combined with nested where(padMask_k, PAD(c_k), ...)
//          (the last one zero-filled) instead of tinygrad's sum of padded chunks, so no ADD touches a
//          chunk's value (exact for -0.0 and for MAX/MUL); empty chunks (numel < ndev*factor) are left out.
//   Which one (tinygrad's rule, RING=1 ALL2ALL=0 defaults): ring when ndev > 2 and numel >
//   RING_ALLREDUCE_THRESHOLD (256000 elements), else naive; the ring needs a constant shape and, for a
//   multi-device destination, the destination devices equal to the buffer's (else naive).
//   Environment, read each time the pass runs:
//     UOPC_RING_ALLREDUCE            unset/"auto": the rule above (tinygrad RING=1); "0": always naive
//                                    (RING=0); "1": ring for every allreduce of >= 2 devices (RING=2)
//     UOPC_RING_ALLREDUCE_THRESHOLD  the element count above which the rule picks the ring (tinygrad's
//                                    RING_ALLREDUCE_THRESHOLD), default 256000
//   ALL2ALL (tinygrad's other large-buffer allreduce, off by default) is not implemented.
//
// Precondition: pad_fill invalid (run invalid-pad first; the pass refuses a zero-fill graph) and a graph
// that verifies. Ops tinygrad refuses on sharded values (PAD/FLIP of the sharded axis, SHRINK of part of a
// shard, a CALL of a sharded value) are refused with an Error naming the node.
#include "IR/Collective.h"
#include "IR/Error.h"
#include "IR/Records.h"
#include "IR/Shape.h"
#include "Passes/Multi/PadForms.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace uopc {
namespace {

using namespace padforms;

struct MultiState {
  Graph *g;
  ShapeInfo *shapes;
  bool keepCollectives = false; ///< a CPU target: an allreduce among its own devices stays one ALLREDUCE

  [[noreturn]] void error(const UOp *u, const std::string &msg) const { fail(g->describe(u) + ": " + msg); }
  const Shape &shape(const UOp *u) const {
    const auto &s = shapes->shape(u);
    if (!s) error(u, "multi-lower needs the shape of this node");
    return *s;
  }
  const std::vector<std::string> &devices(const UOp *u) const { return shapes->device(u); }
  int64_t ndev(const UOp *u) const { return static_cast<int64_t>(devices(u).size()); }
};

int axisOf(const UOp *u) { return u->op == Op::MULTI ? static_cast<int>(u->arg->i()) : -1; }
const UOp *multi(Context &ctx, const UOp *x, int axis) { return ctx.make(Op::MULTI, x->dtype, {x}, ctx.argInt(axis)); }
const UOp *strip(const UOp *u) { return u->op == Op::MULTI ? u->src(0) : u; }

/// The dims of a shape operand (STACK of weakints, one weakint, or the empty STACK).
Shape operandDims(const UOp *op) {
  if (op->op == Op::STACK) return Shape(op->src().begin(), op->src().end());
  return Shape{op};
}
std::optional<int64_t> dimConst(const UOp *d) { return ShapeInfo::constDim(d); }

const UOp *copyTo(MultiState &st, Context &ctx, const UOp *x, const std::vector<std::string> &dest, bool tuple) {
  return ctx.make(Op::COPY, x->dtype, {x}, encodeDevices(ctx, dest, tuple));
}
const UOp *mselect(Context &ctx, const UOp *x, int64_t i) { return ctx.make(Op::MSELECT, x->dtype, {x}, ctx.argInt(i)); }

/// tinygrad's copy_multi: a sharded value to one device (concatenate) or to several (ALLREDUCE).
const UOp *copyMulti(MultiState &st, Context &ctx, const UOp *m, const Arg *destArg) {
  const UOp *x = m->src(0);
  int axis = axisOf(m);
  int64_t nd = st.ndev(x);
  const Shape &sh = st.shape(x);
  std::vector<std::string> dest = decodeDevices(destArg);
  if (destArg->kind == ArgKind::String) {
    Shape full = sh;
    full[static_cast<size_t>(axis)] = mulW(ctx, sh[static_cast<size_t>(axis)], ctx.constInt(DType::WeakInt, nd));
    const UOp *sum = nullptr;
    for (int64_t i = 0; i < nd; ++i) {
      const UOp *piece = copyTo(st, ctx, mselect(ctx, x, i), dest, false);
      Shape off(sh.size(), ctx.constInt(DType::WeakInt, 0));
      off[static_cast<size_t>(axis)] = mulW(ctx, sh[static_cast<size_t>(axis)], ctx.constInt(DType::WeakInt, i));
      const UOp *p = zeroFilledPad(ctx, piece, sh, shapeOperand(ctx, off), shapeOperand(ctx, full));
      sum = sum ? ctx.make(Op::ADD, x->dtype, {sum, p}) : p;
    }
    return sum;
  }
  const UOp *filled = unshardFill(ctx, x, sh, axis, nd);
  return ctx.make(Op::ALLREDUCE, x->dtype, {filled}, ctx.argTuple({ctx.argOp(Op::ADD), destArg}));
}

/// tinygrad's broadcast_axes: output axes that src (right-aligned) adds or expands.
bool isBroadcastAxis(const Shape &src, const Shape &out, int axis) {
  int nleft = static_cast<int>(out.size()) - static_cast<int>(src.size());
  if (axis < nleft) return true;
  auto s = dimConst(src[static_cast<size_t>(axis - nleft)]), o = dimConst(out[static_cast<size_t>(axis)]);
  return s && *s == 1 && !(o && *o == 1);
}

/// tinygrad's shard_srcs: every operand as the device's shard along `axis` of `out`.
std::vector<const UOp *> shardSrcs(MultiState &st, Context &ctx, std::span<const UOp *const> srcs, const Shape &out,
                                   int axis, int64_t nd) {
  std::vector<const UOp *> res;
  for (const UOp *s : srcs) {
    const Shape &ss = st.shape(s);
    int srcAxis = axis - (static_cast<int>(out.size()) - static_cast<int>(ss.size()));
    if (s->op == Op::MULTI && axisOf(s) == srcAxis) {
      res.push_back(s->src(0));
      continue;
    }
    const UOp *full = s->op == Op::MULTI ? copyMulti(st, ctx, s, encodeDevices(ctx, st.devices(s), true)) : s;
    if (isBroadcastAxis(ss, out, axis)) {
      res.push_back(full);
      continue;
    }
    const UOp *sh = shard(ctx, full, ss, srcAxis, nd);
    if (!sh) st.error(s, "axis " + std::to_string(srcAxis) + " does not split evenly over " + std::to_string(nd) + " devices");
    res.push_back(sh);
  }
  return res;
}

/// tinygrad's UOp.axis of an ALU/STACK: the sources' axes right-aligned, the last distinct one.
int alignedAxis(MultiState &st, std::span<const UOp *const> srcs, size_t outRank) {
  std::vector<int> axes;
  for (const UOp *s : srcs) {
    if (s->op != Op::MULTI) continue;
    int a = axisOf(s) + static_cast<int>(outRank) - static_cast<int>(st.shape(s).size());
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
  }
  return axes.empty() ? -1 : axes.back();
}

bool anyMulti(const UOp *u) {
  for (const UOp *s : u->src())
    if (s->op == Op::MULTI) return true;
  return false;
}

const UOp *lowerSharded(Match &m) {
  auto &st = m.user<MultiState>();
  Context &ctx = m.ctx();
  const UOp *u = m.root();
  if (!anyMulti(u)) return nullptr;
  const UOp *x = u->src(0);
  int axis = axisOf(x);
  switch (u->op) {
  case Op::SINK: {
    std::vector<const UOp *> s;
    for (const UOp *v : u->src()) s.push_back(strip(v));
    return ctx.withSrc(u, s);
  }
  case Op::STORE: {
    std::vector<const UOp *> s;
    for (const UOp *v : u->src()) s.push_back(strip(v));
    return ctx.withSrc(u, s);
  }
  case Op::AFTER: {
    if (x->op != Op::MULTI) return nullptr;
    std::vector<const UOp *> s;
    for (const UOp *v : u->src()) s.push_back(strip(v));
    return multi(ctx, ctx.withSrc(u, s), axis);
  }
  case Op::CAST: case Op::BITCAST: case Op::CONTIGUOUS: case Op::DETACH: case Op::CONTIGUOUS_BACKWARD:
    if (x->op != Op::MULTI) return nullptr;
    return multi(ctx, ctx.withSrc(u, std::vector<const UOp *>{x->src(0)}), axis);
  case Op::COPY:
    if (x->op != Op::MULTI) return nullptr;
    return copyMulti(st, ctx, x, u->arg);
  case Op::ALLREDUCE:
    if (x->op != Op::MULTI) return nullptr;
    return multi(ctx, ctx.make(Op::ALLREDUCE, u->dtype, {x->src(0)}, u->arg), axis);
  case Op::REDUCE: {
    if (x->op != Op::MULTI) return nullptr;
    Op rop = u->arg->elems()[0]->op();
    int64_t k = u->arg->elems()[1]->i();
    const UOp *shardx = x->src(0);
    const UOp *local = ctx.make(Op::REDUCE, u->dtype, {shardx}, u->arg);
    if (axis >= k) return multi(ctx, local, axis - static_cast<int>(k));
    const Arg *ar = ctx.argTuple({ctx.argOp(rop), encodeDevices(ctx, st.devices(x), true)});
    if (shardx->op == Op::CAST && (shardx->src(0)->dtype == DType::BFloat16 || shardx->src(0)->dtype == DType::Float16)) {
      DType orig = shardx->src(0)->dtype; // ALLREDUCE_CAST: allreduce in the pre-cast dtype
      const UOp *c = ctx.make(Op::CAST, orig, {local}, ctx.argDType(orig));
      const UOp *r = ctx.make(Op::ALLREDUCE, orig, {c}, ar);
      return ctx.make(Op::CAST, u->dtype, {r}, ctx.argDType(u->dtype));
    }
    return ctx.make(Op::ALLREDUCE, u->dtype, {local}, ar);
  }
  case Op::RESHAPE: {
    if (x->op != Op::MULTI) return nullptr;
    const Shape &from = st.shape(x), &to = st.shape(u);
    int64_t nd = st.ndev(x), target = 1;
    for (int k = 0; k < axis; ++k) {
      auto c = dimConst(from[static_cast<size_t>(k)]);
      if (!c) st.error(u, "RESHAPE of a sharded value with symbolic dims is not supported");
      target *= *c;
    }
    std::vector<int64_t> acc{1};
    for (const UOp *d : to) {
      auto c = dimConst(d);
      if (!c) st.error(u, "RESHAPE of a sharded value to symbolic dims is not supported");
      acc.push_back(acc.back() * *c);
    }
    int na = -1;
    for (size_t i = 0; i < acc.size(); ++i)
      if (acc[i] == target) na = static_cast<int>(i);
    if (na < 0 || na >= static_cast<int>(to.size()) || *dimConst(to[static_cast<size_t>(na)]) % nd != 0)
      st.error(u, "reshape " + ShapeInfo::str(from) + " -> " + ShapeInfo::str(to) + " moves items between shards");
    Shape local = to;
    local[static_cast<size_t>(na)] = ctx.constInt(DType::WeakInt, *dimConst(to[static_cast<size_t>(na)]) / nd);
    return multi(ctx, ctx.make(Op::RESHAPE, u->dtype, {x->src(0), shapeOperand(ctx, local)}), na);
  }
  case Op::EXPAND: {
    if (x->op != Op::MULTI) return nullptr;
    int lead = static_cast<int>(st.shape(u).size() - st.shape(x).size());
    return multi(ctx, ctx.withSrc(u, std::vector<const UOp *>{x->src(0), u->src(1)}), axis + lead);
  }
  case Op::PERMUTE: {
    if (x->op != Op::MULTI) return nullptr;
    int na = -1;
    auto perm = u->arg->elems();
    for (size_t k = 0; k < perm.size(); ++k)
      if (perm[k]->i() == axis) na = static_cast<int>(k);
    return multi(ctx, ctx.withSrc(u, std::vector<const UOp *>{x->src(0)}), na);
  }
  case Op::FLIP: {
    if (x->op != Op::MULTI) return nullptr;
    if (u->arg->elems()[static_cast<size_t>(axis)]->b()) st.error(u, "FLIP of the sharded axis is not supported (as in tinygrad)");
    return multi(ctx, ctx.withSrc(u, std::vector<const UOp *>{x->src(0)}), axis);
  }
  case Op::PAD: case Op::SHRINK: {
    if (x->op != Op::MULTI) return nullptr;
    Shape off = operandDims(u->src(1)), size = operandDims(u->src(2));
    const Shape &full = st.shape(x), &local = st.shape(x->src(0));
    size_t a = static_cast<size_t>(axis);
    auto o = dimConst(off.at(a)), s = dimConst(size.at(a)), f = dimConst(full.at(a)), l = dimConst(local.at(a));
    bool whole = o && s && f && *o == 0 && *s == *f;
    if (!whole) {
      if (u->op == Op::PAD) st.error(u, "PAD of the sharded axis is not supported (as in tinygrad)");
      if (!(o && s && l && *l > 0 && *s == *l && *o % *l == 0))
        st.error(u, "SHRINK of part of the sharded axis is not supported (as in tinygrad)");
      // exactly one shard: copy it to every device; the result is no longer sharded
      const UOp *one = copyTo(st, ctx, mselect(ctx, x->src(0), *o / *l), st.devices(x), true);
      off[a] = ctx.constInt(DType::WeakInt, 0);
      return ctx.make(Op::SHRINK, u->dtype, {one, shapeOperand(ctx, off), shapeOperand(ctx, size)});
    }
    size[a] = local[a];
    return multi(ctx, ctx.make(u->op, u->dtype, {x->src(0), shapeOperand(ctx, off), shapeOperand(ctx, size)}), axis);
  }
  case Op::STACK: {
    const Shape &out = st.shape(u);
    int na = alignedAxis(st, u->src(), out.size());
    Shape common(out.begin() + 1, out.end());
    int64_t nd = 0;
    for (const UOp *s : u->src())
      if (s->op == Op::MULTI) nd = st.ndev(s);
    auto srcs = shardSrcs(st, ctx, u->src(), common, na - 1, nd);
    return multi(ctx, ctx.make(Op::STACK, u->dtype, srcs, u->arg), na);
  }
  default:
    if (isALU(u->op) || ((u->op == Op::CUSTOM || u->op == Op::CUSTOMI) && u->dtype != DType::Void)) { // elementwise
      const Shape &out = st.shape(u);
      int na = alignedAxis(st, u->src(), out.size());
      int64_t nd = 0;
      for (const UOp *s : u->src())
        if (s->op == Op::MULTI) nd = st.ndev(s);
      auto srcs = shardSrcs(st, ctx, u->src(), out, na, nd);
      return multi(ctx, ctx.make(u->op, u->dtype, srcs, u->arg), na);
    }
    st.error(u, "multi-lower does not support " + std::string(opName(u->op)) + " of a sharded value");
  }
}

/// The dtypes a kept allreduce may have: those the runner reduces and MPI has a type for (no half, bfloat16,
/// fp8 or 128/256-bit integers: their allreduce stays copies and kernels).
bool collectiveDType(DType dt) {
  switch (dt) {
  case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16: case DType::Int32: case DType::UInt32:
  case DType::Int64: case DType::UInt64: case DType::Float32: case DType::Float64: return true;
  default: return false;
  }
}

enum class RingMode { Auto, Off, Force };

RingMode ringMode() {
  const char *e = std::getenv("UOPC_RING_ALLREDUCE");
  std::string v = e ? e : "";
  if (v.empty() || v == "auto") return RingMode::Auto;
  if (v == "0") return RingMode::Off;
  if (v == "1") return RingMode::Force;
  fail("UOPC_RING_ALLREDUCE must be 0, 1 or auto, not '" + v + "'");
}

int64_t ringThreshold() {
  const char *e = std::getenv("UOPC_RING_ALLREDUCE_THRESHOLD");
  if (!e || !*e) return 256000;
  char *end = nullptr;
  long long v = std::strtoll(e, &end, 10);
  if (*end != '\0') fail(std::string("UOPC_RING_ALLREDUCE_THRESHOLD must be an integer, not '") + e + "'");
  return static_cast<int64_t>(v);
}

/// tinygrad's ring allreduce of the contiguous multi-device buffer `buf` (see the header).
const UOp *ringAllreduce(Context &ctx, const UOp *buf, Op rop, const Arg *dest, const std::vector<std::string> &devs,
                         const Shape &shape, int64_t numel) {
  int64_t nd = static_cast<int64_t>(devs.size());
  DType dt = buf->dtype;
  auto W = [&](int64_t v) { return ctx.constInt(DType::WeakInt, v); };
  auto copyOne = [&](const UOp *x, int64_t d) {
    return ctx.make(Op::COPY, dt, {x}, encodeDevices(ctx, {devs[static_cast<size_t>(d % nd)]}, false));
  };
  std::vector<int64_t> starts = ringChunkStarts(numel, nd);
  const UOp *flat = ctx.make(Op::RESHAPE, dt, {buf, shapeOperand(ctx, Shape{W(numel)})});
  const Shape flatShape{W(numel)};
  bool toOne = dest->kind == ArgKind::String;
  std::vector<std::pair<const UOp *, std::pair<int64_t, int64_t>>> gathered; // (chunk value, [s, e))
  for (int64_t i = 0; i < nd; ++i) {
    int64_t s = starts[static_cast<size_t>(i)], e = starts[static_cast<size_t>(i) + 1];
    if (e == s) continue;
    const UOp *chunk =
        ctx.make(Op::SHRINK, dt, {flat, shapeOperand(ctx, Shape{W(s)}), shapeOperand(ctx, Shape{W(e - s)})});
    // reduce-scatter: ndev-1 steps around the ring starting at device i
    const UOp *reduced = chunk;
    for (int64_t step = 0; step < nd - 1; ++step) {
      int64_t src = (i + step) % nd, dst = (i + step + 1) % nd;
      const UOp *cp = copyOne(step == 0 ? mselect(ctx, reduced, src) : reduced, dst);
      reduced = ctx.make(rop, dt, {cp, copyOne(mselect(ctx, chunk, dst), dst)});
    }
    // all-gather
    const UOp *got;
    if (toOne) {
      got = ctx.make(Op::COPY, dt, {reduced}, dest);
    } else {
      std::vector<const UOp *> chain{reduced};
      const UOp *rc = reduced;
      for (int64_t step = 0; step < nd - 1; ++step) chain.push_back(rc = copyOne(rc, (i + step) % nd));
      std::vector<const UOp *> parts;
      for (int64_t j = 0; j < nd; ++j) parts.push_back(chain[static_cast<size_t>(((j - i + 1) % nd + nd) % nd)]);
      got = ctx.make(Op::MSTACK, dt, parts);
    }
    gathered.push_back({got, {s, e}});
  }
  // reassemble: nested where over the chunks' pad masks, the last one zero-filled
  const UOp *acc = nullptr;
  for (size_t k = gathered.size(); k-- > 0;) {
    auto [c, se] = gathered[k];
    Shape cshape{W(se.second - se.first)};
    const UOp *off = shapeOperand(ctx, Shape{W(se.first)}), *size = shapeOperand(ctx, flatShape);
    if (!acc) {
      acc = zeroFilledPad(ctx, c, cshape, off, size);
      continue;
    }
    const UOp *padded = ctx.make(Op::PAD, dt, {c, off, size});
    acc = ctx.make(Op::WHERE, dt, {padMask(ctx, dt, cshape, off, size), padded, acc});
  }
  return ctx.make(Op::RESHAPE, dt, {acc, shapeOperand(ctx, shape)});
}

/// replace_allreduce (COPY between one device and several, MSELECT of MSTACK) and the allreduce.
const UOp *lowerCopies(Match &m) {
  auto &st = m.user<MultiState>();
  Context &ctx = m.ctx();
  const UOp *u = m.root();
  const UOp *x = u->src(0);
  switch (u->op) {
  case Op::COPY: {
    if (x->op == Op::CONST || x->op == Op::MULTI) return nullptr;
    const auto &xd = st.devices(x);
    if (u->arg->kind != ArgKind::String && xd.size() <= 1) { // BROADCAST: one COPY per device
      std::vector<std::string> dest = decodeDevices(u->arg);
      std::vector<const UOp *> parts;
      for (const std::string &d : dest) parts.push_back(xd.empty() ? x : copyTo(st, ctx, x, {d}, false));
      return ctx.make(Op::MSTACK, u->dtype, parts);
    }
    if (u->arg->kind == ArgKind::String && xd.size() > 1 && x->op != Op::MSELECT) // COPY_TO_ONE: MSELECT(0)
      return ctx.make(Op::COPY, u->dtype, {mselect(ctx, x, 0)}, u->arg);
    return nullptr;
  }
  case Op::MSELECT:
    if (x->op != Op::MSTACK) return nullptr;
    return x->src(static_cast<size_t>(u->arg->i()));
  case Op::ALLREDUCE: {
    if (x->op == Op::MULTI || u->arg->count == 3) return nullptr; // (3: a collective kept whole, below)
    int64_t nd = st.ndev(x);
    if (nd <= 1) return nullptr;
    Op rop = u->arg->elems()[0]->op();
    const Arg *dest = u->arg->elems()[1];
    const UOp *buf = ctx.make(Op::CONTIGUOUS, x->dtype, {x});
    const auto &devs = st.devices(x);
    const Shape &shape = st.shape(x);
    std::optional<int64_t> numel = 1;
    for (const UOp *d : shape) {
      auto c = dimConst(d);
      numel = c && numel ? std::optional<int64_t>(*numel * *c) : std::nullopt;
    }
    bool sameDevices = dest->kind != ArgKind::String && decodeDevices(dest) == devs;
    // kept whole: among its own devices, of a constant size (a manifest step's) and a dtype the runner reduces
    bool keep = st.keepCollectives && sameDevices && numel && *numel > 0 && collectiveDType(x->dtype);
    bool ring = false;
    if (RingMode mode = ringMode(); mode != RingMode::Off) {
      bool destOk = dest->kind == ArgKind::String || sameDevices;
      bool big = nd > 2 && numel && *numel > ringThreshold();
      ring = numel && *numel > 0 && destOk && (mode == RingMode::Force || big);
      if (ring && !keep) return ringAllreduce(ctx, buf, rop, dest, devs, shape, *numel);
    }
    if (keep) // one step: the runner reduces
      return ctx.make(Op::ALLREDUCE, x->dtype, {buf},
                      ctx.argTuple({u->arg->elems()[0], dest, ctx.argString(ring ? "ring" : "devices")}));
    const UOp *acc = nullptr;
    for (int64_t i = 0; i < nd; ++i) {
      const UOp *c = ctx.make(Op::COPY, x->dtype, {mselect(ctx, buf, i)}, dest);
      acc = acc ? ctx.make(rop, x->dtype, {acc, c}) : c;
    }
    return acc;
  }
  default: return nullptr;
  }
}

const RuleSet &shardRules() {
  static const RuleSet rules{
      rule(var().named("u"), lowerSharded),
      rule(pat({Op::COPY, Op::MSELECT, Op::ALLREDUCE}), lowerCopies),
  };
  return rules;
}

const UOp *invalidOf(Context &ctx, DType dt) { return makeInvalid(ctx, dt); }

const RuleSet &symbolicMultiRules() {
  static const RuleSet rules{
      rule(pat(Op::MULTI).named("m"), [](Match &m) -> const UOp * { // MULTI(x, axis) -> _unshard(x, axis)
        auto &st = m.user<MultiState>();
        const UOp *x = m["m"]->src(0);
        return unshard(m.ctx(), x, st.shape(x), axisOf(m["m"]), st.ndev(x));
      }),
      rule(pat(Op::MSELECT).named("m"), [](Match &m) -> const UOp * { // MSELECT(x, i) -> dnum==i ? x : Invalid
        auto &st = m.user<MultiState>();
        Context &ctx = m.ctx();
        const UOp *x = m["m"]->src(0);
        const UOp *eq = ctx.make(Op::CMPEQ, DType::Bool, {deviceNum(ctx, st.ndev(x)), ctx.constInt(DType::WeakInt, m["m"]->arg->i())});
        return ctx.make(Op::WHERE, x->dtype, {eq, x, invalidOf(ctx, x->dtype)});
      }),
      rule(pat(Op::MSTACK).named("m"), [](Match &m) -> const UOp * { // MSTACK(s..) -> dnum==k ? s_k : ... Invalid
        Context &ctx = m.ctx();
        const UOp *ms = m["m"];
        const UOp *dn = deviceNum(ctx, ms->nsrc), *ret = invalidOf(ctx, ms->dtype);
        for (size_t k = ms->nsrc; k-- > 0;) {
          const UOp *eq = ctx.make(Op::CMPEQ, DType::Bool, {dn, ctx.constInt(DType::WeakInt, static_cast<int64_t>(k))});
          ret = ctx.make(Op::WHERE, ms->dtype, {eq, ms->src(k), ret});
        }
        return ret;
      }),
  };
  return rules;
}

} // namespace

void runMultiLower(Graph &g, const PassContext &pc) {
  bool any = false;
  for (const UOp *u : toposort(g.root))
    if (u->op == Op::MULTI || u->op == Op::MSELECT || u->op == Op::MSTACK || u->op == Op::ALLREDUCE ||
        u->op == Op::COPY)
      any = true;
  if (!any) return;
  if (g.padFill != PadFill::Invalid)
    fail("multi-lower needs a graph with pad_fill invalid (run invalid-pad first): its unshard PADs fill Invalid");
  ShapeInfo shapes(g);
  MultiState st{&g, &shapes, !pc.target.info->gpu && pc.intOption("collectives", 1, 0, 1) == 1};
  RewriteOptions o;
  o.sourcesFirst = &shardRules();
  o.user = &st;
  o.describe = [&g](const UOp *u) { return g.describe(u); };
  const UOp *root = graphRewrite(*g.ctx, g.root, o);
  o.sourcesFirst = &symbolicMultiRules();
  root = graphRewrite(*g.ctx, root, o);
  for (const UOp *u : toposort(root))
    if (u->op == Op::MULTI || u->op == Op::MSELECT || u->op == Op::MSTACK || (u->op == Op::ALLREDUCE && u->arg->count != 3))
      fail("multi-lower left a " + std::string(opName(u->op)) + " behind: " + g.describe(u));
  g.root = root;
}

} // namespace uopc
