//===- Interpreter.cpp - graph walk, consts, params, elementwise and reduce ===//
#include "Interp/Interpreter.h"

#include "IR/Error.h"
#include "IR/Records.h"
#include "Interp/Evaluator.h"

#include <algorithm>

namespace uopc {
namespace interp {

bool isScalarParam(const UOp *u) {
  return u->nsrc == 0 || (u->src(0)->op == Op::STACK && u->src(0)->nsrc == 0);
}

namespace {

/// tinygrad's UOp.axis for ALU/STACK: the sources' axes right-aligned into the output, the last distinct one.
int alignedAxis(const std::vector<const Value *> &vs, size_t outRank, int shift) {
  std::vector<int> axes;
  for (const Value *v : vs) {
    if (v->axis < 0) continue;
    int a = v->axis + static_cast<int>(outRank) - static_cast<int>(v->shape.size()) + shift;
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
  }
  return axes.empty() ? -1 : axes.back();
}

} // namespace

Evaluator::Evaluator(const Graph &g, std::map<std::string, int64_t> vars) : g_(g), vars_(std::move(vars)) {}

void Evaluator::error(const UOp *u, const std::string &msg) const { fail(g_.describe(u) + ": " + msg); }

const Value &Evaluator::val(const UOp *consumer, const UOp *u) const {
  const ValuePtr *v = values_.find(u);
  if (!v || !*v) error(consumer, "operand " + g_.describe(u) + " has no value (it is not a tensor)");
  return **v;
}

Dims Evaluator::dims(const UOp *consumer, const UOp *operand, size_t d) const {
  if (operand->op == Op::STACK && operand->nsrc == 0) return {};
  const Value &v = val(consumer, operand);
  if (!isInt(v.dtype)) error(consumer, "shape operand " + g_.describe(operand) + " is not an integer");
  if (v.axis >= 0) error(consumer, "shape operand " + g_.describe(operand) + " is sharded");
  if (v.count() > 1 && d >= v.count()) error(consumer, "shape operand lives on fewer devices than its user");
  if (operand->op == Op::STACK ? v.shape.size() != 1 : !v.shape.empty())
    error(consumer, "shape operand " + g_.describe(operand) + " must be a scalar or a STACK of scalars");
  const Array &a = *v.on(d);
  if (a.hasInvalid()) error(consumer, "shape operand " + g_.describe(operand) + " is Invalid");
  Dims out;
  for (Word w : a.words) out.push_back(asInt(w));
  return out;
}

size_t Evaluator::commonCount(const UOp *u, const std::vector<const Value *> &vs) const {
  size_t n = 1;
  for (const Value *v : vs) {
    if (v->count() <= 1) continue;
    if (n == 1) n = v->count();
    else if (n != v->count())
      error(u, "operands live on " + std::to_string(n) + " and " + std::to_string(v->count()) + " devices");
  }
  return n;
}

std::vector<std::string> Evaluator::devicesFor(const std::vector<const Value *> &vs, size_t n) const {
  for (const Value *v : vs)
    if (v->count() == n && v->devices.size() == n) return v->devices;
  return {};
}

void Evaluator::bindVariables() {
  // Scalar variables bound by a BIND to a constant need their value before the BIND itself runs.
  for (const UOp *u : toposort(g_.root)) {
    if (u->op != Op::BIND || u->nsrc != 2 || u->src(0)->op != Op::PARAM || u->src(1)->op != Op::CONST) continue;
    const Arg *c = u->src(1)->arg;
    if (!c || c->kind != ArgKind::Int) error(u, "BIND value must be an integer constant");
    ParamArg pa;
    try {
      pa = ParamArg::decode(u->src(0)->arg);
    } catch (const Error &e) {
      error(u->src(0), e.what());
    }
    if (!pa.name) error(u, "BIND of a PARAM without a name");
    auto [it, fresh] = vars_.emplace(*pa.name, c->i());
    if (!fresh && it->second != c->i())
      error(u, "variable '" + *pa.name + "' is bound to " + std::to_string(c->i()) + " here and to " +
                   std::to_string(it->second) + " elsewhere");
  }
}

void Evaluator::declareSlots() {
  bindVariables();
  for (const UOp *u : isKernelGraph(g_) ? topLevelNodes(g_.root) : toposort(g_.root)) {
    if (u->op != Op::PARAM || isScalarParam(u)) continue;
    ParamArg pa;
    try {
      pa = ParamArg::decode(u->arg);
    } catch (const Error &e) {
      error(u, e.what());
    }
    if (pa.slot < 0) continue; // internal buffers are refused when evaluated
    if (!isHoldable(u->dtype))
      error(u, "the interpreter does not support buffers of dtype " + std::string(dtypeName(u->dtype)));
    evaluateOnly(u->src(0));
    Dims shape = dims(u, u->src(0), 0);
    int64_t numel = 0;
    try {
      numel = numelOf(shape);
    } catch (const Error &e) {
      error(u, e.what());
    }
    SlotInfo info{pa.slot, u->dtype, numel, pa.devices};
    if (info.devices.empty()) info.devices.push_back("");
    int axis = -1;
    if (pa.axis) {
      if (*pa.axis < 0 || *pa.axis >= static_cast<int64_t>(shape.size()))
        error(u, "ParamArg.axis " + std::to_string(*pa.axis) + " is out of range for " + dimsStr(shape));
      axis = static_cast<int>(*pa.axis);
      int64_t n = static_cast<int64_t>(info.devices.size());
      if (shape[static_cast<size_t>(axis)] % n != 0) error(u, "sharded PARAM does not split evenly over its devices");
      info.numel = numel / n;
    }
    auto it = slots_.find(pa.slot);
    if (it == slots_.end()) {
      SlotState st{info, axis, {}, {}};
      for (size_t d = 0; d < info.devices.size(); ++d) {
        auto a = std::make_shared<Array>();
        a->words.assign(static_cast<size_t>(info.numel), 0); // all-zero bits: 0, false and +0.0 alike
        st.data.push_back(std::move(a));
      }
      slots_.emplace(pa.slot, std::move(st));
      continue;
    }
    const SlotInfo &o = it->second.info;
    if (o.dtype != info.dtype || o.numel != info.numel || o.devices != info.devices || it->second.axis != axis)
      error(u, "PARAM slot " + std::to_string(pa.slot) + " is declared twice with different dtype, size or devices");
  }
}

ValuePtr Evaluator::evaluateOnly(const UOp *u) {
  for (const UOp *n : toposort(u))
    if (!values_.find(n) || !values_.get(n)) evalNode(n);
  return values_.get(u);
}

void Evaluator::run() {
  std::vector<const UOp *> order = toposort(g_.root);
  for (auto &[slot, st] : slots_) st.initial.assign(st.data.begin(), st.data.end());
  // Release big values after their last use; shape operands stay (store targets re-read them).
  NodeMap<uint32_t> uses(0);
  for (const UOp *u : order)
    for (const UOp *s : u->src()) ++uses[s];
  for (const UOp *u : order) {
    evalNode(u);
    for (const UOp *s : u->src()) {
      if (--uses[s] != 0) continue;
      ValuePtr &v = values_[s];
      if (v && v->dtype != DType::WeakInt) v.reset();
    }
  }
}

void Evaluator::evalNode(const UOp *u) {
  try {
    values_[u] = eval(u);
  } catch (const Error &e) {
    std::string msg = e.what(), prefix = g_.describe(u) + ":";
    if (msg.rfind("node ", 0) == 0 || msg.rfind("new node ", 0) == 0) throw;
    throw Error(prefix + " " + msg);
  }
}

ValuePtr Evaluator::eval(const UOp *u) {
  switch (u->op) {
  case Op::CONST: return evalConst(u);
  case Op::PARAM: return evalParam(u);
  case Op::STACK: return evalStack(u);
  case Op::CUSTOM: case Op::CUSTOMI: // C code in the graph: only a C target can run it
    error(u, "the interpreter does not support " + std::string(opName(u->op)) + " nodes (their arg is C code)");
  case Op::RESHAPE: case Op::EXPAND: case Op::PAD: case Op::SHRINK: case Op::PERMUTE: case Op::FLIP:
  case Op::MULTI: return std::make_shared<Value>(movement(u, val(u, u->src(0)), false));
  case Op::REDUCE: return evalReduce(u);
  case Op::COPY: return evalCopy(u);
  case Op::MSELECT: return evalMselect(u);
  case Op::MSTACK: return evalMstack(u);
  case Op::ALLREDUCE: return evalAllreduce(u);
  case Op::STORE: evalStore(u); return nullptr;
  case Op::AFTER: return evalAfter(u);
  case Op::SINK: case Op::GROUP: return nullptr;
  case Op::BIND:
    if (u->nsrc != 2) error(u, "BIND needs a variable and a value");
    val(u, u->src(1));
    return values_.get(u->src(1));
  case Op::CONTIGUOUS: case Op::CONTIGUOUS_BACKWARD: case Op::DETACH:
    if (u->nsrc < 1) error(u, "missing source");
    val(u, u->src(0));
    return values_.get(u->src(0));
  default:
    if (isElementwise(u->op)) return evalElementwise(u);
    error(u, "the interpreter does not support " + std::string(opName(u->op)) + " nodes");
  }
}

ValuePtr Evaluator::evalConst(const UOp *u) {
  const Arg *a = u->arg;
  DType dt = u->dtype;
  if (!a) error(u, "CONST without a value");
  if (!isHoldable(dt))
    error(u, "the interpreter does not support CONST of dtype " + std::string(dtypeName(dt)));
  Word w = 0;
  bool invalid = false;
  switch (a->kind) {
  case ArgKind::Invalid: invalid = true; break;
  case ArgKind::Bool: w = intToWord(dt, a->b() ? 1 : 0); break;
  case ArgKind::Int: w = intToWord(dt, a->i()); break;
  case ArgKind::UInt: w = uintToWord(dt, a->u()); break;
  case ArgKind::Float: w = floatToWord(dt, a->f()); break;
  default: error(u, "the interpreter does not support this CONST value");
  }
  auto v = std::make_shared<Value>();
  v->dtype = dt;
  v->per.push_back(filled(1, w, invalid));
  return v;
}

ValuePtr Evaluator::evalParam(const UOp *u) {
  ParamArg pa;
  try {
    pa = ParamArg::decode(u->arg);
  } catch (const Error &e) {
    error(u, e.what());
  }
  auto v = std::make_shared<Value>();
  v->dtype = u->dtype;
  if (isScalarParam(u)) {
    if (!pa.name) error(u, "scalar PARAM without a name");
    if (!isInt(u->dtype)) error(u, "the interpreter only supports integer scalar variables");
    if (*pa.name == "_device_num") {
      if (!pa.vminVmax || pa.vminVmax->first != 0 || pa.vminVmax->second < 0 || pa.vminVmax->second > 4096)
        error(u, "_device_num needs vmin_vmax [0, ndev-1]");
      for (int64_t d = 0; d <= pa.vminVmax->second; ++d) v->per.push_back(filled(1, intToWord(u->dtype, d)));
      return v;
    }
    auto it = vars_.find(*pa.name);
    if (it == vars_.end())
      error(u, "variable '" + *pa.name + "' has no value (pass --var " + *pa.name + "=VALUE)");
    if (pa.vminVmax && (it->second < pa.vminVmax->first || it->second > pa.vminVmax->second))
      error(u, "value " + std::to_string(it->second) + " of variable '" + *pa.name + "' is outside its range [" +
                   std::to_string(pa.vminVmax->first) + ", " + std::to_string(pa.vminVmax->second) + "]");
    v->per.push_back(filled(1, intToWord(u->dtype, it->second)));
    return v;
  }
  if (pa.slot < 0) error(u, "the interpreter does not support internal buffer PARAMs (slot -1)");
  auto it = slots_.find(pa.slot);
  if (it == slots_.end()) error(u, "internal error: slot " + std::to_string(pa.slot) + " was not declared");
  SlotState &st = it->second;
  Dims shape = dims(u, u->src(0), 0);
  if (st.axis >= 0) shape[static_cast<size_t>(st.axis)] /= static_cast<int64_t>(st.data.size());
  if (numelOf(shape) != st.info.numel) error(u, "internal error: PARAM size changed");
  v->shape = shape;
  v->axis = st.axis;
  v->devices = st.info.devices;
  if (st.initial.size() != st.data.size()) error(u, "internal error: slot read before the evaluation started");
  v->per = st.initial;
  return v;
}

std::pair<ArrayPtr, Dims> Evaluator::localOperand(const UOp *u, const Value &s, size_t d, const Dims &outFull,
                                                  int outAxis, size_t nd, ArrayPtr &fullCache) const {
  Dims sFull = s.full();
  auto full = [&]() -> ArrayPtr {
    if (s.axis < 0) return s.on(d);
    if (!fullCache) fullCache = gatherShards(s);
    return fullCache;
  };
  if (outAxis < 0) return {full(), sFull};
  int srcAxis = outAxis - (static_cast<int>(outFull.size()) - static_cast<int>(sFull.size()));
  if (s.axis >= 0 && s.axis == srcAxis) {
    if (s.count() != nd) error(u, "a sharded operand lives on a different number of devices");
    return {s.per[d], s.shape};
  }
  ArrayPtr f = full();
  if (srcAxis < 0 || srcAxis >= static_cast<int>(sFull.size()) ||
      (sFull[static_cast<size_t>(srcAxis)] == 1 && outFull[static_cast<size_t>(outAxis)] != 1))
    return {f, sFull}; // broadcast along the sharded axis: every device needs all of it
  int64_t extent = sFull[static_cast<size_t>(srcAxis)];
  if (extent % static_cast<int64_t>(nd) != 0)
    error(u, "axis " + std::to_string(srcAxis) + " of " + dimsStr(sFull) + " does not split over " +
                 std::to_string(nd) + " devices");
  View v = contiguous(sFull);
  int64_t part = extent / static_cast<int64_t>(nd);
  v.offset = static_cast<int64_t>(d) * part * v.strides[static_cast<size_t>(srcAxis)];
  v.shape[static_cast<size_t>(srcAxis)] = part;
  return {gather(*f, v), v.shape};
}

ValuePtr Evaluator::evalElementwise(const UOp *u) {
  Op op = u->op;
  size_t arity = (op == Op::WHERE || op == Op::MULACC) ? 3 : isBinary(op) ? 2 : 1;
  if (u->nsrc != arity) error(u, "expected " + std::to_string(arity) + " sources");
  std::vector<const Value *> vs;
  for (const UOp *s : u->src()) vs.push_back(&val(u, s));
  DType in = op == Op::WHERE ? vs[1]->dtype : vs[0]->dtype, out = u->dtype;
  auto dn = [](DType d) { return std::string(dtypeName(d)); };
  // A weak operand (a Python literal) takes the dtype of the op's strong operands (the verifier allows
  // only its own kind: weakint among integers, weakfloat among floats), converted as a CAST would.
  std::vector<ValuePtr> converted;
  if (op != Op::CAST && op != Op::BITCAST) {
    size_t first = op == Op::WHERE ? 1 : 0;
    for (size_t j = first; j < vs.size(); ++j)
      if (vs[j]->dtype != DType::WeakInt && vs[j]->dtype != DType::WeakFloat) {
        in = vs[j]->dtype;
        break;
      }
    for (size_t j = first; j < vs.size(); ++j) {
      DType from = vs[j]->dtype;
      if (from == in || (from != DType::WeakInt && from != DType::WeakFloat)) continue;
      auto c = std::make_shared<Value>(*vs[j]);
      c->dtype = in;
      for (ArrayPtr &a : c->per) {
        auto conv = std::make_shared<Array>(*a);
        for (Word &w : conv->words) w = interp::castWord(from, in, w);
        a = std::move(conv);
      }
      converted.push_back(c);
      vs[j] = c.get();
    }
  }
  if (op == Op::CAST || op == Op::BITCAST) {
    if (!isHoldable(in) || !isHoldable(out))
      error(u, "the interpreter does not support " + std::string(opName(op)) + " from " + dn(in) + " to " + dn(out));
  } else {
    if (!aluSupported(op, in)) error(u, "the interpreter does not support " + std::string(opName(op)) + " on " + dn(in));
    for (size_t j = op == Op::WHERE ? 1 : 0; j < vs.size(); ++j)
      if (vs[j]->dtype != in) error(u, "operands of dtypes " + dn(in) + " and " + dn(vs[j]->dtype));
    if (op == Op::WHERE && vs[0]->dtype != DType::Bool) error(u, "WHERE condition must be bool");
    if (isComparison(op) ? out != DType::Bool : out != in) error(u, "result dtype " + dn(out) + " does not fit its operands");
  }
  size_t nd = commonCount(u, vs);
  auto r = std::make_shared<Value>();
  r->dtype = out;
  r->devices = devicesFor(vs, nd);
  if (op == Op::BITCAST && dtypeSize(in) != dtypeSize(out)) {
    if (vs[0]->axis >= 0) error(u, "BITCAST between item sizes of a sharded value is not supported");
    for (size_t d = 0; d < nd; ++d) r->per.push_back(bitcastResize(*vs[0]->on(d), vs[0]->shape, in, out, r->shape));
    return r;
  }
  std::vector<Dims> fulls;
  for (const Value *v : vs) fulls.push_back(v->full());
  Dims outFull = broadcastShape(fulls);
  int axis = alignedAxis(vs, outFull.size(), 0);
  Dims outLocal = outFull;
  if (axis >= 0) {
    if (outFull[static_cast<size_t>(axis)] % static_cast<int64_t>(nd) != 0) error(u, "sharded axis does not split evenly");
    outLocal[static_cast<size_t>(axis)] /= static_cast<int64_t>(nd);
  }
  r->shape = outLocal;
  r->axis = axis;
  std::vector<ArrayPtr> caches(vs.size());
  for (size_t d = 0; d < nd; ++d) {
    std::vector<ArrayPtr> keep;
    std::vector<Operand> ops;
    for (size_t j = 0; j < vs.size(); ++j) {
      auto [arr, shp] = localOperand(u, *vs[j], d, outFull, axis, nd, caches[j]);
      ops.push_back({arr.get(), broadcastView(shp, outLocal)});
      keep.push_back(std::move(arr));
    }
    r->per.push_back(elementwise(op, out, in, ops, outLocal));
  }
  return r;
}

ValuePtr Evaluator::evalReduce(const UOp *u) {
  const Arg *a = u->arg;
  if (u->nsrc != 1 || !a || a->kind != ArgKind::Tuple || a->count != 2 || !a->elems()[0] ||
      a->elems()[0]->kind != ArgKind::OpName || !a->elems()[1] || a->elems()[1]->kind != ArgKind::Int)
    error(u, "REDUCE needs one source and arg [op, number of axes]");
  Op rop = a->elems()[0]->op();
  if (!isReduceOp(rop)) error(u, "'" + std::string(opName(rop)) + "' is not a reduce op");
  const Value &x = val(u, u->src(0));
  int64_t k = a->elems()[1]->i();
  if (k < 0 || k > static_cast<int64_t>(x.shape.size()))
    error(u, "cannot reduce " + std::to_string(k) + " axes of " + dimsStr(x.full()));
  if (!isHoldable(x.dtype))
    error(u, "the interpreter does not support REDUCE on " + std::string(dtypeName(x.dtype)));
  if (u->dtype != x.dtype) error(u, "REDUCE result dtype differs from its source");
  auto r = std::make_shared<Value>();
  r->dtype = x.dtype;
  r->devices = x.devices;
  r->shape.assign(x.shape.begin() + k, x.shape.end());
  size_t kk = static_cast<size_t>(k);
  std::vector<ArrayPtr> parts;
  for (size_t d = 0; d < x.count(); ++d) parts.push_back(reduceFront(*x.per[d], x.shape, kk, rop, x.dtype));
  if (x.axis >= 0 && x.axis < k) {
    // Reduce over the sharded axis: every device reduces its shard, then an allreduce combines them.
    ArrayPtr all = reduceAcross(parts, rop, x.dtype);
    r->per.assign(x.count(), all);
    r->axis = -1;
  } else {
    r->per = std::move(parts);
    r->axis = x.axis >= 0 ? x.axis - static_cast<int>(k) : -1;
  }
  return r;
}

ValuePtr Evaluator::evalStack(const UOp *u) {
  if (u->nsrc == 0) return nullptr; // the empty shape: only ever a shape operand
  std::vector<const Value *> vs;
  for (const UOp *s : u->src()) {
    vs.push_back(&val(u, s));
    if (vs.back()->dtype != u->dtype) error(u, "STACK source of dtype " + std::string(dtypeName(vs.back()->dtype)));
  }
  size_t nd = commonCount(u, vs);
  std::vector<Dims> fulls;
  for (const Value *v : vs) fulls.push_back(v->full());
  Dims common = broadcastShape(fulls);
  int axis = alignedAxis(vs, common.size(), 1); // STACK adds a leading axis
  int srcAxis = axis - 1;
  Dims local = common;
  if (srcAxis >= 0) {
    if (common[static_cast<size_t>(srcAxis)] % static_cast<int64_t>(nd) != 0) error(u, "sharded axis does not split evenly");
    local[static_cast<size_t>(srcAxis)] /= static_cast<int64_t>(nd);
  }
  auto r = std::make_shared<Value>();
  r->dtype = u->dtype;
  r->devices = devicesFor(vs, nd);
  r->axis = axis;
  r->shape = local;
  r->shape.insert(r->shape.begin(), static_cast<int64_t>(vs.size()));
  Dims pieceShape = local;
  pieceShape.insert(pieceShape.begin(), 1);
  std::vector<ArrayPtr> caches(vs.size());
  for (size_t d = 0; d < nd; ++d) {
    std::vector<ArrayPtr> pieces;
    for (size_t j = 0; j < vs.size(); ++j) {
      auto [arr, shp] = localOperand(u, *vs[j], d, common, srcAxis, nd, caches[j]);
      pieces.push_back(gather(*arr, broadcastView(shp, local)));
    }
    r->per.push_back(concat(pieces, pieceShape, 0));
  }
  return r;
}

ArrayPtr gatherShards(const Value &v) {
  if (v.axis < 0) return v.per.at(0);
  return concat(v.per, v.shape, static_cast<size_t>(v.axis));
}

} // namespace interp

std::vector<SlotInfo> bufferSlots(const Graph &g, const std::map<std::string, int64_t> &vars) {
  interp::Evaluator ev(g, vars);
  ev.declareSlots();
  std::vector<SlotInfo> out;
  for (auto &[slot, st] : ev.slots()) out.push_back(st.info);
  return out;
}

std::vector<std::string> graphVariables(const Graph &g) {
  std::vector<std::string> names;
  for (const UOp *u : toposort(g.root)) {
    if (u->op != Op::PARAM || !interp::isScalarParam(u)) continue;
    ParamArg pa = ParamArg::decode(u->arg);
    if (pa.slot >= 0 && pa.name && std::find(names.begin(), names.end(), *pa.name) == names.end())
      names.push_back(*pa.name);
  }
  return names;
}

std::map<std::string, std::string> graphVariableAliases(const Graph &g) {
  std::vector<std::string> names = graphVariables(g);
  std::map<std::string, std::string> aliases;
  for (const UOp *u : toposort(g.root)) {
    if (u->op != Op::PARAM || !interp::isScalarParam(u)) continue;
    ParamArg pa = ParamArg::decode(u->arg);
    if (pa.slot < 0 || !pa.name) continue;
    std::string positional = "p" + std::to_string(pa.slot);
    if (positional != *pa.name && std::find(names.begin(), names.end(), positional) == names.end())
      aliases.emplace(positional, *pa.name);
  }
  return aliases;
}

InterpOutputs interpret(const Graph &g, const InterpInputs &inputs) {
  interp::Evaluator ev(g, inputs.vars);
  ev.declareSlots();
  auto &slots = ev.slots();
  for (const auto &[slot, bytes] : inputs.buffers) {
    auto it = slots.find(slot);
    if (it == slots.end()) fail("slot " + std::to_string(slot) + " is not a buffer of the graph");
    interp::SlotState &st = it->second;
    if (bytes.size() != st.data.size())
      fail("slot " + std::to_string(slot) + " lives on " + std::to_string(st.data.size()) + " device(s) but " +
           std::to_string(bytes.size()) + " input(s) were given");
    size_t item = dtypeSize(st.info.dtype);
    for (size_t d = 0; d < bytes.size(); ++d) {
      size_t want = static_cast<size_t>(st.info.numel) * item;
      if (bytes[d].size() != want)
        fail("input of slot " + std::to_string(slot) + " device " + std::to_string(d) + " has " +
             std::to_string(bytes[d].size()) + " bytes, expected " + std::to_string(want) + " (" +
             std::to_string(st.info.numel) + " x " + std::string(dtypeName(st.info.dtype)) + ")");
      auto *p = reinterpret_cast<const unsigned char *>(bytes[d].data());
      for (size_t i = 0; i < static_cast<size_t>(st.info.numel); ++i)
        st.data[d]->words[i] = interp::loadWord(st.info.dtype, p + i * item);
    }
  }
  if (interp::isKernelGraph(g)) ev.runKernels();
  else ev.run();
  InterpOutputs out;
  for (auto &[slot, st] : slots) {
    size_t item = dtypeSize(st.info.dtype);
    for (const auto &a : st.data) {
      std::string bytes(a->words.size() * item, '\0');
      auto *p = reinterpret_cast<unsigned char *>(bytes.data());
      for (size_t i = 0; i < a->words.size(); ++i) interp::storeWord(st.info.dtype, a->words[i], p + i * item);
      out[slot].push_back(std::move(bytes));
    }
  }
  return out;
}

} // namespace uopc
