// Differential test of the symbolic simplifier (lib/Passes/Symbolic): random integer expressions over a few
// variables with small ranges are simplified and then evaluated at every point of the variables' ranges,
// original against simplified, with the interpreter's scalar semantics (Interp/ScalarOps.h aluWord). The
// same evaluation checks the range analysis: every value a node takes lies in its [vmin, vmax].
//
// Variables are PARAM weakint nodes (empty STACK source, ParamArg{slot -1, name, vmin_vmax}) or RANGEs
// (values 0..end-1). Expressions mix weakint, int32 and uint32 (with constants near the wraparound) and
// bool, and use every op the simplifier handles: ADD SUB MUL NEG FLOORDIV FLOORMOD CDIV CMOD MAX
// min(-max(-a,-b)) CMPLT CMPNE CMPEQ WHERE AND OR XOR SHL SHR and casts between them, Invalid gates, and
// index math (strided sums divided and reduced by shapes, x%c + (x//c)*c, padding masks). Divisors may
// take the value 0: the evaluator's x//0 = 0, x%0 = x is the meaning the simplifier must keep.
// Invalid is poison: where the original is Invalid any result is accepted; elsewhere the simplified
// expression must give the same value and must not be Invalid.
//
// weakint is unbounded (tinygrad's meaning) but evaluated in 64 bits here: an expression in which a weakint
// value leaves int64 at some point, in the original or the simplified form, is skipped and counted.
//
// Default: 100,000 expressions. UOPC_SYMBOLIC_LONG=1: 1,000,000. UOPC_SYMBOLIC_SEED picks another seed.
#include "IR/Error.h"
#include "IR/Range.h"
#include "IR/ScalarOps.h"
#include "Passes/Symbolic/Symbolic.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <random>
#include <sstream>
#include <unordered_map>

using namespace uopc;
using interp::Word;

namespace {

//===----------------------------------------------------------------------===//
// Generator
//===----------------------------------------------------------------------===//

struct Var {
  const UOp *node;
  int64_t lo, hi;
};

class Generator {
public:
  Generator(Context &ctx, std::mt19937_64 &rng) : c_(ctx), rng_(rng) {}

  /// 2-3 fresh variables with small ranges.
  void newVars() {
    vars_.clear();
    int n = 2 + int(pick(2));
    for (int i = 0; i < n; ++i) {
      if (pick(5) == 0) { // a RANGE: 0..end-1
        int64_t end = 1 + int64_t(pick(5));
        const UOp *r = c_.make(Op::RANGE, DType::WeakInt, {k(DType::WeakInt, end)},
                               c_.argTuple({c_.argInt(int64_t(serial_++)), c_.argAxisType(AxisType::LOOP)}));
        vars_.push_back({r, 0, end - 1});
      } else {
        int64_t lo = pick(3) ? int64_t(pick(4)) : int64_t(pick(11)) - 6, hi = lo + int64_t(pick(pick(3) ? 5 : 12));
        vars_.push_back({makeVariable(c_, "v" + std::to_string(serial_++), lo, hi), lo, hi});
      }
    }
  }
  const std::vector<Var> &vars() const { return vars_; }

