//===- Schedule.cpp - the `schedule` pass and buildSchedule ---------------===//
// Orders the CALLs of a kernel graph (read-after-write through AFTER arguments, write-after-read on prior
// states: the interpreter's order, lib/Interp/Kernels.cpp), expands them into per-device steps, sizes every
// buffer and plans the intermediates' memory: one arena per device, each intermediate placed at the lowest
// 64-byte aligned offset that no buffer alive at the same time occupies (largest first). See
// docs/schedule.md.
#include "Passes/Schedule.h"

#include "IR/Kernel.h"

#include "IR/Error.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Passes/Passes.h"
#include "Passes/Symbolic/Symbolic.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace uopc {
namespace {


bool isScalarParam(const UOp *u) {
  return u->op == Op::PARAM && (u->nsrc == 0 || (u->src(0)->op == Op::STACK && u->src(0)->nsrc == 0));
}

std::string kernelName(const UOp *call) {
  const Arg *info = call->src(0)->arg;
  if (info && info->kind == ArgKind::Record)
    if (const Arg *n = info->field("name"); n && n->kind == ArgKind::String) return std::string(n->str());
  return "test";
}

/// Makes names unique by appending _2, _3, ... to later duplicates.
std::string uniqueName(std::set<std::string> &taken, const std::string &base) {
  std::string name = base;
  for (int k = 2; !taken.insert(name).second; ++k) name = base + "_" + std::to_string(k);
  return name;
}

struct Builder {
  const Graph &g;
  Schedule s;
  RangeInfo ranges;
  std::unordered_map<const UOp *, size_t> bufferOf; // raw PARAM/BUFFER -> index in s.buffers
  std::map<std::string, SchedVar> vars;

  explicit Builder(const Graph &graph) : g(graph) {}

  [[noreturn]] void error(const UOp *u, const std::string &m) const { fail("schedule: " + g.describe(u) + ": " + m); }

  int64_t elements(const UOp *buf) {
    if (buf->nsrc == 0) error(buf, "a buffer needs a size source");
    const UOp *n = buf->src(0);
    if (auto c = constBound(n)) {
      if (*c < 0 || *c > (Bound(1) << 48)) error(buf, "buffer size out of range");
      return static_cast<int64_t>(*c);
    }
    Bound hi = ranges.vmax(n);
    if (hi < 0 || hi > (Bound(1) << 48))
      error(buf, "the size of this buffer has no finite upper bound (a variable without a range?)");
    return static_cast<int64_t>(hi);
  }

  std::unordered_map<std::string, size_t> deviceOfName; // (a search of s.devices was quadratic in the devices)
  size_t deviceIndex(const std::string &d) {
    auto [it, fresh] = deviceOfName.emplace(d, s.devices.size());
    if (fresh) s.devices.push_back(d);
    return it->second;
  }

  void noteVar(const UOp *p) {
    ParamArg pa = ParamArg::decode(p->arg);
    if (!pa.name) error(p, "a scalar PARAM without a name");
    if (*pa.name == "_device_num") return;
    if (!pa.vminVmax) error(p, "variable '" + *pa.name + "' has no range (vmin_vmax)");
    SchedVar v{*pa.name, pa.slot, pa.vminVmax->first, pa.vminVmax->second};
    auto [it, fresh] = vars.emplace(v.name, v);
    if (!fresh && (it->second.vmin != v.vmin || it->second.vmax != v.vmax || it->second.slot != v.slot))
      error(p, "variable " + quote(v.name) + " is declared twice with different slots or ranges");
  }

