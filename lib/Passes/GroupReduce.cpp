//===- GroupReduce.cpp - the `group-reduce` pass: a block's threads share one reduction ===//
// Lowers what gpu-map's block mapping marked (tinygrad's GROUP_REDUCE, which its fix_group_for_reduce and
// gpudims lower the same way) into memory a GPU block shares and barriers, per kernel SINK:
//
//   REDUCE(x, ranges..., rg)        rg: AxisType GROUP_REDUCE, L threads of one block (L a power of two)
//
// becomes, on each of the block's threads (rg its index in the block):
//
//   p = REDUCE(x, ranges...)                         its part (x itself when there are no other ranges)
//   S = BUFFER[ParamArg(slot, dtype, addrspace=LOCAL)](L)                the block's shared partials
//   S0 = AFTER(S, BARRIER(STORE(INDEX(S, rg), p)))                        every part written
//   S1 = AFTER(S, BARRIER(STORE(INDEX(S0, rg, rg < L/2), S0[rg] <op> S0[rg + L/2] (gated the same))))
//   ...                                                  a tree: log2(L) steps, half the threads each
//   result = INDEX(Sk, 0)                                every thread reads the block's total
//
// and a store whose index depends on none of the block's ranges (one element per block, as a row's sum)
// gets the gate rg == 0: the block's first thread writes it, not all L. Each thread of the tree reads two
// partials and writes one no other thread of that step reads; a BARRIER is where every thread of the block
// has done all before it (the BARRIER's stores). Linearize places the barriers at the top of the thread,
// never inside a loop or a guard (every thread reaches every barrier), and computes again after a barrier
// what is needed after it (nothing but shared memory carries a value across one).
//
// A float16 or bfloat16 reduction keeps its parts and tree in float32 and rounds the total once.
// The sum's order differs from a loop's (partials, then a tree): floating-point results may differ in the
// last bits from a CPU target's, as they do from tinygrad's GPU kernels.
// Runs after gpu-map, before linearize; a kernel without GROUP_REDUCE ranges is left as it is.
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"

#include <vector>

namespace uopc {
namespace {

bool isGroupReduceRange(const UOp *u) {
  return isBlockRange(u) && u->arg->elems()[1]->axisType() == AxisType::GROUP_REDUCE;
}

[[noreturn]] void failAt(const UOp *u, const std::string &msg) {
  fail("group-reduce: UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + "): " + msg);
}

struct Lowering {
  Context &c;
  int64_t block = 0;        ///< L, the threads of a block
  int64_t nextSlot = 0;     ///< the next shared buffer's slot

