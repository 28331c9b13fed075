//===- Linear.h - running a linearized kernel's items, one element at a time ===//
// What the targets do with a LINEAR kernel (lib/Passes/Linearize.cpp), on the interpreter's words:
// the items in order, RANGE/END as loops, IF/ENDIF as branches, REDUCE/STORE(REDUCE, x) as an
// accumulator, every value its latest definition, Invalid tracked beside each value as the renderers
// track validity. A kernel linearized for a GPU grid runs once per thread of its launch: block by block,
// each stretch of items between BARRIERs on every thread of the block before the next, with the block's
// shared BUFFERs. So the interpreter checks the linear order itself, not only the SINK it came from.
#pragma once

#include "IR/Graph.h"
#include "Interp/Array.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace uopc::interp {

/// Runs the items of `linear` (a kernel CALL's LINEAR body) on `bufs` (by PARAM slot). Throws Error naming
/// the node for a malformed list (a value used before its item, an unbalanced loop), a store outside its
/// buffer, or an op the interpreter cannot evaluate.
void runLinearKernel(const Graph &g, const UOp *linear, const std::vector<Array *> &bufs,
                     const std::map<std::string, int64_t> &vars, int64_t deviceNum);

} // namespace uopc::interp
