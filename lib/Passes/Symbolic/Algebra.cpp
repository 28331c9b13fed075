//===- Algebra.cpp - node builders and index algebra shared by the rule files ===//
#include "IR/Error.h"
#include "IR/ScalarOps.h"
#include "Passes/Symbolic/Internal.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <unordered_set>

namespace uopc::sym {

//===----------------------------------------------------------------------===//
// Constants and node builders
//===----------------------------------------------------------------------===//

std::optional<int64_t> intConst(const UOp *u) {
  auto b = constBound(u);
  if (!b || !fitsInt64(*b)) return std::nullopt;
  return int64_t(*b);
}

bool fitsDType(DType dt, Bound v) {
  VRange r = dtypeRange(dt);
  return v >= r.lo && v <= r.hi && (dt != DType::WeakInt || fitsInt64(v));
}

const UOp *mkConst(Context &ctx, DType dt, int64_t v) {
  switch (dtypeKind(dt)) {
  case DTypeKind::Bool: return ctx.constBool(v != 0);
  case DTypeKind::Float: return ctx.constFloat(dt, double(v));
  case DTypeKind::UInt: return ctx.make(Op::CONST, dt, {}, ctx.argUInt(interp::wrapInt(dt, uint64_t(v))));
  default:
    if (dt == DType::WeakInt || dtypeSize(dt) > 8) return ctx.constInt(dt, v);
    return ctx.constInt(dt, int64_t(interp::wrapInt(dt, uint64_t(v))));
  }
}

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == -1) return int64_t(0 - uint64_t(a)); // INT64_MIN // -1 wraps like the evaluator
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floorMod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t m = a % b;
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
int64_t gcd64(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? 0 - uint64_t(a) : uint64_t(a), y = b < 0 ? 0 - uint64_t(b) : uint64_t(b);
  return int64_t(std::gcd(x, y));
}

V V::k(int64_t v) const { return {mkConst(*c, u->dtype, v), *c}; }
V V::kBool(bool v) const { return {c->constBool(v), *c}; }
V V::with(std::initializer_list<const UOp *> srcs) const {
  return {c->withSrc(u, std::span<const UOp *const>(srcs.begin(), srcs.size())), *c};
}
V V::alu(Op op, V b) const { return {c->make(op, isComparison(op) ? DType::Bool : u->dtype, {u, b.u}), *c}; }
V V::alu(Op op) const { return {c->make(op, u->dtype, {u}), *c}; }
V V::lnot() const {
  V b = u->dtype == DType::Bool ? *this : cast(DType::Bool);
  return b.ne(kBool(true));
}
V V::where(V t, V f) const { return {c->make(Op::WHERE, t.u->dtype, {u, t.u, f.u}), *c}; }
V V::cast(DType dt) const {
  if (dt == u->dtype) return *this;
  return {c->make(Op::CAST, dt, {u}, c->argDType(dt)), *c};
}
V V::valid(V cond) const { return cond.where(*this, wrap(makeInvalid(*c, u->dtype))); }

V operator+(V a, V b) { return a.alu(Op::ADD, b); }
V operator+(V a, int64_t b) { return a + a.k(b); }
V operator*(V a, V b) { return a.alu(Op::MUL, b); }
V operator*(V a, int64_t b) { return a * a.k(b); }
V operator-(V a) { return a.dt() == DType::Bool ? a.lnot() : a * -1; }
V operator-(V a, V b) { return a + (-b); }
V operator-(V a, int64_t b) { return a + a.k(int64_t(0 - uint64_t(b))); }
V operator/(V a, V b) { return a.alu(Op::FLOORDIV, b); }
V operator/(V a, int64_t b) { return a / a.k(b); }
V operator%(V a, V b) { return a.alu(Op::FLOORMOD, b); }
V operator%(V a, int64_t b) { return a % a.k(b); }
V operator<(V a, V b) { return a.alu(Op::CMPLT, b); }
V operator<(V a, int64_t b) { return a < a.k(b); }
V operator&(V a, V b) { return a.alu(Op::AND, b); }
V operator|(V a, V b) { return a.alu(Op::OR, b); }
V operator^(V a, V b) { return a.alu(Op::XOR, b); }
V operator>>(V a, int64_t b) { return a.alu(Op::SHR, a.k(b)); }

