//===- Verify.cpp - the `verify` pass: structural checks of the input -----===//
#include "IR/Verifier.h"
#include "Passes/Passes.h"

namespace uopc {

void runVerify(Graph &g, const PassContext &) { verifyGraph(g); }

} // namespace uopc
