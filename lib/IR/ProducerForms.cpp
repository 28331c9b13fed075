//===- ProducerForms.cpp - read what tinygrad 0.14.0 writes as format v1 --===//
// See ProducerForms.h for the forms. One pass over the Context's nodes in creation order (sources are
// always created before their users, so that order is topological): each node is rebuilt on its
// rewritten sources and the rules below are applied to the rebuilt node. Weak subexpressions are
// retyped with an explicit stack, so nothing recurses on graph depth.
#include "IR/ProducerForms.h"

#include "IR/Error.h"
#include "IR/Records.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace uopc {

const UOp *deviceNumParam(Context &ctx, int64_t ndev) {
  ParamArg p;
  p.slot = -1;
  p.dtype = DType::WeakInt;
  p.vminVmax = {0, ndev - 1};
  p.multipleOf = 1;
  p.name = "_device_num";
  p.addrspace = AddrSpace::ALU;
  return ctx.make(Op::PARAM, DType::WeakInt, {ctx.make(Op::STACK, DType::Void)}, p.encode(ctx));
}

namespace {

bool isWeak(DType d) { return d == DType::WeakInt || d == DType::WeakFloat; }

/// RANGE(CONST n) with arg [..., AxisType DEVICE].
bool isDeviceRange(const UOp *u) {
  if (u->op != Op::RANGE || !u->arg || u->arg->kind != ArgKind::Tuple || u->arg->count == 0) return false;
  const Arg *last = u->arg->elems().back();
  return last && last->kind == ArgKind::AxisType && last->axisType() == AxisType::DEVICE;
}

/// A scalar symbolic variable: PARAM/BUFFER with a ParamArg in the ALU address space and a value range.
bool isVariable(const UOp *u) {
  if ((u->op != Op::PARAM && u->op != Op::BUFFER) || !u->arg || u->arg->kind != ArgKind::Record ||
      u->arg->str() != "ParamArg")
    return false;
  const Arg *vr = u->arg->field("vmin_vmax");
  const Arg *as = u->arg->field("addrspace");
  return vr && vr->kind == ArgKind::Tuple && as && as->kind == ArgKind::AddrSpace && as->addrSpace() == AddrSpace::ALU;
}

class Normalizer {
public:
  explicit Normalizer(Graph &g) : g_(g), c_(*g.ctx) {}

  void run() {
    size_t n = c_.numNodes();
    map_.assign(n, nullptr);
    std::vector<const UOp *> srcs;
    for (size_t i = 0; i < n; ++i) {
      const UOp *u = c_.node(i);
      srcs.clear();
      bool changed = false;
      for (const UOp *s : u->src()) {
        const UOp *m = s->index < n ? map_[s->index] : s;
        changed |= m != s;
        srcs.push_back(m);
      }
      const UOp *r = changed ? c_.make(u->op, u->dtype, srcs, u->arg, u->tag) : u;
      r = apply(u, r);
      if (r != u && g_.inputIds.get(r) == UINT32_MAX && g_.inputIds.get(u) != UINT32_MAX)
        g_.inputIds[r] = g_.inputIds.get(u);
      map_[i] = r;
    }
    if (g_.root && g_.root->index < n) g_.root = map_[g_.root->index];
  }

private:
  Graph &g_;
  Context &c_;
  std::vector<const UOp *> map_;
  std::unordered_map<uint64_t, const UOp *> retyped_; // (node index, dtype) -> the node computed at dtype

  [[noreturn]] void error(const UOp *orig, const std::string &msg) const { fail(g_.describe(orig) + ": " + msg); }

  const UOp *cast(const UOp *x, DType dt) { return c_.make(Op::CAST, dt, {x}, c_.argDType(dt)); }