  void collectBuffers(const std::vector<const UOp *> &nodes) {
    std::map<int64_t, const UOp *> params, intermediates;
    for (const UOp *u : nodes) {
      if (u->op == Op::PARAM && !isScalarParam(u)) {
        ParamArg pa = ParamArg::decode(u->arg);
        if (pa.slot < 0) error(u, "a buffer PARAM of the function needs a slot >= 0");
        auto [it, fresh] = params.emplace(pa.slot, u);
        if (!fresh && it->second != u)
          error(u, "slot " + std::to_string(pa.slot) + " is also " + g.describe(it->second) + ", with other fields");
      } else if (u->op == Op::BUFFER) {
        ParamArg pa = ParamArg::decode(u->arg);
        auto [it, fresh] = intermediates.emplace(pa.slot, u);
        if (!fresh && it->second != u) error(u, "two BUFFERs share slot " + std::to_string(pa.slot));
      } else if (isScalarParam(u)) {
        noteVar(u);
      }
    }
    auto add = [&](const UOp *u, bool isParam) {
      ParamArg pa = ParamArg::decode(u->arg);
      SchedBuffer b;
      b.node = u;
      b.isParam = isParam;
      b.slot = pa.slot;
      b.dtype = pa.dtype == DType::Void ? u->dtype : pa.dtype;
      if (dtypeSize(b.dtype) == 0) error(u, "a buffer of dtype " + std::string(dtypeName(b.dtype)));
      b.numel = elements(u);
      b.symbolicSize = !constBound(u->src(0));
      if (isParam && b.symbolicSize)
        error(u, "a function parameter whose size depends on a variable is not supported yet");
      std::vector<std::string> devs = pa.devices.empty() ? std::vector<std::string>{"CPU"} : pa.devices;
      for (const std::string &d : devs) b.devices.push_back(deviceIndex(d));
      bufferOf[u] = s.buffers.size();
      s.buffers.push_back(std::move(b));
    };
    for (auto &[slot, u] : params) add(u, true);
    for (auto &[slot, u] : intermediates) add(u, false);
    for (const UOp *u : nodes) // variables in buffer sizes
      if (u->op == Op::PARAM || u->op == Op::BUFFER)
        for (const UOp *x : toposort(u->src(0)))
          if (isScalarParam(x)) noteVar(x);
  }

  size_t bufferIndex(const UOp *call, const UOp *state) {
    const UOp *raw = stateBuffer(state);
    auto it = bufferOf.find(raw);
    if (it == bufferOf.end()) error(call, "argument " + g.describe(state) + " is not a buffer state");
    return it->second;
  }

  /// Calls in execution order (the interpreter's depth-first order over the same dependencies).
  void order(const std::vector<const UOp *> &nodes) {
    std::vector<const UOp *> calls;
    std::unordered_map<const UOp *, size_t> callIndex;
    for (const UOp *u : nodes)
      if (u->op == Op::CALL) callIndex[u] = calls.size(), calls.push_back(u);
    std::vector<std::vector<size_t>> before(calls.size());
    for (size_t c = 0; c < calls.size(); ++c) {
      if (calls[c]->nsrc < 2) error(calls[c], "a call without the buffer it writes");
      for (const UOp *a : calls[c]->src().subspan(1))
        if (a->op == Op::AFTER)
          for (const UOp *d : a->src().subspan(1))
            if (auto it = callIndex.find(d); it != callIndex.end()) before[c].push_back(it->second);
    }
    // write-after-read: the writer of state S runs after every other call reading S
    std::vector<std::vector<size_t>> written(calls.size());
    for (size_t c = 0; c < calls.size(); ++c) written[c] = writtenSlots(calls[c]);
    std::unordered_map<const UOp *, std::vector<size_t>> readers;
    for (size_t r = 0; r < calls.size(); ++r)
      for (size_t a = 0; a + 1 < calls[r]->nsrc; ++a) {
        if (std::binary_search(written[r].begin(), written[r].end(), a)) continue;
        auto &v = readers[calls[r]->src(a + 1)];
        if (v.empty() || v.back() != r) v.push_back(r);
      }
    for (size_t w = 0; w < calls.size(); ++w)
      for (size_t slot : written[w])
        if (auto it = readers.find(calls[w]->src(slot + 1)); it != readers.end())
          for (size_t r : it->second)
            if (r != w) before[w].push_back(r);

    std::vector<int> state(calls.size(), 0);
    std::vector<std::pair<size_t, size_t>> stack;
    for (size_t root = 0; root < calls.size(); ++root) {
      if (state[root]) continue;
      state[root] = 1;
      stack.push_back({root, 0});
      while (!stack.empty()) {
        auto &[c, i] = stack.back();
        if (i < before[c].size()) {
          size_t b = before[c][i++];
          if (state[b] == 2) continue;
          if (state[b] == 1) cycle(calls, stack, b);
          state[b] = 1;
          stack.push_back({b, 0});
          continue;
        }
        state[c] = 2;
        s.calls.push_back(calls[c]);
        stack.pop_back();
      }
    }
  }

