//===- KernelSplit.cpp - the `kernel-split` pass: one CALL of a kernel SINK per store ===//
// Seed 003's split_store after rangeify. Every STORE of the function and every STAGE/CONTIGUOUS (a new
// BUFFER) becomes a kernel: its value is lowered to index arithmetic on RANGEs (Rangeify/Lower.h), and
// the buffer states it touches become the kernel's PARAMs, slot 0 the one it writes. The top graph is
//
//   SINK(state...)   state = AFTER(buffer, CALL(SINK(END(STORE(INDEX(PARAM 0, i), v), ranges)), args...))
//
// where each CALL argument is a buffer state (a buffer PARAM/BUFFER or an AFTER of one): that is the
// read-after-write order the schedule follows. A COPY becomes CALL(COPY(PARAM 1), dst, src) with arg
// [destination device(s), source device index or -1]; multi-lower's COPY(where(_device_num == k, x,
// Invalid)) copies device k's shard of x.
//
// Precondition: rangeify ran (STAGE marks every value read by more than one kernel).
#include "IR/Error.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rangeify/Lower.h"
#include "Passes/Rewrite.h"

#include <unordered_map>

namespace uopc {
namespace {

using namespace rangeify;

/// The buffer PARAM/BUFFER a state (PARAM, BUFFER or AFTER chain) belongs to.
const UOp *rawBuffer(const UOp *s) {
  while (s->op == Op::AFTER || isMovement(s->op)) s = s->src(0);
  return s;
}

struct Splitter {
  Graph &g;
  Context &c;
  ShapeInfo si;
  Lowerer L;
  std::unordered_map<const UOp *, const UOp *> state; // AFTER / materialized node -> its buffer state
  std::unordered_map<const UOp *, const UOp *> callOf; // STORE -> CALL
  int nextBuffer = 1000;
  int nextKernel = 0;

  explicit Splitter(Graph &graph) : g(graph), c(*graph.ctx), si(graph), L(graph, si) {
    L.isMaterialized = [](const UOp *u) { return u->op == Op::STAGE || u->op == Op::CONTIGUOUS || u->op == Op::COPY; };
    L.stateOf = [this](const UOp *u) -> const UOp * {
      if (Lowerer::isBuffer(u)) return u;
      auto it = state.find(u);
      if (it == state.end()) fail("kernel-split: " + g.describe(u) + " is read before it is written");
      return it->second;
    };
  }

  const UOp *newBuffer(const UOp *like, DType dt, const std::vector<std::string> &devices) {
    const auto &s = si.shape(like);
    const UOp *n = c.constInt(DType::WeakInt, 1);
    for (const UOp *d : *s) {
      auto a = ShapeInfo::constDim(n), b = ShapeInfo::constDim(d);
      n = (a && b) ? c.constInt(DType::WeakInt, *a * *b) : (a && *a == 1) ? d : c.make(Op::MUL, DType::WeakInt, {n, d});
    }
    ParamArg p;
    p.slot = nextBuffer++;
    p.dtype = dt;
    p.devices = devices;
    p.deviceIsTuple = devices.size() > 1;
    return c.make(Op::BUFFER, dt, {n}, p.encode(c));
  }

  /// Wraps a lowered kernel body into CALL(SINK(body), states...), `out` (the state written) first.
  const UOp *makeCall(const UOp *body, const UOp *out) {
    std::vector<const UOp *> args{out};
    std::unordered_map<const UOp *, size_t> slotOf{{rawBuffer(out), 0}};
    std::unordered_map<const UOp *, const UOp *> subst;
    // the INDEXed states in order of first use, without walking into the states (their CALLs)
    std::vector<const UOp *> indexed;
    std::unordered_map<const UOp *, bool> seen;
    std::vector<const UOp *> stack{body};
    while (!stack.empty()) {
      const UOp *u = stack.back();
      stack.pop_back();
      if (seen[u]) continue;
      seen[u] = true;
      if (u->op == Op::INDEX) indexed.push_back(u->src(0));
      for (size_t i = u->nsrc; i-- > (u->op == Op::INDEX ? 1u : 0u);) stack.push_back(u->src(i));
    }
    for (const UOp *st : indexed) {
      if (subst.count(st)) continue;
      const UOp *raw = rawBuffer(st);
      auto [it, fresh] = slotOf.emplace(raw, args.size());
      if (fresh) args.push_back(st);
      else if (st->op == Op::AFTER && args[it->second]->op != Op::AFTER) args[it->second] = st;
      ParamArg p = ParamArg::decode(raw->arg);
      p.slot = static_cast<int64_t>(it->second);
      subst[st] = c.make(Op::PARAM, raw->dtype, {raw->src(0)}, p.encode(c));
    }
    if (!subst.count(out)) {
      const UOp *raw = rawBuffer(out);
      ParamArg p = ParamArg::decode(raw->arg);
      p.slot = 0;
      subst[out] = c.make(Op::PARAM, raw->dtype, {raw->src(0)}, p.encode(c));
    }
    const UOp *k = substitute(c, body, subst);
    const Arg *info = makeRecord(c, "KernelInfo", {{"name", c.argString("k" + std::to_string(nextKernel++))}});
    const UOp *sink = c.make(Op::SINK, DType::Void, {k}, info);
    std::vector<const UOp *> srcs{sink};
    srcs.insert(srcs.end(), args.begin(), args.end());
    return c.make(Op::CALL, DType::Void, srcs);
  }

