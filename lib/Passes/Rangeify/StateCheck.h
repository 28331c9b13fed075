//===- StateCheck.h - rejecting stale reads of overwritten buffers (seed 003's _check_state_cycles) ===//
#pragma once

#include "IR/Graph.h"

namespace uopc::rangeify {

/// Throws uopc::Error naming the ALU node that combines a buffer read as it was before a write with the
/// same buffer read after a write that replaced it (no kernel order can give both). A write that reads the
/// old value (x += 1) continues its state instead of replacing it; CONTIGUOUS snapshots the earlier read.
/// Seed 003's _check_state_cycles, run on the tensor-level graph (tinygrad runs it before scheduling).
void checkStateCycles(const Graph &g, const UOp *root);

} // namespace uopc::rangeify