  [[noreturn]] void cycle(const std::vector<const UOp *> &calls, const std::vector<std::pair<size_t, size_t>> &stack,
                          size_t b) {
    std::string path;
    bool on = false;
    for (auto &[c, i] : stack) {
      if (c == b) on = true;
      if (!on) continue;
      const UOp *u = calls[c];
      path += (path.empty() ? "" : " -> ") + g.describe(u) +
              (kernelSink(u) ? " (kernel " + kernelName(u) + ")" : u->src(0)->op == Op::ALLREDUCE ? " (allreduce)" : " (copy)");
    }
    fail("schedule: cycle detected while combining buffer states: " + path +
         " must each run before the next (a stale read: a value is read both before and after an overwrite of "
         "its buffer)");
  }

  void expand() {
    std::set<std::string> taken;
    for (size_t d = 0; d < s.devices.size(); ++d) s.deviceDirs.push_back(uniqueName(taken, sanitizeName(s.devices[d])));
    std::set<std::string> kernelNames;
    for (size_t ci = 0; ci < s.calls.size(); ++ci) {
      const UOp *call = s.calls[ci];
      const UOp *body = kernelSink(call) ? kernelSink(call) : call->src(0);
      size_t out = bufferIndex(call, call->src(1));
      const SchedBuffer &ob = s.buffers[out];
      if (body->op == Op::COPY) {
        if (call->nsrc != 3) error(call, "a copy takes a destination and a source");
        size_t src = bufferIndex(call, call->src(2));
        const SchedBuffer &sb = s.buffers[src];
        if (sb.bytes() != ob.bytes())
          error(call, "copies " + std::to_string(sb.bytes()) + " bytes into a buffer of " + std::to_string(ob.bytes()));
        int64_t from = -1;
        if (body->arg && body->arg->kind == ArgKind::Tuple && body->arg->count == 2 && body->arg->elems()[1]->isInt())
          from = body->arg->elems()[1]->i();
        else
          error(body, "a copy's arg is [destination device(s), source device index or -1]");
        for (size_t d = 0; d < ob.devices.size(); ++d) {
          int64_t sd = from >= 0 ? from : (sb.devices.size() == 1 ? 0 : static_cast<int64_t>(d));
          if (sd >= static_cast<int64_t>(sb.devices.size()))
            error(call, "copies from device " + std::to_string(sd) + " of a buffer on " +
                            std::to_string(sb.devices.size()) + " device(s)");
          SchedStep st;
          st.kind = SchedStep::Kind::Copy;
          st.call = call;
          st.callIndex = ci;
          st.device = ob.devices[d];
          st.src = {src, static_cast<size_t>(sd)};
          st.dst = {out, d};
          st.bytes = ob.bytes();
          s.steps.push_back(st);
        }
        continue;
      }
      if (body->op == Op::ALLREDUCE) {
        allreduceStep(call, ci, body, out);
        continue;
      }
      if (body->op != Op::SINK)
        error(call, "calls a " + std::string(opName(body->op)) + ", not a kernel SINK, a COPY or an ALLREDUCE");
      size_t k = s.kernels.size();
      s.kernels.push_back({call, uniqueName(kernelNames, sanitizeName(kernelName(call)))});
      std::set<std::string> kv;
      for (const UOp *u : toposort(body))
        if (isScalarParam(u)) {
          noteVar(u);
          ParamArg pa = ParamArg::decode(u->arg);
          if (*pa.name != "_device_num") kv.insert(*pa.name);
        }
      for (size_t slot : writtenSlots(call))
        if (s.buffers[bufferIndex(call, call->src(slot + 1))].devices.size() != ob.devices.size())
          error(call, "writes buffers on different numbers of devices");
      for (size_t d = 0; d < ob.devices.size(); ++d) {
        SchedStep st;
        st.kind = SchedStep::Kind::Kernel;
        st.call = call;
        st.callIndex = ci;
        st.kernel = k;
        st.device = ob.devices[d];
        st.deviceNum = static_cast<int64_t>(d);
        for (const UOp *a : call->src().subspan(1)) {
          size_t b = bufferIndex(call, a);
          st.args.push_back({b, s.buffers[b].devices.size() == ob.devices.size() ? d : 0});
        }
        st.vars.assign(kv.begin(), kv.end());
        s.steps.push_back(st);
      }
    }
    for (auto &[name, v] : vars) s.vars.push_back(v);
  }

