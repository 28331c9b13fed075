//===- Kernels.cpp - evaluating kernel-split graphs (index-level kernels) ---===//
// A kernel graph (kernel-split's output) is a SINK of buffer states AFTER(buffer, CALL(...)). The calls
// run in an order that respects read-after-write (a call taking a state AFTER(b, c) runs after c) and
// write-after-read (a call writing b from its prior state S runs after every other call reading S).
// A kernel runs once per device of the buffer it writes, with `_device_num` bound to the device.
//
// Inside a kernel every node is evaluated densely over the RANGEs it depends on: a value is an array
// whose axes are those ranges (sorted by range number), operands broadcast to the union of their axes,
// REDUCE folds its ranges, END(STORE(INDEX(buf, i), v), ranges...) scatters. Invalid lanes follow the
// tensor interpreter's rules (they poison ALU ops and reductions, and are not stored); a read at an
// Invalid or out-of-bounds index gives Invalid (the lane is gated off; codegen makes that load gated).
// A linearized kernel (CALL(LINEAR(SINK, items))) runs its items instead, one element at a time
// (Interp/Linear.cpp): the order the targets render is what is checked.
#include "IR/Collective.h"
#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Records.h"
#include "Interp/Evaluator.h"
#include "Interp/Linear.h"
#include "Passes/Schedule.h"

#include <algorithm>
#include <unordered_map>

namespace uopc::interp {
namespace {

int64_t rangeNum(const UOp *r) { return r->arg->elems()[0]->i(); }

struct RV {
  std::vector<const UOp *> axes;
  Dims dims;
  ArrayPtr a;
};

/// Row-major strides of dims.
Dims stridesOf(const Dims &d) {
  Dims s(d.size());
  int64_t st = 1;
  for (size_t k = d.size(); k-- > 0;) {
    s[k] = st;
    st *= d[k];
  }
  return s;
}

struct KernelEval {
  const Graph &g;
  const std::map<std::string, int64_t> &vars;
  int64_t deviceNum;
  std::vector<Array *> bufs;      // by PARAM slot
  std::vector<DType> bufDTypes;
  std::unordered_map<const UOp *, RV> memo;

  [[noreturn]] void error(const UOp *u, const std::string &m) const { fail(g.describe(u) + ": " + m); }

  View viewFor(const RV &x, const std::vector<const UOp *> &axes, const Dims &dims) {
    View v;
    v.shape = dims;
    v.strides.assign(axes.size(), 0);
    Dims xs = stridesOf(x.dims);
    for (size_t k = 0; k < axes.size(); ++k)
      for (size_t m = 0; m < x.axes.size(); ++m)
        if (x.axes[m] == axes[k]) v.strides[k] = xs[m];
    return v;
  }

  void unite(std::vector<const UOp *> &axes, Dims &dims, const RV &x) {
    for (size_t m = 0; m < x.axes.size(); ++m)
      if (std::find(axes.begin(), axes.end(), x.axes[m]) == axes.end()) {
        axes.push_back(x.axes[m]);
        dims.push_back(x.dims[m]);
      }
  }
  void sortAxes(std::vector<const UOp *> &axes, Dims &dims) {
    std::vector<size_t> ord(axes.size());
    for (size_t i = 0; i < ord.size(); ++i) ord[i] = i;
    std::sort(ord.begin(), ord.end(), [&](size_t a, size_t b) { return rangeNum(axes[a]) < rangeNum(axes[b]); });
    std::vector<const UOp *> a2;
    Dims d2;
    for (size_t i : ord) a2.push_back(axes[i]), d2.push_back(dims[i]);
    axes = a2, dims = d2;
  }

  int64_t scalar(const UOp *u) {
    const RV &v = eval(u);
    if (!v.axes.empty() || v.a->isInvalid(0)) error(u, "expected a scalar");
    return asInt(v.a->words[0]);
  }

  /// The nodes evalUncached(u) evaluates first.
  static std::vector<const UOp *> operandsOf(const UOp *u) {
    switch (u->op) {
    case Op::CONST:
    case Op::PARAM: return {};
    case Op::INDEX: return {u->src(1)};
    case Op::REDUCE: {
      std::vector<const UOp *> v{u->src(0)};
      for (const UOp *r : u->src().subspan(1)) v.push_back(r->src(0));
      return v;
    }
    default: return {u->src().begin(), u->src().end()};
    }
  }

  /// Post-order with an explicit stack (a kernel body may be a million ops deep), so that evalUncached
  /// only ever finds its operands in the memo.
  const RV &eval(const UOp *root) {
    if (auto it = memo.find(root); it != memo.end()) return it->second;
    std::vector<std::pair<const UOp *, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [u, expanded] = stack.back();
      if (memo.count(u)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (const UOp *s : operandsOf(u))
          if (!memo.count(s)) stack.push_back({s, false});
        continue;
      }
      stack.pop_back();
      RV r = evalUncached(u);
      memo.emplace(u, std::move(r));
    }
    return memo.at(root);
  }

