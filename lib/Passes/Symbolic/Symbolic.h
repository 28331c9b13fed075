//===- Symbolic.h - the symbolic simplifier: rule sets, simplify, substitute ===//
// tinygrad's uop/symbolic.py and uop/divandmod.py at the corpus commit, as rule tables over the pattern
// DSL (Passes/Pattern.h). The rule groups, one file each under lib/Passes/Symbolic/:
//   ConstFold.cpp   constant folding with the target's per-dtype semantics (Interp/ScalarOps.h)
//   Arithmetic.cpp  identities, canonical forms (SUB, NEG), combining terms, constant motion
//   Compare.cpp     comparisons and MAX: range-decided folds, lt folding, simplex canonicalization
//   Where.cpp       WHERE folding, Invalid propagation, gated LOAD/STORE, removing Invalid at the end
//   Cast.cpp        CAST/BITCAST chains, narrowing int64 math, casts pushed into WHERE branches
//   DivMod.cpp      FLOORDIV/FLOORMOD of index expressions and the x%c + (x//c)*c recombination
//   Valid.cpp       simplifying under a valid mask (tinygrad's simplify_valid / uop_given_valid)
// Range analysis (vmin/vmax) lives in IR/Range.h.
//
// Every rule reads a SymbolicCtx through the rewrite's user context: pass one to graphRewrite (simplify()
// and substituteAndSimplify() do). A pass that adds rules of its own keeps its state in a struct that
// derives from SymbolicCtx and passes `static_cast<SymbolicCtx *>(&state)` as the user context.
//
// Where the semantics differ from tinygrad on purpose:
//  - constant folding wraps sized integers (tinygrad folds unbounded Python ints); weakint folds that
//    would leave int64 are not done;
//  - rules that assume a nonzero divisor (x//x -> 1, dividing out a symbolic gcd, factor_remainder) check
//    that the divisor's range excludes 0, since the evaluator defines x//0 = 0 and x%0 = x;
//  - rules that reassociate or reorder comparisons of sized integers check that nothing wraps around;
//  - float rules are limited to those exact under IEEE semantics (x*1, x+0, idempotence, folding of
//    constants): x*0, x/x, combining float terms and moving float constants are not done;
//  - CMPEQ (an op of the graph format that tinygrad spells !(x!=y)) is kept as it is;
//  - simplifying under a valid mask only rewrites when the result is strictly smaller (tinygrad also
//    accepts reorderings, which can alternate forever with the nested ANDs of their own result).
#pragma once

#include "IR/Range.h"
#include "Passes/Pattern.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace uopc {

/// What every symbolic rule reads: the range analysis and an optional node filter.
struct SymbolicCtx {
  static constexpr uint64_t kMagic = 0x53796d626f6c6963; // catches a wrong user context early
  uint64_t magic = kMagic;
  RangeInfo ranges;
  /// When set, rules leave alone every node for which it returns false (the simplify pass keeps
  /// tensor-valued nodes out this way: folding them to a scalar CONST would change their shape).
  std::function<bool(const UOp *)> allow;
  /// Memo of the general div/mod folder (tinygrad caches fold_divmod_general too): node -> result, or a
  /// sentinel when it does not apply. Pure functions of the node, so it stays valid across rewrites.
  NodeMap<const UOp *> divmodMemo{nullptr};
};

/// tinygrad's symbolic_simple: Invalid propagation, identities, constant folding, casts, simple WHERE.
const RuleSet &symbolicSimple();
/// tinygrad's symbolic (what UOp.simplify applies): symbolicSimple plus canonical ordering of weakint
/// commutative ops, combining terms, range folding, comparisons and div/mod folding.
const RuleSet &symbolicRules();
/// tinygrad's pm_simplify_valid: simplify an AND of valid clauses and a gated index under its gate.
const RuleSet &simplifyValidRules();
/// tinygrad's sym: symbolicRules + simplifyValidRules + casts into WHERE branches, store/load folding,
/// distributing constant products over weakint sums.
const RuleSet &symRules();
/// tinygrad's pm_data_invalid alone (Invalid moves to the LOAD/STORE that it gates).
const RuleSet &dataInvalidRules();
/// tinygrad's pm_remove_invalid, for the final codegen step only: a leftover Invalid becomes 0.
const RuleSet &removeInvalidRules();

/// u simplified with symbolicRules to a fixed point (tinygrad's UOp.simplify). A null sctx uses a
/// temporary one; pass one to keep the range cache across calls on the same Context.
const UOp *simplify(Context &ctx, const UOp *u, SymbolicCtx *sctx = nullptr);
/// u rewritten with any rule set and a SymbolicCtx as its user context.
const UOp *simplifyWith(Context &ctx, const UOp *u, const RuleSet &rules, SymbolicCtx *sctx = nullptr);
/// Replaces the keys of `map` under root by their values (Rewrite.h's substitute), then simplifies.
const UOp *substituteAndSimplify(Context &ctx, const UOp *root,
                                 const std::unordered_map<const UOp *, const UOp *> &map,
                                 SymbolicCtx *sctx = nullptr);
/// The range of a buffer index where the access happens at all: `ix` under its WHERE(c, i, Invalid) gates,
/// with those conditions and the INDEX's gate sources `gates` assumed (each clause `X < c` / `c < X` /
/// `!(X < c)` bounds its X, tinygrad's parse_valid; an X appearing in the index is replaced by a variable of
/// the narrowed range). What the emitters use to leave out bounds checks that the gates already imply.
VRange indexRangeGivenGates(SymbolicCtx &sc, Context &ctx, const UOp *ix, std::span<const UOp *const> gates);

/// Binds symbolic variables by name (a PARAM with a name and vmin_vmax, e.g. `_device_num`, or the
/// variable of a BIND) to constants and resimplifies. Names not in the graph are ignored.
const UOp *bindVariables(Context &ctx, const UOp *root, const std::unordered_map<std::string, int64_t> &values,
                         SymbolicCtx *sctx = nullptr);

/// A scalar symbolic variable as graph format v1 spells it: PARAM weakint with an empty STACK source
/// and ParamArg{slot -1, name, vmin_vmax} (tinygrad's UOp.variable).
const UOp *makeVariable(Context &ctx, std::string_view name, int64_t vmin, int64_t vmax, DType dt = DType::WeakInt);
/// tinygrad's Invalid: a CONST of dtype dt whose arg is Invalid.
const UOp *makeInvalid(Context &ctx, DType dt);
bool isInvalidConst(const UOp *u);

} // namespace uopc