SymbolicCtx &symCtx(Match &m) {
  SymbolicCtx &c = m.user<SymbolicCtx>();
  if (c.magic != SymbolicCtx::kMagic) fail("symbolic rules need a SymbolicCtx as the rewrite's user context");
  return c;
}

Pat anyInt(std::string_view name) {
  return var(name).dtype({DType::WeakInt, DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Int32,
                          DType::UInt32, DType::Int64, DType::UInt64});
}
Pat intOrBool(std::string_view name) {
  return var(name).dtype({DType::WeakInt, DType::Bool, DType::Int8, DType::UInt8, DType::Int16, DType::UInt16,
                          DType::Int32, DType::UInt32, DType::Int64, DType::UInt64});
}
Pat invalidPat(std::string_view name) {
  return pat(Op::CONST).argIf([](const Arg *a) { return a && a->kind == ArgKind::Invalid; }).named(name);
}

Rule srule(const Pat &p, SymFn fn, std::source_location loc) {
  return rule(
      p,
      [fn](Match &m) -> const UOp * {
        SymbolicCtx &c = symCtx(m);
        if (c.allow && !c.allow(m.root())) return nullptr;
        S s(m, c);
        return fn(s).u;
      },
      loc);
}

//===----------------------------------------------------------------------===//
// Index algebra
//===----------------------------------------------------------------------===//

std::vector<const UOp *> splitUOp(const UOp *u, Op sep) {
  std::vector<const UOp *> out, stack{u};
  while (!stack.empty()) {
    const UOp *x = stack.back();
    stack.pop_back();
    if (x->op == sep && x->nsrc == 2) {
      stack.push_back(x->src(1));
      stack.push_back(x->src(0));
    } else {
      out.push_back(x);
    }
  }
  return out;
}

std::pair<const UOp *, int64_t> popConst(const UOp *u, Op op) {
  if (u->op == op && u->nsrc == 2)
    if (auto c = intConst(u->src(1))) return {u->src(0), *c};
  return {u, op == Op::MUL ? 1 : 0};
}

namespace {
std::optional<int64_t> multipleOf(const UOp *u) {
  if (u->op != Op::PARAM || !u->arg) return std::nullopt;
  const Arg *m = u->arg->field("multiple_of");
  if (!m || m->kind != ArgKind::Int) return std::nullopt;
  return m->i();
}
} // namespace

int64_t constFactor(const UOp *u) {
  if (auto c = intConst(u)) return *c;
  if (u->op == Op::ADD || u->op == Op::STACK) { // gcd of the terms (an ADD chain is split, not recursed)
    std::vector<const UOp *> terms = splitUOp(u, Op::ADD);
    if (u->op == Op::STACK) terms.assign(u->src().begin(), u->src().end());
    int64_t g = 0;
    for (const UOp *t : terms) g = gcd64(g, constFactor(t));
    return g;
  }
  if (u->op == Op::MUL && u->nsrc == 2) {
    if (auto c = intConst(u->src(0))) return *c;
    if (auto c = intConst(u->src(1))) return *c;
    return 1;
  }
  if (auto m = multipleOf(u)) return *m;
  return 1;
}

namespace {
const UOp *dividesRec(Context &ctx, const UOp *u, int64_t v, int depth) {
  if (v == 1) return u;
  if (v == 0 || depth > 48) return nullptr;
  if (auto c = intConst(u)) return *c % v == 0 ? mkConst(ctx, u->dtype, *c / v) : nullptr;
  switch (u->op) {
  case Op::ADD: {
    std::vector<const UOp *> terms = splitUOp(u, Op::ADD);
    for (const UOp *&t : terms)
      if (!(t = dividesRec(ctx, t, v, depth + 1))) return nullptr;
    return usum(ctx, terms);
  }
  case Op::MUL:
    if (u->nsrc != 2) return nullptr;
    if (const UOp *d0 = dividesRec(ctx, u->src(0), v, depth + 1)) return ctx.make(Op::MUL, u->dtype, {d0, u->src(1)});
    if (const UOp *d1 = dividesRec(ctx, u->src(1), v, depth + 1)) return ctx.make(Op::MUL, u->dtype, {u->src(0), d1});
    return nullptr;
  case Op::PARAM:
    if (auto m = multipleOf(u); m && *m % v == 0) return (V(u, ctx) / v).u;
    return nullptr;
  default: return nullptr;
  }
}
} // namespace

