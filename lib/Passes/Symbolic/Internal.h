//===- Internal.h - what the symbolic rule files share (not a public API) ---===//
// V: a node with operators that build nodes (tinygrad's UOp arithmetic: `x + 1`, `x * c`, `x / d` is
// FLOORDIV, `x % d` is FLOORMOD, `x < y` is CMPLT); S: what a rule function sees; srule(): a rule whose
// function gets an S and is skipped on nodes the SymbolicCtx filters out; the index algebra helpers of
// tinygrad's UOp (split_uop, pop_const, const_factor, divides, divide_exact, gcd, usum).
#pragma once

#include "Passes/Symbolic/Symbolic.h"

#include <optional>
#include <source_location>
#include <span>
#include <unordered_map>
#include <vector>

namespace uopc::sym {

/// A node with the Context that builds on it. Converts to `const UOp *`; null means "no rewrite".
struct V {
  const UOp *u = nullptr;
  Context *c = nullptr;
  V() = default;
  V(std::nullptr_t) {}
  V(const UOp *n, Context &ctx) : u(n), c(&ctx) {}
  operator const UOp *() const { return u; }
  const UOp *operator->() const { return u; }
  DType dt() const { return u->dtype; }
  Op op() const { return u->op; }
  V src(size_t i) const { return {u->src(i), *c}; }
  V wrap(const UOp *n) const { return {n, *c}; }

