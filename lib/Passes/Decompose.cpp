//===- Decompose.cpp - the `decompose` pass: ops a target lacks, written with ops it has ===//
// PassTarget::lacks lists the ops a target's renderer does not spell (tinygrad's renderers say the same by
// what their code_for_op holds, and its decompositions rewrite the rest). Per kernel SINK, each node of such
// an op becomes the same value computed with ops every target has:
//
//   THREEFRY(x, key)  (uint64: tinygrad's threefry2x32, random bits): the two 32-bit halves of x and of
//                     the key, five rounds of four add/rotate/xor steps on uint32 and the key schedule's
//                     additions, joined back into one uint64. The C target keeps its helper
//                     (uopc_threefry, Prelude.cpp); LLVM and PTX get this (they had an LLVM function of
//                     their own before).
//
// Option ops=NAME/NAME/...: decompose these ops instead of the target's list (tests; ops= none).
// Runs after commit-weak (every operand's dtype is concrete), before gpu-map (whose work model counts what
// is rendered).
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"

#include <algorithm>
#include <vector>

namespace uopc {
namespace {

struct Decomposer {
  Context &c;

  const UOp *u32(uint32_t v) { return c.constInt(DType::UInt32, v); }
  const UOp *op(Op o, const UOp *a, const UOp *b) { return c.make(o, a->dtype, {a, b}); }
  const UOp *rotl(const UOp *v, int r) {
    return op(Op::OR, op(Op::SHL, v, u32(static_cast<uint32_t>(r))), op(Op::SHR, v, u32(static_cast<uint32_t>(32 - r))));
  }

  /// THREEFRY(x, key) of uint64 operands, as Interp's threefry2x32 computes it.
  const UOp *threefry(const UOp *u, const UOp *x, const UOp *key) {
    if (u->dtype != DType::UInt64 || x->dtype != DType::UInt64 || key->dtype != DType::UInt64)
      fail("decompose: UOp #" + std::to_string(u->index) + " (THREEFRY): expected uint64 operands and result");
    auto lo = [&](const UOp *v) { return c.make(Op::CAST, DType::UInt32, {v}); };
    auto hi = [&](const UOp *v) { return lo(op(Op::SHR, v, c.constInt(DType::UInt64, 32))); };
    const UOp *key0 = lo(key), *key1 = hi(key);
    const UOp *ks[3] = {key1, op(Op::XOR, op(Op::XOR, key0, key1), u32(0x1BD11BDAu)), key0};
    const UOp *x0 = op(Op::ADD, lo(x), ks[2]), *x1 = op(Op::ADD, hi(x), ks[0]);
    static const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    for (uint32_t i = 0; i < 5; ++i) {
      for (int r : rotations[i % 2]) {
        const UOp *sum = op(Op::ADD, x0, x1);
        x1 = op(Op::XOR, sum, rotl(x1, r));
        x0 = sum;
      }
      x0 = op(Op::ADD, x0, ks[i % 3]);
      x1 = op(Op::ADD, op(Op::ADD, x1, ks[(i + 1) % 3]), u32(i + 1));
    }
    auto wide = [&](const UOp *v) { return c.make(Op::CAST, DType::UInt64, {v}); };
    return op(Op::OR, op(Op::SHL, wide(x1), c.constInt(DType::UInt64, 32)), wide(x0));
  }
};

} // namespace

const UOp *decomposeKernel(Context &c, const UOp *body, const std::vector<Op> &ops) {
  if (body->op != Op::SINK || ops.empty()) return body;
  auto lacked = [&](Op o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  Decomposer d{c};
  return rebuildBottomUp(c, body, [&](const UOp *u, std::span<const UOp *const> srcs) -> const UOp * {
    if (!lacked(u->op)) return nullptr;
    if (u->op == Op::THREEFRY && srcs.size() == 2) return d.threefry(u, srcs[0], srcs[1]);
    fail("decompose: UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) +
         "): the target lacks this op and uopc has no decomposition of it");
  });
}

void runDecompose(Graph &g, const PassContext &pc) {
  std::vector<Op> ops = pc.target.lacks;
  if (auto o = pc.option("ops"); !o.empty() || pc.options.count("ops")) {
    ops.clear();
    for (size_t start = 0; start <= o.size();) {
      size_t end = o.find('/', start);
      if (end == std::string_view::npos) end = o.size();
      std::string_view name = o.substr(start, end - start);
      if (!name.empty()) {
        auto op = opFromName(name);
        if (!op) fail("pass 'decompose': option ops=" + std::string(o) + ": no op named '" + std::string(name) + "'");
        ops.push_back(*op);
      }
      start = end + 1;
    }
  }
  Context &c = *g.ctx;
  rewriteKernelBodies(g, [&](const UOp *call) { return decomposeKernel(c, call->src(0), ops); });
}

} // namespace uopc