const UOp *divides(Context &ctx, const UOp *u, int64_t v) { return dividesRec(ctx, u, v, 0); }

const UOp *divideExact(Context &ctx, const UOp *u, const UOp *v) {
  if (u == v) return mkConst(ctx, u->dtype, 1);
  if (auto c = intConst(v)) return divides(ctx, u, *c);
  if (u->op == Op::ADD) {
    std::vector<const UOp *> terms = splitUOp(u, Op::ADD);
    for (const UOp *&t : terms) {
      if (t->op == Op::ADD) return nullptr; // not reached: split leaves are not ADDs
      if (!(t = divideExact(ctx, t, v))) return nullptr;
    }
    return usum(ctx, terms);
  }
  if (u->op == Op::MUL) {
    auto [fac, cst] = popConst(u, Op::MUL);
    auto [dfac, dcst] = popConst(v, Op::MUL);
    if (dcst == 0 || cst % dcst != 0) return nullptr;
    std::vector<const UOp *> have = splitUOp(fac, Op::MUL);
    for (const UOp *d : splitUOp(dfac, Op::MUL)) {
      auto it = std::find(have.begin(), have.end(), d);
      if (it == have.end()) return nullptr;
      have.erase(it);
    }
    const UOp *r = mkConst(ctx, u->dtype, cst / dcst);
    for (const UOp *f : have) r = ctx.make(Op::MUL, u->dtype, {r, f});
    return r;
  }
  return nullptr;
}

const UOp *gcdOf(Context &ctx, std::span<const UOp *const> uops) {
  if (uops.empty()) return nullptr;
  std::vector<const UOp *> common;
  int64_t g = 0;
  for (size_t i = 0; i < uops.size(); ++i) {
    int64_t f = constFactor(uops[i]);
    if (f == 0) return nullptr;
    const UOp *term = divides(ctx, uops[i], f);
    if (!term) return nullptr;
    g = gcd64(g, f);
    std::vector<const UOp *> factors = splitUOp(term, Op::MUL);
    if (i == 0) {
      common = factors;
      continue;
    }
    std::vector<const UOp *> kept; // multiset intersection, in the first term's order
    for (const UOp *c : common)
      if (auto it = std::find(factors.begin(), factors.end(), c); it != factors.end()) {
        kept.push_back(c);
        factors.erase(it);
      }
    common = std::move(kept);
  }
  const UOp *k = mkConst(ctx, uops[0]->dtype, g);
  const UOp *r = nullptr;
  for (const UOp *c : common)
    if (c->op != Op::CONST) r = r ? ctx.make(Op::MUL, r->dtype, {r, c}) : c;
  return r ? ctx.make(Op::MUL, r->dtype, {r, k}) : k;
}

namespace {
/// Left fold of terms with op (bool: boolOp).
const UOp *fold(Context &ctx, std::span<const UOp *const> terms, Op op, Op boolOp) {
  if (terms.empty()) return nullptr;
  const UOp *r = terms[0];
  const Op o = terms[0]->dtype == DType::Bool ? boolOp : op;
  for (size_t i = 1; i < terms.size(); ++i) r = ctx.make(o, r->dtype, {r, terms[i]});
  return r;
}
} // namespace

const UOp *usum(Context &ctx, std::span<const UOp *const> terms) { return fold(ctx, terms, Op::ADD, Op::OR); }
const UOp *uprod(Context &ctx, std::span<const UOp *const> terms) { return fold(ctx, terms, Op::MUL, Op::AND); }

bool reaches(const UOp *hay, const UOp *needle, size_t budget, bool whenUnsure) {
  std::vector<const UOp *> stack{hay};
  std::unordered_set<const UOp *> seen{hay};
  while (!stack.empty()) {
    const UOp *x = stack.back();
    stack.pop_back();
    if (x == needle) return true;
    if (seen.size() > budget) return whenUnsure;
    for (const UOp *s : x->src())
      if (seen.insert(s).second) stack.push_back(s);
  }
  return false;
}

