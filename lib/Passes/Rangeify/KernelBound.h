//===- KernelBound.h - rangeify's kernel size bound (rangeify{max-kernel-ops=N}) ===//
// A valid graph may ask for one kernel of any size: a STORE of an elementwise chain a million ops deep
// is one kernel by every rule of stage removal (Rangeify.cpp: each value is read once), and the C
// compiler cannot build that function (gcc 12's cc1 crashed after 7.5 min at -O3 on its 47 MB). Once
// stage removal is done, a kernel computing more than N data ops has values in it staged until every
// kernel is within N.
#pragma once

#include "IR/Shape.h"

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace uopc::rangeify {

/// The data ops a kernel computes for `u` (what the bound counts): elementwise ops and reductions on
/// data. Index arithmetic (weak ints), movement ops and reads count nothing.
int64_t kernelOps(const UOp *u);

class KernelBound {
public:
  KernelBound(ShapeInfo &si, int64_t maxOps, std::function<bool(const UOp *)> isMat)
      : si_(si), max_(maxOps), isMat_(std::move(isMat)) {}

  /// The value nodes the kernel of `root` computes (a STORE, a staged value, CONTIGUOUS or STAGE), sources
  /// before their users; the walk stops at what the kernel reads (materialized values, buffers, AFTERs)
  /// and at constants and variables. Starts a new kernel: cuts() works on the cone returned last.
  const std::vector<const UOp *> &cone(const UOp *root);

  static int64_t ops(const std::vector<const UOp *> &cone);

  /// Picks values of the last cone() to stage so that no kernel it leaves computes more than N ops, and
  /// none computes an op another one does. The cone, in its order (a post-order walk: what one value
  /// needs stays together), is cut into segments of at most N ops; then, users before sources:
  ///  - a value read by a later segment is staged (so each kernel's cone stays in its segment, within N);
  ///  - so is a value whose users belong to different kernels (the kernel of a node: itself when it is
  ///    staged or the root, else its users' kernel): inlined, it would be computed in each of them.
  /// A value that cannot be staged (a movement op, an index) stays in each kernel reading it and hands
  /// the question to its sources. A chain is cut every N ops; `x -> max(x + 1, x)` at a shared `x`.
  std::vector<const UOp *> cuts();

private:
  struct Slot {
    uint32_t gen = 0;
    bool inCone = false;
    bool readLater = false;       ///< a user is in a later segment
    bool shared = false;          ///< users in different kernels
    int32_t segment = 0;
    int64_t pos = 0, lastUse = 0; ///< its place in the cone's order, and its last user's
    const UOp *kernel = nullptr;  ///< the kernel of its users so far
  };
  ShapeInfo &si_;
  int64_t max_;
  std::function<bool(const UOp *)> isMat_;
  StampedTable<Slot> t_;
  std::vector<const UOp *> order_;

  Slot *inCone(const UOp *u);
  bool leaf(const UOp *u) const;
  template <typename F> static void forDistinct(const UOp *u, F f);
  /// What a STAGE may wrap: a value on a device with a shape (as the stage candidates).
  bool stageable(const UOp *u) const;
};

} // namespace uopc::rangeify