  /// A weak CONST's value at dt (tinygrad's UOp.const(val, dt): the value stays mathematical).
  const UOp *constAt(const UOp *k, DType dt) {
    const Arg *a = k->arg;
    if (!a || a->kind == ArgKind::Invalid) return c_.make(Op::CONST, dt, {}, a);
    if (dt == DType::Bool) {
      bool v = a->kind == ArgKind::Float ? a->f() != 0.0 : a->kind == ArgKind::Bool ? a->b() : a->kind == ArgKind::BigInt ? true : a->i() != 0;
      return c_.constBool(v);
    }
    if (isFloat(dt)) {
      switch (a->kind) {
      case ArgKind::Float: return c_.make(Op::CONST, dt, {}, a);
      case ArgKind::Int: return c_.constFloat(dt, static_cast<double>(a->i()));
      case ArgKind::UInt: return c_.constFloat(dt, static_cast<double>(a->u()));
      case ArgKind::Bool: return c_.constFloat(dt, a->b() ? 1.0 : 0.0);
      case ArgKind::BigInt: return c_.constFloat(dt, std::strtod(std::string(a->str()).c_str(), nullptr));
      default: return c_.make(Op::CONST, dt, {}, a);
      }
    }
    if (a->kind == ArgKind::Float) {
      double v = a->f();
      if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return c_.make(Op::CONST, dt, {}, a); // the verifier says why
      return c_.constInt(dt, static_cast<int64_t>(std::trunc(v)));
    }
    if (a->kind == ArgKind::Bool) return c_.constInt(dt, a->b() ? 1 : 0);
    return c_.make(Op::CONST, dt, {}, a);
  }

  /// The weakfloat expression x computed at the float dtype `at` (explicit stack: post-order).
  const UOp *retype(const UOp *x, DType at) {
    auto key = [at](const UOp *u) { return (static_cast<uint64_t>(u->index) << 8) | static_cast<uint8_t>(at); };
    std::vector<std::pair<const UOp *, bool>> stack{{x, false}};
    auto retypesSrc = [](const UOp *u, size_t k) {
      if (!isWeak(u->src(k)->dtype)) return false;
      if (u->op == Op::WHERE) return k > 0;
      if (isMovement(u->op)) return k == 0;
      return isALU(u->op) || u->op == Op::CAST;
    };
    auto rebuilt = [&](const UOp *u) -> bool { return u->op == Op::CONST || isALU(u->op) || isMovement(u->op) || u->op == Op::CAST; };
    while (!stack.empty()) {
      auto [u, done] = stack.back();
      stack.pop_back();
      if (retyped_.count(key(u))) continue;
      if (!rebuilt(u) || u->op == Op::CONST) {
        retyped_[key(u)] = u->op == Op::CONST ? constAt(u, at) : cast(u, at);
        continue;
      }
      if (!done) {
        stack.push_back({u, true});
        for (size_t k = 0; k < u->nsrc; ++k)
          if (retypesSrc(u, k) && u->op != Op::CAST) stack.push_back({u->src(k), false});
        continue;
      }
      if (u->op == Op::CAST) { // a weakfloat CAST of x: the cast to `at` itself (of a weak CONST: the CONST)
        const UOp *x = u->src(0);
        retyped_[key(u)] = x->op == Op::CONST && isWeak(x->dtype) ? constAt(x, at) : cast(x, at);
        continue;
      }
      std::vector<const UOp *> s(u->src().begin(), u->src().end());
      for (size_t k = 0; k < s.size(); ++k)
        if (retypesSrc(u, k)) s[k] = retyped_.at(key(u->src(k)));
      DType dt = isComparison(u->op) ? u->dtype : at;
      retyped_[key(u)] = c_.make(u->op, dt, s, u->arg, u->tag);
    }
    return retyped_.at(key(x));
  }

  /// s (weak) as a value of the strong dtype dt.
  const UOp *commit(const UOp *s, DType dt) {
    if (!isWeak(s->dtype) || isWeak(dt) || dt == DType::Void) return s;
    if (s->op == Op::CONST) return constAt(s, dt);
    // a weak value that is no constant keeps its kind: weakint among floats (weakfloat among ints) has no one
    // meaning, and the verifier says so
    if ((s->dtype == DType::WeakInt) != (isInt(dt) || dt == DType::Bool)) return s;
    if (s->dtype == DType::WeakFloat && (isALU(s->op) || isMovement(s->op) || s->op == Op::CAST)) {
      DType at = dt == DType::Float64 ? DType::Float64 : DType::Float32; // tinygrad: least_upper(dt, float32)
      const UOp *r = retype(s, at);
      return at == dt ? r : cast(r, dt);
    }
    return cast(s, dt);
  }

