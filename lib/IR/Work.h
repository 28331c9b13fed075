//===- Work.h - the work model: how much a kernel computes, loads and stores ===//
// For one kernel (a kernel SINK after kernel-split/codegen): ALU operations, loads and stores (elements
// and bytes), each the sum over its nodes of how often the node executes, a product of loop trip counts.
// A node executes once per iteration of the loops around it down to the innermost loop it depends on
// (the targets place every value there): output ranges nest in the order END lists them, a REDUCE's
// ranges nest inside the loops its body depends on otherwise. Only operations on data count (a node
// that depends on a load); index arithmetic, masks built from ranges and loop bookkeeping do not. A
// REDUCE counts one operation per iteration of its loops (the accumulation). An UPCAST range (optimize's
// lanes) is no loop: a node counts once per lane of the UPCAST ranges it depends on, wherever they stand in
// END's order (a tile's weight vector is loaded once per step for all its pixels). A GPU kernel's GLOBAL ranges
// (gpu-map) are the thread id, not loops: every thread runs every node, so counts are per thread (the
// other ranges' loops) times the launch's threads.
//
// The same measure for a tensor-level graph (before rangeify): every data operation evaluated once per
// element of its result, a REDUCE once per element of its source: what the reference interpreter does,
// and the yardstick no kernel split should exceed by much (test/corpus/work_amplification.py).
//
// Counts are polynomials in the graph's symbolic sizes ("65536", "512*n + 4096"), exact for constant ones.
#pragma once

#include "IR/Graph.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace uopc {

/// A non-negative count: a sum of monomials, each a coefficient times a product of symbolic sizes (the
/// printed expressions of non-constant loop extents or dimensions). Saturates at INT64_MAX.
class Count {
public:
  Count() = default;
  explicit Count(int64_t c) {
    if (c != 0) terms_[{}] = c;
  }
  /// A symbolic factor, e.g. the extent "n" or "(n+1)".
  static Count symbol(const std::string &s) {
    Count r;
    r.terms_[{s}] = 1;
    return r;
  }
  Count &operator+=(const Count &o);
  Count operator*(const Count &o) const;
  Count operator*(int64_t k) const { return *this * Count(k); }
  /// The value when no symbolic size is involved.
  std::optional<int64_t> constant() const;
  bool isZero() const { return terms_.empty(); }
  /// "0", "65536", "512*n + 4096" (monomials in a fixed order: deterministic).
  std::string str() const;

private:
  std::map<std::vector<std::string>, int64_t> terms_; ///< sorted factors -> coefficient
};

struct KernelWork {
  Count ops;                    ///< ALU operations on data (index arithmetic excluded)
  Count loads, loadBytes;       ///< elements read from buffers, and their bytes
  Count stores, storeBytes;     ///< elements written, and their bytes
  const UOp *heaviest = nullptr; ///< the data operation executed most often (for messages)
  Count heaviestTrips;           ///< how often it executes
};

/// The work of one kernel SINK (its body: RANGE loops, INDEX reads, LOAD, REDUCE, STORE, END). Iterative.
KernelWork kernelWork(const UOp *kernelSink);

/// Data operations of a tensor-level graph evaluated once per element. Nodes inside CALL bodies are
/// not visited (run it before kernel-split).
Count tensorWork(const Graph &g);

/// A symbolic size printed for a Count factor: CONST values, variable names, + - * // % and max/min.
std::string sizeExpr(const UOp *u);

} // namespace uopc
