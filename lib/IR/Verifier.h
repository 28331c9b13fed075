//===- Verifier.h - structural checks of a graph --------------------------===//
#pragma once

#include "IR/Graph.h"

namespace uopc {

/// Checks arity, dtypes, arg encodings, shapes, devices and PARAM slots of every node reachable from
/// the root. Throws Error naming the first bad node ("node 12 (ADD): ..."). Acyclicity and topological
/// order are guaranteed by construction (a node can only point at nodes that exist before it) and are
/// checked by the readers.
void verifyGraph(const Graph &g);

} // namespace uopc
