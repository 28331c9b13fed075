//===- Shape.cpp - tinygrad's UOp._shape and UOp.device, computed iteratively ---===//
#include "IR/Shape.h"

#include "IR/Error.h"
#include "IR/Range.h"
#include "IR/Records.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace uopc {
namespace {

/// Largest element count (and dimension) a shape may have: far above any real tensor, far below
/// int64 overflow, so that any product of two checked sizes still fits int64.
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// How a node's shape is derived: one row per op family of tinygrad's UOp._shape.
enum class Rule : uint8_t {
  NoRule,    ///< tinygrad raises "no shape handling"
  None,      ///< late ops: no shape
  Scalar,    ///< ()
  Src0,      ///< passthrough of src[0] (may be none)
  Unary,     ///< same as Src0 (GroupOp.Unary and CAST)
  Broadcast, ///< binary/ternary: numpy broadcast of every source's shape
  Stack,
  Param,
  Buffer,
  Reshape,
  Expand,
  Permute,
  Pad,
  Shrink,
  Flip,
  Multi,
  Reduce,
  Bitcast,
  Index,
  Custom,
  Call,
  Ins,
  Noop,
  GetTuple,
  Binary,
  Slice,
  Stage,
  Wmma,
};

// clang-format off
constexpr std::pair<Op, Rule> kRuleRows[] = {
    {Op::IF, Rule::None},          {Op::BARRIER, Rule::None},       {Op::SINK, Rule::None},
    {Op::REWRITE_ERROR, Rule::None}, {Op::ENDIF, Rule::None},       {Op::GROUP, Rule::None},
    {Op::PREFETCH, Rule::None},
    {Op::LINEAR, Rule::None},      {Op::PROGRAM, Rule::None},       {Op::SOURCE, Rule::None},
    {Op::TUPLE, Rule::None},       {Op::FUNCTION, Rule::None},      {Op::CUSTOM_FUNCTION, Rule::None},
    {Op::PYLITERAL, Rule::None},   {Op::CALL, Rule::Call},          {Op::INS, Rule::Ins},
    {Op::NOOP, Rule::Noop},        {Op::GETTUPLE, Rule::GetTuple},  {Op::INDEX, Rule::Index},
    {Op::STACK, Rule::Stack},      {Op::CONST, Rule::Scalar},       {Op::GETADDR, Rule::Scalar},
    {Op::BIND, Rule::Scalar},      {Op::RANGE, Rule::Scalar},       {Op::SPECIAL, Rule::Scalar},
    {Op::BINARY, Rule::Binary},    {Op::BUFFER, Rule::Buffer},      {Op::SLICE, Rule::Slice},
    {Op::CUSTOM, Rule::Custom},    {Op::CUSTOMI, Rule::Custom},     {Op::STAGE, Rule::Stage},
    {Op::PARAM, Rule::Param},      {Op::WMMA, Rule::Wmma},          {Op::MSTACK, Rule::Src0},
    {Op::MSELECT, Rule::Src0},     {Op::DETACH, Rule::Src0},        {Op::CONTIGUOUS, Rule::Src0},
    {Op::CONTIGUOUS_BACKWARD, Rule::Src0}, {Op::AFTER, Rule::Src0}, {Op::LOAD, Rule::Src0},
    {Op::COPY, Rule::Src0},        {Op::ALLREDUCE, Rule::Src0},     {Op::STORE, Rule::Src0},
    {Op::END, Rule::Src0},         {Op::BITCAST, Rule::Bitcast},    {Op::CAST, Rule::Unary},
    {Op::RESHAPE, Rule::Reshape},  {Op::EXPAND, Rule::Expand},      {Op::PERMUTE, Rule::Permute},
    {Op::PAD, Rule::Pad},          {Op::SHRINK, Rule::Shrink},      {Op::FLIP, Rule::Flip},
    {Op::MULTI, Rule::Multi},      {Op::REDUCE, Rule::Reduce},
};
// clang-format on

Rule ruleOf(Op op) {
  static const std::array<Rule, kNumOps> table = [] {
    std::array<Rule, kNumOps> t{};
    for (unsigned i = 0; i < kNumOps; ++i) {
      Op o = static_cast<Op>(i);
      t[i] = isUnary(o) ? Rule::Unary : (isBinary(o) || isTernary(o)) ? Rule::Broadcast : Rule::NoRule;
    }
    for (auto [op, rule] : kRuleRows) t[static_cast<unsigned>(op)] = rule;
    return t;
  }();
  return table[static_cast<unsigned>(op)];
}

/// Which sources a rule reads the shape of (movement operands are read as values, not shapes).
enum class Deps : uint8_t { Nothing, First, All, TupleElement };
Deps depsOf(Rule r) {
  switch (r) {
  // clang-format off
  case Rule::Src0: case Rule::Unary: case Rule::Stack: case Rule::Reshape: case Rule::Expand:
  case Rule::Permute: case Rule::Pad: case Rule::Shrink: case Rule::Flip: case Rule::Multi:
  case Rule::Reduce: case Rule::Bitcast: case Rule::Noop: case Rule::Stage:
    return Deps::First;
  case Rule::Broadcast: case Rule::Index: case Rule::Custom: case Rule::Wmma:
    return Deps::All;
  // clang-format on
  case Rule::GetTuple: return Deps::TupleElement;
  default: return Deps::Nothing;
  }
}

/// GETTUPLE's element (through a FUNCTION), or null when the form is wrong.
const UOp *tupleElement(const UOp *u) {
  if (u->nsrc < 1 || !u->arg || u->arg->kind != ArgKind::Int) return nullptr;
  const UOp *t = u->src(0);
  if (t->op == Op::FUNCTION && t->nsrc >= 1) t = t->src(0);
  if (t->op != Op::TUPLE || u->arg->i() < 0 || u->arg->i() >= int64_t(t->nsrc)) return nullptr;
  return t->src(size_t(u->arg->i()));
}

/// Value bounds of a weakint dimension expression, when cheaply known (depth-limited).
std::optional<std::pair<int64_t, int64_t>> bounds(const UOp *d, int depth = 0) {
  using B = std::pair<int64_t, int64_t>;
  if (depth > 16) return std::nullopt;
  if (d->op == Op::CONST) {
    if (d->arg && d->arg->kind == ArgKind::Int) return B{d->arg->i(), d->arg->i()};
    return std::nullopt;
  }
  if (d->op == Op::PARAM && d->arg && d->arg->kind == ArgKind::Record) {
    const Arg *vv = d->arg->field("vmin_vmax");
    if (vv && vv->kind == ArgKind::Tuple && vv->count == 2 && vv->elems()[0] && vv->elems()[1] &&
        vv->elems()[0]->kind == ArgKind::Int && vv->elems()[1]->kind == ArgKind::Int)
      return B{vv->elems()[0]->i(), vv->elems()[1]->i()};
    return std::nullopt;
  }
  if (d->op == Op::RANGE && d->nsrc >= 1) {
    auto b = bounds(d->src(0), depth + 1);
    if (!b || b->second < 1) return std::nullopt;
    return B{0, b->second - 1};
  }
  if (d->nsrc != 2) return std::nullopt;
  auto x = bounds(d->src(0), depth + 1), y = bounds(d->src(1), depth + 1);
  if (!x || !y) return std::nullopt;
  int64_t r[4];
  switch (d->op) {
  case Op::ADD:
    if (__builtin_add_overflow(x->first, y->first, &r[0]) || __builtin_add_overflow(x->second, y->second, &r[1]))
      return std::nullopt;
    return B{r[0], r[1]};
  case Op::SUB:
    if (__builtin_sub_overflow(x->first, y->second, &r[0]) || __builtin_sub_overflow(x->second, y->first, &r[1]))
      return std::nullopt;
    return B{r[0], r[1]};
  case Op::MUL:
    if (__builtin_mul_overflow(x->first, y->first, &r[0]) || __builtin_mul_overflow(x->first, y->second, &r[1]) ||
        __builtin_mul_overflow(x->second, y->first, &r[2]) || __builtin_mul_overflow(x->second, y->second, &r[3]))
      return std::nullopt;
    return B{*std::min_element(r, r + 4), *std::max_element(r, r + 4)};
  case Op::MAX: return B{std::max(x->first, y->first), std::max(x->second, y->second)};
  case Op::FLOORDIV:
    if (y->first != y->second || y->first <= 0 || x->first < 0) return std::nullopt;
    return B{x->first / y->first, x->second / y->first};
  default: return std::nullopt;
  }
}

/// "i", "(i*3)": a short rendering of a symbolic dimension.
std::string dimStr(const UOp *d, int depth = 0) {
  if (d->op == Op::CONST && d->arg && d->arg->kind == ArgKind::Int) return std::to_string(d->arg->i());
  if (depth > 6) return "...";
  if (d->op == Op::PARAM && d->arg && d->arg->kind == ArgKind::Record) {
    const Arg *n = d->arg->field("name");
    if (n && n->kind == ArgKind::String) return std::string(n->str());
  }
  static constexpr std::pair<Op, const char *> kInfix[] = {
      {Op::ADD, "+"}, {Op::SUB, "-"}, {Op::MUL, "*"}, {Op::FLOORDIV, "//"}, {Op::FLOORMOD, "%"}};
  if (d->nsrc == 2)
    for (auto [op, sym] : kInfix)
      if (d->op == op) return "(" + dimStr(d->src(0), depth + 1) + sym + dimStr(d->src(1), depth + 1) + ")";
  std::string s(opName(d->op));
  for (char &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s + "(...)";
}

/// A product of dimensions as constant factor times symbolic factors, for comparing element counts.
struct Product {
  int64_t constant = 1;
  bool overflow = false;
  std::vector<const UOp *> symbols; ///< sorted by node index
  void multiply(const UOp *d) {
    std::vector<const UOp *> work{d};
    while (!work.empty()) {
      const UOp *x = work.back();
      work.pop_back();
      if (x->op == Op::CONST && x->arg && x->arg->kind == ArgKind::Int) {
        overflow |= __builtin_mul_overflow(constant, x->arg->i(), &constant);
      } else if (x->op == Op::MUL && x->nsrc == 2) {
        work.push_back(x->src(0));
        work.push_back(x->src(1));
      } else {
        symbols.insert(std::upper_bound(symbols.begin(), symbols.end(), x,
                                        [](const UOp *a, const UOp *b) { return a->index < b->index; }),
                       x);
      }
    }
  }
  bool operator==(const Product &o) const {
    return !overflow && !o.overflow && constant == o.constant && symbols == o.symbols;
  }
  std::string str() const {
    if (overflow) return "an overflowing number of";
    std::string s = symbols.empty() || constant != 1 ? std::to_string(constant) : "";
    for (const UOp *x : symbols) s += (s.empty() ? "" : "*") + dimStr(x);
    return s;
  }
};

} // namespace

std::optional<int64_t> ShapeInfo::constDim(const UOp *d) {
  if (d && d->op == Op::CONST && d->arg && d->arg->kind == ArgKind::Int) return d->arg->i();
  return std::nullopt;
}

std::string ShapeInfo::str(const Shape &s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + dimStr(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

namespace {

/// The computation of one node's shape, with everything it needs from the ShapeInfo.
struct ShapeRule {
  const Graph &g;
  const UOp *u;
  std::vector<const Shape *> in; ///< shapes of the sources the rule depends on (null = none)

  [[noreturn]] void error(const std::string &msg) const { fail(g.describe(u) + ": " + msg); }
  Context &ctx() const { return *g.ctx; }
  const UOp *cdim(int64_t v) const { return ctx().constInt(DType::WeakInt, v); }
  const Shape &src0() const {
    need(1);
    if (in.empty() || !in[0])
      error(std::string(opName(u->op)) + " needs a source with a shape, " + g.describe(u->src(0)) + " has none");
    return *in[0];
  }
  void need(uint32_t n) const {
    if (u->nsrc < n)
      error("expected at least " + std::to_string(n) + " source" + (n == 1 ? "" : "s") + ", got " +
            std::to_string(u->nsrc));
  }

  /// One dimension read from a shape operand: CONST -> its value, else the (integer) expression itself.
  const UOp *operandDim(const UOp *x, const UOp *operand) const {
    if (x->op == Op::CONST) {
      if (!x->arg || x->arg->kind != ArgKind::Int) {
        if (x->arg && (x->arg->kind == ArgKind::UInt || x->arg->kind == ArgKind::BigInt))
          error("size overflow: shape operand " + g.describe(operand) + " holds a size above 2^48");
        error("shape operand " + g.describe(operand) + " holds a non-integer constant");
      }
      return cdim(x->arg->i());
    }
    if (!isInt(x->dtype))
      error("shape operand " + g.describe(operand) + " has a " + std::string(dtypeName(x->dtype)) +
            " entry, expected an integer");
    return x;
  }
  /// tinygrad's as_shape: a STACK gives one dimension per source, anything else one dimension.
  Shape asShape(const UOp *x) const {
    Shape s;
    if (x->op == Op::STACK)
      for (const UOp *e : x->src()) s.push_back(operandDim(e, x));
    else
      s.push_back(operandDim(x, x));
    return s;
  }
  /// Movement operand i as a shape, of length `rank` when rank >= 0.
  Shape operand(uint32_t i, const char *what, int64_t rank) const {
    need(i + 1);
    Shape s = asShape(u->src(i));
    if (rank >= 0 && int64_t(s.size()) != rank)
      error(std::string(what) + " has " + std::to_string(s.size()) + " entr" + (s.size() == 1 ? "y" : "ies") +
            " for a rank-" + std::to_string(rank) + " source");
    return s;
  }
  const UOp *mulDim(const UOp *d, int64_t k) const {
    if (auto c = constDim(d)) {
      int64_t r;
      if (__builtin_mul_overflow(*c, k, &r))
        error("size overflow: dimension " + std::to_string(*c) + " * " + std::to_string(k));
      return cdim(r);
    }
    return k == 1 ? d : ctx().make(Op::MUL, DType::WeakInt, {d, cdim(k)});
  }
  static std::optional<int64_t> constDim(const UOp *d) { return ShapeInfo::constDim(d); }
  /// a <= b unless provably false (tinygrad's resolve(..., default=True)).
  static bool maybeLE(const UOp *a, const UOp *b) {
    auto x = bounds(a), y = bounds(b);
    return !x || !y || x->first <= y->second;
  }
  static bool maybeLESum(const UOp *a, const UOp *b, const UOp *c) { // a + b <= c
    auto x = bounds(a), y = bounds(b), z = bounds(c);
    int64_t lo;
    return !x || !y || !z || __builtin_add_overflow(x->first, y->first, &lo) || lo <= z->second;
  }

  Shape broadcast(const std::vector<const Shape *> &shapes) const {
    size_t rank = 0;
    for (const Shape *s : shapes) rank = std::max(rank, s->size());
    Shape out(rank);
    for (size_t i = 0; i < rank; ++i) {
      const UOp *pick = nullptr;
      for (const Shape *s : shapes) {
        if (s->size() + i < rank) continue; // aligned left with a 1
        const UOp *d = (*s)[i - (rank - s->size())];
        if (constDim(d) == 1) continue;
        if (pick && pick != d) {
          std::string msg = "shapes ";
          for (size_t k = 0; k < shapes.size(); ++k)
            msg += (k == 0 ? "" : k + 1 == shapes.size() ? " and " : ", ") + ShapeInfo::str(*shapes[k]);
          error(msg + " do not match");
        }
        pick = d;
      }
      out[i] = pick ? pick : cdim(1);
    }
    return out;
  }

  std::optional<Shape> compute(Rule rule) const;
};

std::optional<Shape> ShapeRule::compute(Rule rule) const {
  if (depsOf(rule) == Deps::First && u->nsrc == 0 && rule != Rule::Noop && rule != Rule::Stack) need(1);
  switch (rule) {
  case Rule::NoRule: error("has no shape rule");
  case Rule::None: return std::nullopt;
  case Rule::Scalar: return Shape{};
  case Rule::Call:
  case Rule::Ins: return u->dtype == DType::Void ? std::nullopt : std::optional<Shape>(Shape{});
  case Rule::Noop:
  case Rule::Src0:
  case Rule::Unary:
    if (u->nsrc == 0) {
      if (rule == Rule::Noop) return std::nullopt;
      need(1);
    }
    if (!in[0]) return std::nullopt;
    return *in[0];
  case Rule::GetTuple:
    if (!in[0]) return std::nullopt;
    return *in[0];
  case Rule::Binary: return Shape{cdim(u->arg && u->arg->kind == ArgKind::Bytes ? int64_t(u->arg->len) : 0)};
  case Rule::Slice:
    need(1);
    if (u->src(0)->op == Op::INDEX) return Shape{};
    if (!u->arg || u->arg->kind != ArgKind::Int) error("SLICE arg must be an integer size");
    return Shape{cdim(u->arg->i())};
  case Rule::Stack: {
    if (u->nsrc == 0) return Shape{};
    Shape s = src0();
    s.insert(s.begin(), cdim(u->nsrc));
    return s;
  }
  case Rule::Param:
  case Rule::Buffer:
    if (u->nsrc == 0) {
      if (rule == Rule::Buffer) return Shape{};
      need(1);
    }
    if (u->src(0)->op == Op::NOOP) return std::nullopt;
    return asShape(u->src(0));
  case Rule::Custom: {
    if (u->dtype == DType::Void) return std::nullopt;
    std::vector<const Shape *> shapes;
    for (const Shape *s : in)
      if (s) shapes.push_back(s);
    if (shapes.empty()) return std::nullopt;
    return broadcast(shapes);
  }
  case Rule::Broadcast: {
    need(1);
    for (size_t i = 0; i < in.size(); ++i)
      if (!in[i]) error("source " + g.describe(u->src(i)) + " has no shape");
    return broadcast(in);
  }
  case Rule::Index: {
    need(1);
    if (!in[0]) error("indexed source " + g.describe(u->src(0)) + " has no shape");
    Shape s;
    for (size_t i = 1; i < in.size(); ++i) {
      if (!in[i]) error("index " + g.describe(u->src(i)) + " has no shape");
      s.insert(s.end(), in[i]->begin(), in[i]->end());
    }
    if (in.size() - 1 > in[0]->size())
      error(std::to_string(in.size() - 1) + " indices for a rank-" + std::to_string(in[0]->size()) + " source");
    s.insert(s.end(), in[0]->begin() + (in.size() - 1), in[0]->end());
    return s;
  }
  case Rule::Stage: {
    Shape s;
    for (const UOp *r : u->src().subspan(1)) {
      auto b = bounds(r);
      if (!b) error("STAGE range " + g.describe(r) + " has no known bound");
      s.push_back(cdim(b->second + 1));
    }
    const Shape &base = src0();
    s.insert(s.end(), base.begin(), base.end());
    return s;
  }
  case Rule::Wmma: {
    if (in.size() != 3 || !in[0] || !in[1] || !in[2] || in[0]->empty() || in[1]->empty() || in[2]->empty())
      error("WMMA needs three sources with non-empty shapes");
    Shape a(in[0]->begin(), in[0]->end() - 1), b(in[1]->begin(), in[1]->end() - 1), c(in[2]->begin(), in[2]->end() - 1);
    Shape s = broadcast({&a, &b, &c});
    s.push_back(in[2]->back());
    return s;
  }
  case Rule::Bitcast: {
    if (!in[0]) return std::nullopt;
    Shape s = *in[0];
    unsigned outSz = dtypeSize(u->dtype), inSz = dtypeSize(u->src(0)->dtype);
    if (outSz == inSz || s.empty()) return s;
    if (outSz == 0 || inSz == 0) error("cannot BITCAST between void and a sized dtype");
    const UOp *last = s.back();
    if (auto c = constDim(last)) {
      if ((*c * int64_t(inSz)) % outSz) error("unsupported size in bitcast: last dimension " + std::to_string(*c));
      s.back() = cdim(*c * int64_t(inSz) / outSz);
    } else {
      s.back() = ctx().make(Op::FLOORDIV, DType::WeakInt, {mulDim(last, inSz), cdim(outSz)});
    }
    return s;
  }
  default: break;
  }
  // Movement ops, MULTI and REDUCE: src[0] must have a shape.
  need(1);
  if (rule == Rule::Reshape && u->src(0)->op == Op::NOOP)
    return operand(1, "RESHAPE shape", -1); // tinygrad's special case
  const Shape &ps = src0();
  const int64_t rank = int64_t(ps.size());
  switch (rule) {
  case Rule::Reshape: {
    Shape ns = operand(1, "RESHAPE shape", -1);
    for (const UOp *d : ns)
      if (auto c = constDim(d); c && *c < 0) error("RESHAPE to a negative dimension " + std::to_string(*c));
    Product a, b;
    for (const UOp *d : ps) a.multiply(d);
    for (const UOp *d : ns) b.multiply(d);
    if (b.overflow || (b.symbols.empty() && b.constant > kMaxElements))
      error("size overflow: shape " + ShapeInfo::str(ns) + " has more than 2^48 elements");
    if (!(a == b)) error("RESHAPE from " + a.str() + " to " + b.str() + " elements");
    return ns;
  }
  case Rule::Expand: {
    Shape s = operand(1, "EXPAND shape", -1);
    s.insert(s.end(), ps.begin(), ps.end());
    return s;
  }
  case Rule::Permute: {
    const Arg *a = u->arg;
    if (!a || a->kind != ArgKind::Tuple) error("PERMUTE arg must be a list of axes");
    std::vector<bool> seen(ps.size(), false);
    bool ok = int64_t(a->count) == rank;
    for (const Arg *e : a->elems()) {
      if (!ok) break;
      ok = e && e->kind == ArgKind::Int && e->i() >= 0 && e->i() < rank && !seen[size_t(e->i())];
      if (ok) seen[size_t(e->i())] = true;
    }
    if (!ok) error("PERMUTE arg is not a permutation of " + std::to_string(rank) + " axes");
    Shape s;
    for (const Arg *e : a->elems()) s.push_back(ps[size_t(e->i())]);
    return s;
  }
  case Rule::Pad:
  case Rule::Shrink: {
    const bool pad = rule == Rule::Pad;
    Shape off = operand(1, pad ? "PAD offsets" : "SHRINK offsets", rank);
    Shape sz = operand(2, pad ? "PAD sizes" : "SHRINK sizes", rank);
    for (int64_t i = 0; i < rank; ++i) {
      const UOp *o = off[size_t(i)], *n = sz[size_t(i)], *s = ps[size_t(i)];
      const UOp *zero = cdim(0);
      bool ok = maybeLE(zero, o) && maybeLE(zero, n) && (pad ? maybeLESum(o, s, n) : maybeLESum(o, n, s));
      if (!ok)
        error(std::string(pad ? "PAD" : "SHRINK") + " of axis " + std::to_string(i) + " (size " + dimStr(s) +
              ") to offset " + dimStr(o) + " and size " + dimStr(n) + " is out of bounds");
      // Against a constant bound, symbolic offsets and sizes must fit for every value their variables may
      // take (a variable whose range exceeds what the shape allows would read past the axis: silently wrong
      // results, e.g. a SHRINK to size i of an axis of 10 with i up to 10^12).
      const UOp *bound = pad ? n : s, *a = o, *b = pad ? s : n;
      if (std::optional<Bound> lim = constBound(bound); lim && (!constBound(a) || !constBound(b))) {
        RangeInfo ri;
        Bound hi = boundAdd(ri.vmax(a), ri.vmax(b));
        if (hi > *lim)
          error(std::string(pad ? "PAD" : "SHRINK") + " of axis " + std::to_string(i) + " (size " + dimStr(s) +
                ") to offset " + dimStr(o) + " and size " + dimStr(n) + " may be out of bounds: over its variables' ranges " +
                (pad ? "offset + input size" : "offset + size") + " reaches " +
                (fitsInt64(hi) ? std::to_string(static_cast<int64_t>(hi)) : std::string("an unbounded value")) +
                ", more than " + std::to_string(static_cast<int64_t>(*lim)));
      }
    }
    return sz;
  }
  case Rule::Flip: {
    const Arg *a = u->arg;
    bool ok = a && a->kind == ArgKind::Tuple && int64_t(a->count) == rank;
    for (const Arg *e : ok ? a->elems() : std::span<const Arg *const>{}) ok = ok && e && e->kind == ArgKind::Bool;
    if (!ok) error("FLIP arg must be a list of " + std::to_string(rank) + " bools");
    return ps;
  }
  case Rule::Reduce: {
    const Arg *a = u->arg;
    const Arg *n = a && a->kind == ArgKind::Tuple && a->count == 2 ? a->elems()[1] : nullptr;
    if (!n || n->kind != ArgKind::Int || n->i() < 0 || n->i() > rank)
      error("REDUCE arg must be [op, number of axes in 0.." + std::to_string(rank) + "]");
    return Shape(ps.begin() + n->i(), ps.end());
  }
  default: break; // Multi: handled by the caller, which knows the device count
  }
  error("has no shape rule");
}

} // namespace

const std::optional<Shape> &ShapeInfo::shape(const UOp *root) {
  if (shapes_.empty()) shapes_.emplace_back(std::nullopt); // slot 0: no shape
  if (int32_t s = shapeSlot_.get(root); s >= 0) return shapes_[size_t(s)];
  auto slotOf = [&](const UOp *x) { return shapeSlot_.get(x); };
  auto depList = [&](const UOp *x, std::vector<const UOp *> &out) {
    out.clear();
    switch (depsOf(ruleOf(x->op))) {
    case Deps::Nothing: break;
    case Deps::First:
      if (x->nsrc) out.push_back(x->src(0));
      break;
    case Deps::All: out.assign(x->src().begin(), x->src().end()); break;
    case Deps::TupleElement:
      if (const UOp *e = tupleElement(x)) out.push_back(e);
      break;
    }
  };
  // Explicit post-order walk: a node is computed once every dependency has a slot.
  std::vector<const UOp *> stack{root}, deps;
  while (!stack.empty()) {
    const UOp *x = stack.back();
    if (slotOf(x) >= 0) {
      stack.pop_back();
      continue;
    }
    depList(x, deps);
    bool ready = true;
    for (const UOp *d : deps)
      if (slotOf(d) < 0) stack.push_back(d), ready = false;
    if (!ready) continue;
    stack.pop_back();
    Rule rule = ruleOf(x->op);
    if (rule == Rule::GetTuple && deps.empty())
      fail(g_.describe(x) + ": GETTUPLE needs a TUPLE (or FUNCTION) source and an index in range");
    ShapeRule r{g_, x, {}};
    for (const UOp *d : deps) r.in.push_back(shapes_[size_t(slotOf(d))] ? &*shapes_[size_t(slotOf(d))] : nullptr);
    std::optional<Shape> result;
    if (rule == Rule::Multi) {
      if (x->nsrc == 0) {
        result = std::nullopt;
      } else {
        const Shape &ps = r.src0();
        const Arg *a = x->arg;
        if (!a || a->kind != ArgKind::Int || a->i() < 0 || a->i() >= int64_t(ps.size()))
          r.error("MULTI axis must be an integer in 0.." + std::to_string(int64_t(ps.size()) - 1));
        size_t ndev = device(x).size();
        if (ndev == 0) r.error("MULTI source " + g_.describe(x->src(0)) + " has no device");
        Shape s = ps;
        s[size_t(a->i())] = r.mulDim(s[size_t(a->i())], int64_t(ndev));
        result = std::move(s);
      }
    } else {
      result = r.compute(rule);
    }
    // Share a dependency's slot when the shape is the same (elementwise chains then cost nothing).
    int32_t slot = -1;
    if (!result) slot = 0;
    for (const UOp *d : deps)
      if (slot < 0 && shapes_[size_t(slotOf(d))] == result) slot = slotOf(d);
    if (slot < 0) {
      // Sanity of a new shape: sizes non-negative, element count (upper bound) at most 2^48.
      int64_t numel = 1;
      for (const UOp *d : *result) {
        auto b = bounds(d);
        if (!b) continue;
        if (b->second < 0) r.error("negative dimension " + dimStr(d) + " in shape " + str(*result));
        if (b->second > kMaxElements || __builtin_mul_overflow(numel, b->second, &numel) || numel > kMaxElements)
          r.error("size overflow: shape " + str(*result) + " has more than 2^48 elements");
      }
      slot = int32_t(shapes_.size());
      shapes_.push_back(std::move(result));
    }
    shapeSlot_[x] = slot;
  }
  return shapes_[size_t(shapeSlot_.get(root))];
}

namespace {
/// How a node's device is derived: tinygrad's UOp.device, one row per op.
enum class DevRule : uint8_t { FirstSrc, ParamArg, StageArg, Src0, MSelect, MStack, CopyArg, AllreduceArg };
DevRule devRuleOf(Op op) {
  switch (op) {
  case Op::PARAM:
  case Op::BUFFER: return DevRule::ParamArg;
  case Op::STAGE: return DevRule::StageArg;
  case Op::AFTER: return DevRule::Src0;
  case Op::MSELECT: return DevRule::MSelect;
  case Op::MSTACK: return DevRule::MStack;
  case Op::COPY: return DevRule::CopyArg;
  case Op::ALLREDUCE: return DevRule::AllreduceArg;
  default: return DevRule::FirstSrc;
  }
}
bool devNeedsSrcs(DevRule r) {
  return r == DevRule::FirstSrc || r == DevRule::Src0 || r == DevRule::MSelect || r == DevRule::MStack;
}
} // namespace

const std::vector<std::string> &ShapeInfo::device(const UOp *root) {
  if (devices_.empty()) devices_.emplace_back(); // slot 0: no device
  if (int32_t s = deviceSlot_.get(root); s >= 0) return devices_[size_t(s)];
  auto slotOf = [&](const UOp *x) { return deviceSlot_.get(x); };
  std::vector<const UOp *> stack{root};
  while (!stack.empty()) {
    const UOp *x = stack.back();
    if (slotOf(x) >= 0) {
      stack.pop_back();
      continue;
    }
    DevRule rule = devRuleOf(x->op);
    bool ready = true;
    if (devNeedsSrcs(rule))
      for (const UOp *s : x->src())
        if (slotOf(s) < 0) stack.push_back(s), ready = false;
    if (!ready) continue;
    stack.pop_back();
    auto error = [&](const std::string &m) { fail(g_.describe(x) + ": " + m); };
    auto decode = [&](const Arg *a, const char *what) {
      std::vector<std::string> d;
      try {
        d = decodeDevices(a);
      } catch (const Error &e) {
        error(std::string(what) + ": " + e.what());
      }
      return d;
    };
    int32_t slot = -1;
    std::vector<std::string> devs;
    switch (rule) {
    case DevRule::FirstSrc:
      slot = 0;
      for (const UOp *s : x->src())
        if (slotOf(s) != 0 && !devices_[size_t(slotOf(s))].empty()) {
          slot = slotOf(s);
          break;
        }
      break;
    case DevRule::Src0: slot = x->nsrc ? slotOf(x->src(0)) : 0; break;
    case DevRule::ParamArg:
    case DevRule::StageArg:
      if (x->arg && x->arg->kind == ArgKind::Record) devs = decode(x->arg->field("device"), "bad device");
      break;
    case DevRule::CopyArg: devs = decode(x->arg, "COPY arg must be a device or a list of devices"); break;
    case DevRule::AllreduceArg:
      if (!x->arg || x->arg->kind != ArgKind::Tuple || (x->arg->count != 2 && x->arg->count != 3))
        error("ALLREDUCE arg must be [reduce op, device(s)] or [reduce op, devices, order]");
      devs = decode(x->arg->elems()[1], "ALLREDUCE device");
      break;
    case DevRule::MSelect: {
      if (x->nsrc < 1) error("MSELECT needs a source");
      const auto &sd = devices_[size_t(slotOf(x->src(0)))];
      if (!x->arg || x->arg->kind != ArgKind::Int) error("MSELECT arg must be a device index");
      if (sd.empty()) error("MSELECT source " + g_.describe(x->src(0)) + " has no device");
      if (x->arg->i() < 0 || x->arg->i() >= int64_t(sd.size()))
        error("MSELECT index " + std::to_string(x->arg->i()) + " out of range for " + std::to_string(sd.size()) +
              " devices");
      devs.push_back(sd[size_t(x->arg->i())]);
      break;
    }
    case DevRule::MStack:
      for (const UOp *s : x->src()) {
        const auto &sd = devices_[size_t(slotOf(s))];
        devs.insert(devs.end(), sd.begin(), sd.end());
      }
      break;
    }
    if (slot < 0) {
      if (devs.empty()) {
        slot = 0;
      } else {
        slot = int32_t(devices_.size());
        devices_.push_back(std::move(devs));
      }
    }
    deviceSlot_[x] = slot;
  }
  return devices_[size_t(deviceSlot_.get(root))];
}

} // namespace uopc
