//===- Pack.cpp - the `pack` pass: a tile's operand read from a packed copy ===//
// Applies the pack:SLOT opts that optimize recorded in a kernel's KernelInfo.applied_opts (chosen by
// optimize's choosePacks, where the operand's stride keeps too few of its lines in the L2, or given by hand:
// --kernel-opts, optimize{opts=...}): the kernel's one read of argument SLOT reads instead a new buffer that
// holds it in the order the kernel's loops step through it, and a kernel of its own, NAME_packSLOT, copies
// it there first (Packer::packRead). optimize only records the opt: it adds no kernel for it.
//
// Runs after optimize (which must have recorded the opts) and before schedule, which orders the copies and
// places their buffers; before linearize, whose LINEAR bodies it does not rewrite (a linearized kernel with a
// pack not yet applied is refused). A pack already applied (the slot reads NAME_packSLOT's buffer) is left
// as it is: running the pass again changes nothing. Kernels without pack opts are unchanged.
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rewrite.h"
#include "Passes/Schedule.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {

struct Packer {
  Context &c;
  int64_t nextBuffer; ///< the slot of the next intermediate BUFFER

  /// The kernel SINK `sink` (called with `args`, the CALL's sources after the SINK) reads the buffer in
  /// argument SLOT once, INDEX(PARAM SLOT, idx), ungated, idx depending on constant-size loops D only
  /// (in the order the kernel nests them: output loops, then reduction loops, then lanes). It then reads
  /// instead a new buffer Q in that slot, Q[lin(D)] (row-major over D), and a kernel of its own,
  /// NAME_packSLOT, copies Q[lin(D)] = P[idx(D)] before it: the element the kernel reads at a step of its
  /// loops is the one after the element of the step before. Throws Error (via bad) otherwise.
  template <typename Bad>
  std::pair<const UOp *, std::vector<const UOp *>> packRead(const UOp *sink, std::vector<const UOp *> args, int64_t slot,
                                                           const std::string &name, Bad bad) {
    if (slot >= static_cast<int64_t>(args.size())) bad("the kernel has " + std::to_string(args.size()) + " arguments");
    const UOp *read = nullptr;
    const std::vector<const UOp *> nodes = toposort(sink);
    for (const UOp *u : nodes) {
      if (u->op != Op::INDEX || u->src(0)->op != Op::PARAM || ParamArg::slotOf(u->src(0)->arg) != slot) continue;
      if (read && read != u) bad("the kernel indexes that argument more than once (or writes it)");
      read = u;
    }
    if (!read) bad("the kernel does not read that argument");
    for (const UOp *u : nodes)
      if (u->op == Op::STORE && u->src(0) == read) bad("the kernel writes that argument");
    if (read->nsrc != 2) bad("the read is gated");
    const UOp *idx = read->src(1);
    std::unordered_set<const UOp *> used;
    for (const UOp *u : toposort(idx)) {
      if (u->op == Op::RANGE) used.insert(u);
      else if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Invalid) bad("the read is gated");
      else if (u->op != Op::CONST && (u->nsrc == 0 || u->op == Op::INDEX))
        bad("the read's index depends on more than the kernel's loops");
    }
    // the loops in the order the kernel nests them
    const UOp *end = nullptr;
    for (const UOp *e : sink->src())
      for (const UOp *u : toposort(e))
        if (u == read && !end) end = e;
    std::vector<const UOp *> order, lanes;
    auto add = [&](const UOp *r) {
      if (std::find(order.begin(), order.end(), r) == order.end() && std::find(lanes.begin(), lanes.end(), r) == lanes.end())
        (isUpcastRange(r) ? lanes : order).push_back(r);
    };
    for (const UOp *r : end->src().subspan(1)) add(r);
    for (const UOp *u : toposort(end->src(0)))
      if (u->op == Op::REDUCE)
        for (const UOp *r : u->src().subspan(1)) add(r);
    order.insert(order.end(), lanes.begin(), lanes.end());
    std::vector<const UOp *> dims;
    std::vector<int64_t> sizes;
    int64_t numel = 1;
    for (const UOp *r : order) {
      if (!used.count(r)) continue;
      auto n = r->nsrc == 1 ? constBound(r->src(0)) : std::nullopt;
      if (!n || *n < 1 || static_cast<int64_t>(*n) > (int64_t(1) << 28) / numel) bad("the read's loops are not of constant sizes of at most 2^28 elements in all");
      dims.push_back(r);
      sizes.push_back(static_cast<int64_t>(*n));
      numel *= sizes.back();
    }
    if (dims.size() != used.size()) bad("the read's index depends on a loop the kernel does not run");
    auto lin = [&](const std::vector<const UOp *> &rs) {
      const UOp *x = c.constInt(DType::WeakInt, 0);
      for (size_t d = 0; d < rs.size(); ++d)
        x = d == 0 ? rs[d] : c.make(Op::ADD, DType::WeakInt, {c.make(Op::MUL, DType::WeakInt, {x, c.constInt(DType::WeakInt, sizes[d])}), rs[d]});
      return x;
    };
    const UOp *p = read->src(0);
    ParamArg pa = ParamArg::decode(p->arg), qa;
    qa.dtype = pa.dtype;
    qa.devices = pa.devices;
    qa.deviceIsTuple = pa.deviceIsTuple;
    qa.addrspace = pa.addrspace;
    const UOp *n = c.constInt(DType::WeakInt, numel);
    auto param = [&](ParamArg a, int64_t at, const UOp *size) {
      a.slot = at;
      return c.make(Op::PARAM, p->dtype, {size}, a.encode(c));
    };
    if (nextBuffer > INT32_MAX) bad("the graph's buffer numbers are used up");
    qa.slot = nextBuffer++;
    const UOp *q = c.make(Op::BUFFER, p->dtype, {n}, qa.encode(c));
    // the copy: Q[lin(D')] = P[idx(D')] over loops D' like D
    std::vector<const UOp *> loops;
    std::unordered_map<const UOp *, const UOp *> to;
    for (size_t d = 0; d < dims.size(); ++d) {
      std::vector<const Arg *> elems(dims[d]->arg->elems().begin(), dims[d]->arg->elems().end());
      elems[0] = c.argInt(static_cast<int64_t>(d));
      elems[1] = c.argAxisType(AxisType::LOOP);
      loops.push_back(c.make(Op::RANGE, dims[d]->dtype, {c.constInt(dims[d]->dtype, sizes[d])}, c.argTuple(elems), dims[d]->tag));
      to[dims[d]] = loops.back();
    }
    const UOp *from = c.make(Op::INDEX, read->dtype, {param(pa, 1, p->src(0)), substitute(c, idx, to)});
    const UOp *store = c.make(Op::STORE, DType::Void, {c.make(Op::INDEX, read->dtype, {param(qa, 0, n), lin(loops)}), from});
    std::vector<const UOp *> endSrc{store};
    endSrc.insert(endSrc.end(), loops.begin(), loops.end());
    // (a read the blocked-layout pass made of blocks of channels, "SLOT:L:P", is now the copy's: its argument 1;
    // the kernel reads Q in its loops' order)
    std::vector<std::string> blocked = blockedArgs(sink), kept, moved;
    for (const std::string &b : blocked)
      (b.rfind(std::to_string(slot) + ":", 0) == 0 ? moved : kept).push_back(b);
    // (a weight's copy, one the exporter marked, is once, as a relayout's: the schedule runs it once per load
    // of the inputs and every later run reads its buffer; a copy of the caller's data runs in every run)
    std::vector<std::pair<std::string_view, const Arg *>> copyFields{{"name", c.argString(copyName(name, slot))}};
    const UOp *source = args[static_cast<size_t>(slot)];
    if (source->op == Op::PARAM && source->arg && ParamArg::decode(source->arg).weight)
      copyFields.emplace_back("once", c.argBool(true));
    std::vector<const Arg *> copyBlocked;
    for (const std::string &b : moved) copyBlocked.push_back(c.argString("1" + b.substr(b.find(':'))));
    if (!copyBlocked.empty()) copyFields.emplace_back("blocked", c.argTuple(copyBlocked));
    const Arg *info = makeRecord(c, "KernelInfo", copyFields);
    const UOp *copy = c.make(Op::SINK, DType::Void, {c.make(Op::END, DType::Void, endSrc, end->arg, end->tag)}, info);
    const UOp *call = c.make(Op::CALL, DType::Void, {copy, q, args[static_cast<size_t>(slot)]});
    args[static_cast<size_t>(slot)] = c.make(Op::AFTER, q->dtype, {q, call});
    const UOp *packed = c.make(Op::INDEX, read->dtype, {param(qa, slot, n), lin(dims)});
    const UOp *reader = substitute(c, sink, {{read, packed}});
    if (!moved.empty()) reader = withBlockedArgs(c, reader, kept);
    return {reader, std::move(args)};
  }

  static std::string copyName(const std::string &name, int64_t slot) { return name + "_pack" + std::to_string(slot); }

  /// Whether argument `arg` of kernel `name` is what packRead left for its slot: the state of a BUFFER after
  /// NAME_packSLOT's copy into it.
  static bool isPacked(const UOp *arg, const std::string &name, int64_t slot) {
    if (arg->op != Op::AFTER || arg->nsrc != 2 || arg->src(0)->op != Op::BUFFER) return false;
    const UOp *call = arg->src(1);
    const UOp *body = kernelSink(call);
    const Arg *n = body && body->arg && body->arg->kind == ArgKind::Record ? body->arg->field("name") : nullptr;
    return n && n->kind == ArgKind::String && n->str() == copyName(name, slot) && call->nsrc > 1 && call->src(1) == arg->src(0);
  }
};