  const UOp *gen(DType dt, int depth) {
    if (dt == DType::Bool) return genBool(depth);
    if (depth <= 0 || pick(6) == 0) return leaf(dt);
    switch (pick(24)) {
    case 0:
    case 1: return bin(Op::ADD, gen(dt, depth - 1), gen(dt, depth - 1));
    case 2: return bin(Op::SUB, gen(dt, depth - 1), gen(dt, depth - 1));
    case 3: return bin(Op::MUL, gen(dt, depth - 1), pick(2) ? smallConst(dt) : gen(dt, depth - 1));
    case 4:
    case 5: return bin(Op::FLOORDIV, gen(dt, depth - 1), divisor(dt, depth - 1));
    case 6:
    case 7: return bin(Op::FLOORMOD, gen(dt, depth - 1), divisor(dt, depth - 1));
    case 8: return bin(pick(2) ? Op::CDIV : Op::CMOD, gen(dt, depth - 1), divisor(dt, depth - 1));
    case 9: return bin(Op::MAX, gen(dt, depth - 1), gen(dt, depth - 1));
    case 10: { // min(a, b) = -max(-a, -b), spelled with NEG or *-1
      const UOp *a = gen(dt, depth - 1), *b = gen(dt, depth - 1);
      return neg(bin(Op::MAX, neg(a), neg(b)));
    }
    case 11: return c_.make(Op::NEG, dt, {gen(dt, depth - 1)});
    case 12:
    case 13: return c_.make(Op::WHERE, dt, {genBool(depth - 1), gen(dt, depth - 1), gen(dt, depth - 1)});
    case 14: {
      Op op = pick(3) == 0 ? Op::AND : pick(2) ? Op::OR : Op::XOR;
      return bin(op, gen(dt, depth - 1), pick(2) ? smallConst(dt) : gen(dt, depth - 1));
    }
    case 15: return bin(pick(2) ? Op::SHL : Op::SHR, gen(dt, depth - 1), k(dt, int64_t(pick(5))));
    case 16: { // a cast from the other integer type
      DType from = dt != DType::WeakInt ? DType::WeakInt : pick(3) ? DType::Int32 : DType::UInt32;
      return cast(gen(from, depth - 1), dt);
    }
    case 17: return cast(genBool(depth - 1), dt);
    case 18: // an Invalid gate
      if (dt == DType::WeakInt && pick(2))
        return c_.make(Op::WHERE, dt, {genBool(depth - 1), gen(dt, depth - 1), invalid(dt)});
      return gen(dt, depth - 1);
    case 19: // tinygrad's spelling of a - b and of index math: a + b*-1, a*c + b
      return bin(Op::ADD, bin(Op::MUL, gen(dt, depth - 1), smallConst(dt)), gen(dt, depth - 1));
    case 20:
    case 21: // index math: what movement ops and padding turn into
      return dt == DType::WeakInt ? index(depth) : gen(dt, depth - 1);
    default: return bin(Op::ADD, gen(dt, depth - 1), smallConst(dt));
    }
  }

