//===- Schedule.h - execution order, buffers and memory plan of a kernel graph ===//
// buildSchedule() reads a kernel graph (kernel-split's output: a SINK of AFTER(buffer, CALL(...)) states)
// and returns everything needed to run it: the steps in execution order (kernel launches, once per device
// of the buffer a kernel writes, copies between devices, and allreduces, one step for all their devices), every buffer with its size, dtype and
// devices, the memory plan of the intermediate buffers (one arena per device; buffers whose lifetimes do
// not overlap share storage), the function's buffer parameters with their roles, and the symbolic
// variables with their ranges. The driver writes the manifest from it and calls the emitter per kernel
// step; the `schedule` pass records the same plan in the graph (docs/schedule.md).
//
// The order is the reference interpreter's (lib/Interp/Kernels.cpp): a CALL runs after the CALLs that
// produce the states it takes (read-after-write through AFTER arguments) and after every other CALL that
// reads the prior state it overwrites (write-after-read). A cycle in these dependencies is a stale read
// (tinygrad's "cycle detected while combining buffer states") and throws Error.
#pragma once

#include "IR/Graph.h"
#include "Passes/Coverage.h"

#include <cstdint>
#include <string>
#include <vector>

namespace uopc {

/// A buffer: a function parameter (a buffer PARAM, slot >= 0) or an intermediate (a BUFFER node).
struct SchedBuffer {
  const UOp *node = nullptr; ///< the raw PARAM/BUFFER (without AFTER)
  bool isParam = false;
  int64_t slot = -1;         ///< PARAM slot; BUFFER: the slot kernel-split gave it (>= 1000)
  DType dtype = DType::Void;
  int64_t numel = 0;         ///< elements per device (an upper bound when the size is symbolic)
  bool symbolicSize = false; ///< the size depends on a variable: numel is its maximum
  std::vector<size_t> devices; ///< indices into Schedule::devices, one per device of the buffer
  int64_t bytes() const { return numel * static_cast<int64_t>(dtypeSize(dtype)); }

  // parameters
  std::string role; ///< "input", "output" or "inout"
  /// a written parameter that its first write may leave partly unwritten: per device, the elements no
  /// step writes (they keep their prior contents; Passes/Coverage.h). Empty otherwise.
  std::vector<KeptElements> kept;

  // intermediates: per device of the buffer, the byte offset in that device's arena, and the steps
  // (indices into Schedule::steps) of its first and last use there
  std::vector<int64_t> offsets;
  std::vector<std::pair<int64_t, int64_t>> lifetimes;
  // (two intermediates share storage when, on one device, their [offset, offset + bytes) overlap; their
  // lifetimes there are then disjoint. Not listed: all pairs would be quadratic in the buffers.)
};

/// One device of one buffer.
struct BufRef {
  size_t buffer = 0; ///< index into Schedule::buffers
  size_t device = 0; ///< index into that buffer's devices
  bool operator==(const BufRef &) const = default;
};

struct SchedStep {
  enum class Kind { Kernel, Copy, Allreduce } kind = Kind::Kernel;
  const UOp *call = nullptr; ///< the CALL node
  size_t callIndex = 0;      ///< the CALL's position in execution order (Schedule::calls)
  size_t device = 0;         ///< index into Schedule::devices: where it runs (a copy: its destination)
  // kernels
  size_t kernel = 0;          ///< index into Schedule::kernels
  int64_t deviceNum = 0;      ///< the value of _device_num: the index of the device in the written buffer's
  std::vector<BufRef> args;   ///< in the CALL's argument order (kernel PARAM slot i = args[i])
  std::vector<std::string> vars; ///< the kernel's variables (scalar PARAMs but _device_num), sorted by name
  /// Runs once per load of the inputs, not in every run: a kernel the optimizer marked so (KernelInfo once:
  /// a re-layout of weights) that reads only parameters of role input and writes only intermediates, or, in a
  /// graph that marks its weights, one that reads only weights and what once steps wrote (a transform of the
  /// weights) and writes intermediates of its own; what it writes then lives from the first step to the last
  /// (nothing else shares that memory).
  bool once = false;
  // copies
  BufRef src, dst;
  int64_t bytes = 0; ///< (an allreduce: of each shard)
  // allreduces: one step for every device of the buffers (multi-lower's ALLREDUCE[op, devices, order])
  std::vector<BufRef> srcs, dsts; ///< per device, in the buffers' device order: its shard, and where the result goes
  Op reduceOp = Op::ADD;
  bool ring = false; ///< the one-process order is tinygrad's ring (IR/Collective.h), else device order
};

/// A kernel (one CALL of a kernel SINK): its name, unique and safe as a file name and C identifier.
struct SchedKernel {
  const UOp *call = nullptr;
  std::string name;
};

struct SchedVar {
  std::string name;
  int64_t slot = -1;
  int64_t vmin = 0, vmax = 0;
};

struct Schedule {
  std::vector<std::string> devices;    ///< device names, in order of first appearance (params by slot first)
  std::vector<std::string> deviceDirs; ///< per device: a unique name safe as a directory ("CPU:1" -> "CPU_1")
  std::vector<SchedBuffer> buffers;    ///< parameters by slot, then intermediates by slot
  std::vector<const UOp *> calls;      ///< every CALL, in execution order
  std::vector<SchedKernel> kernels;    ///< kernel CALLs, in execution order
  std::vector<SchedStep> steps;        ///< in execution order
  std::vector<SchedVar> vars;          ///< by name
  std::vector<int64_t> arenaBytes;     ///< per device: bytes of its intermediate arena
  const UOp *root = nullptr;           ///< the graph root this plan describes (the schedule pass sets it)
};

/// Alignment of every intermediate inside its arena.
inline constexpr int64_t kArenaAlign = 64;

/// The schedule of a kernel graph: what the `schedule` pass builds (and unit tests). Throws Error for a graph that is not one (naming the node), for a
/// dependency cycle (a stale read), and for what cannot be sized.
Schedule buildSchedule(const Graph &g);

/// The plan the `schedule` pass left in g (Graph::schedule) when it still describes g (the passes since then
/// rewrote kernel bodies only), else null: the driver, the manifest and the viewer read it; nothing else builds
/// a schedule.
const Schedule *currentSchedule(const Graph &g);

/// The nodes under root without entering CALL bodies, sources first (iterative). The order in which both
/// the schedule and the interpreter take the top-level calls.
std::vector<const UOp *> topLevelNodes(const UOp *root);

/// `s` made safe as a file name and C identifier: [A-Za-z0-9_], not starting with a digit, never empty.
std::string sanitizeName(std::string_view s);

} // namespace uopc
