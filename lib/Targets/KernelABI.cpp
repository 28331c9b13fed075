//===- KernelABI.cpp - the kernel function's arguments and summary, for every target ===//
#include "Targets/KernelABI.h"

#include "IR/Error.h"
#include "IR/Kernel.h"
#include "IR/Range.h"
#include "IR/Records.h"
#include "Targets/CNames.h"
#include "Targets/CTarget.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

namespace uopc {

bool supportedKernelDType(DType dt) {
  switch (dt) {
  case DType::Bool: case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16: case DType::Int32:
  case DType::UInt32: case DType::Int64: case DType::UInt64: case DType::WeakInt: case DType::Float16:
  case DType::BFloat16: case DType::Float32: case DType::Float64: case DType::WeakFloat:
    return true;
  default: return false;
  }
}

bool isScalarParamNode(const UOp *u) {
  return u->op == Op::PARAM && (u->nsrc == 0 || (u->src(0)->op == Op::STACK && u->src(0)->nsrc == 0));
}

namespace {

/// The loops the stores run in, as "4x8" ("n" for a symbolic size; "1" for none); stores over the same
/// loops as the store before them (outputs computed together) add nothing.
std::string describeLoops(const UOp *sink) {
  std::string s;
  const UOp *prev = nullptr;
  for (const UOp *e : sink->src()) {
    bool same = prev && e->op == Op::END && prev->nsrc == e->nsrc &&
                std::equal(e->src().begin() + 1, e->src().end(), prev->src().begin() + 1);
    if (e->op == Op::END) prev = e;
    if (e->op == Op::END && !same)
      for (const UOp *r : e->src().subspan(1)) {
        auto n = constBound(r->src(0));
        s += (s.empty() ? "" : "x") + (n ? std::to_string(static_cast<int64_t>(*n)) : std::string("n"));
      }
  }
  return s.empty() ? "1" : s;
}

[[noreturn]] void abiFail(std::string_view target, const UOp *u, const std::string &msg) {
  fail(std::string(target) + ": UOp #" + std::to_string(u->index) + " (" + std::string(opName(u->op)) + "): " + msg);
}

} // namespace

KernelABI KernelABI::of(const UOp *call, std::string_view target) {
  auto failAt = [&](const UOp *u, const std::string &msg) { abiFail(target, u, msg); };
  if (call->op != Op::CALL || call->nsrc == 0)
    fail(std::string(target) + ": expected a kernel CALL, got " + std::string(opName(call->op)));
  const UOp *body = call->src(0);
  if (body->op == Op::COPY) failAt(call, "a copy is not a kernel: the runner performs it");
  if (body->op == Op::SINK) failAt(call, "the kernel is not linearized: run the pipeline through 'linearize'");
  if (body->op != Op::LINEAR || !kernelSink(call)) failAt(call, "the called body is not a LINEAR kernel");
  KernelABI abi;
  size_t nargs = call->nsrc > 0 ? call->nsrc - 1 : 0;
  abi.buffers.resize(nargs);
  for (size_t i = 0; i < nargs; ++i) abi.buffers[i].dtype = call->src(i + 1)->dtype;
  std::set<std::string> ops;
  for (const UOp *u : toposort(body)) {
    if (!supportedKernelDType(u->dtype) && u->dtype != DType::Void)
      failAt(u, "dtype " + std::string(dtypeName(u->dtype)) + " is not supported");
    if (u->op == Op::PARAM) {
      if (isScalarParamNode(u)) {
        ParamArg pa = ParamArg::decode(u->arg);
        if (!pa.name) failAt(u, "a scalar PARAM without a name");
        if (*pa.name != "_device_num") abi.varArg[*pa.name] = "";
      } else {
        int64_t slot = ParamArg::slotOf(u->arg); // (not decode: a buffer's device list may be long)
        if (slot < 0 || static_cast<size_t>(slot) >= nargs) failAt(u, "a buffer slot past the kernel's arguments");
        abi.buffers[static_cast<size_t>(slot)].dtype = u->dtype;
      }
    }
    if (u->op == Op::STORE && u->src(0)->op == Op::INDEX && u->src(0)->src(0)->op == Op::PARAM)
      abi.written.insert(ParamArg::slotOf(u->src(0)->src(0)->arg));
    // what commit-weak makes concrete is not a renderer's to decide
    if (u->dtype == DType::WeakFloat) failAt(u, "a weakfloat value: the commit-weak pass makes it float64");
    if (isElementwise(u->op) && u->op != Op::CAST && u->op != Op::BITCAST) {
      bool weak = false, strong = false;
      for (size_t k = u->op == Op::WHERE ? 1 : 0; k < u->nsrc; ++k)
        (u->src(k)->dtype == DType::WeakInt ? weak : strong) = true;
      if (weak && strong) failAt(u, "a weakint operand next to a strong one: the commit-weak pass casts it");
    }
  }
  // the ops the kernel computes: its items'
  const UOp *threadRange = nullptr;
  for (const UOp *u : linearItems(body)) {
    // one RANGE, the loop of each store that runs in it; or one per piece of a split loop, each with its
    // offset (threadOffset: the pieces laid end to end)
    if (isThreadRange(u)) {
      auto n = constBound(u->src(0));
      bool pieces = u->arg->count >= 3 && (!threadRange || threadRange->arg->count >= 3);
      if (!n || *n < 1 || *n > INT32_MAX || threadOffset(u) < 0 || threadOffset(u) > INT32_MAX - *n ||
          (threadRange && threadRange != u && !pieces))
        failAt(u, "a THREAD loop must be the kernel's one loop of constant size split across threads");
      threadRange = u;
      abi.parallel = std::max<int64_t>(abi.parallel, threadOffset(u) + static_cast<int64_t>(*n));
    }
    if (u->op == Op::REDUCE && u->arg && u->arg->kind == ArgKind::Tuple && u->arg->count) {
      Op op = u->arg->elems()[0]->op();
      ops.insert(op == Op::ADD ? "SUM" : op == Op::MUL ? "PROD" : "MAXREDUCE");
    } else if (isElementwise(u->op) || u->op == Op::CUSTOM || u->op == Op::CUSTOMI) {
      ops.insert(std::string(opName(u->op)));
    }
  }
  for (const std::string &o : ops) abi.ops += (abi.ops.empty() ? "" : " ") + o;
  for (size_t i = 0; i < nargs; ++i) {
    abi.buffers[i].written = abi.written.count(static_cast<int64_t>(i)) > 0;
    abi.buffers[i].name = (abi.buffers[i].written ? "out" : "in") + std::to_string(i);
    if (!supportedKernelDType(abi.buffers[i].dtype)) failAt(call, "argument " + std::to_string(i) + " has an unsupported dtype");
  }
  // each variable's argument: var_<name> (sanitizeCName: a long name cut and hashed), made distinct
  std::set<std::string> argNames;
  for (auto &[v, a] : abi.varArg) {
    abi.vars.push_back(v);
    std::string base = "var_" + sanitizeCName(v);
    a = base;
    for (int k = 2; !argNames.insert(a).second; ++k) a = base + "_" + std::to_string(k);
  }
  return abi;
}

std::string KernelABI::summary(const UOp *call, const std::string &symbol, int64_t deviceNum) const {
  std::string outs;
  for (int64_t s : written) outs += (outs.empty() ? "" : ", ") + buffers[static_cast<size_t>(s)].name;
  const UOp *sink = kernelSink(call);
  return symbol + ": " +
         (written.empty() ? std::string("no stores")
                          : outs + " (" + std::string(dtypeName(buffers[static_cast<size_t>(*written.begin())].dtype)) + ")") +
         " over " + (sink ? describeLoops(sink) : std::string("1")) + (ops.empty() ? ": copy of the inputs" : ": " + ops) +
         (deviceNum ? ", device " + std::to_string(deviceNum) : "");
}

std::vector<std::string> kernelVariables(const UOp *kernelCall) {
  std::set<std::string> names;
  if (const UOp *sink = kernelSink(kernelCall))
    for (const UOp *u : toposort(sink))
      if (u->op == Op::PARAM && isScalarParamNode(u)) {
        ParamArg pa = ParamArg::decode(u->arg);
        if (pa.name && *pa.name != "_device_num") names.insert(*pa.name);
      }
  return {names.begin(), names.end()};
}

std::string kernelSignature(const UOp *call) {
  size_t nargs = call->nsrc > 0 ? call->nsrc - 1 : 0;
  std::vector<std::string> entries(nargs);
  for (size_t i = 0; i < nargs; ++i) entries[i] = std::string(dtypeName(call->src(i + 1)->dtype)) + ":?";
  std::map<std::string, std::pair<int64_t, int64_t>> ranges; // variable -> the range the kernel was compiled for
  if (const UOp *sink = kernelSink(call)) {
    RangeInfo ri;
    for (const UOp *u : toposort(sink)) {
      if (u->op != Op::PARAM) continue;
      if (isScalarParamNode(u)) {
        ParamArg pa = ParamArg::decode(u->arg);
        if (pa.name && *pa.name != "_device_num" && pa.vminVmax) ranges[*pa.name] = *pa.vminVmax;
        continue;
      }
      int64_t slot = ParamArg::slotOf(u->arg);
      if (slot < 0 || static_cast<size_t>(slot) >= nargs) continue;
      // a size that depends on a variable: its upper bound over the variables' ranges (the most it indexes)
      std::optional<Bound> n = u->nsrc ? constBound(u->src(0)) : std::nullopt;
      if (!n && u->nsrc) {
        Bound hi = ri.vmax(u->src(0));
        if (hi >= 0 && hi < (Bound(1) << 62)) n = hi;
      }
      entries[static_cast<size_t>(slot)] =
          std::string(dtypeName(u->dtype)) + ":" + (n ? std::to_string(static_cast<int64_t>(*n)) : std::string("?"));
    }
  }
  std::string s = "uopc-signature:";
  for (const std::string &e : entries) s += " " + e;
  std::vector<std::string> vars = kernelVariables(call);
  s += " vars " + std::to_string(vars.size());
  // each variable's range is part of the signature: a manifest widening it is refused by the runner
  for (const std::string &v : vars) {
    // (the readers refuse such a name; one made otherwise must not end the comment this line goes in)
    if (!isCIdentifier(v)) fail("kernel variable " + quote(v) + " is not an identifier");
    auto it = ranges.find(v);
    if (it != ranges.end()) s += " " + v + ":" + std::to_string(it->second.first) + ":" + std::to_string(it->second.second);
    else s += " " + v + ":?";
  }
  // a kernel split across threads takes [lo, hi) of its THREAD loop after the variables
  if (int64_t n = kernelParallel(call)) s += " parallel " + std::to_string(n);
  return s;
}

std::vector<bool> independentLaneLoops(std::span<const UOp *const> items) {
  std::vector<bool> out;
  std::unordered_map<const UOp *, std::vector<const UOp *>> lanes; // per REDUCE, computed once
  for (size_t i = 0; i < items.size(); ++i) {
    const UOp *r = items[i];
    if (r->op != Op::RANGE) continue;
    bool ok = isUpcastRange(r);
    for (size_t j = i + 1; ok && j < items.size(); ++j) {
      const UOp *u = items[j];
      if (u->op == Op::END) break; // (its own: no loop opens inside it)
      if (u->op == Op::RANGE) ok = false;
      // a buffer access that does not move by one element per lane would be a gather or a scatter
      const UOp *ix = u->op == Op::INDEX ? u : u->op == Op::STORE && u->src(0)->op == Op::INDEX ? u->src(0) : nullptr;
      if (ix && ix->nsrc >= 2) {
        auto st = indexStride(ix->src(1), r);
        ok = ok && st && (*st == 0 || *st == 1);
      }
      if (u->op == Op::STORE && u->src(0)->op == Op::REDUCE) {
        auto it = lanes.find(u->src(0));
        if (it == lanes.end()) it = lanes.emplace(u->src(0), accumulatorLanes(u->src(0))).first;
        ok = std::find(it->second.begin(), it->second.end(), r) != it->second.end();
      }
    }
    out.push_back(ok);
  }
  return out;
}

namespace {
/// paddedLaneGates' test of one lane loop's items: the padded read's INDEX, or nullptr.
const UOp *paddedRead(std::span<const UOp *const> body, const std::unordered_set<const UOp *> &unrolled, bool withRows) {
  std::unordered_set<const UOp *> inside(body.begin(), body.end());
  const UOp *gated = nullptr;
  for (const UOp *u : body) {
    if (u->op == Op::RANGE || u->op == Op::END || u->op == Op::IF || u->op == Op::ENDIF || u->op == Op::CUSTOM ||
        u->op == Op::PREFETCH || u->op == Op::BARRIER)
      return nullptr;
    if (u->op != Op::STORE) continue;
    const UOp *acc = u->src(0), *x = u->src(1);
    if (acc->op != Op::REDUCE || acc->arg->elems()[0]->op() != Op::ADD || !isFloat(acc->dtype) || x->op != Op::MUL) return nullptr;
    const UOp *ld = nullptr;
    for (const UOp *m : x->src())
      if (m->op == Op::LOAD && !inside.count(m) && m->nsrc == 2 && m->src(0)->op == Op::INDEX && m->src(0)->nsrc >= 3 &&
          m->src(1)->op == Op::CONST && m->src(1)->arg->kind == ArgKind::Float && m->src(1)->arg->f() == 0.0)
        ld = m;
    if (!ld || (gated && gated != ld->src(0))) return nullptr;
    const UOp *other = x->src(0) == ld ? x->src(1) : x->src(0);
    if (other->op == Op::INDEX && other->nsrc != 2) return nullptr; // (a gated weight: its validity poisons the sum)
    gated = ld->src(0);
  }
  if (!gated) return nullptr;
  std::vector<const UOp *> conds, stack;
  for (const UOp *g : gated->src().subspan(2)) stack.push_back(g);
  while (!stack.empty()) {
    const UOp *x = stack.back();
    stack.pop_back();
    if (x->op == Op::AND && x->dtype == DType::Bool && x->nsrc == 2) stack.push_back(x->src(0)), stack.push_back(x->src(1));
    else conds.push_back(x);
  }
  bool constantInCopies = false, rows = false;
  for (const UOp *cnd : conds) {
    bool inCopies = false, outside = false;
    for (const UOp *r : toposort(cnd))
      if (r->op == Op::RANGE) (unrolled.count(r) ? inCopies : outside) = true;
    if (inCopies && outside) return nullptr;
    constantInCopies = constantInCopies || inCopies;
    rows = rows || outside;
  }
  return constantInCopies && (rows || !withRows) ? gated : nullptr;
}
} // namespace

std::vector<const UOp *> paddedLaneGates(std::span<const UOp *const> items, const std::vector<bool> &laneLoops,
                                         const std::unordered_set<const UOp *> &unrolled, bool withRows) {
  std::vector<const UOp *> out;
  for (size_t i = 0, k = 0; i < items.size(); ++i) {
    if (items[i]->op != Op::RANGE) continue;
    out.push_back(nullptr);
    if (k >= laneLoops.size() || !laneLoops[k++]) continue;
    size_t end = i + 1; // (a lane loop has no loop inside: the next END is its own)
    while (end < items.size() && items[end]->op != Op::END) ++end;
    out.back() = paddedRead(items.subspan(i + 1, end - i - 1), unrolled, withRows);
  }
  return out;
}

} // namespace uopc