  /// An index expression: a sum of variables (or nested div/mod of them) times typical strides, divided
  /// or reduced by a typical shape, sometimes recombined (x%c + (x//c)*c) or gated by a padding mask.
  const UOp *index(int depth) {
    static const int64_t strides[] = {1, 1, 2, 3, 4, 6, 8, 12, 16, -1, -4};
    static const int64_t shapes[] = {2, 3, 4, 5, 6, 8, 12, 16};
    const UOp *sum = nullptr;
    for (int n = 1 + int(pick(3)); n > 0; --n) {
      const UOp *t = depth > 1 && pick(3) == 0 ? index(depth - 1) : vars_[pick(vars_.size())].node;
      t = bin(Op::MUL, t, k(DType::WeakInt, strides[pick(11)]));
      sum = sum ? bin(Op::ADD, sum, t) : t;
    }
    if (pick(2)) sum = bin(Op::ADD, sum, k(DType::WeakInt, int64_t(pick(17)) - 4));
    const UOp *c = k(DType::WeakInt, shapes[pick(8)]);
    switch (pick(6)) {
    case 0: return bin(Op::FLOORDIV, sum, c);
    case 1: return bin(Op::FLOORMOD, sum, c);
    case 2:
      return bin(Op::ADD, bin(Op::FLOORMOD, sum, c), bin(Op::MUL, bin(Op::FLOORDIV, sum, c), c)); // x%c + (x//c)*c
    case 3: return bin(Op::FLOORDIV, bin(Op::FLOORMOD, sum, k(DType::WeakInt, shapes[pick(8)] * 4)), c);
    case 4: { // a padded load's gated index: valid when lo <= x < hi (x a variable or a simplex a*x + b*y)
      const UOp *x = vars_[pick(vars_.size())].node;
      if (pick(3) == 0)
        x = bin(Op::ADD, bin(Op::MUL, x, k(DType::WeakInt, int64_t(pick(3)) + 1)),
                bin(Op::MUL, vars_[pick(vars_.size())].node, k(DType::WeakInt, int64_t(pick(3)) + 1)));
      const UOp *lo = bin(Op::CMPNE, bin(Op::CMPLT, x, k(DType::WeakInt, int64_t(pick(5)) - 3)), k(DType::Bool, 1));
      const UOp *hi = bin(Op::CMPLT, x, k(DType::WeakInt, int64_t(pick(6))));
      return c_.make(Op::WHERE, DType::WeakInt,
                     {bin(Op::AND, lo, hi), bin(Op::FLOORMOD, sum, c), invalid(DType::WeakInt)});
    }
    default: return sum;
    }
  }

private:
  uint64_t pick(uint64_t n) { return rng_() % n; }
  const UOp *k(DType dt, int64_t v) {
    if (dt == DType::Bool) return c_.constBool(v != 0);
    if (dt == DType::Int32) v = int64_t(int32_t(uint32_t(v)));
    if (dt == DType::UInt32) return c_.make(Op::CONST, dt, {}, c_.argInt(int64_t(uint32_t(v))));
    return c_.constInt(dt, v);
  }
  const UOp *invalid(DType dt) { return makeInvalid(c_, dt); }
  const UOp *bin(Op op, const UOp *a, const UOp *b) {
    return c_.make(op, isComparison(op) ? DType::Bool : a->dtype, {a, b});
  }
  const UOp *cast(const UOp *x, DType dt) { return c_.make(Op::CAST, dt, {x}, c_.argDType(dt)); }
  const UOp *neg(const UOp *x) { return pick(2) ? c_.make(Op::NEG, x->dtype, {x}) : bin(Op::MUL, x, k(x->dtype, -1)); }
  const UOp *smallConst(DType dt) {
    if (dt != DType::WeakInt && pick(8) == 0) { // near the int32/uint32 wraparound
      static const int64_t edges[] = {INT32_MAX, INT32_MIN, INT32_MAX - 3, INT32_MIN + 5, 1 << 30, -(1 << 30), 65536};
      return k(dt, edges[pick(7)]);
    }
    if (dt == DType::WeakInt && pick(24) == 0) { // beyond int32: casts to int32 wrap
      static const int64_t big[] = {int64_t(1) << 31, (int64_t(1) << 31) - 1, -(int64_t(1) << 31) - 1,
                                    int64_t(3) << 30};
      return k(dt, big[pick(4)]);
    }
    if (pick(16) == 0) return k(dt, int64_t(pick(512)) - 256);
    return k(dt, int64_t(pick(25)) - 12);
  }
  const UOp *divisor(DType dt, int depth) {
    if (pick(5) < 3) {
      int64_t v = int64_t(pick(7)) + 1;
      return k(dt, pick(4) == 0 ? -v : v);
    }
    return gen(dt, depth);
  }
  const UOp *leaf(DType dt) {
    if (pick(5) < 3) {
      const UOp *v = vars_[pick(vars_.size())].node;
      return dt == DType::WeakInt ? v : cast(v, dt);
    }
    return smallConst(dt);
  }
  const UOp *genBool(int depth) {
    if (depth <= 0 || pick(8) == 0)
      return pick(4) ? bin(Op::CMPLT, leaf(DType::WeakInt), leaf(DType::WeakInt)) : k(DType::Bool, int64_t(pick(2)));
    DType it = pick(4) ? DType::WeakInt : pick(3) ? DType::Int32 : DType::UInt32;
    switch (pick(9)) {
    case 0:
    case 1:
    case 2: return bin(Op::CMPLT, gen(it, depth - 1), gen(it, depth - 1));
    case 3: return bin(Op::CMPNE, gen(it, depth - 1), gen(it, depth - 1));
    case 4: return bin(Op::CMPEQ, gen(it, depth - 1), gen(it, depth - 1));
    case 5: return bin(pick(2) ? Op::AND : Op::OR, genBool(depth - 1), genBool(depth - 1));
    case 6:
      return pick(2) ? bin(Op::XOR, genBool(depth - 1), genBool(depth - 1))
                     : bin(Op::CMPNE, genBool(depth - 1), k(DType::Bool, 1));
    case 7: return cast(gen(it, depth - 1), DType::Bool);
    default: return c_.make(Op::WHERE, DType::Bool, {genBool(depth - 1), genBool(depth - 1), genBool(depth - 1)});
    }
  }