  RV evalUncached(const UOp *u) {
    switch (u->op) {
    case Op::CONST: {
      const Arg *a = u->arg;
      Word w = 0;
      bool inv = false;
      switch (a->kind) {
      case ArgKind::Invalid: inv = true; break;
      case ArgKind::Bool: w = intToWord(u->dtype, a->b() ? 1 : 0); break;
      case ArgKind::Int: w = intToWord(u->dtype, a->i()); break;
      case ArgKind::UInt: w = uintToWord(u->dtype, a->u()); break;
      case ArgKind::Float: w = floatToWord(u->dtype, a->f()); break;
      default: error(u, "unsupported CONST");
      }
      return {{}, {}, filled(1, w, inv)};
    }
    case Op::PARAM: {
      ParamArg pa = ParamArg::decode(u->arg);
      if (!isScalarParam(u)) error(u, "a buffer PARAM must be read through INDEX");
      if (pa.name && *pa.name == "_device_num") return {{}, {}, filled(1, intToWord(u->dtype, deviceNum))};
      if (!pa.name || !vars.count(*pa.name)) error(u, "unbound variable");
      return {{}, {}, filled(1, intToWord(u->dtype, vars.at(*pa.name)))};
    }
    case Op::RANGE: {
      int64_t n = scalar(u->src(0));
      auto a = std::make_shared<Array>();
      a->words.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
      for (int64_t i = 0; i < n; ++i) a->words[static_cast<size_t>(i)] = intToWord(u->dtype, i);
      return {{u}, {n}, a};
    }
    case Op::INDEX: {
      const UOp *p = u->src(0);
      if (p->op != Op::PARAM) error(u, "INDEX of a non-PARAM");
      size_t slot = static_cast<size_t>(ParamArg::decode(p->arg).slot);
      if (slot >= bufs.size()) error(u, "INDEX of an unbound slot");
      const Array &buf = *bufs[slot];
      const RV &ix = eval(u->src(1));
      auto a = std::make_shared<Array>();
      size_t n = ix.a->words.size();
      a->words.resize(n);
      a->invalid.assign(n, 0);
      for (size_t i = 0; i < n; ++i) {
        int64_t j = asInt(ix.a->words[i]);
        if (ix.a->isInvalid(i) || j < 0 || j >= static_cast<int64_t>(buf.words.size())) a->invalid[i] = 1;
        else a->words[i] = buf.words[static_cast<size_t>(j)];
      }
      return {ix.axes, ix.dims, a};
    }
    case Op::LOAD: { // LOAD(read, alt): the read where it is valid, else the alternative
      const RV &x = eval(u->src(0));
      if (u->nsrc < 2) return x;
      const RV &alt = eval(u->src(1));
      std::vector<const UOp *> axes;
      Dims dims;
      unite(axes, dims, x);
      unite(axes, dims, alt);
      sortAxes(axes, dims);
      ArrayPtr gx = gather(*x.a, viewFor(x, axes, dims)), ga = gather(*alt.a, viewFor(alt, axes, dims));
      auto a = std::make_shared<Array>(*gx);
      if (gx->hasInvalid()) {
        a->invalid.assign(a->words.size(), 0);
        for (size_t i = 0; i < a->words.size(); ++i)
          if (gx->isInvalid(i)) a->words[i] = ga->words[i], a->invalid[i] = ga->isInvalid(i);
      }
      return {axes, dims, a};
    }
    case Op::REDUCE: {
      const RV &x = eval(u->src(0));
      std::vector<const UOp *> axes(u->src().begin() + 1, u->src().end());
      Dims dims;
      for (const UOp *r : axes) dims.push_back(scalar(r->src(0)));
      size_t k = axes.size();
      std::vector<const UOp *> rest;
      Dims restDims;
      for (size_t m = 0; m < x.axes.size(); ++m)
        if (std::find(axes.begin(), axes.end(), x.axes[m]) == axes.end()) rest.push_back(x.axes[m]), restDims.push_back(x.dims[m]);
      sortAxes(rest, restDims);
      axes.insert(axes.end(), rest.begin(), rest.end());
      dims.insert(dims.end(), restDims.begin(), restDims.end());
      ArrayPtr gathered = gather(*x.a, viewFor(x, axes, dims));
      Op op = u->arg->elems()[0]->op();
      return {rest, restDims, reduceFront(*gathered, dims, k, op, u->dtype)};
    }
    default: break;
    }
    if (isElementwise(u->op)) {
      std::vector<const RV *> ops;
      std::vector<const UOp *> axes;
      Dims dims;
      for (const UOp *s : u->src()) {
        ops.push_back(&eval(s));
        unite(axes, dims, *ops.back());
      }
      sortAxes(axes, dims);
      std::vector<Operand> operands;
      for (const RV *o : ops) operands.push_back({o->a.get(), viewFor(*o, axes, dims)});
      DType in = u->op == Op::WHERE ? u->src(1)->dtype : u->src(0)->dtype;
      return {axes, dims, elementwise(u->op, u->dtype, in, operands, dims)};
    }
    if (u->op == Op::CUSTOM || u->op == Op::CUSTOMI) // C code in the graph: only a C target can run it
      error(u, "the interpreter does not support " + std::string(opName(u->op)) + " nodes (their arg is C code)");
    error(u, "the kernel interpreter does not support this op");
  }