std::string nameOf(const UOp *sink) {
  const Arg *n = sink->arg && sink->arg->kind == ArgKind::Record ? sink->arg->field("name") : nullptr;
  return n && n->kind == ArgKind::String ? std::string(n->str()) : "";
}

/// The slots of the kernel's pack:SLOT opts, in the order applied_opts lists them.
std::vector<int64_t> packSlots(const UOp *sink, const std::string &name) {
  std::vector<int64_t> slots;
  for (const std::string &o : appliedOpts(sink)) {
    if (o.rfind("pack:", 0) != 0) continue;
    int64_t s = -1;
    const char *b = o.data() + 5, *e = o.data() + o.size();
    auto [ptr, ec] = std::from_chars(b, e, s);
    if (b == e || ec != std::errc() || ptr != e || s < 0 || s > INT32_MAX)
      fail("pass 'pack': kernel " + name + ": applied opt '" + o + "' is not pack:SLOT");
    slots.push_back(s);
  }
  return slots;
}

} // namespace

void runPack(Graph &g, const PassContext &) {
  Context &c = *g.ctx;
  Packer packer{c, 1000};
  std::vector<const UOp *> nodes = topLevelNodes(g.root);
  for (const UOp *u : nodes)
    if (u->op == Op::BUFFER) packer.nextBuffer = std::max(packer.nextBuffer, std::min<int64_t>(ParamArg::slotOf(u->arg), INT32_MAX) + 1);
  std::unordered_map<const UOp *, const UOp *> now;
  for (const UOp *u : nodes) {
    std::vector<const UOp *> srcs(u->src().begin(), u->src().end());
    const UOp *sink = kernelSink(u);
    for (size_t i = sink ? 1 : 0; i < srcs.size(); ++i)
      if (auto it = now.find(srcs[i]); it != now.end()) srcs[i] = it->second;
    if (sink) {
      std::string name = nameOf(sink);
      std::vector<const UOp *> args(srcs.begin() + 1, srcs.end());
      for (int64_t slot : packSlots(sink, name)) {
        auto bad = [&](const std::string &why) {
          fail("pass 'pack': kernel " + name + ": opt pack:" + std::to_string(slot) + ": " + why);
        };
        if (slot < static_cast<int64_t>(args.size()) && Packer::isPacked(args[static_cast<size_t>(slot)], name, slot)) continue;
        if (srcs[0] != sink) bad("the kernel is linearized (pack runs before linearize)");
        std::tie(srcs[0], args) = packer.packRead(srcs[0], args, slot, name, bad);
        sink = srcs[0];
      }
      srcs.resize(1);
      srcs.insert(srcs.end(), args.begin(), args.end());
    }
    const UOp *n = c.make(u->op, u->dtype, srcs, u->arg, u->tag);
    if (n != u) now[u] = n;
  }
  if (auto it = now.find(g.root); it != now.end()) g.root = it->second;
}

} // namespace uopc
