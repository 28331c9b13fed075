//===- Passes.h - entry points of every pass (see Passes.def) -------------===//
#pragma once

#include "IR/Graph.h"
#include "Passes/PassManager.h"

namespace uopc {

#define UOPC_PASS(Flag, Function, Default, Render, Options, Description) void Function(Graph &g, const PassContext &pc);
#include "Passes/Passes.def"

/// lower-index's rewrite of one kernel SINK (what the pass does to every kernel).
const UOp *lowerIndexKernel(Context &c, const UOp *sink);
/// commit-weak's rewrite of one kernel SINK: weak operands next to strong ones cast, weakfloat float64.
const UOp *commitWeakKernel(Context &c, const UOp *sink);
/// gpu-map's choice for one kernel SINK: its store ranges the GPU thread id gives, marked GLOBAL (lean: weigh
/// the mapping without the ranges a REDUCE does not depend on; false: every candidate, no blocks), and
/// (withBlocks) a reduction left to one thread spread over a block's (GROUP_REDUCE, LOCAL).
const UOp *gpuMapKernel(Context &c, const UOp *sink, bool lean = true, bool withBlocks = true);
/// decompose's rewrite of one kernel SINK: every node of an op in `ops` written with other ops (throws Error
/// for an op it has no decomposition of).
const UOp *decomposeKernel(Context &c, const UOp *sink, const std::vector<Op> &ops);
/// group-reduce's rewrite of one kernel SINK: its GROUP_REDUCE reductions through a block's shared memory.
const UOp *groupReduceKernel(Context &c, const UOp *sink);

} // namespace uopc
