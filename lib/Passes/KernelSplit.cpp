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
// Invalid)) copies device k's shard of x. multi-lower's kept allreduce, ALLREDUCE(x)[op, devices, order],
// becomes CALL(ALLREDUCE(PARAM 1)[op, devices, order], dst, src) the same way (one schedule step).
//
// Outputs computed together (multi-output kernels). Stores of the function's outputs that recompute the
// same work are one kernel: their values are elementwise over the same loops (the same output shape and
// devices, no reduction), they share an ALU op on data that no buffer holds (ew_bool_logic's two
// comparisons, read by five outputs), and none reads a buffer another writes. That kernel is
// SINK(END(STORE(out0...), ranges), END(STORE(out1...), the same ranges), ...), its written states the
// CALL's first arguments (slots 0..n-1); linearize runs stores over the same loops in one loop nest, so
// the shared op is computed once per element. Only stores whose results nothing but the function's SINK
// reads are grouped, so deferring them to the last member changes no other kernel.
//
// Precondition: rangeify ran (STAGE marks every value read by more than one kernel).
#include "IR/Error.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Rangeify/Lower.h"
#include "Passes/Rewrite.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

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
    L.isMaterialized = [](const UOp *u) {
      return u->op == Op::STAGE || u->op == Op::CONTIGUOUS || u->op == Op::COPY || u->op == Op::ALLREDUCE;
    };
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
  const UOp *makeCall(const UOp *body, const UOp *out) { return makeCall(std::vector<const UOp *>{body}, {out}); }

  /// One kernel of several stores: CALL(SINK(bodies...), outs..., states read...), the states written
  /// first (slot i: outs[i]).
  const UOp *makeCall(const std::vector<const UOp *> &bodies, const std::vector<const UOp *> &outs) {
    std::vector<const UOp *> args(outs);
    std::unordered_map<const UOp *, size_t> slotOf;
    for (size_t i = 0; i < outs.size(); ++i) slotOf.emplace(rawBuffer(outs[i]), i);
    std::unordered_map<const UOp *, const UOp *> subst;
    // the INDEXed states in order of first use, without walking into the states (their CALLs)
    std::vector<const UOp *> indexed;
    std::unordered_map<const UOp *, bool> seen;
    std::vector<const UOp *> stack(bodies.rbegin(), bodies.rend());
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
    for (size_t i = 0; i < outs.size(); ++i) {
      if (subst.count(outs[i])) continue;
      const UOp *raw = rawBuffer(outs[i]);
      ParamArg p = ParamArg::decode(raw->arg);
      p.slot = static_cast<int64_t>(i);
      subst[outs[i]] = c.make(Op::PARAM, raw->dtype, {raw->src(0)}, p.encode(c));
    }
    std::vector<const UOp *> ks;
    for (const UOp *body : bodies) ks.push_back(substitute(c, body, subst));
    const Arg *info = makeRecord(c, "KernelInfo", {{"name", c.argString("k" + std::to_string(nextKernel++))}});
    const UOp *sink = c.make(Op::SINK, DType::Void, ks, info);
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

  /// CALL(ALLREDUCE(PARAM 1)[op, devices, order], dst, src): multi-lower's collective, kept whole: `dst` on
  /// each device becomes the reduction of `ar`'s source over all its devices (the runner performs it).
  const UOp *allreduceCall(const UOp *ar, const UOp *dst) {
    const UOp *from = materialize(ar->src(0));
    if (from->op != Op::AFTER && !Lowerer::isBuffer(from)) fail("kernel-split: cannot allreduce " + g.describe(ar));
    ParamArg p = ParamArg::decode(rawBuffer(from)->arg);
    p.slot = 1;
    const UOp *body = c.make(Op::ALLREDUCE, ar->dtype, {c.make(Op::PARAM, from->dtype, {rawBuffer(from)->src(0)}, p.encode(c))}, ar->arg);
    return c.make(Op::CALL, DType::Void, {body, dst, from});
  }

  /// A view with the buffer's own flat layout (only RESHAPEs above an AFTER/buffer).
  static bool contiguousView(const UOp *v) {
    while (v->op == Op::RESHAPE) v = v->src(0);
    return !isMovement(v->op);
  }

  // ---- outputs computed together (see the file comment) ----------------------------------------
  std::unordered_map<const UOp *, size_t> groupOf;  ///< STORE -> its group, for groups of 2 or more
  std::vector<std::vector<const UOp *>> groups;     ///< members in topological order
  std::unordered_set<const UOp *> deferred;         ///< members whose group's kernel is not made yet
  std::vector<const UOp *> deferredAfters;          ///< their AFTERs, visited once the groups are made

  const UOp *priorOf(const UOp *store) {
    const UOp *base = store->src(0);
    while (isMovement(base->op)) base = base->src(0);
    return Lowerer::isBuffer(base) ? base : L.stateOf(base);
  }

  /// Groups the stores that write only the function's outputs and share work (see the file comment).
  void findGroups(const UOp *root, const std::vector<const UOp *> &nodes) {
    std::unordered_map<const UOp *, std::vector<const UOp *>> users;
    for (const UOp *u : nodes)
      if (u != root)
        for (const UOp *s : u->src())
          if (s->op == Op::STORE || s->op == Op::AFTER) users[s].push_back(u);
    std::unordered_set<const UOp *> rootSrc(root->src().begin(), root->src().end());
    struct Cand {
      const UOp *store, *raw;
      std::vector<const UOp *> alu;          ///< ALU ops on data in its cone, sorted
      std::unordered_set<const UOp *> reads; ///< raw buffers its cone reads
      std::string key;                       ///< devices and output shape: the same loops
    };
    std::vector<Cand> cands;
    std::unordered_map<const UOp *, size_t> rawCount;
    constexpr size_t kMaxCone = 1 << 16;
    for (const UOp *st : nodes) {
      if (st->op != Op::STORE || st->src(1)->op == Op::COPY || st->src(1)->op == Op::ALLREDUCE) continue;
      auto us = users.find(st);
      if (us == users.end()) continue;
      bool onlyOutputs = true;
      for (const UOp *a : us->second)
        if (a->op != Op::AFTER || a->nsrc != 2 || !rootSrc.count(a) || !Lowerer::isBuffer(a->src(0)) ||
            users.count(a))
          onlyOutputs = false;
      const auto &shape = si.shape(st->src(0));
      if (!onlyOutputs || !shape) continue;
      Cand cd{st, Lowerer::baseBuffer(st->src(0)), {}, {}, {}};
      if (!cd.raw) continue;
      for (const std::string &d : si.device(st->src(0))) cd.key += d + ",";
      cd.key += "|";
      for (const UOp *d : *shape) cd.key += std::to_string(d->index) + ",";
      // the cone up to what buffers hold, in post-order; a reduction (loops of its own) keeps the store
      // alone. An ALU op counts when its cone reaches a buffer (else it is index or mask arithmetic).
      auto isRead = [](const UOp *u) {
        return Lowerer::isBuffer(u) || u->op == Op::AFTER || u->op == Op::STAGE || u->op == Op::CONTIGUOUS ||
               u->op == Op::COPY || u->op == Op::ALLREDUCE;
      };
      bool ok = true;
      std::unordered_map<const UOp *, bool> onData; // (also: visited)
      std::vector<std::pair<const UOp *, size_t>> work{{st->src(1), 0}};
      onData[st->src(1)] = false;
      while (!work.empty() && ok) {
        auto &[u, i] = work.back();
        if (isRead(u)) {
          const UOp *b = Lowerer::baseBuffer(u);
          cd.reads.insert(b ? b : u);
          onData[u] = true;
          work.pop_back();
          continue;
        }
        if (u->op == Op::REDUCE || u->op == Op::STORE || onData.size() > kMaxCone) ok = false;
        if (i < u->nsrc) {
          const UOp *x = u->src(i++);
          if (onData.emplace(x, false).second) work.push_back({x, 0});
          continue;
        }
        bool d = false;
        for (const UOp *x : u->src()) d = d || onData[x];
        onData[u] = d;
        if (d && isALU(u->op)) cd.alu.push_back(u);
        work.pop_back();
      }
      if (!ok) continue;
      std::sort(cd.alu.begin(), cd.alu.end());
      ++rawCount[cd.raw];
      cands.push_back(std::move(cd));
    }
    // greedily, in topological order: a store joins the first group of its loops it shares an op with
    // and whose members read none of its buffers, nor write one it reads. Each ALU op lists the groups
    // holding it, and each group keeps the buffers its members write and read, so a store costs its own
    // ops and reads, not the number of outputs.
    // A group is bounded: at most kMaxGroupStores outputs (each one more kernel argument) and
    // kMaxGroupOps ALU ops counted per member (rangeify's default kernel bound, max-kernel-ops).
    constexpr size_t kMaxGroupStores = 64, kMaxGroupOps = 20000;
    struct Group {
      std::vector<size_t> members;
      std::unordered_set<const UOp *> writes, reads;
      size_t ops = 0;
    };
    std::vector<Group> gs;
    std::unordered_map<const UOp *, std::vector<size_t>> groupsOfOp;
    for (size_t i = 0; i < cands.size(); ++i) {
      Cand &ci = cands[i];
      if (rawCount[ci.raw] > 1) continue; // one buffer written by several stores: not an output of its own
      std::vector<size_t> sharing;
      for (const UOp *op : ci.alu)
        if (auto it = groupsOfOp.find(op); it != groupsOfOp.end()) sharing.insert(sharing.end(), it->second.begin(), it->second.end());
      std::sort(sharing.begin(), sharing.end());
      sharing.erase(std::unique(sharing.begin(), sharing.end()), sharing.end());
      size_t joined = SIZE_MAX;
      for (size_t gi : sharing) {
        Group &g = gs[gi];
        if (cands[g.members[0]].key != ci.key || g.reads.count(ci.raw) || g.members.size() >= kMaxGroupStores ||
            g.ops + ci.alu.size() > kMaxGroupOps)
          continue;
        bool clash = false;
        for (const UOp *r : ci.reads) clash = clash || g.writes.count(r);
        if (!clash) {
          joined = gi;
          break;
        }
      }
      if (joined == SIZE_MAX) {
        joined = gs.size();
        gs.emplace_back();
      }
      Group &g = gs[joined];
      g.members.push_back(i);
      g.ops += ci.alu.size();
      g.writes.insert(ci.raw);
      g.reads.insert(ci.reads.begin(), ci.reads.end());
      for (const UOp *op : ci.alu) {
        auto &v = groupsOfOp[op];
        if (v.empty() || v.back() != joined) v.push_back(joined);
      }
    }
    for (const Group &grp : gs) {
      if (grp.members.size() < 2) continue;
      std::vector<const UOp *> members;
      for (size_t i : grp.members) {
        members.push_back(cands[i].store);
        groupOf[cands[i].store] = groups.size();
        deferred.insert(cands[i].store);
      }
      groups.push_back(std::move(members));
    }
  }

  /// The kernel of a group, made at its last member: one kernel when every member runs over the same
  /// loops, else (lowering disagreed with the shapes) a kernel each.
  void makeGroup(const std::vector<const UOp *> &members) {
    std::vector<const UOp *> bodies, outs;
    for (const UOp *st : members) {
      const UOp *prior = priorOf(st);
      L.beginKernel(0);
      bodies.push_back(L.lowerStore(st->src(0), st->src(1), prior));
      outs.push_back(prior);
    }
    auto loops = [](const UOp *b) {
      return b->op == Op::END ? std::vector<const UOp *>(b->src().begin() + 1, b->src().end()) : std::vector<const UOp *>{};
    };
    bool same = true;
    for (const UOp *b : bodies) same = same && loops(b) == loops(bodies[0]);
    if (same) {
      const UOp *call = makeCall(bodies, outs);
      for (const UOp *st : members) callOf[st] = call;
    } else {
      for (size_t i = 0; i < members.size(); ++i) callOf[members[i]] = makeCall(bodies[i], outs[i]);
    }
    for (const UOp *st : members) deferred.erase(st);
  }

  void visit(const UOp *u) {
    switch (u->op) {
    case Op::STORE: {
      if (auto g = groupOf.find(u); g != groupOf.end()) {
        if (groups[g->second].back() == u) makeGroup(groups[g->second]);
        break;
      }
      const UOp *prior = priorOf(u);
      if (u->src(1)->op == Op::COPY && contiguousView(u->src(0))) { // the copy lands in place: no kernel
        callOf[u] = copyCall(u->src(1), prior);
        break;
      }
      if (u->src(1)->op == Op::ALLREDUCE && contiguousView(u->src(0))) { // so does the allreduce
        callOf[u] = allreduceCall(u->src(1), prior);
        break;
      }
      L.beginKernel(0);
      callOf[u] = makeCall(L.lowerStore(u->src(0), u->src(1), prior), prior);
      break;
    }
    case Op::AFTER: {
      if (std::any_of(u->src().begin(), u->src().end(), [&](const UOp *d) { return deferred.count(d) > 0; })) {
        deferredAfters.push_back(u);
        break;
      }
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
    case Op::ALLREDUCE: {
      const UOp *buf = newBuffer(u, u->dtype, si.device(u));
      state[u] = c.make(Op::AFTER, buf->dtype, {buf, allreduceCall(u, buf)});
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
  std::vector<const UOp *> nodes = toposort(root);
  sp.findGroups(root, nodes);
  for (const UOp *u : nodes) sp.visit(u);
  for (const UOp *u : std::vector<const UOp *>(std::move(sp.deferredAfters))) sp.visit(u); // (only the SINK reads them)
  std::vector<const UOp *> outs;
  for (const UOp *s : root->src()) {
    while (isMovement(s->op)) s = s->src(0);
    auto it = sp.state.find(s);
    if (it != sp.state.end()) outs.push_back(it->second);
  }
  g.root = c.make(Op::SINK, DType::Void, outs, root->arg);
}

} // namespace uopc
