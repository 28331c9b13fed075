//===- Shape.h - shape and device inference for tensor-level graphs -------===//
// tinygrad's UOp._shape and UOp.device at the corpus commit. A dimension is a weakint node: a CONST
// for a known size, any other weakint expression (a symbolic PARAM, arithmetic on it) for a symbolic
// one. Results are cached per node in a ShapeInfo, which lives as long as the graph's Context.
#pragma once

#include "IR/Graph.h"

#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace uopc {

/// A shape: one weakint node per axis.
using Shape = std::vector<const UOp *>;

/// Caches shapes and devices of the nodes of one Context. Throws Error (via the Graph's describe) when
/// a node's operands make its shape undefined (e.g. RESHAPE to a different element count).
class ShapeInfo {
public:
  explicit ShapeInfo(const Graph &g) : g_(g) {}
  /// The node's shape, or nullopt when the node has none (a SINK, an index-level node). A STORE has
  /// its destination's shape. The reference stays valid as long as the ShapeInfo.
  const std::optional<Shape> &shape(const UOp *u);
  /// The node's device(s): empty when it has none.
  const std::vector<std::string> &device(const UOp *u);
  /// The constant value of a dimension, or nullopt if it is symbolic.
  static std::optional<int64_t> constDim(const UOp *d);
  /// "(4, 5)" / "(4, n)" for messages.
  static std::string str(const Shape &s);

private:
  const Graph &g_;
  NodeMap<int32_t> shapeSlot_{-1}, deviceSlot_{-1};
  // deques: references handed out stay valid while later calls append
  std::deque<std::optional<Shape>> shapes_;
  std::deque<std::vector<std::string>> devices_;
};

} // namespace uopc