  /// The one step of CALL(ALLREDUCE(PARAM 1)[op, devices, order], dst, src): per device d of dst, dst's d
  /// becomes the reduction of every device of src (same devices, dtype and size).
  void allreduceStep(const UOp *call, size_t ci, const UOp *body, size_t out) {
    const Arg *a = body->arg;
    if (call->nsrc != 3) error(call, "an allreduce takes a destination and a source");
    if (!a || a->kind != ArgKind::Tuple || a->count != 3 || a->elems()[0]->kind != ArgKind::OpName ||
        a->elems()[2]->kind != ArgKind::String)
      error(body, "an allreduce's arg is [reduce op, devices, order]");
    size_t src = bufferIndex(call, call->src(2));
    const SchedBuffer &sb = s.buffers[src], &ob = s.buffers[out];
    if (sb.devices != ob.devices || sb.devices.size() < 2)
      error(call, "an allreduce's source and destination must live on the same two or more devices");
    if (sb.dtype != ob.dtype || sb.bytes() != ob.bytes() || sb.symbolicSize || ob.symbolicSize)
      error(call, "an allreduce's source and destination must have one dtype and one constant size");
    SchedStep st;
    st.kind = SchedStep::Kind::Allreduce;
    st.call = call;
    st.callIndex = ci;
    st.device = ob.devices[0];
    st.reduceOp = a->elems()[0]->op();
    st.ring = a->elems()[2]->str() == "ring";
    for (size_t d = 0; d < ob.devices.size(); ++d) {
      st.srcs.push_back({src, d});
      st.dsts.push_back({out, d});
    }
    st.bytes = ob.bytes();
    s.steps.push_back(st);
  }

  /// True when an Invalid may reach `root`'s value: an Invalid CONST below it, except under the read of a
  /// LOAD with an alternative (where the read is Invalid, the LOAD is its alternative).
  static bool mayBeInvalid(const UOp *root) {
    std::vector<const UOp *> stack{root};
    std::unordered_set<const UOp *> seen{root};
    while (!stack.empty()) {
      const UOp *u = stack.back();
      stack.pop_back();
      if (u->op == Op::CONST && u->arg && u->arg->kind == ArgKind::Invalid) return true;
      size_t first = u->op == Op::LOAD && u->nsrc > 1 ? 1 : 0;
      for (size_t i = first; i < u->nsrc; ++i)
        if (seen.insert(u->src(i)).second) stack.push_back(u->src(i));
    }
    return false;
  }

