//===- Movement.cpp - movement ops and the multi-device ops of the interpreter ===//
// Movement ops follow tinygrad's UOp._shape (EXPAND prepends axes, PAD/SHRINK take (offset, size) per
// axis, REDUCE drops leading axes) and, on sharded values, schedule/multi.py: each device moves its own
// shard, and the shard axis moves the way UOp.axis says.
#include "IR/Error.h"
#include "IR/Records.h"
#include "Interp/Evaluator.h"

#include <algorithm>

namespace uopc::interp {
namespace {

/// tinygrad's UOp.axis of a RESHAPE of a value sharded on `axis` over n devices.
int reshapedAxis(const Dims &from, const Dims &to, int axis, size_t n, std::string &why) {
  int64_t target = 1;
  for (int k = 0; k < axis; ++k) target *= from[static_cast<size_t>(k)];
  std::vector<int64_t> acc{1};
  for (int64_t d : to) acc.push_back(acc.back() * d);
  int found = -1;
  for (size_t i = 0; i < acc.size(); ++i)
    if (acc[i] == target) found = static_cast<int>(i);
  if (found < 0 || found >= static_cast<int>(to.size()) || to[static_cast<size_t>(found)] % static_cast<int64_t>(n) != 0) {
    why = "reshape " + dimsStr(from) + " -> " + dimsStr(to) + " moves items between shards";
    return -1;
  }
  return found;
}

std::vector<int64_t> intTuple(const Arg *a) {
  std::vector<int64_t> out;
  if (!a || a->kind != ArgKind::Tuple) fail("arg must be a list of integers");
  for (const Arg *e : a->elems()) {
    if (!e || e->kind != ArgKind::Int) fail("arg must be a list of integers");
    out.push_back(e->i());
  }
  return out;
}

std::vector<bool> boolTuple(const Arg *a) {
  std::vector<bool> out;
  if (!a || a->kind != ArgKind::Tuple) fail("arg must be a list of booleans");
  for (const Arg *e : a->elems()) {
    if (!e || e->kind != ArgKind::Bool) fail("arg must be a list of booleans");
    out.push_back(e->b());
  }
  return out;
}

} // namespace

Value Evaluator::movement(const UOp *u, const Value &x, bool indexMode) {
  Op op = u->op;
  size_t want = (op == Op::RESHAPE || op == Op::EXPAND) ? 2 : (op == Op::PAD || op == Op::SHRINK) ? 3 : 1;
  if (u->nsrc != want) error(u, "expected " + std::to_string(want) + " sources");
  if (op == Op::MULTI) {
    if (x.axis >= 0) error(u, "MULTI of a value that is already sharded");
    const Arg *a = u->arg;
    if (!a || a->kind != ArgKind::Int || a->i() < 0 || a->i() >= static_cast<int64_t>(x.shape.size()))
      error(u, "MULTI axis must be an axis of " + dimsStr(x.shape));
    Value r = x;
    r.axis = static_cast<int>(a->i());
    return r;
  }
  // Shape operands may differ per device (they can use _device_num): one evaluation per device.
  size_t nd = x.count();
  for (size_t i = 1; i < u->nsrc; ++i) {
    const UOp *s = u->src(i);
    if (s->op == Op::STACK && s->nsrc == 0) continue;
    size_t c = val(u, s).count();
    if (c <= 1) continue;
    if (nd == 1) nd = c;
    else if (nd != c) error(u, "shape operands and source live on different numbers of devices");
  }
  const Dims full = x.full(), &local = x.shape;
  const int a = x.axis;
  const size_t n = x.count(), rank = local.size();
  auto checkRank = [&](const Dims &d, const char *what) {
    if (d.size() != rank) error(u, std::string(what) + " " + dimsStr(d) + " does not match the rank of " + dimsStr(full));
  };
  Value r;
  r.dtype = x.dtype;
  r.devices = x.devices;
  for (size_t d = 0; d < nd; ++d) {
    ArrayPtr src = x.on(d), out;
    Dims shape;
    int axis = -1;
    View v = contiguous(local);
    switch (op) {
    case Op::RESHAPE: {
      Dims to = dims(u, u->src(1), d);
      if (numelOf(to) != numelOf(full)) error(u, "cannot reshape " + dimsStr(full) + " to " + dimsStr(to));
      shape = to;
      if (a >= 0) {
        std::string why;
        axis = reshapedAxis(full, to, a, n, why);
        if (axis < 0) error(u, why);
        shape[static_cast<size_t>(axis)] /= static_cast<int64_t>(n);
      }
      out = src; // same elements in the same order
      break;
    }
    case Op::EXPAND: {
      Dims lead = dims(u, u->src(1), d);
      shape = lead;
      shape.insert(shape.end(), local.begin(), local.end());
      View e{shape, Dims(lead.size(), 0), 0};
      e.strides.insert(e.strides.end(), v.strides.begin(), v.strides.end());
      out = gather(*src, e);
      axis = a < 0 ? -1 : a + static_cast<int>(lead.size());
      break;
    }
    case Op::PERMUTE: {
      std::vector<int64_t> perm;
      try {
        perm = intTuple(u->arg);
      } catch (const Error &e) {
        error(u, e.what());
      }
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t k = 0; k < sorted.size(); ++k)
        if (sorted[k] != static_cast<int64_t>(k) || sorted.size() != rank)
          error(u, "invalid permutation of " + dimsStr(full));
      View p{Dims(rank), Dims(rank), 0};
      for (size_t k = 0; k < rank; ++k) {
        p.shape[k] = local[static_cast<size_t>(perm[k])];
        p.strides[k] = v.strides[static_cast<size_t>(perm[k])];
        if (perm[k] == a) axis = static_cast<int>(k);
      }
      shape = p.shape;
      out = gather(*src, p);
      break;
    }
    case Op::FLIP: {
      std::vector<bool> flags;
      try {
        flags = boolTuple(u->arg);
      } catch (const Error &e) {
        error(u, e.what());
      }
      if (flags.size() != rank) error(u, "FLIP needs one flag per axis of " + dimsStr(full));
      if (a >= 0 && flags[static_cast<size_t>(a)]) error(u, "FLIP of the sharded axis is not supported (as in tinygrad)");
      for (size_t k = 0; k < rank; ++k)
        if (flags[k] && local[k] > 0) {
          v.offset += (local[k] - 1) * v.strides[k];
          v.strides[k] = -v.strides[k];
        }
      shape = local;
      axis = a;
      out = gather(*src, v);
      break;
    }
    case Op::PAD: {
      Dims begin = dims(u, u->src(1), d), size = dims(u, u->src(2), d);
      checkRank(begin, "PAD offsets");
      checkRank(size, "PAD sizes");
      if (a >= 0) {
        size_t ax = static_cast<size_t>(a);
        if (begin[ax] != 0 || size[ax] != full[ax]) error(u, "PAD of the sharded axis is not supported (as in tinygrad)");
        size[ax] = local[ax];
      }
      for (size_t k = 0; k < rank; ++k)
        if (begin[k] < 0 || begin[k] + local[k] > size[k])
          error(u, "invalid pad: " + dimsStr(full) + " at offsets " + dimsStr(begin) + " in " + dimsStr(size));
      bool fillInvalid = !indexMode && g_.padFill == PadFill::Invalid && x.dtype != DType::Bool;
      Word fill = indexMode ? ~Word(0) : 0; // -1 marks "no buffer element" in a store target
      out = pad(*src, local, begin, size, fill, fillInvalid);
      shape = size;
      axis = a;
      break;
    }
    case Op::SHRINK: {
      Dims begin = dims(u, u->src(1), d), size = dims(u, u->src(2), d);
      checkRank(begin, "SHRINK offsets");
      checkRank(size, "SHRINK sizes");
      for (size_t k = 0; k < rank; ++k)
        if (begin[k] < 0 || size[k] < 0 || begin[k] + size[k] > full[k])
          error(u, "invalid shrink of " + dimsStr(full) + ": offsets " + dimsStr(begin) + ", sizes " + dimsStr(size));
      axis = a;
      if (a >= 0) {
        size_t ax = static_cast<size_t>(a);
        if (begin[ax] == 0 && size[ax] == full[ax]) {
          size[ax] = local[ax];
        } else if (size[ax] == local[ax] && local[ax] > 0 && begin[ax] % local[ax] == 0) {
          // Exactly one shard: it is copied to every device and the result is no longer sharded.
          if (indexMode) error(u, "a store through a SHRINK that selects one shard is not supported");
          src = x.per.at(static_cast<size_t>(begin[ax] / local[ax]));
          begin[ax] = 0;
          axis = -1;
        } else {
          error(u, "SHRINK of part of the sharded axis is not supported (as in tinygrad)");
        }
      }
      for (size_t k = 0; k < rank; ++k) v.offset += begin[k] * v.strides[k];
      v.shape = size;
      shape = size;
      out = gather(*src, v);
      break;
    }
    default: error(u, "internal error: not a movement op");
    }
    if (d == 0) {
      r.shape = shape;
      r.axis = axis;
    } else if (shape != r.shape || axis != r.axis) {
      error(u, "the result's shape differs between devices (" + dimsStr(r.shape) + " and " + dimsStr(shape) + ")");
    }
    r.per.push_back(std::move(out));
  }
  return r;
}