  Context &c_;
  std::mt19937_64 &rng_;
  std::vector<Var> vars_;
  uint64_t serial_ = 0;
};

//===----------------------------------------------------------------------===//
// Reference evaluator (poison semantics for Invalid)
//===----------------------------------------------------------------------===//

struct Value {
  Word w = 0;
  bool invalid = false;
};

/// A compiled expression: nodes in topological order, sources as slot numbers.
class Program {
public:
  explicit Program(const UOp *root) : nodes_(toposort(root)) {
    for (size_t i = 0; i < nodes_.size(); ++i) slot_[nodes_[i]] = i;
    vals_.resize(nodes_.size());
  }
  const std::vector<const UOp *> &nodes() const { return nodes_; }
  const std::vector<Value> &values() const { return vals_; }

  /// Evaluates at a point (variable node -> value); returns the root's value.
  Value run(const std::unordered_map<const UOp *, int64_t> &point) {
    for (size_t i = 0; i < nodes_.size(); ++i) vals_[i] = eval(nodes_[i], point);
    return vals_.back();
  }

private:
  Value eval(const UOp *u, const std::unordered_map<const UOp *, int64_t> &point) {
    auto v = [&](size_t i) { return vals_[slot_.at(u->src(i))]; };
    switch (u->op) {
    case Op::CONST:
      if (isInvalidConst(u)) return {0, true};
      if (u->arg->kind == ArgKind::Bool) return {Word(u->arg->b()), false};
      return {interp::intToWord(u->dtype, u->arg->i()), false};
    case Op::PARAM:
    case Op::RANGE: return {interp::intToWord(u->dtype, point.at(u)), false};
    case Op::STACK: return {};
    case Op::CAST: {
      Value a = v(0);
      return a.invalid ? a : Value{interp::castWord(u->src(0)->dtype, u->dtype, a.w), false};
    }
    case Op::WHERE: {
      Value c = v(0);
      return c.invalid ? c : c.w ? v(1) : v(2);
    }
    default: {
      Word ops[3] = {0, 0, 0};
      for (size_t i = 0; i < u->nsrc; ++i) {
        Value a = v(i);
        if (a.invalid) return a;
        ops[i] = a.w;
      }
      if (u->dtype == DType::WeakInt) checkExact(u->op, ops);
      return {interp::aluWord(u->op, u->dtype, u->src(0)->dtype, ops), false};
    }
    }
  }
  /// weakint is unbounded: a value that leaves int64 makes the 64-bit evaluation meaningless.
  void checkExact(Op op, const Word *o) {
    Bound a = int64_t(o[0]), b = int64_t(o[1]), r = 0;
    switch (op) {
    case Op::ADD: r = a + b; break;
    case Op::SUB: r = a - b; break;
    case Op::MUL: r = a * b; break;
    case Op::NEG: r = -a; break;
    case Op::SHL: r = b >= 0 && b < 64 ? a * (Bound(1) << int(b)) : 0; break;
    case Op::FLOORDIV:
    case Op::CDIV: r = b == -1 ? -a : 0; break;
    default: return;
    }
    if (!fitsInt64(r)) overflowed = true;
  }

public:
  bool overflowed = false;

private:
  std::vector<const UOp *> nodes_;
  std::unordered_map<const UOp *, size_t> slot_;
  std::vector<Value> vals_;
};

/// A word as the integer it stands for in dt.
Bound asBound(DType dt, Word w) {
  if (dt == DType::Bool) return w != 0;
  return isUnsigned(dt) ? Bound(w) : Bound(int64_t(w));
}

/// A readable rendering of an expression (index expressions are small).
std::string render(const UOp *u, int depth = 0) {
  if (depth > 40) return "...";
  std::ostringstream o;
  if (u->op == Op::CONST) {
    if (isInvalidConst(u)) return "Invalid";
    if (u->arg->kind == ArgKind::Bool) return u->arg->b() ? "True" : "False";
    o << u->arg->i();
    if (u->dtype != DType::WeakInt) o << ":" << dtypeName(u->dtype);
    return o.str();
  }
  if (u->op == Op::PARAM) return std::string(u->arg->field("name")->str());
  if (u->op == Op::RANGE) return "r" + std::to_string(u->arg->elems()[0]->i());
  o << opName(u->op);
  if (u->op == Op::CAST) o << "<" << dtypeName(u->dtype) << ">";
  o << "(";
  for (size_t i = 0; i < u->nsrc; ++i) o << (i ? ", " : "") << render(u->src(i), depth + 1);
  o << ")";
  return o.str();
}

struct Stats {
  uint64_t expressions = 0, points = 0, mismatches = 0, rangeViolations = 0, errors = 0, skipped = 0;
  uint64_t simplifiedOverflows = 0; ///< skipped because only the simplified form left int64
  uint64_t nodesBefore = 0, nodesAfter = 0;
};

/// Checks every value of every int/bool node of `p` at the current point against its range.
bool rangesHold(Program &p, RangeInfo &ranges, std::string &bad) {
  for (size_t i = 0; i < p.nodes().size(); ++i) {
    const UOp *u = p.nodes()[i];
    if (u->op == Op::STACK || p.values()[i].invalid) continue;
    Bound b = asBound(u->dtype, p.values()[i].w);
    const VRange &r = ranges.range(u);
    if (b < r.lo || b > r.hi) {
      bad = render(u) + " = " + std::to_string(int64_t(b)) + " outside [" + std::to_string(int64_t(r.lo)) + ", " +
            std::to_string(int64_t(r.hi)) + "]";
      return false;
    }
  }
  return true;
}

void runDifferential(uint64_t count, uint64_t seed, Stats &st) {
  std::mt19937_64 rng(seed);
  const uint64_t perContext = 400; // a fresh Context (and range cache) every so many expressions
  int printed = 0;
  auto report = [&](const std::string &what) {
    if (printed++ < 10) std::cerr << what << "\n";
  };
  while (st.expressions + st.errors < count) {
    Context ctx;
    SymbolicCtx sc;
    Generator gen(ctx, rng);
    for (uint64_t i = 0; i < perContext && st.expressions + st.errors < count; ++i) {
      gen.newVars();
      DType dt = rng() % 5 == 0 ? DType::Bool : rng() % 4 ? DType::WeakInt : rng() % 3 ? DType::Int32 : DType::UInt32;
      const UOp *e = gen.gen(dt, 4 + int(rng() % 3));
      const bool withValid = rng() % 2; // sym (the pass's rules) or symbolic (UOp.simplify's)
      const UOp *s = nullptr;
      try {
        s = withValid ? simplifyWith(ctx, e, symRules(), &sc) : simplify(ctx, e, &sc);
      } catch (const Error &err) {
        ++st.errors;
        report(std::string("ERROR ") + err.what() + "\n  expr: " + render(e));
        continue;
      }
      Program pe(e), ps(s);
      // every point of the variables' ranges
      const std::vector<Var> &vars = gen.vars();
      std::unordered_map<const UOp *, int64_t> point;
      std::vector<int64_t> cur(vars.size());
      for (size_t j = 0; j < vars.size(); ++j) cur[j] = vars[j].lo;
      uint64_t points = 0, bad = 0, badRange = 0;
      std::string first;
      for (;;) {
        for (size_t j = 0; j < vars.size(); ++j) point[vars[j].node] = cur[j];
        Value a = pe.run(point), b = ps.run(point);
        // a weakint value left int64: the 64-bit evaluation does not apply (weakint is unbounded; the
        // simplified form may have larger intermediates than the original, e.g. after distributing)
        if (pe.overflowed || ps.overflowed) break;
        ++points;
        std::string why;
        if (s->dtype != e->dtype) {
          ++bad, first = "DTYPE CHANGED";
        } else if (!a.invalid && (b.invalid || a.w != b.w)) {
          ++bad;
          std::ostringstream o;
          o << "MISMATCH at";
          for (size_t j = 0; j < vars.size(); ++j) o << " " << render(vars[j].node) << "=" << cur[j];
          o << ": original " << int64_t(a.w) << ", simplified "
            << (b.invalid ? std::string("Invalid") : std::to_string(int64_t(b.w)));
          first = o.str();
        } else if (!rangesHold(pe, sc.ranges, why) || !rangesHold(ps, sc.ranges, why)) {
          ++badRange, first = "RANGE VIOLATION " + why;
        }
        if (bad || badRange) break;
        size_t j = 0;
        while (j < vars.size() && cur[j] == vars[j].hi) cur[j] = vars[j].lo, ++j;
        if (j == vars.size()) break;
        ++cur[j];
      }
      if (pe.overflowed || ps.overflowed) {
        ++st.skipped;
        st.simplifiedOverflows += !pe.overflowed;
        continue;
      }
      ++st.expressions, st.points += points, st.mismatches += bad != 0, st.rangeViolations += badRange != 0;
      st.nodesBefore += pe.nodes().size(), st.nodesAfter += ps.nodes().size();
      if (bad || badRange) report(first + "\n  expr: " + render(e) + "\n  simp: " + render(s));
    }
  }
}

uint64_t envSeed() {
  const char *s = std::getenv("UOPC_SYMBOLIC_SEED");
  return s && *s ? std::strtoull(s, nullptr, 10) : 20240601;
}

} // namespace

