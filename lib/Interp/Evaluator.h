//===- Evaluator.h - the interpreter's node-by-node evaluation (internal) --===//
// Values, buffer slots and the Evaluator class shared by Interpreter.cpp (graph walk, consts, params,
// elementwise, reduce), Stores.cpp (STORE and AFTER) and Movement.cpp (movement and multi-device ops).
#pragma once

#include "IR/Graph.h"
#include "Interp/Array.h"
#include "Interp/Interpreter.h"
#include "Passes/Schedule.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace uopc::interp {

/// The value of one node: one array per device (a single array for a value on one device or on none).
/// With axis >= 0 the value is sharded (tinygrad's MULTI): the logical tensor is the per-device arrays
/// concatenated along `axis`, and `shape` is the shape of one shard. With axis < 0 every device holds
/// its own whole tensor of `shape` (a multi-device PARAM, a replicated COPY, anything computed from them).
struct Value {
  DType dtype = DType::Void;
  Dims shape;
  std::vector<ArrayPtr> per;
  int axis = -1;
  std::vector<std::string> devices;

  size_t count() const { return per.size(); }
  /// The array device d computes with (the only one when the value is on one device).
  const ArrayPtr &on(size_t d) const { return per.size() == 1 ? per[0] : per.at(d); }
  /// The logical shape: `shape` with the sharded axis multiplied by the device count.
  Dims full() const {
    Dims f = shape;
    if (axis >= 0) f[static_cast<size_t>(axis)] *= static_cast<int64_t>(per.size());
    return f;
  }
};
using ValuePtr = std::shared_ptr<const Value>;

/// A buffer slot's contents during the evaluation: one array per device.
struct SlotState {
  SlotInfo info;
  int axis = -1; ///< ParamArg.axis: the PARAM is sharded along it
  std::vector<std::shared_ptr<Array>> data;
  /// The contents before the evaluation's first STORE: what a PARAM read directly sees. Shares the
  /// arrays with `data` until a STORE copies them (copy on write).
  std::vector<ArrayPtr> initial;
};

class Evaluator {
public:
  Evaluator(const Graph &g, std::map<std::string, int64_t> vars);

  /// Creates the buffer slots declared by the graph's PARAMs (zero-filled).
  void declareSlots();
  std::map<int64_t, SlotState> &slots() { return slots_; }
  /// Evaluates every node reachable from the root, in topological order.
  void run();
  /// Runs the CALLs of a kernel-split graph (Kernels.cpp) in dependency order.
  void runKernels();
  /// Evaluates only the nodes `u` depends on, and returns u's value.
  ValuePtr evaluateOnly(const UOp *u);

private:
  const Graph &g_;
  std::map<std::string, int64_t> vars_;
  std::map<int64_t, SlotState> slots_;
  NodeMap<ValuePtr> values_;

  [[noreturn]] void error(const UOp *u, const std::string &msg) const;
  /// Binds the variables that a BIND gives a constant value.
  void bindVariables();
  void evalNode(const UOp *u);
  ValuePtr eval(const UOp *u);
  const Value &val(const UOp *consumer, const UOp *u) const;
  /// The dims a shape operand stands for on device d (tinygrad's as_shape).
  Dims dims(const UOp *consumer, const UOp *operand, size_t d) const;
  /// The device count shared by these values (1 broadcasts); throws when two counts disagree.
  size_t commonCount(const UOp *u, const std::vector<const Value *> &vs) const;
  std::vector<std::string> devicesFor(const std::vector<const Value *> &vs, size_t n) const;

  // Interpreter.cpp
  ValuePtr evalConst(const UOp *u);
  ValuePtr evalParam(const UOp *u);
  ValuePtr evalElementwise(const UOp *u);
  ValuePtr evalReduce(const UOp *u);
  ValuePtr evalStack(const UOp *u);
  // Stores.cpp
  void evalStore(const UOp *u);
  ValuePtr evalAfter(const UOp *u);
  /// For a target that is a view of a buffer PARAM: the flat buffer index of every element of the view
  /// (-1 where a PAD added it), with the slot. nullopt when `u` is not such a view.
  std::optional<std::pair<Value, SlotState *>> indexMap(const UOp *u);
  /// Operand s as device d of an op with logical output `outFull`, sharded on `outAxis` over `nd`
  /// devices (tinygrad's shard_srcs): returns the array and its shape. `fullCache` holds the gathered
  /// logical tensor of a sharded s between calls.
  std::pair<ArrayPtr, Dims> localOperand(const UOp *u, const Value &s, size_t d, const Dims &outFull, int outAxis,
                                         size_t nd, ArrayPtr &fullCache) const;

  // Movement.cpp
  /// A movement op or MULTI applied to x; in index mode PAD fills -1 (the index maps of stores).
  Value movement(const UOp *u, const Value &x, bool indexMode);
  ValuePtr evalCopy(const UOp *u);
  ValuePtr evalMselect(const UOp *u);
  ValuePtr evalMstack(const UOp *u);
  ValuePtr evalAllreduce(const UOp *u);
};

/// A graph kernel-split produced: its SINK holds AFTERs of CALLs of kernel SINKs or COPYs.
bool isKernelGraph(const Graph &g);

/// A PARAM of empty shape: a scalar variable (or _device_num), not a buffer.
bool isScalarParam(const UOp *u);

/// The logical tensor of a sharded value: its shards concatenated along the axis.
ArrayPtr gatherShards(const Value &v);

} // namespace uopc::interp
