//===- KernelABI.h - what a rendered kernel's function takes, for every target ===//
// Every target renders a linearized kernel CALL as one function with the same arguments (CTarget.h,
// LLVMTarget.h): one pointer per CALL argument in argument order (argument i binds kernel PARAM slot i),
// named out<i> when the kernel stores to it and in<i> otherwise, then one int64 per symbolic variable
// (sorted by name, `_device_num` excluded: the renderer spells it as the step's device). This file is that
// ABI, read once from the kernel's IR, and the one-line summary every kernel file starts with.
#pragma once

#include "IR/Kernel.h"
#include "IR/UOp.h"

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace uopc {

/// The dtypes the kernels can hold: bool, the sized integers, weakint, float16, bfloat16, float32,
/// float64 and weakfloat.
bool supportedKernelDType(DType dt);
/// A PARAM that is a scalar variable (no size, or an empty STACK), not a buffer.
bool isScalarParamNode(const UOp *u);

struct KernelABI {
  struct Buffer {
    DType dtype = DType::Void; ///< the kernel PARAM's dtype (the CALL argument's where the kernel has none)
    bool written = false;
    std::string name; ///< out<slot> or in<slot>
  };
  std::vector<Buffer> buffers;            ///< per CALL argument
  std::vector<std::string> vars;          ///< the variables, sorted
  std::map<std::string, std::string> varArg; ///< variable -> its argument's name (var_<name>)
  std::set<int64_t> written;              ///< the slots the kernel stores to
  std::string ops;                        ///< the ops the kernel computes, sorted, space-separated
  /// The trip count of the kernel's THREAD loop (linearize's CPU split; 0: none). Such a kernel takes two
  /// more int64 arguments after the variables, `uopc_lo` and `uopc_hi`: it runs that loop's iterations
  /// [lo, hi) only, and the runner calls it once per thread with a part of [0, parallel).
  int64_t parallel = 0;

  /// Reads the ABI of a linearized kernel CALL. `target` prefixes the errors ("C target"): not a
  /// linearized kernel CALL (a COPY, a SINK that did not go through linearize), a dtype no target holds,
  /// a scalar PARAM without a name, a slot past the CALL's arguments.
  static KernelABI of(const UOp *call, std::string_view target);
  /// "<symbol>: out0 (float32) over 4x8: ADD MUL[, device 1]": what the kernel computes.
  std::string summary(const UOp *call, const std::string &symbol, int64_t deviceNum) const;
};

/// Per RANGE item of `items`, in order: whether it is a loop of independent lanes a target may run as
/// vector lanes: an UPCAST range (IR/Kernel.h) with no loop inside it, in which every accumulator updated
/// has that lane among its own (no value carried from one lane to the next: a partial sum's combine
/// loop is not one) and every buffer access moves by 0 or 1 element per lane (not a gather: a conv's
/// output-channel lanes read weights 576 elements apart, and run better unrolled than as a vector loop).
std::vector<bool> independentLaneLoops(std::span<const UOp *const> items);

/// Per RANGE item of `items`, in order (as independentLaneLoops, `laneLoops`): for a vector lane loop whose items
/// only compute values and add products x * w to float accumulators (REDUCE ADD), x one read of a padded input
/// loaded before the loop under its gates with 0 where they fail (a convolution's window past the edge of its
/// map), that read's INDEX; nullptr for every other loop. A renderer runs such a loop only where the gates hold:
/// out of bounds each product is 0 * w, the sum's identity for every finite w, so the loop adds nothing. (An
/// Invalid element along a reduced axis contributes the identity anyway, reduce-identity; but the 0 may be a user's
/// zero pad, and where a weight is inf or NaN tinygrad's 0 * w there is a NaN this sum then does not get.) Only where each condition of the gates (the terms of their ANDs) is either constant in each copy of
/// the loops the renderer unrolls around it (`unrolled`: a register tile's pixels, its window's columns) or
/// depends on none of them (a window's row past the top or bottom), and one condition is of the first kind: the
/// compiler then drops the copies that read padding and branches once on the rows' condition. A condition that
/// mixes the two (the tiles of a 56-pixel row at a runtime offset) stays a select; so do the rows' alone.
/// withRows: only where some condition is of the second kind too (a row tiled whole with its borders gated,
/// ChannelTile.cpp's rowGated: the LLVM target's rule, whose border pieces of a long row ran slower with it).
std::vector<const UOp *> paddedLaneGates(std::span<const UOp *const> items, const std::vector<bool> &laneLoops,
                                         const std::unordered_set<const UOp *> &unrolled, bool withRows = false);

/// The one loop every renderer runs over a linearized kernel's items (lib/Passes/Linearize.cpp): R
/// implements loopBegin(RANGE), loopEnd(END), ifBegin(IF), ifEnd(ENDIF), accumulator(REDUCE),
/// accumulate(REDUCE, x) for STORE(REDUCE, x), store(STORE), barrier(BARRIER), prefetch(PREFETCH), statement(void CUSTOM) and value(any other
/// node, which it computes and remembers as that node's latest definition).
template <class R> void renderItems(std::span<const UOp *const> items, R &r) {
  for (const UOp *u : items) {
    switch (u->op) {
    case Op::RANGE: r.loopBegin(u); break;
    case Op::END: r.loopEnd(u); break;
    case Op::IF: r.ifBegin(u); break;
    case Op::ENDIF: r.ifEnd(u); break;
    case Op::REDUCE: r.accumulator(u); break;
    case Op::BARRIER: r.barrier(u); break;
    case Op::PREFETCH: r.prefetch(u); break;
    case Op::STORE:
      if (u->src(0)->op == Op::REDUCE) r.accumulate(u->src(0), u->src(1));
      else r.store(u);
      break;
    default:
      if ((u->op == Op::CUSTOM || u->op == Op::CUSTOMI) && u->dtype == DType::Void) r.statement(u);
      else r.value(u);
      break;
    }
  }
}

} // namespace uopc