  /// True when the kernel surely writes every one of the numel elements of `slot`: each store to it is
  /// END(STORE(...), ranges) over constant ranges whose sizes multiply to at least numel, with no Invalid
  /// (a gate) in its index or value; or, for several stores that each write less (the optimizer's
  /// interior and borders), running their loops writes every element (Coverage.h). Conservative: false
  /// when unsure.
  bool coversAll(const UOp *body, size_t slot, int64_t numel, int64_t deviceNum) {
    bool any = false, part = false; // part: a store covers less than numel (the optimizer's interior and borders)
    Bound total = 0;
    for (const UOp *e : body->src()) {
      const UOp *st = e->op == Op::END ? e->src(0) : e;
      if (st->op != Op::STORE || st->src(0)->op != Op::INDEX || st->src(0)->src(0)->op != Op::PARAM) return false;
      if (ParamArg::slotOf(st->src(0)->src(0)->arg) != static_cast<int64_t>(slot)) continue;
      Bound n = 1;
      if (e->op == Op::END)
        for (const UOp *r : e->src().subspan(1)) {
          if (r->op == Op::CONST) continue; // a loop of one iteration, folded (a border of one element)
          auto c = r->op == Op::RANGE ? constBound(r->src(0)) : std::nullopt;
          if (!c) return false;
          n = boundMul(n, *c);
        }
      if (mayBeInvalid(st)) return false;
      part = part || n < numel;
      total = boundAdd(total, n);
      any = true;
    }
    if (!any || total < numel) return false;
    if (!part) return true;
    // stores that together may cover it: run them (Coverage.h), exact or false
    KeptElements k = keptElements(*g.ctx, {{body, deviceNum, slot}}, numel);
    return k.known && k.elements == 0;
  }

  /// The kernel as each of `devices` devices runs it: `_device_num` bound to the device's index and the
  /// body simplified (as the emitters do), so a per-device selection (where(_device_num == i, x, Invalid))
  /// folds away before coversAll's Invalid check.
  std::vector<const UOp *> perDevice(const UOp *body, size_t devices) {
    std::vector<const UOp *> out;
    for (size_t d = 0; d < std::max<size_t>(1, devices); ++d) {
      SymbolicCtx sc;
      const UOp *k = bindVariables(*g.ctx, body, {{"_device_num", static_cast<int64_t>(d)}}, &sc);
      out.push_back(simplifyWith(*g.ctx, k, symRules(), &sc));
    }
    return out;
  }

  /// Roles of the parameters: written by a call, and/or read in the state they had before the run.
  void roles() {
    std::vector<char> written(s.buffers.size()), readInitial(s.buffers.size()), partial(s.buffers.size());
    for (const UOp *call : s.calls) {
      std::vector<size_t> slots = writtenSlots(call);
      for (size_t a = 0; a + 1 < call->nsrc; ++a)
        if (!std::binary_search(slots.begin(), slots.end(), a) && call->src(a + 1)->op != Op::AFTER)
          readInitial[bufferIndex(call, call->src(a + 1))] = 1;
      const UOp *sink = kernelSink(call);
      std::vector<char> loaded; // per slot: the kernel loads from it (an INDEX used other than as a STORE's target)
      std::vector<const UOp *> devices; // the kernel per device, made when a coverage question needs it
      for (size_t slot : slots) {
        const UOp *out = call->src(slot + 1);
        size_t ob = bufferIndex(call, out);
        written[ob] = 1;
        if (out->op == Op::AFTER || !sink) continue;
        if (loaded.empty()) {
          loaded.assign(call->nsrc, 0);
          for (const UOp *u : toposort(sink))
            for (size_t i = 0; i < u->nsrc; ++i) {
              const UOp *x = u->src(i);
              if (x->op == Op::INDEX && x->src(0)->op == Op::PARAM && !(u->op == Op::STORE && i == 0))
                if (int64_t k = ParamArg::slotOf(x->src(0)->arg); k >= 0 && static_cast<size_t>(k) < loaded.size())
                  loaded[static_cast<size_t>(k)] = 1;
            }
        }
        if (loaded[slot]) readInitial[ob] = 1;
        // a store that may leave elements unwritten keeps their prior contents: the buffer is inout too
        if (!s.buffers[ob].isParam) continue;
        if (devices.empty()) devices = perDevice(sink, s.buffers[ob].devices.size());
        bool all = true;
        for (size_t d = 0; d < devices.size() && all; ++d)
          all = coversAll(devices[d], slot, s.buffers[ob].numel, static_cast<int64_t>(d));
        if (!all) readInitial[ob] = partial[ob] = 1;
      }
    }
    for (size_t b = 0; b < s.buffers.size(); ++b)
      if (s.buffers[b].isParam)
        s.buffers[b].role = written[b] ? (readInitial[b] ? "inout" : "output") : "input";
    for (size_t b = 0; b < s.buffers.size(); ++b)
      if (partial[b]) keptOf(b);
  }