TEST_CASE("simplified random expressions evaluate like the originals", "[symbolic]") {
  const bool longMode = std::getenv("UOPC_SYMBOLIC_LONG") != nullptr;
  const uint64_t count = longMode ? 1000000 : 100000;
  Stats st;
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  runDifferential(count, envSeed(), st);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  std::cerr << "symbolic differential: " << st.expressions << " expressions, " << st.points << " points, "
            << st.mismatches << " mismatches, " << st.skipped << " skipped (weakint left int64; "
            << st.simplifiedOverflows << " only after simplifying), " << st.rangeViolations << " range violations, "
            << st.errors << " rewrite errors, nodes " << st.nodesBefore << " -> " << st.nodesAfter << ", " << secs
            << " s wall, " << cpu << " s cpu\n";
  CHECK(st.errors == 0);
  CHECK(st.rangeViolations == 0);
  CHECK(st.mismatches == 0);
  CHECK(st.expressions + st.errors == count);
}

//===----------------------------------------------------------------------===//
// Range analysis
//===----------------------------------------------------------------------===//

namespace {
const UOp *w(Context &c, int64_t v) { return c.constInt(DType::WeakInt, v); }
const UOp *op2(Context &c, Op op, const UOp *a, const UOp *b) {
  return c.make(op, isComparison(op) ? DType::Bool : a->dtype, {a, b});
}
const UOp *castTo(Context &c, const UOp *x, DType dt) { return c.make(Op::CAST, dt, {x}, c.argDType(dt)); }
} // namespace

