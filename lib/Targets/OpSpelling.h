//===- OpSpelling.h - a renderer's rows of OpSpelling.def, and finding one ===//
// Each renderer builds its own array of OpSpelling.def's rows, with cells of its own kind (C: texts, LLVM:
// forms of IRBuilder calls); this is the row type they share and the lookup.
#pragma once

#include "IR/Types.h"

#include <cstddef>

namespace uopc {

/// One op's row: its cells on float, signed integer and unsigned integer operands. Cell has a `same` member
/// (the unsigned cell is the signed one).
template <class Cell> struct OpSpelling {
  Op op;
  Cell f, s, u;
  /// The cell for operands of that kind (bool counts as what the renderer says it is).
  const Cell &on(bool isFloat, bool isUnsigned) const { return isFloat ? f : isUnsigned && !u.same ? u : s; }
};

/// The row of op in rows, nullptr where the op has none.
template <class Cell, size_t N> const OpSpelling<Cell> *findSpelling(const OpSpelling<Cell> (&rows)[N], Op op) {
  for (const OpSpelling<Cell> &r : rows)
    if (r.op == op) return &r;
  return nullptr;
}

} // namespace uopc