  /// SchedBuffer::kept of parameter `b`: per device, what none of the steps writing it there writes.
  void keptOf(size_t b) {
    SchedBuffer &sb = s.buffers[b];
    for (size_t d = 0; d < sb.devices.size(); ++d) {
      std::vector<BufferWrite> writes;
      for (const SchedStep &st : s.steps)
        if ((st.kind == SchedStep::Kind::Copy && st.dst == BufRef{b, d}) ||
            (st.kind == SchedStep::Kind::Allreduce && std::find(st.dsts.begin(), st.dsts.end(), BufRef{b, d}) != st.dsts.end()))
          writes.push_back({nullptr, 0});
        else if (st.kind == SchedStep::Kind::Kernel)
          for (size_t slot : writtenSlots(st.call))
            if (slot < st.args.size() && st.args[slot] == BufRef{b, d}) writes.push_back({kernelSink(st.call), st.deviceNum, slot});
      sb.kept.push_back(keptElements(*g.ctx, writes, sb.numel));
    }
  }

  /// SchedStep::once: kernels marked once (a weight's re-layout or pack) whose reads are all input
  /// parameters and whose writes are all intermediates; and, where the graph marks its weights
  /// (ParamArg.weight), any kernel whose reads are all weights or what once steps wrote (a transform of the
  /// weights, Winograd's G g G^T) and whose writes are intermediates no other step writes: its result is the
  /// same in every run.
  void markOnce() {
    bool marksWeights = false;
    std::vector<bool> weight(s.buffers.size(), false);
    for (size_t b = 0; b < s.buffers.size(); ++b)
      if (s.buffers[b].isParam && s.buffers[b].node->arg && s.buffers[b].node->arg->kind == ArgKind::Record) {
        weight[b] = ParamArg::decode(s.buffers[b].node->arg).weight && s.buffers[b].role == "input";
        marksWeights |= weight[b];
      }
    // writers per buffer: a derived once step's output must be its own alone
    std::vector<int> writers(s.buffers.size(), 0);
    std::vector<std::vector<size_t>> writtenOf(s.steps.size()); // per kernel step, its written slots
    for (size_t k = 0; k < s.steps.size(); ++k) {
      const SchedStep &st = s.steps[k];
      if (st.kind == SchedStep::Kind::Copy) ++writers[st.dst.buffer];
      else if (st.kind == SchedStep::Kind::Allreduce)
        for (const BufRef &r : st.dsts) ++writers[r.buffer];
      else
        for (size_t slot : writtenOf[k] = writtenSlots(st.call))
          if (slot < st.args.size()) ++writers[st.args[slot].buffer];
    }
    std::vector<bool> onceOutput(s.buffers.size(), false); // written by a once step
    for (size_t k = 0; k < s.steps.size(); ++k) {
      SchedStep &st = s.steps[k];
      if (st.kind != SchedStep::Kind::Kernel || !st.vars.empty()) continue;
      const UOp *sink = kernelSink(st.call);
      const std::vector<size_t> &written = writtenOf[k];
      bool marked = markedOnce(sink), derived = marksWeights && !written.empty();
      for (size_t i = 0; i < st.args.size() && (marked || derived); ++i) {
        size_t b = st.args[i].buffer;
        const SchedBuffer &buf = s.buffers[b];
        if (std::find(written.begin(), written.end(), i) != written.end()) {
          marked &= !buf.isParam;
          derived &= !buf.isParam && writers[b] == 1 && !onceOutput[b];
        } else {
          marked &= buf.isParam && buf.role == "input";
          derived &= buf.isParam ? weight[b] : onceOutput[b];
        }
      }
      st.once = marked || derived;
      if (st.once)
        for (size_t slot : written) onceOutput[st.args[slot].buffer] = true;
    }
  }