std::vector<const UOp *> localToposort(const UOp *root) {
  std::vector<const UOp *> order;
  std::vector<std::pair<const UOp *, uint32_t>> stack{{root, 0}};
  std::unordered_set<const UOp *> seen{root};
  while (!stack.empty()) {
    auto &[u, i] = stack.back();
    if (i < u->nsrc) {
      const UOp *s = u->src(i++);
      if (seen.insert(s).second) stack.push_back({s, 0});
      continue;
    }
    order.push_back(u);
    stack.pop_back();
  }
  return order;
}

const UOp *replaceNodes(Context &ctx, const UOp *root, const std::unordered_map<const UOp *, const UOp *> &map) {
  std::unordered_map<const UOp *, const UOp *> out;
  std::vector<const UOp *> srcs;
  for (const UOp *u : localToposort(root)) {
    if (auto it = map.find(u); it != map.end()) {
      out[u] = it->second;
      continue;
    }
    srcs.clear();
    for (const UOp *s : u->src()) srcs.push_back(out.at(s));
    out[u] = ctx.withSrc(u, srcs);
  }
  return out.at(root);
}

bool mayContain(const UOp *hay, Op op, size_t budget) {
  std::vector<const UOp *> stack{hay};
  std::unordered_set<const UOp *> seen{hay};
  while (!stack.empty()) {
    const UOp *x = stack.back();
    stack.pop_back();
    if (x->op == op || seen.size() > budget) return true;
    for (const UOp *s : x->src())
      if (seen.insert(s).second) stack.push_back(s);
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Canonical order
//===----------------------------------------------------------------------===//

namespace {
template <typename T> int cmp3(const T &a, const T &b) { return a < b ? -1 : b < a ? 1 : 0; }

int compareArg(const Arg *a, const Arg *b) {
  if (a == b) return 0;
  if (!a || !b) return a ? 1 : -1;
  if (a->kind != b->kind) return cmp3(unsigned(a->kind), unsigned(b->kind));
  switch (a->kind) {
  case ArgKind::Int: return cmp3(a->i(), b->i());
  case ArgKind::UInt: return cmp3(a->u(), b->u());
  case ArgKind::Float: return cmp3(std::bit_cast<int64_t>(a->f()), std::bit_cast<int64_t>(b->f()));
  case ArgKind::Bool: case ArgKind::OpName: case ArgKind::AxisType: case ArgKind::AddrSpace: case ArgKind::DType:
    return cmp3(a->small, b->small);
  case ArgKind::UOpRef: return cmp3(a->ref()->index, b->ref()->index);
  case ArgKind::Tuple: case ArgKind::Record: {
    if (int c = a->str().compare(b->str())) return c < 0 ? -1 : 1;
    size_t n = std::min(a->count, b->count);
    for (size_t i = 0; i < n; ++i)
      if (int c = compareArg(a->elems()[i], b->elems()[i])) return c;
    return cmp3(a->count, b->count);
  }
  default: {
    int c = a->str().compare(b->str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  }
}
} // namespace

int canonicalCompare(const UOp *a, const UOp *b) {
  std::vector<std::pair<const UOp *, const UOp *>> stack{{a, b}};
  for (size_t steps = 0; !stack.empty(); ++steps) {
    if (steps > 4096) // a huge shared DAG: fall back to an order that costs nothing and is still total
      return a->hash != b->hash ? cmp3(a->hash, b->hash) : cmp3(a->index, b->index);
    auto [x, y] = stack.back();
    stack.pop_back();
    if (x == y) continue;
    if (x->op != y->op) return cmp3(unsigned(x->op), unsigned(y->op));
    if (int c = compareArg(x->arg, y->arg)) return c;
    if (x->dtype != y->dtype) return cmp3(unsigned(x->dtype), unsigned(y->dtype));
    if (x->nsrc != y->nsrc) return cmp3(x->nsrc, y->nsrc);
    for (size_t i = x->nsrc; i-- > 0;) stack.push_back({x->src(i), y->src(i)});
  }
  return a == b ? 0 : cmp3(a->index, b->index); // equal structure, different tags
}

} // namespace uopc::sym