  const UOp *apply(const UOp *orig, const UOp *u) {
    // the DEVICE range: `_device_num`
    if (isDeviceRange(u)) {
      if (u->nsrc == 0) error(orig, "a DEVICE range needs its device count as its source");
      const UOp *n = u->src(0);
      if (n->op != Op::CONST || !n->arg || n->arg->kind != ArgKind::Int || n->arg->i() < 1)
        error(orig, "a DEVICE range needs a constant device count (CONST >= 1)");
      return deviceNumParam(c_, n->arg->i());
    }
    // UNSHARD(x, r) arg [axis]  ->  MULTI(x) arg axis
    if (u->op == Op::MULTI && (u->nsrc > 1 || (u->arg && u->arg->kind == ArgKind::Tuple))) {
      if (!u->arg || u->arg->kind != ArgKind::Tuple || u->arg->count != 1 || !u->arg->elems()[0] ||
          u->arg->elems()[0]->kind != ArgKind::Int)
        error(orig, "UNSHARD must have one sharded axis as its arg ([axis]); uopc shards along one axis only");
      if (u->nsrc != 2)
        error(orig, "UNSHARD with arg [axis] needs its shard and one DEVICE range, got " + std::to_string(u->nsrc) +
                        " sources");
      const UOp *r = u->src(1);
      const Arg *ra = r->arg;
      bool isDeviceNum = r->op == Op::PARAM && ra && ra->kind == ArgKind::Record && ra->field("name") &&
                         ra->field("name")->kind == ArgKind::String && ra->field("name")->str() == "_device_num";
      if (!isDeviceNum) error(orig, "UNSHARD's second source must be a RANGE of AxisType DEVICE");
      return c_.make(Op::MULTI, u->dtype, {u->src(0)}, c_.argInt(u->arg->elems()[0]->i()), u->tag);
    }
    // a BUFFER variable (0.14.0's Variable) is the PARAM it is inside a function
    if (u->op == Op::BUFFER && isVariable(u)) return c_.make(Op::PARAM, u->dtype, u->src(), u->arg, u->tag);
    // AFTER(var, STORE(var, CONST)) -> BIND(var, CONST)
    if (u->op == Op::AFTER && u->nsrc == 2 && isVariable(u->src(0)) && u->src(1)->op == Op::STORE &&
        u->src(1)->nsrc == 2 && u->src(1)->src(0) == u->src(0) && u->src(1)->src(1)->op == Op::CONST)
      return c_.make(Op::BIND, u->src(0)->dtype, {u->src(0), u->src(1)->src(1)});
    // weak operands commit to the strong dtype
    if (isALU(u->op)) {
      size_t start = u->op == Op::WHERE ? 1 : 0;
      bool anyWeak = false;
      DType dt = DType::Void;
      for (size_t k = start; k < u->nsrc; ++k) {
        DType d = u->src(k)->dtype;
        if (isWeak(d)) anyWeak = true;
        else if (dt == DType::Void) dt = d;
      }
      if (!anyWeak) return u;
      if (dt == DType::Void) {
        if (!isWeak(u->dtype) && !isComparison(u->op)) dt = u->dtype;
        else if (isComparison(u->op) && u->src(start)->dtype == DType::WeakFloat) dt = DType::Float32;
        else return u;
      }
      std::vector<const UOp *> s(u->src().begin(), u->src().end());
      for (size_t k = start; k < s.size(); ++k) s[k] = commit(s[k], dt);
      DType out = isWeak(u->dtype) ? dt : u->dtype;
      return c_.make(u->op, out, s, u->arg, u->tag);
    }
    if (u->op == Op::CAST && u->nsrc == 1 && !isWeak(u->dtype) && isWeak(u->src(0)->dtype)) {
      const UOp *x = u->src(0);
      if (x->op == Op::CONST) return constAt(x, u->dtype);
      if (x->dtype == DType::WeakFloat && isFloat(u->dtype)) {
        const UOp *r = commit(x, u->dtype == DType::Float64 ? DType::Float64 : DType::Float32);
        return r->dtype == u->dtype ? r : cast(r, u->dtype);
      }
      if (x->dtype == DType::WeakFloat) return cast(commit(x, DType::Float32), u->dtype);
      return u;
    }
    if (u->op == Op::STORE && u->nsrc >= 2 && !isWeak(u->src(0)->dtype) && u->src(0)->dtype != DType::Void &&
        isWeak(u->src(1)->dtype)) {
      std::vector<const UOp *> s(u->src().begin(), u->src().end());
      s[1] = commit(s[1], u->src(0)->dtype);
      return c_.make(u->op, u->dtype, s, u->arg, u->tag);
    }
    return u;
  }
};

} // namespace

void normalizeProducerForms(Graph &g, const std::string &where) {
  if (!g.root) return;
  try {
    Normalizer(g).run();
  } catch (const Error &e) {
    if (where.empty()) throw;
    fail(where + ": " + e.what());
  }
}

} // namespace uopc
