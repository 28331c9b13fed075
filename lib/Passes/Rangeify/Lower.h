//===- Lower.h - tensor values to index arithmetic on RANGEs (shared by rangeify and kernel-split) ===//
// The heart of seed 003's rangeify2: a kernel's output gets one RANGE per axis (range creation at STORE,
// STAGE and REDUCE), and the index expressions migrate through movement ops into the value's sources
// (_mop_index: RESHAPE, PERMUTE, EXPAND, SHRINK, FLIP as arithmetic, PAD as a validity gate, STACK as a
// select on its first index). Where a value is materialized the walk stops and reads the buffer with
// INDEX(state, flat index). uopc does the migration as one memoized walk per kernel rather than as
// pattern rewrites over INDEX nodes: the result is the same index-level kernel.
#pragma once

#include "IR/Graph.h"
#include "IR/Shape.h"
#include "Passes/Symbolic/Symbolic.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace uopc::rangeify {

/// One read of a materialized value while lowering a kernel: what stage removal decides on.
struct Use {
  const UOp *value;  ///< the tensor-level node read from its buffer
  const UOp *key;    ///< the index expressions as one hash-consed node: equal keys = same indexing
  int kernel;        ///< the kernel (boundary) the read happens in
  bool underReduce;  ///< the read feeds a REDUCE of that kernel
  bool constIndex;   ///< every index is a CONST
  /// How often the read executes in its kernel's loop nest (the work model): the product of the trip
  /// counts of the enclosing loops (output ranges in order, then the REDUCE ranges around the read) down
  /// to the innermost one its index depends on. A value inlined at the read is computed that often (the
  /// targets place a value in the innermost loop it depends on). nullopt when a trip count is symbolic.
  std::optional<int64_t> trips;
};

/// Lowers tensor-level values of one graph into index-level kernels. Preconditions: invalid-pad and
/// multi-lower ran (no MULTI/MSELECT/MSTACK/ALLREDUCE left), and AFTERs wrap buffers, not views
/// (normalizeAfters()).
class Lowerer {
public:
  Lowerer(Graph &g, ShapeInfo &si);

  /// Whether a node's value comes from a buffer (STAGE markers, COPY, CONTIGUOUS, staged candidates).
  std::function<bool(const UOp *)> isMaterialized;
  /// The buffer state a kernel INDEXes to read a materialized node, a buffer PARAM/BUFFER or an AFTER.
  std::function<const UOp *(const UOp *)> stateOf;

  /// Reads of materialized values, in the order met.
  std::vector<Use> uses;

  /// Starts kernel `id` with a fresh memo. Ranges are numbered from 0 in each kernel, unless
  /// `globalRanges` (the decision phase: two kernels' ranges must differ, as rangeify2's global counter).
  void beginKernel(int id, bool globalRanges = false);
  /// The kernel body writing `val` through the view `dst` (whose base is `dstState`'s buffer):
  /// END(STORE(INDEX(dstState, flat), value), ranges...), or the bare STORE when there is no range.
  const UOp *lowerStore(const UOp *dst, const UOp *val, const UOp *dstState);
  /// The kernel body writing `x` contiguously into the flat buffer `state`.
  const UOp *lowerMaterialize(const UOp *x, const UOp *state);
  /// Output elements of the kernel begun last (nullopt when a dimension is symbolic).
  std::optional<int64_t> work() const { return work_; }

  /// The buffer PARAM/BUFFER under a chain of movement ops and AFTERs, or null.
  static const UOp *baseBuffer(const UOp *u);
  /// A buffer PARAM (slot >= 0 with a size) or BUFFER.
  static bool isBuffer(const UOp *u);

private:
  using Idx = std::vector<const UOp *>;
  Graph &g_;
  Context &c_;
  ShapeInfo &si_;
  int kernel_ = 0;
  int nextRange_ = 0;
  int reduceDepth_ = 0;
  std::vector<const UOp *> loops_; ///< the loop nest around the value being lowered, outermost first
  std::optional<int64_t> work_;
  std::map<std::pair<const UOp *, const UOp *>, const UOp *> memo_;

  /// One value being lowered at one indexing (lower() keeps a stack of these, never recursing).
  struct Frame {
    const UOp *u = nullptr;
    Idx idx;
    bool planned = false;
    std::pair<const UOp *, const UOp *> memoKey{};
    std::vector<std::pair<const UOp *, Idx>> reqs; ///< the sources to lower first, in order
    std::vector<const UOp *> results;              ///< their lowered values
    const UOp *result = nullptr;
    const UOp *gate = nullptr;                     ///< PAD's validity condition
    std::vector<const UOp *> ranges;               ///< REDUCE's new ranges
  };
  const UOp *lower(const UOp *u, const Idx &idx);
  const UOp *plan(Frame &f);
  const UOp *combine(Frame &f);
  const UOp *read(const UOp *state, DType dt, const Idx &idx, const Shape &shape);
  Idx outputRanges(const Shape &shape, std::vector<const UOp *> &ranges, AxisType at);
  Shape shapeOf(const UOp *u);
  const UOp *invalidOf(DType dt);
  // index arithmetic with constant folding
  const UOp *cint(int64_t v);
  const UOp *add(const UOp *a, const UOp *b);
  const UOp *mul(const UOp *a, const UOp *b);
  const UOp *bin(Op op, const UOp *a, const UOp *b);
  const UOp *flat(const Idx &idx, const Shape &shape);
  Idx unflat(const UOp *l, const Shape &shape);
  const UOp *key(const Idx &idx);
  std::optional<int64_t> tripsAt(const Idx &idx) const;
  /// An index or gate expression simplified (tinygrad's symbolic), with the range cache kept per Lowerer.
  const UOp *clean(const UOp *index);
  SymbolicCtx sctx_;
};

/// AFTER(movement(x), deps) -> movement(AFTER(x, deps)) until every AFTER wraps a buffer (seed 003's
/// "move movement ops after AFTER").
const UOp *normalizeAfters(Context &ctx, const UOp *root);

/// Elementwise ops counted as tinygrad's recompute_cost does, through non-materialized sources; nullopt
/// when a REDUCE is reached (reductions are never recomputed).
std::optional<int64_t> recomputeCost(const UOp *x, const std::function<bool(const UOp *)> &isMaterialized);

/// For COPY(where(_device_num == k, x, Invalid)) (multi-lower's MSELECT): x and k; else {src, -1}.
std::pair<const UOp *, int64_t> copySource(const UOp *copy);

} // namespace uopc::rangeify