  /// END(STORE(...), ranges...) or a bare STORE.
  void store(const UOp *u) {
    const UOp *st = u->op == Op::END ? u->src(0) : u;
    if (st->op != Op::STORE || st->src(0)->op != Op::INDEX) error(u, "expected STORE(INDEX(...), value)");
    const UOp *ix = st->src(0);
    size_t slot = static_cast<size_t>(ParamArg::decode(ix->src(0)->arg).slot);
    Array &buf = *bufs.at(slot);
    std::vector<const UOp *> axes;
    Dims dims;
    if (u->op == Op::END)
      for (const UOp *r : u->src().subspan(1)) axes.push_back(r), dims.push_back(scalar(r->src(0)));
    const RV &i = eval(ix->src(1));
    const RV &v = eval(st->src(1));
    unite(axes, dims, i);
    unite(axes, dims, v);
    ArrayPtr ia = gather(*i.a, viewFor(i, axes, dims)), va = gather(*v.a, viewFor(v, axes, dims));
    for (size_t e = 0; e < ia->words.size(); ++e) {
      if (ia->isInvalid(e) || va->isInvalid(e)) continue;
      int64_t j = asInt(ia->words[e]);
      if (j < 0 || j >= static_cast<int64_t>(buf.words.size()))
        error(u, "store index " + std::to_string(j) + " outside a buffer of " + std::to_string(buf.words.size()));
      buf.words[static_cast<size_t>(j)] = va->words[e];
    }
  }
};


} // namespace

/// CALL(ALLREDUCE(PARAM 1)[op, devices, order], dst, src): every device of `out` gets the reduction of
/// every device of `src`, element by element in the order uopc-run takes (device order, or tinygrad's ring:
/// IR/Collective.h), each step rounded to the dtype as the runner's and the kernels' arithmetic is.
static void allreduce(const UOp *body, const std::vector<std::shared_ptr<Array>> &src, std::vector<std::shared_ptr<Array>> &out) {
  const Arg *a = body->arg;
  if (!a || a->kind != ArgKind::Tuple || a->count != 3 || src.size() != out.size() || src.size() < 2)
    fail("kernel graph: an allreduce needs arg [op, devices, order] and one shard per device of its result");
  Op op = a->elems()[0]->op();
  DType dt = body->dtype;
  size_t n = src.size(), m = src[0]->words.size();
  bool ring = a->elems()[2]->kind == ArgKind::String && a->elems()[2]->str() == "ring";
  std::vector<int64_t> starts = ring ? ringChunkStarts(static_cast<int64_t>(m), static_cast<int64_t>(n))
                                     : std::vector<int64_t>{0, static_cast<int64_t>(m)};
  auto res = std::make_shared<Array>();
  res->words.assign(m, 0);
  for (size_t k = 0; k + 1 < starts.size(); ++k)
    for (auto e = static_cast<size_t>(starts[k]); e < static_cast<size_t>(starts[k + 1]); ++e) {
      size_t first = ring ? k : 0;
      Word acc = src[first]->words.at(e);
      for (size_t j = 1; j < n; ++j) {
        acc = reduceStep(op, dt, acc, src[(first + j) % n]->words.at(e));
        if (isFloatDType(dt)) acc = fromDouble(roundFloat(dt, asDouble(acc)));
      }
      res->words[e] = acc;
    }
  for (auto &o : out) o->words = res->words;
}

bool isKernelGraph(const Graph &g) {
  for (const UOp *d : topLevelNodes(g.root))
    if (d->op == Op::CALL && (d->src(0)->op == Op::COPY || d->src(0)->op == Op::ALLREDUCE ||
                              (kernelSink(d) && kernelSink(d)->arg && kernelSink(d)->arg->kind == ArgKind::Record)))
      return true;
  return false;
}