  /// The lowered form of u = REDUCE(x, rest..., rg): every thread's value of the block's total.
  const UOp *lower(const UOp *u, std::span<const UOp *const> srcs) {
    const UOp *rg = nullptr;
    std::vector<const UOp *> partSrcs{srcs[0]};
    for (const UOp *r : srcs.subspan(1)) {
      if (!isGroupReduceRange(r)) {
        partSrcs.push_back(r);
        continue;
      }
      if (rg) failAt(u, "a REDUCE over two GROUP_REDUCE ranges (a block is one dimension)");
      rg = r;
    }
    Op op = u->arg->elems()[0]->op();
    if (op != Op::ADD && op != Op::MUL && op != Op::MAX) failAt(u, "a grouped reduction of op " + std::string(opName(op)));
    if (u->dtype == DType::Bool) failAt(u, "a grouped reduction of bool");
    // float16 and bfloat16: the parts and the tree in float32, the total rounded once (as a loop's
    // accumulator, which the targets keep in float32 and round when it is read)
    const bool half = u->dtype == DType::Float16 || u->dtype == DType::BFloat16;
    const DType dt = half ? DType::Float32 : u->dtype;
    if (half) partSrcs[0] = c.make(Op::CAST, dt, {srcs[0]});
    const UOp *part = partSrcs.size() == 1 ? partSrcs[0] : c.make(Op::REDUCE, dt, partSrcs, u->arg, u->tag);

    ParamArg pa;
    pa.slot = nextSlot++;
    pa.dtype = dt;
    pa.addrspace = AddrSpace::LOCAL;
    const UOp *shared = c.make(Op::BUFFER, dt, {c.constInt(DType::Int64, block)}, pa.encode(c));
    auto after = [&](const UOp *store) {
      return c.make(Op::AFTER, dt, {shared, c.make(Op::BARRIER, DType::Void, {store})});
    };
    DType it = rg->dtype;
    const UOp *state = after(c.make(Op::STORE, DType::Void, {c.make(Op::INDEX, dt, {shared, rg}), part}));
    for (int64_t s = block / 2; s >= 1; s /= 2) {
      const UOp *gate = c.make(Op::CMPLT, DType::Bool, {rg, c.constInt(it, s)});
      const UOp *mine = c.make(Op::INDEX, dt, {state, rg, gate});
      const UOp *other = c.make(Op::INDEX, dt, {state, c.make(Op::ADD, it, {rg, c.constInt(it, s)}), gate});
      const UOp *v = c.make(op, dt, {mine, other});
      state = after(c.make(Op::STORE, DType::Void, {c.make(Op::INDEX, dt, {state, rg, gate}), v}));
    }
    const UOp *total = c.make(Op::INDEX, dt, {state, c.constInt(it, 0)});
    return half ? c.make(Op::CAST, u->dtype, {total}) : total;
  }
};

} // namespace

const UOp *groupReduceKernel(Context &c, const UOp *body) {
  if (body->op != Op::SINK) return body;
  std::vector<const UOp *> topo = toposort(body);
  const UOp *first = nullptr; // the block range of the lowest number: the store gate's
  Lowering l{c};
  bool grouped = false;
  for (const UOp *u : topo) {
    if (!isBlockRange(u)) continue;
    auto n = constBound(u->src(0));
    if (!n || *n < 2 || *n > 1024 || (*n & (*n - 1)) != 0)
      failAt(u, "a block range needs a constant size, a power of two from 2 to 1024");
    if (l.block && *n != l.block) failAt(u, "block ranges of different sizes (a block is one dimension)");
    l.block = static_cast<int64_t>(*n);
    if (!first || rangeNumber(u) < rangeNumber(first)) first = u;
    grouped = grouped || isGroupReduceRange(u);
  }
  if (!first) return body;
  for (const UOp *u : topo)
    if (blockBufferOf(u)) l.nextSlot = std::max(l.nextSlot, ParamArg::slotOf(u->arg) + 1);

  // the grouped REDUCEs lowered; a store of one element per block written by the block's first thread
  auto movesWithBlock = [](const UOp *ix) {
    for (const UOp *i : ix->src().subspan(1))
      for (const UOp *x : toposort(i))
        if (isBlockRange(x)) return true;
    return false;
  };
  return rebuildBottomUp(c, body, [&](const UOp *u, std::span<const UOp *const> srcs) -> const UOp * {
    if (grouped && u->op == Op::REDUCE)
      for (const UOp *r : u->src().subspan(1))
        if (isGroupReduceRange(r)) return l.lower(u, srcs);
    if (u->op == Op::STORE && u->src(0)->op == Op::INDEX && u->src(0)->nsrc >= 2 &&
        u->src(0)->src(0)->op == Op::PARAM && !movesWithBlock(u->src(0))) {
      std::vector<const UOp *> is(srcs[0]->src().begin(), srcs[0]->src().end());
      is.push_back(c.make(Op::CMPEQ, DType::Bool, {first, c.constInt(first->dtype, 0)}));
      return c.withSrc(u, std::vector<const UOp *>{c.withSrc(srcs[0], is), srcs[1]});
    }
    return nullptr;
  });
}

void runGroupReduce(Graph &g, const PassContext &) {
  Context &c = *g.ctx;
  rewriteKernelBodies(g, [&](const UOp *call) { return groupReduceKernel(c, call->src(0)); });
}

} // namespace uopc