  /// A buffer state holding x's value: x's own state when it is a plain buffer read, else a new kernel.
  const UOp *materialize(const UOp *x) {
    if (auto it = state.find(x); it != state.end()) return it->second;
    if (Lowerer::isBuffer(x)) return x;
    const UOp *buf = newBuffer(x, x->dtype, si.device(x));
    L.beginKernel(0);
    const UOp *call = makeCall(L.lowerMaterialize(x, buf), buf);
    const UOp *st = c.make(Op::AFTER, buf->dtype, {buf, call});
    state[x] = st;
    return st;
  }

  /// CALL(COPY(PARAM 1)[devices, source device], dst, src): copies `copy`'s source into the state `dst`.
  const UOp *copyCall(const UOp *copy, const UOp *dst) {
    auto [src, devIdx] = copySource(copy);
    const UOp *from = materialize(src);
    if (from->op != Op::AFTER && !Lowerer::isBuffer(from)) fail("kernel-split: cannot copy " + g.describe(copy));
    ParamArg p = ParamArg::decode(rawBuffer(from)->arg);
    p.slot = 1;
    const UOp *body = c.make(Op::COPY, copy->dtype, {c.make(Op::PARAM, from->dtype, {rawBuffer(from)->src(0)}, p.encode(c))},
                             c.argTuple({copy->arg, c.argInt(devIdx)}));
    return c.make(Op::CALL, DType::Void, {body, dst, from});
  }

  /// A view with the buffer's own flat layout (only RESHAPEs above an AFTER/buffer).
  static bool contiguousView(const UOp *v) {
    while (v->op == Op::RESHAPE) v = v->src(0);
    return !isMovement(v->op);
  }

  void visit(const UOp *u) {
    switch (u->op) {
    case Op::STORE: {
      const UOp *base = u->src(0);
      while (isMovement(base->op)) base = base->src(0);
      const UOp *prior = Lowerer::isBuffer(base) ? base : L.stateOf(base);
      if (u->src(1)->op == Op::COPY && contiguousView(u->src(0))) { // the copy lands in place: no kernel
        callOf[u] = copyCall(u->src(1), prior);
        break;
      }
      L.beginKernel(0);
      callOf[u] = makeCall(L.lowerStore(u->src(0), u->src(1), prior), prior);
      break;
    }
    case Op::AFTER: {
      std::vector<const UOp *> srcs{rawBuffer(u->src(0))};
      if (u->src(0)->op == Op::AFTER) srcs.push_back(L.stateOf(u->src(0)));
      for (const UOp *d : u->src().subspan(1)) {
        if (auto it = callOf.find(d); it != callOf.end()) srcs.push_back(it->second);
        else if (auto st = state.find(d); st != state.end()) srcs.push_back(st->second);
      }
      state[u] = c.make(Op::AFTER, u->dtype, srcs);
      break;
    }
    case Op::STAGE:
    case Op::CONTIGUOUS: {
      const UOp *x = u->src(0);
      std::vector<std::string> dev = si.device(u);
      if (dev.empty()) dev = si.device(x);
      const UOp *buf = newBuffer(u, u->dtype, dev);
      L.beginKernel(0);
      const UOp *call = makeCall(L.lowerMaterialize(x, buf), buf);
      state[u] = c.make(Op::AFTER, buf->dtype, {buf, call});
      break;
    }
    case Op::COPY: {
      const UOp *buf = newBuffer(u, u->dtype, si.device(u));
      state[u] = c.make(Op::AFTER, buf->dtype, {buf, copyCall(u, buf)});
      break;
    }
    default: break;
    }
  }
};

} // namespace

void runKernelSplit(Graph &g, const PassContext &) {
  Context &c = *g.ctx;
  const UOp *root = normalizeAfters(c, g.root);
  g.root = root;
  Splitter sp(g);
  for (const UOp *u : toposort(root)) sp.visit(u);
  std::vector<const UOp *> outs;
  for (const UOp *s : root->src()) {
    while (isMovement(s->op)) s = s->src(0);
    auto it = sp.state.find(s);
    if (it != sp.state.end()) outs.push_back(it->second);
  }
  g.root = c.make(Op::SINK, DType::Void, outs, root->arg);
}

} // namespace uopc