ValuePtr Evaluator::evalCopy(const UOp *u) {
  if (u->nsrc != 1) error(u, "COPY needs one source");
  const Value &x = val(u, u->src(0));
  if (u->dtype != x.dtype) error(u, "COPY changes the dtype");
  std::vector<std::string> dest;
  try {
    dest = decodeDevices(u->arg);
  } catch (const Error &e) {
    error(u, e.what());
  }
  if (dest.empty()) error(u, "COPY needs a destination device");
  bool toOne = u->arg->kind == ArgKind::String;
  auto r = std::make_shared<Value>();
  r->dtype = x.dtype;
  r->devices = dest;
  ArrayPtr whole;
  if (x.axis >= 0) {
    whole = gatherShards(x); // the shards gathered into one tensor
    r->shape = x.full();
  } else if (x.count() == 1 || toOne) {
    // Several devices to one: per element, the first device that has it. For a replicated value that is
    // device 0's copy (tinygrad's MSELECT(0)); for a `_device_num == i` gated value (multi-lower's MSELECT)
    // it is device i's.
    whole = mergeValid(x.per);
    r->shape = x.shape;
  }
  if (whole) {
    r->per.assign(toOne ? 1 : dest.size(), whole);
    return r;
  }
  if (x.count() != dest.size())
    error(u, "COPY from " + std::to_string(x.count()) + " devices to " + std::to_string(dest.size()));
  r->shape = x.shape;
  r->per = x.per;
  return r;
}