TEST_CASE("range analysis follows tinygrad's vmin/vmax", "[symbolic]") {
  Context c;
  RangeInfo r;
  const UOp *a = makeVariable(c, "a", 2, 5), *b = makeVariable(c, "b", -3, 4);
  auto is = [&](const UOp *u, Bound lo, Bound hi) { return r.vmin(u) == lo && r.vmax(u) == hi; };
  CHECK(is(a, 2, 5));
  CHECK(is(op2(c, Op::ADD, a, b), -1, 9));
  CHECK(is(op2(c, Op::MUL, a, b), -15, 20));
  CHECK(is(op2(c, Op::MUL, a, w(c, -2)), -10, -4));
  CHECK(is(op2(c, Op::FLOORDIV, a, w(c, 2)), 1, 2));
  CHECK(is(op2(c, Op::FLOORDIV, b, w(c, 2)), -2, 2));
  CHECK(is(op2(c, Op::CDIV, b, w(c, 2)), -1, 2));
  CHECK(is(op2(c, Op::FLOORMOD, a, w(c, 8)), 2, 5)); // one period: exact
  CHECK(is(op2(c, Op::FLOORMOD, b, w(c, 3)), 0, 2)); // crosses periods: [0, c-1]
  CHECK(is(op2(c, Op::CMOD, b, w(c, 3)), -2, 2));
  CHECK(is(op2(c, Op::MAX, a, b), 2, 5));
  CHECK(is(op2(c, Op::SHL, a, w(c, 3)), 16, 40));
  CHECK(is(op2(c, Op::SHR, b, w(c, 1)), -2, 2));
  CHECK(is(op2(c, Op::AND, a, w(c, 6)), 0, 5));
  CHECK(is(op2(c, Op::CMPLT, a, w(c, 6)), 1, 1)); // decided: always true
  CHECK(is(op2(c, Op::CMPLT, a, w(c, 4)), 0, 1));
  CHECK(is(op2(c, Op::CMPNE, a, b), 0, 1));
  CHECK(is(c.make(Op::WHERE, DType::WeakInt, {op2(c, Op::CMPLT, b, w(c, 0)), a, w(c, 9)}), 2, 9));
  const UOp *rng =
      c.make(Op::RANGE, DType::WeakInt, {w(c, 16)}, c.argTuple({c.argInt(0), c.argAxisType(AxisType::LOOP)}));
  CHECK(is(rng, 0, 15));
  // a divisor whose range contains 0: nothing is known (x//0 is 0 by the evaluator, tinygrad raises)
  CHECK(r.vmax(op2(c, Op::FLOORDIV, a, b)) >= kBoundInf);
  // Invalid has its dtype's range
  CHECK(r.vmax(makeInvalid(c, DType::WeakInt)) >= kBoundInf);
  CHECK(is(makeInvalid(c, DType::Int8), -128, 127));
}