  void planMemory(const std::vector<const UOp *> &rootStates) {
    for (SchedBuffer &b : s.buffers) {
      if (b.isParam) continue;
      b.offsets.assign(b.devices.size(), 0);
      b.lifetimes.assign(b.devices.size(), {-1, -1});
    }
    auto touch = [&](const BufRef &r, int64_t step) {
      SchedBuffer &b = s.buffers[r.buffer];
      if (b.isParam) return;
      auto &[lo, hi] = b.lifetimes[r.device];
      if (lo < 0) lo = step;
      hi = step;
    };
    for (size_t i = 0; i < s.steps.size(); ++i) {
      const SchedStep &st = s.steps[i];
      if (st.kind == SchedStep::Kind::Copy) touch(st.src, static_cast<int64_t>(i)), touch(st.dst, static_cast<int64_t>(i));
      else if (st.kind == SchedStep::Kind::Allreduce)
        for (size_t d = 0; d < st.srcs.size(); ++d) touch(st.srcs[d], static_cast<int64_t>(i)), touch(st.dsts[d], static_cast<int64_t>(i));
      else
        for (const BufRef &r : st.args) touch(r, static_cast<int64_t>(i));
    }
    // what a once step writes is read in every run: it lives through all of them
    for (const SchedStep &st : s.steps)
      if (st.once)
        for (size_t slot : writtenSlots(st.call)) {
          const BufRef &r = st.args[slot];
          if (!s.buffers[r.buffer].isParam)
            s.buffers[r.buffer].lifetimes[r.device] = {0, static_cast<int64_t>(s.steps.size())};
        }
    // an intermediate the function's SINK holds lives to the end
    for (const UOp *st : rootStates)
      if (auto it = bufferOf.find(stateBuffer(st)); it != bufferOf.end() && !s.buffers[it->second].isParam)
        for (auto &lt : s.buffers[it->second].lifetimes) {
          if (lt.first < 0) lt.first = 0;
          lt.second = static_cast<int64_t>(s.steps.size());
        }
    s.arenaBytes.assign(s.devices.size(), 0);
    for (size_t dev = 0; dev < s.devices.size(); ++dev) {
      std::vector<BufRef> inst;
      for (size_t b = 0; b < s.buffers.size(); ++b) {
        const SchedBuffer &sb = s.buffers[b];
        if (sb.isParam) continue;
        for (size_t d = 0; d < sb.devices.size(); ++d)
          if (sb.devices[d] == dev && sb.lifetimes[d].first >= 0 && sb.bytes() > 0) inst.push_back({b, d});
      }
      auto bytesOf = [&](const BufRef &r) { return s.buffers[r.buffer].bytes(); };
      auto life = [&](const BufRef &r) { return s.buffers[r.buffer].lifetimes[r.device]; };
      std::stable_sort(inst.begin(), inst.end(), [&](const BufRef &a, const BufRef &b) {
        if (bytesOf(a) != bytesOf(b)) return bytesOf(a) > bytesOf(b);
        return life(a).first < life(b).first;
      });
      std::vector<BufRef> placed;
      for (const BufRef &r : inst) {
        auto [lo, hi] = life(r);
        std::vector<std::pair<int64_t, int64_t>> busy; // [offset, end) of placed buffers alive meanwhile
        for (const BufRef &p : placed) {
          auto [plo, phi] = life(p);
          if (plo <= hi && lo <= phi) {
            int64_t off = s.buffers[p.buffer].offsets[p.device];
            busy.push_back({off, off + bytesOf(p)});
          }
        }
        std::sort(busy.begin(), busy.end());
        int64_t off = 0, need = bytesOf(r);
        for (auto [b0, b1] : busy) {
          if (off + need <= b0) break;
          off = std::max(off, (b1 + kArenaAlign - 1) / kArenaAlign * kArenaAlign);
        }
        s.buffers[r.buffer].offsets[r.device] = off;
        s.arenaBytes[dev] = std::max(s.arenaBytes[dev], off + need);
        placed.push_back(r);
      }
    }
  }