ValuePtr Evaluator::evalMselect(const UOp *u) {
  if (u->nsrc != 1 || !u->arg || u->arg->kind != ArgKind::Int) error(u, "MSELECT needs one source and a device index");
  const Value &x = val(u, u->src(0));
  int64_t i = u->arg->i();
  if (i < 0 || i >= static_cast<int64_t>(x.count()))
    error(u, "device index " + std::to_string(i) + " of a value on " + std::to_string(x.count()) + " devices");
  auto r = std::make_shared<Value>();
  r->dtype = x.dtype;
  r->shape = x.shape;
  r->per.push_back(x.per[static_cast<size_t>(i)]);
  if (x.devices.size() == x.count()) r->devices.push_back(x.devices[static_cast<size_t>(i)]);
  return r;
}

ValuePtr Evaluator::evalMstack(const UOp *u) {
  if (u->nsrc == 0) error(u, "MSTACK needs sources");
  auto r = std::make_shared<Value>();
  r->dtype = u->dtype;
  for (const UOp *s : u->src()) {
    const Value &x = val(u, s);
    if (x.count() != 1 || x.axis >= 0) error(u, "MSTACK source " + g_.describe(s) + " is not on one device");
    if (x.dtype != u->dtype) error(u, "MSTACK sources of different dtypes");
    if (r->per.empty()) r->shape = x.shape;
    else if (x.shape != r->shape) error(u, "MSTACK sources of shapes " + dimsStr(r->shape) + " and " + dimsStr(x.shape));
    r->per.push_back(x.per[0]);
    r->devices.push_back(x.devices.empty() ? "" : x.devices[0]);
  }
  return r;
}

ValuePtr Evaluator::evalAllreduce(const UOp *u) {
  const Arg *a = u->arg;
  // (a third entry, the order: multi-lower's collective kept whole; the interpreter's sum is exact, then rounded)
  if (u->nsrc != 1 || !a || a->kind != ArgKind::Tuple || (a->count != 2 && a->count != 3) || !a->elems()[0] ||
      a->elems()[0]->kind != ArgKind::OpName)
    error(u, "ALLREDUCE needs one source and arg [op, devices] or [op, devices, order]");
  Op rop = a->elems()[0]->op();
  if (!isReduceOp(rop)) error(u, "'" + std::string(opName(rop)) + "' is not a reduce op");
  std::vector<std::string> dest;
  try {
    dest = decodeDevices(a->elems()[1]);
  } catch (const Error &e) {
    error(u, e.what());
  }
  const Value &x = val(u, u->src(0));
  if (!isHoldable(x.dtype))
    error(u, "the interpreter does not support ALLREDUCE on " + std::string(dtypeName(x.dtype)));
  ArrayPtr all = reduceAcross(x.per, rop, x.dtype);
  auto r = std::make_shared<Value>();
  r->dtype = x.dtype;
  r->shape = x.shape;
  if (x.axis >= 0) { // tinygrad: the shards are allreduced and stay sharded
    r->axis = x.axis;
    r->devices = x.devices;
    r->per.assign(x.count(), all);
    return r;
  }
  bool toOne = a->elems()[1]->kind == ArgKind::String;
  r->devices = dest;
  r->per.assign(toOne ? 1 : std::max<size_t>(dest.size(), 1), all);
  return r;
}

} // namespace uopc::interp