  /// A CONST of this node's dtype (tinygrad's const_like): wrapped for sized ints, 0/1 for bool.
  V k(int64_t v) const;
  V kBool(bool v) const;
  /// The same node on other sources.
  V with(std::initializer_list<const UOp *> srcs) const;
  V alu(Op op, V b) const;
  V alu(Op op) const;
  V lt(V b) const { return alu(Op::CMPLT, b); }
  V ne(V b) const { return alu(Op::CMPNE, b); }
  V max(V b) const { return alu(Op::MAX, b); }
  /// tinygrad's logical_not: x != True.
  V lnot() const;
  V where(V t, V f) const;
  V cast(DType dt) const;
  /// cond.where(self, Invalid) (tinygrad's UOp.valid).
  V valid(V cond) const;
};
V operator+(V a, V b);
V operator+(V a, int64_t b);
V operator*(V a, V b);
V operator*(V a, int64_t b);
/// tinygrad's neg: x * -1 (logical not for bool).
V operator-(V a);
/// a + b*-1.
V operator-(V a, V b);
V operator-(V a, int64_t b);
V operator/(V a, V b); ///< FLOORDIV
V operator/(V a, int64_t b);
V operator%(V a, V b); ///< FLOORMOD
V operator%(V a, int64_t b);
V operator<(V a, V b);
V operator<(V a, int64_t b);
V operator&(V a, V b);
V operator|(V a, V b);
V operator^(V a, V b);
V operator>>(V a, int64_t b);

/// What a symbolic rule function sees: captures as V, the ranges, the Context.
class S {
public:
  S(Match &m, SymbolicCtx &c) : m_(m), sym(c) {}
  V operator[](std::string_view name) const {
    const UOp *u = m_[name];
    return u ? V(u, m_.ctx()) : V();
  }
  V root() const { return {m_.root(), m_.ctx()}; }
  Context &ctx() const { return m_.ctx(); }
  V wrap(const UOp *u) const { return {u, m_.ctx()}; }
  Bound vmin(const UOp *u) const { return sym.ranges.vmin(u); }
  Bound vmax(const UOp *u) const { return sym.ranges.vmax(u); }
  /// No wraparound at u: weakint, or a sized op whose exact range fits its dtype.
  bool noWrap(const UOp *u) const { return u->dtype == DType::WeakInt || sym.ranges.exact(u); }
  /// u's range excludes 0.
  bool nonZero(const UOp *u) const { return vmin(u) > 0 || vmax(u) < 0; }

private:
  Match &m_;

public:
  SymbolicCtx &sym;
};

/// A rule function: the replacement, or a null V for "no rewrite".
using SymFn = V (*)(S &);
/// A rule whose function gets an S; skipped on nodes that SymbolicCtx::allow rejects.
Rule srule(const Pat &p, SymFn fn, std::source_location loc = std::source_location::current());
/// The SymbolicCtx of a Match (throws Error when the user context is not one).
SymbolicCtx &symCtx(Match &m);

// ---- small predicates and constants --------------------------------------------------------------

/// Integer dtypes (weakint included) and bool.
inline bool isIntOrBool(DType dt) { return isInt(dt) || dt == DType::Bool; }
/// A capture restricted to the integer dtypes (weakint included; not bool), or to those and bool.
Pat anyInt(std::string_view name = {});
Pat intOrBool(std::string_view name = {});
/// A capture restricted to weakint / bool.
inline Pat weak(std::string_view name = {}) { return var(name, DType::WeakInt); }
inline Pat boolean(std::string_view name = {}) { return var(name, DType::Bool); }
/// tinygrad's Invalid pattern: a CONST whose arg is Invalid.
Pat invalidPat(std::string_view name = "i");
/// The integer value of a CONST (bool as 0/1), or nullopt.
std::optional<int64_t> intConst(const UOp *u);
/// A CONST of dtype dt with integer value v (wrapped to sized ints).
const UOp *mkConst(Context &ctx, DType dt, int64_t v);
/// op over CONST sources folded to a CONST (the constant folder's semantics), or null when it cannot be
/// folded (a source is not a CONST, the op is not defined on the dtype, a weakint result leaves int64).
const UOp *foldConstAlu(Context &ctx, Op op, DType out, std::span<const UOp *const> srcs);
/// Same on two constants: `a op b` (null when it cannot be folded, so rules that combine constants bail
/// out instead of leaving an unfoldable op behind).
inline const UOp *foldConsts(Context &ctx, Op op, const UOp *a, const UOp *b) {
  const UOp *s[2] = {a, b};
  return foldConstAlu(ctx, op, isComparison(op) ? DType::Bool : a->dtype, s);
}
/// v fits in dt without wrapping (weakint: fits int64).
bool fitsDType(DType dt, Bound v);
/// Python's floor division and modulo on int64 (b != 0).
int64_t floorDiv(int64_t a, int64_t b);
int64_t floorMod(int64_t a, int64_t b);
int64_t gcd64(int64_t a, int64_t b);

// ---- index algebra (tinygrad's UOp helpers) ------------------------------------------------------

/// The leaves of a chain of `sep` ops, left to right (tinygrad's split_uop; iterative).
std::vector<const UOp *> splitUOp(const UOp *u, Op sep);
/// (x, c) when u is x `op` CONST c, else (u, identity of op) (tinygrad's pop_const).
std::pair<const UOp *, int64_t> popConst(const UOp *u, Op op = Op::ADD);
/// The largest known integer dividing u (tinygrad's const_factor).
int64_t constFactor(const UOp *u);
/// u / v when v divides u exactly in structure, else null (tinygrad's divides).
const UOp *divides(Context &ctx, const UOp *u, int64_t v);
/// u / v for a node v (tinygrad's divide_exact).
const UOp *divideExact(Context &ctx, const UOp *u, const UOp *v);
/// The greatest common divisor of nodes: common factors times the gcd of constant factors.
const UOp *gcdOf(Context &ctx, std::span<const UOp *const> uops);
/// a0 + a1 + ... (left fold; OR for bool), or null for none.
const UOp *usum(Context &ctx, std::span<const UOp *const> terms);
/// a0 * a1 * ... (AND for bool), or null for none.
const UOp *uprod(Context &ctx, std::span<const UOp *const> terms);
/// The nodes under root (root included), sources first. Costs O(size of root's graph), unlike toposort()
/// and graphRewrite(), whose dense tables cost O(nodes in the Context) per call: what nested rewrites of
/// small expressions use.
std::vector<const UOp *> localToposort(const UOp *root);
/// Rewrite.h's substitute() (keys looked up on the original nodes, values inserted as they are) at the
/// cost of localToposort.
const UOp *replaceNodes(Context &ctx, const UOp *root, const std::unordered_map<const UOp *, const UOp *> &map);
/// True when `needle` is in the graph below `hay` (hay included), visiting at most `budget` nodes;
/// `whenUnsure` when the budget runs out first.
bool reaches(const UOp *hay, const UOp *needle, size_t budget = 4096, bool whenUnsure = false);
/// True when a node of op `op` is in the graph below `hay`, or when the budget runs out first.
bool mayContain(const UOp *hay, Op op, size_t budget = 4096);
/// A total order of nodes used to put the sources of weakint commutative ops in canonical order
/// (tinygrad's tuplize: op, arg, dtype, sources); CONSTs sort last.
int canonicalCompare(const UOp *a, const UOp *b);

// ---- the rule groups (one file each) -------------------------------------------------------------
const RuleSet &constFoldRules();
const RuleSet &canonicalFormRules();
const RuleSet &arithmeticSimpleRules();
const RuleSet &commutativeRules();
const RuleSet &arithmeticRules();
const RuleSet &distributeRules();
const RuleSet &compareSimpleRules();
const RuleSet &compareRules();
const RuleSet &whereSimpleRules();
const RuleSet &whereRules();
const RuleSet &memoryRules();
const RuleSet &castSimpleRules();
const RuleSet &castRules();
const RuleSet &castLateRules();
const RuleSet &divModSimpleRules();
const RuleSet &divModRules();
const RuleSet &simplifyValidRulesImpl();
const RuleSet &reduceCollapseRules();

/// tinygrad's uop_given_valid: u simplified under the assumption that `valid` is true.
const UOp *uopGivenValid(SymbolicCtx &sc, Context &ctx, const UOp *valid, const UOp *u, bool trySimplex = true);

} // namespace uopc::sym