void Evaluator::runKernels() {
  std::vector<const UOp *> nodes = topLevelNodes(g_.root);
  std::vector<const UOp *> calls;
  std::unordered_map<const UOp *, size_t> callIndex;
  for (const UOp *u : nodes)
    if (u->op == Op::CALL) callIndex[u] = calls.size(), calls.push_back(u);
  // dependencies: read-after-write through AFTER arguments, write-after-read on the prior state
  std::vector<std::vector<size_t>> before(calls.size());
  for (size_t c = 0; c < calls.size(); ++c)
    for (const UOp *a : calls[c]->src().subspan(1))
      if (a->op == Op::AFTER)
        for (const UOp *d : a->src().subspan(1))
          if (auto it = callIndex.find(d); it != callIndex.end()) before[c].push_back(it->second);
  std::vector<std::vector<size_t>> written(calls.size());
  for (size_t c = 0; c < calls.size(); ++c) written[c] = writtenSlots(calls[c]);
  for (size_t w = 0; w < calls.size(); ++w)
    for (size_t slot : written[w]) {
      const UOp *prior = calls[w]->src(slot + 1);
      for (size_t r = 0; r < calls.size(); ++r)
        if (r != w)
          for (size_t a = 0; a + 1 < calls[r]->nsrc; ++a)
            if (calls[r]->src(a + 1) == prior && !std::binary_search(written[r].begin(), written[r].end(), a))
              before[w].push_back(r);
    }
  // depth-first order over `before`, with an explicit stack (a chain of calls may be long)
  std::vector<int> state(calls.size(), 0);
  std::vector<size_t> order;
  for (size_t start = 0; start < calls.size(); ++start) {
    if (state[start]) continue;
    std::vector<std::pair<size_t, size_t>> st{{start, 0}};
    state[start] = 1;
    while (!st.empty()) {
      auto &[c, i] = st.back();
      if (i < before[c].size()) {
        size_t b = before[c][i++];
        if (state[b] == 1) fail("kernel graph: cyclic dependencies between calls");
        if (state[b] == 0) {
          state[b] = 1;
          st.push_back({b, 0});
        }
        continue;
      }
      state[c] = 2;
      order.push_back(c);
      st.pop_back();
    }
  }

  // storage of intermediate BUFFERs, one array per device
  std::unordered_map<const UOp *, std::vector<std::shared_ptr<Array>>> buffers;
  auto storage = [&](const UOp *state) -> std::vector<std::shared_ptr<Array>> & {
    const UOp *raw = stateBuffer(state);
    if (raw->op == Op::PARAM) {
      auto it = slots_.find(ParamArg::decode(raw->arg).slot);
      if (it == slots_.end()) error(raw, "unknown buffer slot");
      return it->second.data;
    }
    if (raw->op != Op::BUFFER) error(raw, "a call argument must be a buffer state");
    auto &v = buffers[raw];
    if (v.empty()) {
      ParamArg pa = ParamArg::decode(raw->arg);
      ValuePtr n = evaluateOnly(raw->src(0));
      int64_t numel = asInt(n->on(0)->words[0]);
      size_t nd = std::max<size_t>(1, pa.devices.size());
      for (size_t d = 0; d < nd; ++d) {
        auto a = std::make_shared<Array>();
        a->words.assign(static_cast<size_t>(numel), 0);
        v.push_back(a);
      }
    }
    return v;
  };
  for (size_t c : order) {
    const UOp *call = calls[c];
    const UOp *body = kernelSink(call) ? kernelSink(call) : call->src(0);
    auto &out = storage(call->src(1));
    if (body->op == Op::COPY) {
      auto &src = storage(call->src(2));
      int64_t from = body->arg->elems()[1]->i();
      for (size_t d = 0; d < out.size(); ++d) {
        size_t s = from >= 0 ? static_cast<size_t>(from) : (src.size() == 1 ? 0 : d);
        out[d]->words = src.at(s)->words;
      }
      continue;
    }
    if (body->op == Op::ALLREDUCE) { // multi-lower's collective: the shards reduced in the runner's order
      auto &src = storage(call->src(2));
      allreduce(body, src, out);
      continue;
    }
    for (size_t d = 0; d < out.size(); ++d) {
      KernelEval k{g_, vars_, static_cast<int64_t>(d), {}, {}, {}};
      for (const UOp *a : call->src().subspan(1)) {
        auto &s = storage(a);
        k.bufs.push_back(s.size() == out.size() ? s[d].get() : s[0].get());
      }
      if (call->src(0)->op == Op::LINEAR) runLinearKernel(g_, call->src(0), k.bufs, vars_, static_cast<int64_t>(d));
      else
        for (const UOp *e : body->src()) k.store(e);
    }
  }
}

} // namespace uopc::interp
