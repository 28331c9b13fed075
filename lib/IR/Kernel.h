//===- Kernel.h - the two forms of a kernel CALL's body ----------------------===//
// A kernel is CALL(body, buffers...). Until `linearize`, the body is the kernel SINK[KernelInfo] (what
// each store computes, as a DAG); after it, LINEAR[KernelInfo](SINK, items...), the same SINK followed by
// the order the targets render it in (see lib/Passes/Linearize.cpp for the items).
#pragma once

#include "IR/UOp.h"

#include <cstdint>
#include <optional>
#include <span>
#include <utility>

namespace uopc {

/// The kernel SINK of a kernel CALL in either form, or nullptr for a call of anything else (a COPY).
inline const UOp *kernelSink(const UOp *call) {
  if (call->op != Op::CALL || call->nsrc == 0) return nullptr;
  const UOp *b = call->src(0);
  if (b->op == Op::LINEAR && b->nsrc > 0 && b->src(0)->op == Op::SINK) return b->src(0);
  return b->op == Op::SINK ? b : nullptr;
}

/// The items of a linearized kernel body (LINEAR's sources after the SINK).
inline std::span<const UOp *const> linearItems(const UOp *linear) { return linear->src().subspan(1); }

/// The GPU launch linearize recorded in a linearized kernel body: {blocks, threads per block} from its
/// SPECIAL gidx0 and lidx0 items, or nullopt for a kernel linearized into loops.
inline std::optional<std::pair<int64_t, int64_t>> linearLaunch(const UOp *linear) {
  std::optional<std::pair<int64_t, int64_t>> l;
  for (const UOp *u : linearItems(linear)) {
    if (u->op != Op::SPECIAL || u->nsrc == 0 || u->src(0)->op != Op::CONST || !u->src(0)->arg ||
        u->src(0)->arg->kind != ArgKind::Int || !u->arg || u->arg->kind != ArgKind::String)
      continue;
    if (!l) l = std::pair<int64_t, int64_t>{1, 1};
    (u->arg->str() == "gidx0" ? l->first : l->second) = u->src(0)->arg->i();
  }
  return l;
}
/// linearLaunch of a kernel CALL's body (nullopt for a body that is not LINEAR).
inline std::optional<std::pair<int64_t, int64_t>> kernelLaunch(const UOp *call) {
  if (call->op != Op::CALL || call->nsrc == 0 || call->src(0)->op != Op::LINEAR) return std::nullopt;
  return linearLaunch(call->src(0));
}

/// A RANGE whose iterations are split across CPU threads (AxisType THREAD; linearize makes them).
inline bool isThreadRange(const UOp *u) {
  return u->op == Op::RANGE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count >= 2 &&
         u->arg->elems()[1]->kind == ArgKind::AxisType && u->arg->elems()[1]->axisType() == AxisType::THREAD;
}

/// The trip count of a linearized kernel's loop split across CPU threads (a RANGE item of AxisType
/// THREAD with a constant size), 0 when it has none: the runner gives each thread a part of it.
inline int64_t kernelParallel(const UOp *call) {
  if (call->op != Op::CALL || call->nsrc == 0 || call->src(0)->op != Op::LINEAR) return 0;
  for (const UOp *u : linearItems(call->src(0)))
    if (isThreadRange(u) && u->nsrc == 1 && u->src(0)->op == Op::CONST && u->src(0)->arg &&
        u->src(0)->arg->kind == ArgKind::Int)
      return u->src(0)->arg->i();
  return 0;
}

} // namespace uopc
