//===- Passes.h - entry points of every pass (see Passes.def) -------------===//
#pragma once

#include "IR/Graph.h"

namespace uopc {

#define UOPC_PASS(Flag, Function, Description) void Function(Graph &g);
#include "Passes/Passes.def"

} // namespace uopc