TEST_CASE("sized integers that may wrap get their dtype's range", "[symbolic]") {
  Context c;
  RangeInfo r;
  const UOp *x = castTo(c, makeVariable(c, "x", 0, 2147483647), DType::Int32);
  const UOp *small = castTo(c, makeVariable(c, "y", 0, 9), DType::Int32);
  const UOp *sum = op2(c, Op::ADD, x, c.constInt(DType::Int32, 1)); // may wrap to INT32_MIN
  CHECK(r.vmin(sum) == INT32_MIN);
  CHECK(r.vmax(sum) == INT32_MAX);
  CHECK_FALSE(r.exact(sum));
  const UOp *ok = op2(c, Op::ADD, small, c.constInt(DType::Int32, 1));
  CHECK(r.vmin(ok) == 1);
  CHECK(r.vmax(ok) == 10);
  CHECK(r.exact(ok));
  // a weakint value that does not fit int8 wraps when cast
  const UOp *big = castTo(c, makeVariable(c, "z", 0, 300), DType::Int8);
  CHECK(r.vmin(big) == -128);
  CHECK_FALSE(r.exact(big));
  const UOp *u8 =
      c.make(Op::SUB, DType::UInt8,
             {castTo(c, makeVariable(c, "u", 0, 3), DType::UInt8), c.make(Op::CONST, DType::UInt8, {}, c.argInt(1))});
  CHECK(r.vmin(u8) == 0); // 0 - 1 wraps to 255
  CHECK(r.vmax(u8) == 255);
}