  void run() {
    std::vector<const UOp *> nodes = topLevelNodes(g.root);
    for (const UOp *u : nodes)
      if (u->op == Op::STORE || u->op == Op::STAGE || u->op == Op::REDUCE || u->op == Op::COPY || u->op == Op::MULTI ||
          u->op == Op::ALLREDUCE)
        error(u, "the schedule needs a kernel graph: run kernel-split first");
    collectBuffers(nodes);
    order(nodes);
    expand();
    roles();
    markOnce();
    std::vector<const UOp *> rootStates(g.root->src().begin(), g.root->src().end());
    planMemory(rootStates);
  }
};

} // namespace

std::string sanitizeName(std::string_view in) {
  std::string out;
  for (char ch : in) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    out += ok ? ch : '_';
  }
  if (out.size() > 64) out.resize(64);
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "k" + out;
  return out;
}

Schedule buildSchedule(const Graph &g) {
  Builder b(g);
  b.run();
  return std::move(b.s);
}

/// The `schedule` pass: checks and plans (buildSchedule), then records the plan in the graph: every
/// top-level CALL is tagged with its position in execution order, every intermediate BUFFER with its
/// byte offsets (one per device) in the device arenas. Kernel bodies are untouched. The plan itself, its
/// nodes those of the tagged graph, is kept as Graph::schedule.
void runSchedule(Graph &g, const PassContext &) {
  auto plan = std::make_shared<Schedule>(buildSchedule(g));
  Schedule &s = *plan;
  Context &c = *g.ctx;
  std::unordered_map<const UOp *, const Arg *> tags;
  for (size_t i = 0; i < s.calls.size(); ++i) tags[s.calls[i]] = c.argInt(static_cast<int64_t>(i));
  for (const SchedBuffer &b : s.buffers)
    if (!b.isParam) {
      std::vector<const Arg *> offs;
      for (int64_t o : b.offsets) offs.push_back(c.argInt(o));
      tags[b.node] = c.argTuple(offs);
    }
  std::unordered_map<const UOp *, const UOp *> made;
  for (const UOp *u : topLevelNodes(g.root)) {
    std::vector<const UOp *> srcs(u->src().begin(), u->src().end());
    for (size_t i = u->op == Op::CALL ? 1 : 0; i < srcs.size(); ++i) srcs[i] = made.at(srcs[i]);
    auto it = tags.find(u);
    made[u] = c.make(u->op, u->dtype, srcs, u->arg, it != tags.end() ? it->second : u->tag);
  }
  g.root = made.at(g.root);
  auto now = [&](const UOp *u) {
    auto it = made.find(u);
    return it == made.end() ? u : it->second;
  };
  for (const UOp *&call : s.calls) call = now(call);
  for (SchedStep &st : s.steps) st.call = now(st.call);
  for (SchedKernel &k : s.kernels) k.call = now(k.call);
  for (SchedBuffer &b : s.buffers) b.node = now(b.node);
  s.root = g.root;
  g.schedule = std::move(plan);
}

const Schedule *currentSchedule(const Graph &g) {
  return g.schedule && g.schedule->root == g.root ? g.schedule.get() : nullptr;
}

std::vector<const UOp *> topLevelNodes(const UOp *root) {
  std::vector<const UOp *> out;
  std::unordered_map<const UOp *, bool> seen;
  std::vector<std::pair<const UOp *, size_t>> st{{root, 0}};
  seen[root] = true;
  while (!st.empty()) {
    auto &[u, i] = st.back();
    size_t first = u->op == Op::CALL ? 1 : 0;
    if (i < first) i = first;
    if (i < u->nsrc) {
      const UOp *s = u->src(i++);
      if (!seen[s]) {
        seen[s] = true;
        st.push_back({s, 0});
      }
      continue;
    }
    out.push_back(u);
    st.pop_back();
  }
  return out;
}

} // namespace uopc
