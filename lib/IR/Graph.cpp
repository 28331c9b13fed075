//===- Graph.cpp ------------------------------------------------------------===//
#include "IR/Graph.h"

namespace uopc {

std::string Graph::describe(const UOp *u) const {
  uint32_t id = inputIds.get(u);
  std::string op(opName(u->op));
  if (id == UINT32_MAX) return "new node (" + op + ")";
  return "node " + std::to_string(id) + " (" + op + ")";
}

} // namespace uopc