TEST_CASE("weakint index expressions know when they fit in 32 bits", "[symbolic]") {
  Context c;
  RangeInfo r;
  const UOp *i = makeVariable(c, "i", 0, 1023), *j = makeVariable(c, "j", 0, 4095);
  const UOp *flat = op2(c, Op::ADD, op2(c, Op::MUL, i, w(c, 4096)), j);
  CHECK(r.fitsInt32(flat));
  CHECK(r.exprFitsInt32(flat));
  const UOp *wide = op2(c, Op::MUL, flat, w(c, 1024)); // up to 2^32: needs 64 bits
  CHECK_FALSE(r.fitsInt32(wide));
  // the result fits but an intermediate does not: the expression does not
  const UOp *back = op2(c, Op::FLOORDIV, wide, w(c, 1024));
  CHECK(r.fitsInt32(back));
  CHECK_FALSE(r.exprFitsInt32(back));
  CHECK(fitsInt32(flat));
  // an unbounded weakint (no vmin_vmax) never fits
  const UOp *free = c.make(Op::PARAM, DType::WeakInt, {c.make(Op::STACK, DType::Void)}, c.argInt(0));
  CHECK_FALSE(r.fitsInt32(free));
}

TEST_CASE("range analysis and simplify are iterative on deep graphs", "[symbolic]") {
  Context c;
  SymbolicCtx sc;
  const UOp *a = makeVariable(c, "a", 0, 9), *x = a;
  for (int k = 0; k < 200000; ++k) x = op2(c, Op::ADD, x, w(c, 1));
  CHECK(sc.ranges.vmin(x) == 200000);
  CHECK(sc.ranges.vmax(x) == 200009);
  const UOp *s = simplify(c, x, &sc); // (a+1)+1... folds to a+200000 without recursion
  REQUIRE(s->op == Op::ADD);
  CHECK(s->src(0) == a);
  CHECK(s->src(1) == w(c, 200000));
}

//===----------------------------------------------------------------------===//
// Substitution and binding
//===----------------------------------------------------------------------===//

TEST_CASE("binding _device_num specializes and resimplifies the index math", "[symbolic]") {
  Context c;
  const UOp *dn = makeVariable(c, "_device_num", 0, 3), *i = makeVariable(c, "i", 0, 7);
  // the shard offset of device dn in a 32-element axis split 4 ways: (dn*8 + i) // 8 and % 8
  const UOp *idx = op2(c, Op::ADD, op2(c, Op::MUL, dn, w(c, 8)), i);
  const UOp *root =
      c.make(Op::SINK, DType::Void, {op2(c, Op::FLOORDIV, idx, w(c, 8)), op2(c, Op::FLOORMOD, idx, w(c, 8))});
  const UOp *simp = simplify(c, root);
  CHECK(simp->src(0) == dn); // (dn*8+i)//8 -> dn
  CHECK(simp->src(1) == i);  // (dn*8+i)%8 -> i
  const UOp *bound = bindVariables(c, root, {{"_device_num", 2}});
  CHECK(bound->src(0) == w(c, 2));
  CHECK(bound->src(1) == i);
  CHECK(bindVariables(c, root, {{"other", 1}}) == root);
}

TEST_CASE("substituteAndSimplify resimplifies after replacing a node", "[symbolic]") {
  Context c;
  const UOp *a = makeVariable(c, "a", 0, 100), *n = makeVariable(c, "n", 1, 64);
  const UOp *e = op2(c, Op::FLOORMOD, op2(c, Op::ADD, op2(c, Op::MUL, n, w(c, 4)), a), w(c, 4));
  const UOp *s = substituteAndSimplify(c, e, {{n, w(c, 16)}});
  REQUIRE(s->op == Op::FLOORMOD); // (16*4 + a) % 4 -> a % 4
  CHECK(s->src(0) == a);
  CHECK(s->src(1) == w(c, 4));
}

TEST_CASE("removeInvalidRules turns a leftover Invalid into 0, simplify does not", "[symbolic]") {
  Context c;
  const UOp *a = makeVariable(c, "a", 0, 15);
  const UOp *gate =
      c.make(Op::WHERE, DType::WeakInt, {op2(c, Op::CMPLT, a, w(c, 4)), a, makeInvalid(c, DType::WeakInt)});
  CHECK(simplify(c, gate) == gate);
  const UOp *r = simplifyWith(c, gate, removeInvalidRules());
  REQUIRE(r->op == Op::WHERE);
  CHECK(r->src(2) == w(c, 0));
}
